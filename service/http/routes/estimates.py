"""POST /v1/estimates and POST /v1/rankings (rules: ``service.estimating``).

A request that reads systems from jobs (``service.estimating.job_samples``) follows the jobs routes: without
REDIS_URL a 503 ``jobs-unavailable``, a Redis that does not answer the same 503 with Retry-After, and a job of
another API key a 404 like a missing one (the caller's tenant scope from ``service.jobs.tenancy``).
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio.to_thread
import msgspec
from litestar import Request, post
from litestar.openapi.spec import Example, OpenAPIType, Reference, Schema
from litestar.params import Body
from redis.exceptions import RedisError

from service.errors import store_unavailable
from service.estimating.estimate_request import references_job
from service.estimating.estimates import JobSamples, estimate
from service.estimating.job_samples import read_job_samples
from service.estimating.rankings import rank_models
from service.http.auth import bearer_token
from service.http.body import BODY_DECODER, BodyDecoder
from service.http.services import Services, problem_responses, services_of
from service.jobs.tenancy import job_caller
from service.wire.estimates import (
    HARD_MAX_ESTIMATE_SYSTEMS,
    EstimateBatchResponse,
    EstimateRequest,
    EstimateResult,
    RankingRequest,
    RankingResponse,
)

__all__ = ["document_estimates_openapi", "estimates", "rankings"]

_LABELLED = [
    {"human": human, "judge": judge}
    for human, judge in zip([4, 3, 5, 4, 2, 4, 3, 5, 4, 4], [4, 3, 4, 4, 3, 5, 3, 5, 4, 3], strict=True)
]
_UNLABELLED = [{"judge": judge} for judge in [4, 5, 3, 4, 4, 2, 5, 4, 3, 4, 4, 5, 3, 4, 4, 3, 4, 5, 4, 4]]
_MEAN = {"metric": "mean", "alpha": 0.1, "labelled": _LABELLED, "unlabelled": _UNLABELLED}
_DIFFERENCE = {
    "metric": "difference",
    "a": {"labelled": _LABELLED[:4], "unlabelled": _UNLABELLED[:5]},
    "b": {
        "labelled": [{"human": 3, "judge": 3}, {"human": 2, "judge": 3}, {"human": 4, "judge": 4}],
        "unlabelled": [{"judge": 3}, {"judge": 2}, {"judge": 4}, {"judge": 3}],
    },
}
_BATCH = {
    "metric": "pass_rate",
    "threshold": 4,
    "systems": {
        "model-a": {"labelled": _LABELLED[:4], "unlabelled": _UNLABELLED[:5]},
        "model-b": {
            "labelled": [{"human": 3, "judge": 3}, {"human": 4, "judge": 4}, {"human": 5, "judge": 4}],
            "unlabelled": [{"judge": 3}, {"judge": 4}, {"judge": 2}, {"judge": 5}],
        },
    },
}
_FROM_JOB = {
    "metric": "mean",
    "alpha": 0.05,
    "job": "3f2a9c41d7b84e0f9a6c5d2e1b0f7a63",
    "judge_value": "expected_score",
    "labelled": [{"id": "item-17", "human": 4}, {"id": "item-203", "human": 3}, {"id": "item-388", "human": 5}],
}
_BATTLES = {
    "alpha": 0.1,
    "battles": [
        {"model_a": "m1", "model_b": "m2", "judge": "a", "human": "a"},
        {"model_a": "m2", "model_b": "m3", "judge": "a", "human": "tie"},
        {"model_a": "m1", "model_b": "m3", "judge": "a"},
        {"model_a": "m3", "model_b": "m2", "judge": "b"},
        {"model_a": "m1", "model_b": "m2", "judge": "tie"},
    ],
}
EstimateBody = Annotated[
    EstimateRequest,
    Body(
        examples=[
            Example(summary="A mean score on 1..5", value=_MEAN),
            Example(summary="A difference of two systems' means", value=_DIFFERENCE),
            Example(summary="Two systems' pass rates (the batch form)", value=_BATCH),
            Example(
                summary="A mean from a finished job's results and human labels of some of its items", value=_FROM_JOB
            ),
        ]
    ),
]
RankingBody = Annotated[RankingRequest, Body(examples=[Example(summary="Three models", value=_BATTLES)])]


@post(
    "/estimates",
    status_code=200,
    summary="A system's mean, pass rate, win rate or a difference, with an interval valid at the n given, "
    "from a few human labels plus many judge verdicts; or up to 100 systems at once",
    responses=problem_responses(400, 401, 404, 409, 413, 415, 422, 503),
    tags=["estimates"],
    opt={BODY_DECODER: BodyDecoder(EstimateRequest)},
)
async def estimates(data: EstimateBody, request: Request) -> EstimateResult | EstimateBatchResponse:
    """PPI++ or the finite-sample betting interval by the switching rule (rules: ``calibration.estimates.system``); in
    the batch form a system's bad data fails that system alone. A system may be read from a finished job: ``job``
    and ``labelled`` items ``{id, human}`` (rules: ``service.estimating.job_samples``)."""
    services = services_of(request)
    jobs = await _job_samples(data, request, services) if references_job(data) else None
    return await anyio.to_thread.run_sync(  # CPU-bound: off the event loop
        lambda: estimate(data, services.settings.limits, logger=services.logger, jobs=jobs)
    )


async def _job_samples(data: EstimateRequest, request: Request, services: Services) -> JobSamples:
    """The samples of the systems read from jobs, as the caller may see them (module docstring)."""
    settings = services.settings
    caller = job_caller(settings.api_keys, settings.admin_api_key, bearer_token(request.headers.get("authorization")))
    store = services.jobs.store if services.jobs is not None else None
    try:
        return await read_job_samples(data, store, caller.scope, settings.limits)
    except (RedisError, OSError) as error:
        raise store_unavailable(error, settings.jobs.retry_after_s) from error


@post(
    "/rankings",
    status_code=200,
    summary="Per-model win rates and rank sets from many judged battles plus human verdicts on a random subset",
    responses=problem_responses(400, 401, 413, 415, 422),
    tags=["estimates"],
    opt={BODY_DECODER: BodyDecoder(RankingRequest)},
)
async def rankings(data: RankingBody, request: Request) -> RankingResponse:
    """Prediction-powered ranking (rules: ``calibration.estimates.rank_sets``, ``service.estimating.rankings``)."""
    limits = services_of(request).settings.limits
    return await anyio.to_thread.run_sync(rank_models, data, limits)


Properties = dict[str, Schema | Reference]  # a Schema's properties, as Litestar types them
_NULL = Schema(type=OpenAPIType.NULL)
_NOT_NULL = Schema(  # any JSON value but null, stated positively (the generator handles it better than a not)
    type=[OpenAPIType.ARRAY, OpenAPIType.OBJECT, OpenAPIType.STRING, OpenAPIType.NUMBER, OpenAPIType.BOOLEAN]
)
_WIN_VALUE = Schema(enum=[0, 0.5, 1])


def _given(*fields: str, **schemas: Schema) -> Schema:
    """Each of ``fields`` present and not null (with ``schemas`` for some of them)."""
    # a keyword such as required or items says nothing of a null: the not-null part is always stated
    properties: Properties = {
        field: Schema(all_of=[_NOT_NULL, schemas[field]]) if field in schemas else _NOT_NULL for field in fields
    }
    return Schema(required=list(fields), properties=properties)


def _absent(*fields: str) -> Properties:
    """Each of ``fields`` left out (or null, which the service reads as left out)."""
    return dict.fromkeys(fields, _NULL)


def _values(value: Schema, *, with_unlabelled: bool = True) -> Schema:
    """Every labelled item's human (and judge) value, and every unlabelled verdict, of schema ``value``."""
    item = Schema(properties={"human": value, "judge": Schema(any_of=[_NULL, value])})
    properties: Properties = {"labelled": Schema(items=item)}
    if with_unlabelled:
        properties["unlabelled"] = Schema(any_of=[_NULL, Schema(items=Schema(properties={"judge": value}))])
    return Schema(properties=properties)


def _metric_rules(metric_field: str, values_at: tuple[str, ...] = ()) -> list[Schema]:
    """A system's rules between its metric, threshold and values (``metric_field`` names the metric: ``metric``,
    or ``of`` for a difference, where a left-out ``of`` is the mean; ``values_at``: the fields holding the
    values, none for the body itself). On the default scale 1..5 the values and the threshold lie on it; with a
    scale given in the body these are rules between fields, which JSON Schema cannot state (one branch per scale
    made the spec too large for the generators): they stay in the description and the 422."""
    is_pass_rate = Schema(required=[metric_field], properties={metric_field: Schema(const="pass_rate")})
    is_win_rate = Schema(required=[metric_field], properties={metric_field: Schema(const="win_rate")})
    default_scale = Schema(schema_not=Schema(any_of=[Schema(required=["scale_min"]), Schema(required=["scale_max"])]))

    def placed(values: Schema) -> Schema:
        placed_at: Properties = dict.fromkeys(values_at, values)
        return Schema(properties=placed_at) if values_at else values

    on_scale = Schema(
        properties={"threshold": Schema(any_of=[_NULL, Schema(exclusive_minimum=1, maximum=5)])},
        all_of=[placed(_values(Schema(minimum=1, maximum=5)))],
    )
    return [
        Schema(schema_if=is_pass_rate, then=_given("threshold"), schema_else=Schema(properties=_absent("threshold"))),
        Schema(schema_if=is_win_rate, then=placed(_values(_WIN_VALUE))),
        Schema(schema_if=Schema(all_of=[default_scale, Schema(schema_not=is_win_rate)]), then=on_scale),
    ]


def _estimate_forms() -> list[Schema]:
    """The body's forms, exactly one per request (``service.estimating.estimate_request``): one system with its
    values, one system read from a job, a difference, a batch."""
    samples = ("labelled", "unlabelled", "a", "b", "systems", "job")
    job_options = _absent("judge_value", "criterion")
    explicit = Schema(items=Schema(properties={"judge": _NOT_NULL, "id": _NULL}, required=["judge"]))
    by_id = Schema(items=Schema(properties={"id": _NOT_NULL, "judge": _NULL}, required=["id"]))
    single = Schema(
        title="one system, its values given",
        all_of=[
            _given(
                "metric",
                "labelled",
                "unlabelled",
                metric=Schema(enum=["mean", "pass_rate", "win_rate"]),
                labelled=explicit,
            ),
            Schema(properties={**_absent("a", "b", "systems", "job", "of"), **job_options}),
            *_metric_rules("metric"),
        ],
    )
    from_job = Schema(
        title="one system read from a job",
        all_of=[
            _given("metric", "job", "labelled", metric=Schema(enum=["mean", "pass_rate"]), labelled=by_id),
            Schema(properties=_absent("unlabelled", "a", "b", "systems", "of")),
            *_metric_rules("metric"),
        ],
    )
    side = Schema(
        any_of=[
            Schema(all_of=[_given("unlabelled", "labelled", labelled=explicit), Schema(properties=_absent("job"))]),
            Schema(all_of=[_given("job", "labelled", labelled=by_id), Schema(properties=_absent("unlabelled"))]),
        ]
    )
    has_job = Schema(any_of=[_given("job"), _given("a", a=_given("job")), _given("b", b=_given("job"))])
    difference = Schema(
        title="a difference of two systems (a - b)",
        all_of=[
            _given("metric", "a", "b", metric=Schema(const="difference"), a=side, b=side),
            Schema(properties=_absent("labelled", "unlabelled", "systems", "job")),
            Schema(any_of=[Schema(properties=job_options), has_job]),
            *_metric_rules("of", ("a", "b")),
        ],
    )
    some_system_has_job = Schema(
        properties={"systems": Schema(schema_not=Schema(additional_properties=Schema(schema_not=has_job)))}
    )
    # a batch system's own refusals (its metric, values, options) are its answer in a 200, not the request's: only
    # the top-level rules are stated here
    batch = Schema(
        title="a batch of systems",
        all_of=[
            _given("systems"),
            Schema(properties=_absent(*(field for field in samples if field != "systems"))),
            Schema(any_of=[Schema(properties=job_options), some_system_has_job]),
        ],
    )
    return [single, from_job, difference, batch]


def _scale_order() -> Schema:
    """scale_min < scale_max, a left-out bound being its default: JSON Schema cannot compare two fields, but the
    bounds are small integers, so one branch per scale_min states it (the wire type's bounds and defaults)."""
    request = msgspec.json.schema(EstimateRequest)["$defs"]["EstimateRequest"]["properties"]
    low, high = request["scale_min"], request["scale_max"]
    branches = []
    for lowest in range(low["minimum"], low["maximum"] + 1):
        required = [
            name
            for name, needed in (("scale_min", lowest != low["default"]), ("scale_max", high["default"] <= lowest))
            if needed
        ]
        properties: Properties = {"scale_min": Schema(const=lowest), "scale_max": Schema(minimum=lowest + 1)}
        branches.append(Schema(required=required, properties=properties) if required else Schema(properties=properties))
    return Schema(any_of=branches)


def document_estimates_openapi(schemas: dict[str, Any]) -> None:
    """Spec details Litestar drops: closed request objects, zero bounds, the batch's bounds on its names, and a
    labelled item's two shapes ({human, judge} or, with a job, {human, id})."""
    for name in (
        "EstimateRequest",
        "SystemEstimateRequest",
        "SystemSamples",
        "LabelledItem",
        "UnlabelledItem",
        "Battle",
        "RankingRequest",
    ):
        if name in schemas:
            schemas[name].additional_properties = False
    for name in ("EstimateRequest", "SystemEstimateRequest"):
        properties = schemas[name].properties if name in schemas else None
        if properties:
            properties["threshold"].minimum = 0.0
    ranking = schemas["RankingRequest"].properties if "RankingRequest" in schemas else None
    if ranking:
        ranking["min_labelled_battles"].minimum = 0
    item = schemas.get("LabelledItem")
    if item is not None and item.properties:
        item.properties["judge"].minimum = 0.0
        # without a job an item carries the judge's verdict, with one the item's id
        # (service.estimating.estimate_request)
        item.any_of = [Schema(required=["judge"]), Schema(required=["id"])]
    if "EstimateRequest" in schemas:
        # the forms exclude each other (each leaves out the others' fields), so anyOf states exactly oneOf; anyOf
        # because schemathesis' generator cannot prove the difference form disjoint and gives up on a oneOf
        schemas["EstimateRequest"].any_of = _estimate_forms()
        schemas["EstimateRequest"].all_of = [_scale_order()]
    if "RankingRequest" in schemas and schemas["RankingRequest"].properties:
        # at least one labelled and one unlabelled battle (two different models a battle: JSON Schema cannot
        # compare two values, so that rule stays in the description and the 422)
        labelled = Schema(required=["human"], properties={"human": _NOT_NULL})
        unlabelled = Schema(properties={"human": _NULL})
        schemas["RankingRequest"].properties["battles"].all_of = [
            Schema(contains=labelled),
            Schema(contains=unlabelled),
        ]
    systems = schemas["EstimateRequest"].properties["systems"] if "EstimateRequest" in schemas else None
    for branch in (systems.one_of or []) if systems is not None else []:
        if branch.type == OpenAPIType.OBJECT:
            branch.min_properties, branch.max_properties = 1, HARD_MAX_ESTIMATE_SYSTEMS
            branch.property_names = Schema(type=OpenAPIType.STRING, min_length=1, max_length=200)
