"""The sentence fact-checks' faithfulness cells as the artifact carries them: fitted by the SummEval cells' rules
(:mod:`offline.build.input_kinds`), and the faithfulness fits without those cells (so no cell is exported twice).

Rules: verdict ``judge_score`` (input kind ``score``), target ``faithfulness_target(Factuality)``, splits that keep
each FRANK article (the item id's hash) on one side, PAC thresholds at ``delta`` (the expected mode when None).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from artifact.input_kinds import FitKey
from calibration.input_kinds.fit import InputKindFit
from offline.build.cell_data import JudgeCriterionData
from offline.build.factuality.answers import FactualityAnswer
from offline.build.factuality.faithfulness import FaithfulnessStudy, faithfulness_data
from offline.build.factuality.sentences import PROMPT_FAMILY
from offline.build.input_kinds import fit_input_kinds
from offline.build.inputs.frank import FrankItem

__all__ = ["sentence_cells", "sentence_fits", "without_prompt_family"]


def sentence_cells(
    items: Sequence[FrankItem], answers: dict[tuple[str, str], list[FactualityAnswer]]
) -> list[JudgeCriterionData]:
    """The ``factuality_sentences`` cells: each judge's stored sentence fact-checks aligned with the target."""
    return [part.data for part in faithfulness_data(items, answers)]


def sentence_fits(
    items: Sequence[FrankItem],
    answers: dict[tuple[str, str], list[FactualityAnswer]],
    *,
    n_splits: int,
    seed: int,
    delta: float | None,
) -> dict[FitKey, InputKindFit]:
    """The sentence cells fitted in one mode (module rules), keyed for the artifact."""
    return fit_input_kinds(sentence_cells(items, answers), n_splits=n_splits, seed=seed, delta=delta)


def without_prompt_family(study: FaithfulnessStudy | None, family: str = PROMPT_FAMILY) -> FaithfulnessStudy | None:
    """The faithfulness study minus one prompt family's cells, predictors and defaults (their artifact entries
    come from :func:`sentence_fits` instead, so no cell is exported twice)."""
    if study is None:
        return None
    summary = msgspec.structs.replace(
        study.summary,
        cells=[c for c in study.summary.cells if c.prompt_family != family],
        default_methods=[d for d in study.summary.default_methods if d.prompt_family != family],
    )
    fitted = {key: value for key, value in study.fitted.items() if key[1] != family}
    return FaithfulnessStudy(summary=summary, fitted=fitted)
