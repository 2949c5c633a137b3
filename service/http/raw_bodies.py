"""Request bodies Litestar's generator cannot state from a handler's ``data`` parameter, stated by the route's
``operation_class`` as part of the spec's generation: POST /v1/jobs streams JSON Lines (or ``{"items": [...]}``) and
POST /v1/calibrations reads labelled rows, so neither handler has a ``data`` parameter; POST /v1/calibration/reload's
body is optional (Litestar writes every body as required). A row is ``service.wire.labelled_rows.LabelledRow``,
converted like every component; the jobs body's item cap is the deployment's MAX_JOB_ITEMS, so its operation class
is made per app (``service.http.app``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
from litestar.openapi.spec import OpenAPIMediaType, OpenAPIType, Operation, Reference, RequestBody, Schema

from service.http.wire_schema import to_openapi_schema
from service.jobs.calibration_jobs.cells import MIN_CELL_ITEMS
from service.wire.labelled_rows import EXAMPLE_ROWS, LABELS_MEDIA_TYPES, LabelledRow
from service.wire.schema import wire_schema_components

__all__ = ["LabelledRowsOperation", "OptionalBodyOperation", "jobs_operation"]


def _inline(schema: dict[str, Any]) -> Schema:
    def no_reference(name: str) -> Reference:
        raise ValueError(f"a raw body's schema refers to the component {name}")

    converted = to_openapi_schema(schema, no_reference)
    assert isinstance(converted, Schema)
    return converted


def _labelled_rows_body() -> RequestBody:
    """JSON Lines of rows, or a JSON array of them (row i is line i + 1)."""
    _, components = wire_schema_components((LabelledRow,))
    row = _inline(components["LabelledRow"])
    row.description = " ".join((row.description or "").split()).rstrip(".")  # the docstring on one line
    example = msgspec.json.encode(EXAMPLE_ROWS[0]).decode() + "\n"
    return RequestBody(
        required=True,
        description="labelled JSON Lines, one row per (judge, criterion, item); also accepted as "
        + ", ".join(LABELS_MEDIA_TYPES[1:])
        + "; as application/json also a JSON array of rows (row i is line i + 1)",
        content={
            # the JSON Lines example sits in the description: a client without a JSON Lines encoder (schemathesis)
            # would otherwise fail on an example it cannot send
            LABELS_MEDIA_TYPES[0]: OpenAPIMediaType(
                schema=Schema(type=None, description=f"{row.description}; e.g. {example.strip()}")
            ),
            "application/json": OpenAPIMediaType(
                schema=Schema(type=OpenAPIType.ARRAY, items=row, min_items=MIN_CELL_ITEMS), example=EXAMPLE_ROWS
            ),
        },
    )


@dataclass
class LabelledRowsOperation(Operation):
    """POST /v1/calibrations: the labelled rows (the handler reads the raw body)."""

    def __post_init__(self) -> None:
        self.request_body = _labelled_rows_body()


@dataclass
class OptionalBodyOperation(Operation):
    """An operation whose body may be left out (POST /v1/calibration/reload: no body reloads the current path)."""

    def __post_init__(self) -> None:
        if isinstance(self.request_body, RequestBody):
            self.request_body.required = False


def _jobs_body(max_job_items: int) -> RequestBody:
    """JSON Lines, or 1..MAX_JOB_ITEMS items as JSON (service.jobs.intake)."""
    item = Schema(type=None, description="a /v1/score body (ScoreRequest; its item_id is echoed in the result line)")
    items = Schema(type=OpenAPIType.ARRAY, items=item, min_items=1, max_items=max_job_items)
    return RequestBody(
        required=True,
        description='JSON Lines, one item per line, or {"items": [...]} as JSON',
        content={
            "application/x-ndjson": OpenAPIMediaType(schema=item),
            "application/json": OpenAPIMediaType(
                schema=Schema(
                    type=OpenAPIType.OBJECT,
                    required=["items"],
                    additional_properties=False,
                    properties={"items": items},
                )
            ),
        },
    )


def jobs_operation(max_job_items: int) -> type[Operation]:
    """POST /v1/jobs's operation class on a deployment whose MAX_JOB_ITEMS is ``max_job_items``."""

    @dataclass
    class JobsOperation(Operation):
        def __post_init__(self) -> None:
            self.request_body = _jobs_body(max_job_items)

    return JobsOperation
