"""A calibration fitted on SummEval's abstractive systems only: the study's "new kind of input" starts from it.

The same fit functions as ``calibrate --labels`` (:func:`offline.studies.conformal.validity.run_validity_study`: per
cell and input kind, PAC thresholds at delta = 0.05, held-out splits by document, the default method by cross-fitting;
:func:`offline.build.rules.export_rules`: certified decision rules over the shipped grid, documents as the
unit; :func:`offline.build.export.build_artifact`), run on the abstractive items of the given cells (12 of 16 systems).
"""

from __future__ import annotations

from collections.abc import Sequence

from artifact.thresholds import ThresholdsArtifact
from offline.build.cell_data import JudgeCriterionData
from offline.build.export import build_artifact, code_version
from offline.build.rules import export_rules
from offline.studies.conformal.validity import run_validity_study
from offline.studies.monitoring.scenarios import by_systems

__all__ = ["abstractive_artifact"]


def abstractive_artifact(datasets: Sequence[JudgeCriterionData], *, n_splits: int, seed: int) -> ThresholdsArtifact:
    """An artifact calibrating ``datasets``' cells on their abstractive items only (module rules)."""
    subsets = [by_systems(d, extractive=False) for d in datasets]
    _, fits = run_validity_study(subsets, n_splits=n_splits, seed=seed)
    return build_artifact(
        data_hash="",
        code_version=code_version(),
        fits=fits,
        decision_rules=export_rules(subsets, seed=seed),
        source=f"offline monitor: the abstractive systems' items only (extractive M0, M1, M2, M5 left out), "
        f"validity study with {n_splits} splits by document, seed {seed}",
    )
