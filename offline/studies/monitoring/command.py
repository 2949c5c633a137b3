"""``python -m offline monitor``: the monitoring study on the recorded SummEval judges and the shipped artifact
(or ``--thresholds``), written under ``<out>/monitoring/`` (:mod:`offline.studies.monitoring.report`); exit 0 when
the false-alarm and headline checks pass, 1 otherwise (harmful shifts missed are listed, with their information
bound, and do not fail the command: some are beyond what any document-level test can detect within the horizon)."""

from __future__ import annotations

import argparse
from typing import Any

from offline.build.inputs.errors import DataError
from offline.data.paths import resolve_data_dir

__all__ = ["run_monitor"]


def run_monitor(args: argparse.Namespace, log: Any) -> int:
    """Run the study with the command's options, write its report, print where and the checks."""
    from tqdm import tqdm

    from artifact.thresholds import load_artifact
    from offline.build.export import DEFAULT_THRESHOLDS
    from offline.studies.monitoring.report import write_monitoring_report
    from offline.studies.monitoring.served import ServedLevels
    from offline.studies.monitoring.study import StudySettings, run_study
    from offline.validation.artifact import INPUTS, recorded_datasets

    if args.streams < 1 or args.horizon < 1 or args.splits < 2:
        raise DataError(None, None, "--streams and --horizon must be >= 1, --splits >= 2")
    if not 0 < args.delta < 1:
        raise DataError(None, None, "--delta must lie in (0, 1)")
    if args.input not in INPUTS:
        raise DataError(None, None, f"--input must be one of {', '.join(INPUTS)}")
    artifact = load_artifact(args.thresholds or DEFAULT_THRESHOLDS)
    datasets = recorded_datasets(resolve_data_dir(args.data_dir))
    if args.criteria:
        datasets = [d for d in datasets if d.criterion in args.criteria]
    if args.input != "score":
        datasets = [d for d in datasets if d.probabilities is not None]
    settings = StudySettings(
        streams=args.streams,
        seed=args.seed,
        horizon=args.horizon,
        delta=args.delta,
        levels=ServedLevels(input=args.input),
        fit_splits=args.splits,
    )
    bar = None if args.no_progress else (lambda t: tqdm(t, desc="monitor", leave=False))
    study = run_study(datasets, artifact, settings, progress=bar)
    report = write_monitoring_report(study, args.out)
    checks = report.checks
    log.info(
        "monitor finished",
        rows=len(study.rows),
        false_alarms_ok=checks.false_alarms_ok,
        headline_median=checks.headline_median_labels,
        harmful_detected=f"{checks.harmful_detected}/{checks.harmful_rows}",
    )
    folder = args.out / "monitoring"
    from offline.studies.monitoring.skill import SkillSettings, skill_markdown, skill_table

    skill = skill_table(list(datasets), SkillSettings(streams=args.streams, seed=args.seed))
    (folder / "skill.md").write_text(skill_markdown(skill), encoding="utf-8")
    print(f"written:     {folder / 'monitoring.json'}, {folder / 'monitoring.md'}, {len(report.figures)} figures")
    swaps = sum(row.verdicts_of != row.calibrated for row in skill)
    print(f"skill:       {folder / 'skill.md'} ({swaps} swaps to the weakest judge, {len(skill) - swaps} own streams)")
    print(
        f"false alarms: max {checks.null_max_alarm_rate:.1%} of streams over {checks.null_rows} null rows "
        f"(limit {checks.null_alarm_limit:.1%}); headline median {checks.headline_median_labels} labels "
        f"(p90 {checks.headline_p90_labels}); harmful detected {checks.harmful_detected}/{checks.harmful_rows}"
    )
    return 0 if checks.false_alarms_ok and checks.headline_ok else 1
