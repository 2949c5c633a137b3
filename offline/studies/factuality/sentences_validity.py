"""The sentence fact-checks' calibration for the artifact: their faithfulness cells under the validity rules, the
validity report, and the faithfulness study without those cells (so no cell is exported twice).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from calibration.kinds.fit import KindFit
from offline.data.frank import FrankItem
from offline.jsonfile import write_json
from offline.studies.conformal.validity import ValiditySummary, run_validity_study
from offline.studies.conformal.validity import markdown as validity_markdown
from offline.studies.factuality.faithfulness import FaithfulnessStudy, faithfulness_data
from offline.studies.factuality.llm import FactualityAnswer
from offline.studies.factuality.sentences_store import PROMPT_FAMILY

__all__ = [
    "VALIDITY_JSON_FILE",
    "VALIDITY_MARKDOWN_FILE",
    "sentence_validity",
    "without_prompt_family",
    "write_sentence_validity",
]

VALIDITY_JSON_FILE = "factuality/llm_sentences_validity.json"
VALIDITY_MARKDOWN_FILE = "factuality/llm_sentences_validity.md"


def sentence_validity(
    items: Sequence[FrankItem],
    answers: dict[tuple[str, str], list[FactualityAnswer]],
    *,
    n_splits: int,
    seed: int,
    delta: float | None,
) -> tuple[ValiditySummary, dict[tuple[str, str, str, str], KindFit]]:
    """The ``factuality_sentences`` cells under the validity rules (:mod:`offline.studies.conformal.validity`): verdict
    ``judge_score`` (input kind ``score``), target ``faithfulness_target(Factuality)``, splits that keep each FRANK
    article (the item id's hash) on one side, PAC thresholds at ``delta`` (marginal when None). Returns the
    summary and the fits ``export_thresholds(fits=...)`` takes."""
    cells = [part.data for part in faithfulness_data(items, answers)]
    return run_validity_study(cells, n_splits=n_splits, seed=seed, delta=delta)


def write_sentence_validity(summary: ValiditySummary, report_dir: Path) -> tuple[Path, Path]:
    """Write ``factuality/llm_sentences_validity.{json,md}`` (the validity study's layout); both paths."""
    json_path, md_path = Path(report_dir) / VALIDITY_JSON_FILE, Path(report_dir) / VALIDITY_MARKDOWN_FILE
    write_json(summary, json_path)
    md_path.write_text(
        validity_markdown(summary).replace(
            "# Validity of the served artifact",
            "# FRANK sentence-level fact-checks: validity of the served artifact",
            1,
        ),
        encoding="utf-8",
    )
    return json_path, md_path


def without_prompt_family(study: FaithfulnessStudy | None, family: str = PROMPT_FAMILY) -> FaithfulnessStudy | None:
    """The faithfulness study minus one prompt family's cells, predictors and defaults (their artifact entries
    come from :func:`sentence_validity` instead, so no cell is exported twice)."""
    if study is None:
        return None
    summary = msgspec.structs.replace(
        study.summary,
        cells=[c for c in study.summary.cells if c.prompt_family != family],
        default_methods=[d for d in study.summary.default_methods if d.prompt_family != family],
    )
    fitted = {key: value for key, value in study.fitted.items() if key[1] != family}
    return FaithfulnessStudy(summary=summary, fitted=fitted)
