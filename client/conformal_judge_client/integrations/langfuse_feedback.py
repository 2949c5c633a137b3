"""Langfuse human scores as feedback: pair each Conformal Judge verdict score with the human score of the same trace
(or observation) and send the pairs to ``POST /v1/feedback``.

``feedback_items(scores, human_score="human-relevance")`` reads scores as the Langfuse API lists them (objects or
dicts with ``name``, ``value``, ``traceId`` / ``trace_id``, ``observationId`` / ``observation_id`` and
``metadata``): a **verdict** is a score whose name starts with ``conformal-judge/`` (what ``write_verdict`` writes)
and whose metadata names the verdict (``verdict_metadata``: criterion, judge, prompt family, input kind, judge
score, level and guarantees); a **label** is a numeric score named ``human_score``. Each verdict with a label on
the same trace and observation becomes one feedback item: the verdict as it was served (its judge score, level,
tolerance, accept_alpha and guarantee mode), ``human`` the label, ``item_id`` the verdict's own (else
``<trace>/<observation>``), ``group`` the trace (the document). A trace is taken as a finished document: its last
item in ``scores`` carries ``done`` (so pass every labelled score of a trace at once).

Only verdicts served as a judge score can be recomputed from what the metadata holds (log-probabilities are not
kept there): a verdict of another input kind is skipped and counted, as are verdicts without a label and labels
without a verdict. ``send_feedback(client, scores, ...)`` sends the items in requests of at most ``batch`` items.

No Langfuse import: the scores can come from the SDK's API client (``langfuse.api.score_v_2.get(...)``), an export,
or a webhook.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..monitoring import FeedbackResult
from ..sync_client import Client

__all__ = ["FeedbackItems", "feedback_items", "send_feedback"]

VERDICT_PREFIX = "conformal-judge/"


@dataclass(frozen=True)
class FeedbackItems:
    """The feedback items built from the scores, and what could not be paired."""

    items: list[dict[str, Any]] = field(default_factory=list)
    unlabelled_verdicts: int = 0  # verdicts without a human score on their trace / observation
    unmatched_labels: int = 0  # human scores without a verdict
    other_kinds: int = 0  # verdicts not served as a judge score (their inputs are not in the metadata)


def _get(score: Any, *names: str) -> Any:
    for name in names:
        value = score.get(name) if isinstance(score, Mapping) else getattr(score, name, None)
        if value is not None:
            return value
    return None


def _where(score: Any) -> tuple[str, str | None]:
    return str(_get(score, "traceId", "trace_id") or ""), _get(score, "observationId", "observation_id")


def _item(metadata: Mapping[str, Any], human: float, trace: str, observation: str | None) -> dict[str, Any]:
    guarantees = list(metadata.get("guarantees") or [])
    item: dict[str, Any] = {
        "criterion": metadata["criterion"],
        "judge": metadata["judge"],
        "judge_score": int(metadata["judge_score"]),
        "human": human,
        "item_id": metadata.get("item_id") or f"{trace}/{observation or 'trace'}",
        "group": trace,
    }
    if metadata.get("prompt_family"):
        item["prompt_family"] = metadata["prompt_family"]
    if metadata.get("alpha") is not None:
        item["alpha"] = metadata["alpha"]
    if guarantees and guarantees[0].get("mode"):
        item["guarantee"] = guarantees[0]["mode"]
    accept = next((g for g in guarantees if g.get("kind") == "accept_error"), None)
    if accept is not None:
        item["tolerance"], item["accept_alpha"] = accept["tolerance"], accept["alpha"]
    return item


def feedback_items(scores: Iterable[Any], *, human_score: str, verdict_prefix: str = VERDICT_PREFIX) -> FeedbackItems:
    """The feedback items of ``scores`` (module rules), in the order of the verdicts."""
    verdicts: list[tuple[tuple[str, str | None], Mapping[str, Any]]] = []
    labels: dict[tuple[str, str | None], float] = {}
    for score in scores:
        name, metadata = str(_get(score, "name") or ""), _get(score, "metadata")
        if name == human_score and isinstance(_get(score, "value"), int | float):
            labels[_where(score)] = float(_get(score, "value"))
        elif name.startswith(verdict_prefix) and isinstance(metadata, Mapping) and "judge_score" in metadata:
            verdicts.append((_where(score), metadata))
    items, unlabelled, other = [], 0, 0
    used: set[tuple[str, str | None]] = set()
    for where, metadata in verdicts:
        if metadata.get("input_kind") not in (None, "score"):
            other += 1
        elif where not in labels:
            unlabelled += 1
        else:
            used.add(where)
            items.append(_item(metadata, labels[where], *where))
    last = {item["group"]: index for index, item in enumerate(items)}
    for index in last.values():
        items[index]["done"] = True
    return FeedbackItems(
        items=items, unlabelled_verdicts=unlabelled, unmatched_labels=len(set(labels) - used), other_kinds=other
    )


def send_feedback(
    client: Client, scores: Iterable[Any], *, human_score: str, batch: int = 1000
) -> tuple[FeedbackItems, list[FeedbackResult]]:
    """Build the items of ``scores`` and send them (``POST /v1/feedback``), ``batch`` items a request (a trace's
    items may span two requests: its ``done`` item comes last either way)."""
    built = feedback_items(scores, human_score=human_score)
    results = [client.feedback(built.items[i : i + batch]) for i in range(0, len(built.items), batch)]
    return built, results
