"""FineSurE's fact-checking output (``result/fact-checking/frank-raw-data-by-<model>.json``, JSON Lines, one FRANK
summary a row) to ``frank/llm/finesure/<model>.jsonl``: the fields renamed, row order kept."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from offline.data.convert.files import Inputs, dump_jsonl, json_lines

__all__ = ["FIELDS", "convert", "convert_rows"]

# data-file field <- FineSurE field
FIELDS = {
    "hash": "doc_id",
    "model_name": "model",
    "dataset": "source",
    "split": "split",
    "sentences": "sentences",
    "response": "llm_output",
    "pred_error": "pred_faithfulness_labels",
    "pred_error_type": "pred_faithfulness_error_type",
    "human_sentence_annotations": "raw_annotations",
}


def convert_rows(key: str, raw: bytes) -> bytes:
    """One FineSurE file's bytes to the data file's bytes.

    Raises:
        ValueError: a line is not JSON or lacks a field (the file and line named).
    """
    out = []
    for number, row in json_lines(key, raw):
        try:
            out.append({ours: row[theirs] for ours, theirs in FIELDS.items()})
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{key}:{number}: FineSurE row not understood: {exc!r}") from None
    return dump_jsonl(out)


def convert(inputs: Inputs, options: Mapping[str, Any]) -> bytes:
    """The manifest's ``finesure`` step: its single input converted."""
    return convert_rows(*inputs.one("*"))
