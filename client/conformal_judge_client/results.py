"""Typed answers of the API: frozen dataclasses of the fields most callers read, with the whole JSON in ``raw``.

Every answer also reads like the JSON object it came from (``result["qa_score"]``), so a field the dataclass does
not name (or one a newer service adds) stays reachable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "Activation",
    "BatchItem",
    "BatchResult",
    "CalibrationJob",
    "CompareResult",
    "Guarantee",
    "Health",
    "HealthCheck",
    "JobAccepted",
    "JobOutcome",
    "JobStatus",
    "PairResult",
    "Problem",
    "ScoreResult",
]

JobState = Literal["queued", "running", "succeeded", "failed", "cancelled"]
FINAL_JOB_STATES = frozenset({"succeeded", "failed", "cancelled"})


@dataclass(frozen=True)
class _Raw:
    raw: Mapping[str, Any] = field(repr=False, compare=False, kw_only=True)

    def __getitem__(self, key: str) -> Any:
        """A field of the JSON answer by name."""
        return self.raw[key]

    def get(self, key: str, default: Any = None) -> Any:
        """A field of the JSON answer by name, or ``default``."""
        return self.raw.get(key, default)


@dataclass(frozen=True)
class Problem(_Raw):
    """An RFC 9457 problem object inside an answer (a failed batch item or job line)."""

    type: str
    title: str
    status: int
    detail: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Problem:
        """Read a problem object."""
        return cls(
            type=data.get("type", "about:blank"),
            title=data.get("title", ""),
            status=int(data.get("status", 0)),
            detail=data.get("detail", ""),
            raw=data,
        )


@dataclass(frozen=True)
class Guarantee(_Raw):
    """One promise of a score answer: its kind (set_coverage, accept_error, quality_gate), level, guarantee mode
    (``expected``: on average over calibrations; ``pac``: with ``confidence`` over them; None from a service
    older than the modes) and, in pac, its confidence and bound."""

    kind: str
    alpha: float
    confidence: float | None
    mode: str | None = None
    bound: float | None = None
    tolerance: int | None = None
    pass_threshold: int | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Guarantee:
        """Read a guarantee object."""
        return cls(
            kind=data["kind"],
            alpha=data["alpha"],
            confidence=data.get("confidence"),
            mode=data.get("mode"),
            bound=data.get("bound"),
            tolerance=data.get("tolerance"),
            pass_threshold=data.get("pass_threshold"),
            raw=data,
        )


@dataclass(frozen=True)
class ScoreResult(_Raw):
    """The answer of ``POST /v1/score``: the prediction set, calibrated point and certified decision."""

    point: int
    prediction_set: tuple[int, ...]
    set_size: int
    decision: Literal["accept", "escalate", "second_opinion"]
    escalate: bool
    rule_failed: bool
    reason: str
    guarantees: tuple[Guarantee, ...]
    alpha: float
    coverage_target: float
    calibrated: bool
    criterion: str
    judge: str
    judge_score: int
    method: str | None
    input_kind: str | None
    source: str
    item_id: str | None
    calibration_id: str | None
    flags: tuple[str, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScoreResult:
        """Read a score answer."""
        return cls(
            point=data["point"],
            prediction_set=tuple(data["prediction_set"]),
            set_size=data["set_size"],
            decision=data["decision"],
            escalate=data["escalate"],
            rule_failed=data["rule_failed"],
            reason=data["reason"],
            guarantees=tuple(Guarantee.from_json(g) for g in data["guarantees"]),
            alpha=data["alpha"],
            coverage_target=data["coverage_target"],
            calibrated=data["calibrated"],
            criterion=data["criterion"],
            judge=data["judge"],
            judge_score=data["judge_score"],
            method=data.get("method"),
            input_kind=data.get("input_kind"),
            source=data["source"],
            item_id=data.get("item_id"),
            calibration_id=data.get("calibration_id"),
            flags=tuple(data.get("flags") or ()),
            raw=data,
        )


@dataclass(frozen=True)
class BatchItem(_Raw):
    """One item of a batch answer or one line of a job's results: its ``result`` or its ``error``."""

    index: int
    ok: bool
    item_id: str | None
    result: ScoreResult | None
    error: Problem | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BatchItem:
        """Read a batch item or job result line."""
        result, error = data.get("result"), data.get("error")
        return cls(
            index=data["index"],
            ok=data["ok"],
            item_id=data.get("item_id"),
            result=ScoreResult.from_json(result) if result is not None else None,
            error=Problem.from_json(error) if error is not None else None,
            raw=data,
        )


@dataclass(frozen=True)
class BatchResult(_Raw):
    """The answer of ``POST /v1/score/batch``: every item in input order, and the counts."""

    results: tuple[BatchItem, ...]
    n_ok: int
    n_failed: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BatchResult:
        """Read a batch answer."""
        return cls(
            results=tuple(BatchItem.from_json(r) for r in data["results"]),
            n_ok=data["n_ok"],
            n_failed=data["n_failed"],
            raw=data,
        )


@dataclass(frozen=True)
class PairResult(_Raw):
    """One pair of a compare answer: the wins, ties and the certified accept/abstain decision."""

    a: str
    b: str
    decision: Literal["accept", "abstain"]
    preferred: str | None
    winner: str | None
    wins_a: int
    wins_b: int
    ties: int
    n: int
    win_share: float
    reason: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PairResult:
        """Read a pair result."""
        return cls(
            a=data["a"],
            b=data["b"],
            decision=data["decision"],
            preferred=data.get("preferred"),
            winner=data.get("winner"),
            wins_a=data["wins_a"],
            wins_b=data["wins_b"],
            ties=data["ties"],
            n=data["n"],
            win_share=data["win_share"],
            reason=data["reason"],
            raw=data,
        )


@dataclass(frozen=True)
class CompareResult(_Raw):
    """The answer of ``POST /v1/compare``: cycles, violation rate, rankings by method and per-pair decisions."""

    candidates: tuple[str, ...]
    cycles: tuple[tuple[str, ...], ...]
    n_cycles: int
    violation_rate: float
    flagged: bool
    complete: bool
    rankings: Mapping[str, tuple[str, ...]]
    pairs: tuple[PairResult, ...]
    reason: str
    source: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CompareResult:
        """Read a compare answer."""
        return cls(
            candidates=tuple(data["candidates"]),
            cycles=tuple(tuple(c) for c in data["cycles"]),
            n_cycles=data["n_cycles"],
            violation_rate=data["violation_rate"],
            flagged=data["flagged"],
            complete=data["complete"],
            rankings={k: tuple(v) for k, v in data["rankings"].items()},
            pairs=tuple(PairResult.from_json(p) for p in data["pairs"]),
            reason=data["reason"],
            source=data["source"],
            raw=data,
        )


@dataclass(frozen=True)
class JobAccepted(_Raw):
    """The answer of ``POST /v1/jobs``; ``replayed`` when an Idempotency-Key answered an earlier job again."""

    job_id: str
    status: JobState
    n_items: int
    status_url: str
    results_url: str
    replayed: bool = False

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, replayed: bool = False) -> JobAccepted:
        """Read a job acceptance."""
        return cls(
            job_id=data["job_id"],
            status=data["status"],
            n_items=data["n_items"],
            status_url=data["status_url"],
            results_url=data["results_url"],
            replayed=replayed,
            raw=data,
        )


@dataclass(frozen=True)
class JobStatus(_Raw):
    """A job's status and progress (``GET /v1/jobs/{id}``)."""

    job_id: str
    status: JobState
    n_items: int
    n_done: int
    n_failed: int
    items_per_second: float | None
    eta_s: float | None
    created_at: str
    started_at: str | None
    finished_at: str | None

    @property
    def finished(self) -> bool:
        """True once the job succeeded, failed or was cancelled."""
        return self.status in FINAL_JOB_STATES

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JobStatus:
        """Read a job status."""
        return cls(
            job_id=data["job_id"],
            status=data["status"],
            n_items=data["n_items"],
            n_done=data["n_done"],
            n_failed=data["n_failed"],
            items_per_second=data.get("items_per_second"),
            eta_s=data.get("eta_s"),
            created_at=data["created_at"],
            started_at=data.get("started_at"),
            finished_at=data.get("finished_at"),
            raw=data,
        )


@dataclass(frozen=True)
class JobOutcome:
    """A followed job: its final status and every result line, in input order."""

    status: JobStatus
    results: tuple[BatchItem, ...]


@dataclass(frozen=True)
class CalibrationJob(_Raw):
    """A calibration job (``/v1/calibrations/{id}``): progress, and when done its cells with held-out figures."""

    id: str
    status: Literal["queued", "running", "done", "failed"]
    artifact_name: str
    n_rows: int
    progress: float
    activated: bool
    cells: tuple[Mapping[str, Any], ...]
    warnings: tuple[str, ...]
    error: str | None

    @property
    def finished(self) -> bool:
        """True once the job is done or failed."""
        return self.status in ("done", "failed")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CalibrationJob:
        """Read a calibration job."""
        return cls(
            id=data["id"],
            status=data["status"],
            artifact_name=data["artifact_name"],
            n_rows=data["n_rows"],
            progress=data["progress"],
            activated=data["activated"],
            cells=tuple(data["cells"]),
            warnings=tuple(data["warnings"]),
            error=data.get("error"),
            raw=data,
        )


@dataclass(frozen=True)
class Activation(_Raw):
    """The answer of activating a calibration: the artifact and the cells it added, replaced or removed."""

    artifact: str
    cells_added: int
    cells_replaced: int
    cells_removed: int
    previous_calibration_id: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Activation:
        """Read an activation answer."""
        return cls(
            artifact=data["artifact"],
            cells_added=data["cells_added"],
            cells_replaced=data["cells_replaced"],
            cells_removed=data.get("cells_removed", 0),
            previous_calibration_id=data.get("previous_calibration_id"),
            raw=data,
        )


@dataclass(frozen=True)
class HealthCheck:
    """One readiness check: its name, whether it passed, and what it found."""

    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class Health(_Raw):
    """The answer of ``/healthz`` or ``/readyz``; ``ready`` is False when ``/readyz`` answered 503."""

    ready: bool
    status: str | None
    checks: tuple[HealthCheck, ...]
    degraded: tuple[str, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, ready: bool = True) -> Health:
        """Read a health answer (or the problem of a 503 readiness answer)."""
        checks = tuple(HealthCheck(c["name"], c["ok"], c["detail"]) for c in data.get("checks") or ())
        return cls(
            ready=ready,
            status=data.get("status") if ready else None,
            checks=checks,
            degraded=tuple(data.get("degraded") or ()),
            raw=data,
        )
