"""The sentence fact-checks' validity report: the held-out evidence of their faithfulness fits (the build's,
:mod:`offline.build.factuality.validity`) in the validity study's layout,
``factuality/llm_sentences_validity.{json,md}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from artifact.input_kinds import FitKey
from calibration.input_kinds.fit import InputKindFit
from offline.jsonfile import write_json
from offline.studies.conformal.validity import ValiditySummary, validity_summary
from offline.studies.conformal.validity import markdown as validity_markdown

__all__ = ["VALIDITY_JSON_FILE", "VALIDITY_MARKDOWN_FILE", "sentence_validity", "write_sentence_validity"]

VALIDITY_JSON_FILE = "factuality/llm_sentences_validity.json"
VALIDITY_MARKDOWN_FILE = "factuality/llm_sentences_validity.md"


def sentence_validity(
    fits: Mapping[FitKey, InputKindFit], *, n_splits: int, seed: int, delta: float | None
) -> ValiditySummary:
    """The summary of the sentence cells' fits in one mode (the pac one when both were fitted)."""
    return validity_summary(fits, n_splits=n_splits, seed=seed, delta=delta)


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
