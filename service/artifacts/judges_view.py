"""GET /v1/judges: the judges the service knows, built from the configured judges and the loaded calibration.

Order: the configured judges (JUDGES_FILE order), then the judges known only from the calibration (sorted; the
caller sends their verdicts). Two views of the same list:

* ``full``: per judge its configuration and every calibrated (prompt family, criterion) with its methods, levels
  and default method.
* ``summary`` (the default): per judge what it is (configured, model, a panel's members), what it is calibrated
  for (criteria, prompt families, input kinds, the span of calibrated alphas) and which certified modes /v1/score
  can ask of it: a decision (the criteria with a certified accept/escalate rule for some input kind) and a quality
  gate (the criteria whose rule has a certified gate); plus the artifact's levels once and the configured panels
  and cascades. Everything is read from the snapshot and the configuration; nothing is re-estimated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import Any
from urllib.parse import quote

import msgspec

from calibration.input_kinds.mean_panel import is_panel_name, panel_members
from service.artifacts.snapshot import CalibrationSnapshot
from service.wire.judges import JudgeCalibration, JudgeGroup, JudgeInfo, JudgesResponse, JudgesSummary, JudgeSummary

__all__ = ["ConfiguredJudge", "judges_full", "judges_summary", "report_path", "with_reports"]


class ConfiguredJudge(msgspec.Struct, frozen=True, kw_only=True):
    """What the view shows of a JUDGES_FILE entry."""

    name: str
    model: str
    prompt_family: str
    logprobs: bool

    @classmethod
    def of(cls, name: str, config: Any) -> ConfiguredJudge:
        """From a ``judges.config.JudgeConfig``."""
        return cls(name=name, model=config.model, prompt_family=config.prompt_family, logprobs=bool(config.logprobs))


def _names(snapshot: CalibrationSnapshot | None, configured: Sequence[ConfiguredJudge]) -> list[str]:
    names = [judge.name for judge in configured]
    calibrated = snapshot.judges() if snapshot is not None else []
    return names + [name for name in calibrated if name not in names]


def judges_full(
    snapshot: CalibrationSnapshot | None, configured: Sequence[ConfiguredJudge], default_judge: str | None
) -> JudgesResponse:
    """The full view: every judge with its configuration and calibrated cells (module docstring)."""
    by_name = {judge.name: judge for judge in configured}
    judges: list[JudgeInfo] = []
    for name in _names(snapshot, configured):
        config = by_name.get(name)
        calibrations = (
            [
                JudgeCalibration(
                    prompt_family=family,
                    criterion=criterion,
                    methods=snapshot.methods(name, family, criterion),
                    levels=snapshot.levels_for(name, family, criterion),
                    default_method=snapshot.index.default_method(name, family, criterion),
                )
                for family, criterion in snapshot.cells(name)
            ]
            if snapshot is not None
            else []
        )
        judges.append(
            JudgeInfo(
                name=name,
                configured=config is not None,
                model=None if config is None else config.model,
                prompt_family=None if config is None else config.prompt_family,
                logprobs=None if config is None else config.logprobs,
                calibrated_criteria=sorted({c.criterion for c in calibrations}),
                calibrations=calibrations,
            )
        )
    return JudgesResponse(default_judge=default_judge, judges=judges)


def _members(name: str) -> list[str] | None:
    if not is_panel_name(name):
        return None
    try:
        return list(panel_members(name))
    except ValueError:  # a panel-like name that is not canonical: shown as one judge
        return None


def judges_summary(
    snapshot: CalibrationSnapshot | None,
    configured: Sequence[ConfiguredJudge],
    default_judge: str | None,
    *,
    panels: Mapping[str, Sequence[str]],
    cascades: Mapping[str, Sequence[str]],
) -> JudgesSummary:
    """The short view (module docstring), memoised on the snapshot for a given configuration."""
    key = ("judges_summary", tuple(configured), default_judge, tuple(panels.items()), tuple(cascades.items()))
    if snapshot is not None:
        known = snapshot.memo.get(key)
        if isinstance(known, JudgesSummary):
            return known
    by_name = {judge.name: judge for judge in configured}
    families: dict[str, set[str]] = {}
    criteria: dict[str, set[str]] = {}
    kinds: dict[str, set[str]] = {}
    alphas: dict[str, set[float]] = {}
    decisions: dict[str, set[str]] = {}
    gates: dict[str, set[str]] = {}
    if snapshot is not None:
        for entry in snapshot.artifact.entries:
            families.setdefault(entry.judge, set()).add(entry.prompt_family)
            criteria.setdefault(entry.judge, set()).add(entry.criterion)
            kinds.setdefault(entry.judge, set()).add(entry.kind)
            alphas.setdefault(entry.judge, set()).add(entry.alpha)
        for (judge, _, criterion, _), rule in snapshot.decision_rules.items():
            if rule.certifications:
                decisions.setdefault(judge, set()).add(criterion)
            if rule.quality_gates:
                gates.setdefault(judge, set()).add(criterion)
    judges = []
    for name in _names(snapshot, configured):
        config = by_name.get(name)
        span = sorted(alphas.get(name, ()))
        judges.append(
            JudgeSummary(
                name=name,
                configured=config is not None,
                model=None if config is None else config.model,
                members=_members(name),
                criteria=sorted(criteria.get(name, ())),
                prompt_families=sorted(families.get(name, ())),
                input_kinds=sorted(kinds.get(name, ())),
                alpha_range=[span[0], span[-1]] if span else None,
                decisions=sorted(decisions.get(name, ())),
                quality_gates=sorted(gates.get(name, ())),
            )
        )
    summary = JudgesSummary(
        view="summary",
        default_judge=default_judge,
        calibration_id=None if snapshot is None else snapshot.calibration_id,
        levels=[] if snapshot is None else snapshot.levels(),
        panels=[JudgeGroup(name=name, judges=list(members)) for name, members in panels.items()],
        cascades=[JudgeGroup(name=name, judges=list(stages)) for name, stages in cascades.items()],
        judges=judges,
    )
    if snapshot is not None:
        snapshot.remember(key, summary)
    return summary


def with_reports(summary: JudgesSummary, reported: Set[str]) -> JudgesSummary:
    """The summary with each judge's report page linked when it has a shipped report card."""
    if not reported:
        return summary
    judges = [
        msgspec.structs.replace(judge, report=report_path(judge.name)) if judge.name in reported else judge
        for judge in summary.judges
    ]
    return msgspec.structs.replace(summary, judges=judges)


def report_path(judge: str) -> str:
    """The path of a judge's report page (its name percent-encoded as one path segment)."""
    return f"/v1/judges/{quote(judge, safe='')}/report.html"
