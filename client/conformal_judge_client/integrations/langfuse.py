"""Write the Conformal Judge verdict to Langfuse as a score: ``write_verdict`` and ``score_and_write``.

``write_verdict(langfuse, result, trace_id=...)`` calls the Langfuse SDK's ``create_score`` with

* ``value`` and ``data_type`` by ``as_``: ``"point"`` (default) the calibrated point label, ``NUMERIC``;
  ``"decision"`` the certified decision (``accept`` / ``escalate`` / ``second_opinion``), ``CATEGORICAL``;
  ``"accepted"`` 1 when the decision is ``accept`` else 0, ``BOOLEAN``;
* ``name``: ``conformal-judge/<criterion>`` unless given;
* ``comment``: the point, the prediction set, the decision and the service's reason (``explain``);
* ``metadata``: ``verdict_metadata`` (``prediction_set``, ``decision``, ``confidence``, ``guarantees`` ...).

The score goes to a trace (``trace_id``, optionally ``observation_id``), a session (``session_id``) or a dataset
run (``dataset_run_id``); at least one is required. The SDK queues it and sends it in the background: call
``langfuse.flush()`` before the process ends (the SDK logs, and does not raise, when Langfuse rejects a batch).

``score_and_write(client, langfuse, body, ...)`` asks the service first. When the service gives no verdict (its
problem as ``ApiError``, e.g. a 502 when the judge call failed, or ``TransportError``) the exception is raised and
nothing is written: a failure never becomes a score.

Needs the Langfuse SDK: ``pip install './client[langfuse]'``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Literal

from ..results import ScoreResult
from ..sync_client import Client
from .verdicts import explain, verdict_metadata

try:
    from langfuse import Langfuse
except ImportError as missing:  # pragma: no cover - the message is the point
    raise ImportError(
        "conformal_judge_client.integrations.langfuse needs langfuse: pip install 'conformal-judge-client[langfuse]'"
    ) from missing

__all__ = ["score_and_write", "write_verdict"]

ValueKind = Literal["point", "decision", "accepted"]


def score_value(result: ScoreResult, as_: ValueKind) -> tuple[float | str, str]:
    """The score's (value, Langfuse data type) for ``as_``."""
    if as_ == "point":
        return float(result.point), "NUMERIC"
    if as_ == "decision":
        return result.decision, "CATEGORICAL"
    if as_ == "accepted":
        return (1.0 if result.decision == "accept" else 0.0), "BOOLEAN"
    raise ValueError(f"as_ must be 'point', 'decision' or 'accepted', not {as_!r}")


def write_verdict(
    langfuse: Langfuse,
    result: ScoreResult,
    *,
    trace_id: str | None = None,
    observation_id: str | None = None,
    session_id: str | None = None,
    dataset_run_id: str | None = None,
    name: str | None = None,
    as_: ValueKind = "point",
    score_id: str | None = None,
) -> str:
    """Queue the verdict as a Langfuse score (see the module docstring); returns the score's id."""
    if trace_id is None and session_id is None and dataset_run_id is None:
        raise ValueError("a Langfuse score needs a trace_id, a session_id or a dataset_run_id")
    if observation_id is not None and trace_id is None:
        raise ValueError("observation_id needs the trace_id of its trace")
    value, data_type = score_value(result, as_)
    score_id = score_id or uuid.uuid4().hex
    common: dict[str, Any] = {
        "name": name or f"conformal-judge/{result.criterion}",
        "comment": explain(result),
        "metadata": verdict_metadata(result),
        "score_id": score_id,
        "trace_id": trace_id,
        "observation_id": observation_id,
        "session_id": session_id,
        "dataset_run_id": dataset_run_id,
    }
    if isinstance(value, str):
        langfuse.create_score(value=value, data_type="CATEGORICAL", **common)
    else:
        langfuse.create_score(value=value, data_type="BOOLEAN" if data_type == "BOOLEAN" else "NUMERIC", **common)
    return score_id


def score_and_write(
    client: Client,
    langfuse: Langfuse,
    body: Mapping[str, Any],
    **where: Any,
) -> tuple[ScoreResult, str]:
    """Score ``body`` with the service, then write the verdict with ``write_verdict(langfuse, result, **where)``;
    (the verdict, the score's id). Raises the client's error, writing nothing, when the service gives no verdict."""
    result = client.score(body)
    return result, write_verdict(langfuse, result, **where)
