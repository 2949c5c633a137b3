"""Deployment values in the OpenAPI spec: the names and scales a request may use on *this* service, an input of the
spec's generation (``service.wire.schema.wire_schema_components`` through ``service.http.wire_schema``).

Which criteria, judges and panels a request may name, the scale 1..K of a verdict and the smallest level ``alpha``
depend on the loaded calibration (every artifact), JUDGES_FILE, RUBRICS_FILE and PANELS_FILE. The service refuses
other values (422 with the allowed ones), so the spec lists them, and a schema-valid request is one the service
answers:

* ``criterion``: the built-in criteria, the rubrics' and the calibration's (``enum``); one only the calibration
  covers needs the caller's own verdict (no live call can ask about it).
* ``judge``: the calibration's judges and the configured ones; without a configured (default) judge the caller's
  verdict names its judge; with judges configured, a calibration-only judge needs the caller's own verdict. A
  (judge, criterion) calibrated under several prompt families needs ``prompt_family``.
* ``panel``: the configured panels (none configured: only null); ``cascade`` likewise (CASCADES_FILE).
* ``judge_score``, ``mean_of_samples`` (also in ``verdicts``) at most the largest K, log-prob tokens "1".."K";
  a criterion with a smaller K says so (``if criterion in [...] then maximum k``).
* ``alpha`` at least the smallest calibrated level; a pac ``confidence`` at most the calibrated one (score and
  compare).
* ``tolerance`` at most K - 1 and ``pass_threshold`` at most K (service.scoring.cell_decision.asked), per criterion
  as above.

Each value is stated where its field's schema is (a keyword merged into msgspec's schema of the property; a numeric
keyword beside a nullable property's ``anyOf`` bounds the number alone) or as a rule on the whole object, while the
components are generated; nothing is written into a generated document afterwards.

The served document (/schema/openapi.json) is generated again, with the new values, whenever the calibration
snapshot changes (reload, activate, delete), so it follows the service; ``make openapi`` writes the one of the
default settings (the shipped calibration, no judges, rubrics, panels or keys), which is what ``make serve`` serves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from litestar import Litestar, Request
from litestar._openapi.plugin import OpenAPIPlugin
from litestar.openapi.plugins import JsonRenderPlugin

from calibration.conformal import METHODS
from service.artifacts.snapshot import CalibrationSnapshot
from service.http.services import Services
from service.http.wire_schema import WireSchemaPlugin
from service.wire.common import CRITERIA
from service.wire.schema import implies, present
from service.wire.score import OWN_VERDICT_FIELDS, score_branches

__all__ = [
    "DeploymentValues",
    "LiveSpecJson",
    "Refinement",
    "deployment_refinements",
    "deployment_values",
    "spec_document",
]

DEFAULT_SCALE = 5  # service.artifacts.snapshot.CalibrationSnapshot.n_labels_for: an uncalibrated criterion's K
MAX_TOKEN = 10  # JudgeLogprobs holds the tokens "1".."10"
_TIGHTER = {"maximum": min, "minimum": max}


@dataclass(frozen=True, kw_only=True)
class DeploymentValues:
    """The names and scales a request may use on one service (see the module docstring)."""

    criteria: tuple[str, ...]
    askable: tuple[str, ...]  # criteria a judge can be asked about (built-in and rubrics)
    judges: tuple[str, ...]
    configured: tuple[str, ...]
    panels: tuple[str, ...]
    cascades: tuple[str, ...] = ()
    scales: dict[str, int] = field(default_factory=dict)  # K per criterion
    min_alpha: float | None = None
    max_confidence: float | None = None  # the largest pac confidence of the score thresholds
    max_pairwise_confidence: float | None = None  # of the pairwise decisions (1 - their delta)
    several_families: tuple[tuple[str, str], ...] = ()  # (judge, criterion) needing prompt_family


@dataclass(frozen=True, kw_only=True)
class Refinement:
    """What a deployment states on one component: keywords merged into its properties (``None``: the property does
    not exist on this deployment), its ``anyOf`` (replacing the declared one) and rules added to its ``allOf``."""

    properties: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)
    any_of: list[dict[str, Any]] | None = None
    all_of: list[dict[str, Any]] = field(default_factory=list)

    def apply(self, component: dict[str, Any]) -> None:
        """Write the refinement into ``component`` (a fresh schema of the generator, before conversion)."""
        properties: dict[str, Any] = component.get("properties", {})
        for name, keywords in self.properties.items():
            if name not in properties:
                continue
            if keywords is None:
                del properties[name]
                if name in component.get("required", ()):
                    component["required"] = [kept for kept in component["required"] if kept != name]
                continue
            properties[name] = _merged(name, properties[name], keywords)
        if self.any_of is not None:
            component["anyOf"] = self.any_of
        if self.all_of:
            component["allOf"] = [*component.get("allOf", []), *self.all_of]


def _merged(name: str, schema: Mapping[str, Any], keywords: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with ``keywords`` added; a bound the type already has keeps the tighter of the two. On a nullable
    property (``anyOf`` of the type and null) a bound goes into the numeric branch, beside the type's own."""
    merged = dict(schema)
    for keyword, value in keywords.items():
        numeric = [b for b in merged.get("anyOf", ()) if b.get("type") in ("integer", "number")]
        if keyword in _TIGHTER and numeric:
            merged["anyOf"] = [
                _merged(name, b, {keyword: value}) if b.get("type") in ("integer", "number") else b
                for b in merged["anyOf"]
            ]
        elif keyword not in merged:
            merged[keyword] = value
        elif keyword in _TIGHTER:
            merged[keyword] = _TIGHTER[keyword](merged[keyword], value)
        else:
            raise ValueError(f"a deployment value would replace {keyword!r} of the property {name!r}")
    return merged


def _names(names: tuple[str, ...], *, nullable: bool) -> dict[str, Any]:
    return {"enum": [*names, None] if nullable else list(names)}


def _own() -> dict[str, Any]:
    return {"anyOf": [present({"judge": "string", name: kind}) for name, kind in OWN_VERDICT_FIELDS.items()]}


def _scale_rules(values: DeploymentValues, largest: int) -> list[dict[str, Any]]:
    """Per smaller K: ``if criterion in [...] then`` scores, means and tokens stay within 1..K."""
    rules = []
    for k in sorted(set(values.scales.values()) - {largest}):
        criteria = [name for name, scale in values.scales.items() if scale == k]
        bounded = {"maximum": k}
        tokens = {"properties": {str(token): {"type": "null"} for token in range(k + 1, largest + 1)}}
        member = {"properties": {"judge_score": bounded, "mean_of_samples": bounded, "judge_logprobs": tokens}}
        then = {
            "properties": {
                "judge_score": bounded,
                "mean_of_samples": bounded,
                "judge_logprobs": tokens,
                "verdicts": {"items": member},
                "tolerance": {"maximum": k - 1},
                "pass_threshold": bounded,
            }
        }
        rules.append(implies({"required": ["criterion"], "properties": {"criterion": {"enum": criteria}}}, then))
    return rules


def _object_rules(values: DeploymentValues, largest: int) -> list[dict[str, Any]]:
    """ScoreRequest's ``if ... then`` rules of this deployment: smaller scales, a named judge, calibration-only
    criteria and judges, and the judge-criterion pairs that need a prompt family."""
    rules = _scale_rules(values, largest)
    if not values.configured:  # no default judge: the caller's verdict names its judge (service.scoring.resolve)
        rules.append(
            implies(
                {"anyOf": [present({name: kind}) for name, kind in OWN_VERDICT_FIELDS.items()]},
                present({"judge": "string"}),
            )
        )
    calibration_only = sorted(set(values.criteria) - set(values.askable))
    if calibration_only:  # no live call can ask about these
        rules.append(
            implies({"required": ["criterion"], "properties": {"criterion": {"enum": calibration_only}}}, _own())
        )
    uncallable = sorted(set(values.judges) - set(values.configured))
    if values.configured and uncallable:  # without any judge a live call is the documented 422 whatever it names
        rules.append(implies({"required": ["judge"], "properties": {"judge": {"enum": uncallable}}}, _own()))
    for judge, criterion in values.several_families:
        pair = {
            "required": ["judge", "criterion"],
            "properties": {"judge": {"const": judge}, "criterion": {"const": criterion}},
        }
        rules.append(implies(pair, present({"prompt_family": "string"})))
    return rules


def deployment_refinements(values: DeploymentValues) -> dict[str, Refinement]:
    """The refinement of each wire component a deployment's values constrain, by component name."""
    largest = max(values.scales.values(), default=DEFAULT_SCALE)
    score: dict[str, Mapping[str, Any] | None] = {
        "criterion": _names(values.criteria, nullable=False),
        "judge": _names(values.judges, nullable=True),
        "method": _names(tuple(METHODS), nullable=True),
        "panel": _names(values.panels, nullable=True),
        "cascade": _names(values.cascades, nullable=True),
        "judge_score": {"maximum": largest},
        "mean_of_samples": {"maximum": largest},
        "tolerance": {"maximum": largest - 1},  # an error is |human - point| >= tolerance: at most K - 1 can happen
        "pass_threshold": {"maximum": largest},
    }
    if values.min_alpha is not None:
        score["alpha"] = {"minimum": values.min_alpha}
    # a pac confidence above the calibrated one is a 422 (service.scoring.resolve, service.comparing.pair_decisions)
    if values.max_confidence is not None:
        score["confidence"] = {"maximum": values.max_confidence}
    compare: dict[str, Mapping[str, Any] | None] = {}
    if values.max_pairwise_confidence is not None:
        compare["confidence"] = {"maximum": values.max_pairwise_confidence}
    tokens = [str(token) for token in range(1, min(largest, MAX_TOKEN) + 1)]
    return {
        "ScoreRequest": Refinement(
            properties=score,
            any_of=score_branches(judge_required=not values.configured),
            all_of=_object_rules(values, largest),
        ),
        "CompareRequest": Refinement(properties=compare),
        "MemberVerdict": Refinement(
            properties={"judge_score": {"maximum": largest}, "mean_of_samples": {"maximum": largest}}
        ),
        "JudgeLogprobs": Refinement(
            properties={str(token): None for token in range(largest + 1, MAX_TOKEN + 1)},
            any_of=[present({token: "number"}) for token in tokens],
        ),
    }


def deployment_values(services: Services) -> DeploymentValues:
    """The values of ``services``' current calibration and configuration."""
    judges = services.judges
    snapshot: CalibrationSnapshot | None = services.calibration.current
    rubrics = judges.rubrics
    askable = sorted(set(CRITERIA) | set(rubrics))
    calibrated = set(snapshot.criterion_labels) if snapshot is not None else set()
    criteria = sorted(set(askable) | calibrated)
    scales = {
        criterion: (snapshot.criterion_labels.get(criterion) if snapshot is not None else None)
        or (rubrics[criterion].scale_max if criterion in rubrics else DEFAULT_SCALE)
        for criterion in criteria
    }
    known = set(snapshot.judge_names) if snapshot is not None else set()
    pairwise = services.calibration.pairwise
    several: list[tuple[str, str]] = []
    if snapshot is not None:
        families: dict[tuple[str, str], set[str]] = {}
        for judge, family, criterion in snapshot.cell_methods:
            families.setdefault((judge, criterion), set()).add(family)
        configured = set(judges.names())
        several = sorted(key for key, found in families.items() if len(found) > 1 and key[0] not in configured)
    return DeploymentValues(
        criteria=tuple(criteria),
        askable=tuple(askable),
        judges=tuple(sorted(known | set(judges.names()))),
        configured=tuple(sorted(judges.names())),
        panels=tuple(sorted(judges.panels)),
        cascades=tuple(sorted(judges.cascades)),
        scales=scales,
        min_alpha=snapshot.all_levels[0] if snapshot is not None and snapshot.all_levels else None,
        max_confidence=snapshot.pac_confidences[-1] if snapshot is not None and snapshot.pac_confidences else None,
        max_pairwise_confidence=None if pairwise is None else 1 - pairwise.artifact.delta,
        several_families=tuple(several),
    )


def spec_document(app: Litestar) -> dict[str, Any]:
    """The app's OpenAPI document, generated with the deployment values of its current calibration (generated again
    when the calibration changes)."""
    services: Services = app.state.services
    snapshot = services.calibration.current
    cache = services.spec_cache
    if cache.get("snapshot") is not snapshot or "document" not in cache:
        plugin = app.plugins.get(WireSchemaPlugin)
        plugin.refinements = deployment_refinements(deployment_values(services))
        # Litestar's generator, run afresh (its cached document is the one without deployment values)
        cache["document"] = app.plugins.get(OpenAPIPlugin)._build_openapi().to_schema()
        cache["snapshot"] = snapshot
    document = cache["document"]
    assert isinstance(document, dict)  # the to_schema() stored above
    return document


class LiveSpecJson(JsonRenderPlugin):
    """/schema and /schema/openapi.json: the JSON document, with the current deployment values."""

    def render(self, request: Request, openapi_schema: dict[str, Any]) -> bytes:
        return self.render_json(request, spec_document(request.app))
