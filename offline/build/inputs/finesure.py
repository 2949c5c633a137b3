"""Loader of recorded sentence-level LLM fact-checks of FRANK summaries (``<data_dir>/frank/llm/finesure``).

One file per LLM judge (its name is the file name without ``.jsonl``), recorded with the FineSurE fact-checking
prompt (Song et al., ACL 2024), not with the prompts of our paper 001. One row per FRANK item the judge saw:
``hash``, ``model_name``, ``dataset``, ``split``, ``sentences`` (the summary split into sentences), ``response``
(the raw reply), ``pred_error`` / ``pred_error_type`` (the recorder's own reading of the reply, kept only to
measure agreement with ours), and ``human_sentence_annotations`` (FRANK's annotators: per annotator
``factuality_labels``, 1 = error, one per sentence, and ``factuality_types``).

=======================================  =========================================================
call                                     result
=======================================  =========================================================
``load_finesure(data_dir, frank)``       ``[RecordedFactCheck]``, one per judge file, sorted by name
``row.item_id``                          ``"<hash>/<model_name>"`` (the FRANK item it joins to)
``row.human_majority()``                 per sentence: True when most annotators marked an error
=======================================  =========================================================

Rules: every row must join a FRANK item on ``(hash, model_name)`` with the same ``dataset`` and ``split``; a
judge must not hold an item twice; every annotator's ``factuality_labels`` must give one 0/1 label per
sentence. An annotator's ``factuality_types`` is kept only when it also has one type per sentence (FRANK lists
several types of one sentence side by side, so a longer list cannot be aligned to sentences); otherwise it is
None and counted by the studies, never guessed. Problems raise :class:`DataError` (``file:line: problem``).
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from offline.build.inputs.errors import DataError, decode_jsonl
from offline.build.inputs.frank import Frank, frank_item_id

__all__ = ["FINESURE_DIR", "Annotator", "FactCheckRow", "RecordedFactCheck", "load_finesure"]

FINESURE_DIR = Path("frank") / "llm" / "finesure"


class _Annotation(msgspec.Struct, forbid_unknown_fields=False):
    factuality_labels: list[int]
    factuality_types: list[str]


class _Row(msgspec.Struct, forbid_unknown_fields=False):
    hash: str
    model_name: str
    dataset: str
    split: str
    sentences: list[str]
    response: str | None
    pred_error: list[int]
    pred_error_type: list[str]
    human_sentence_annotations: dict[str, _Annotation]


_DECODER = msgspec.json.Decoder(_Row)


class Annotator(msgspec.Struct, frozen=True, kw_only=True):
    """One FRANK annotator on one summary: a 0/1 label per sentence, and types per sentence when aligned."""

    name: str
    labels: tuple[int, ...]
    types: tuple[str, ...] | None  # None: the recorded type list does not have one type per sentence


class FactCheckRow(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded fact-check of one FRANK summary, with the human sentence annotations."""

    judge: str
    line: int
    hash: str
    model_name: str
    dataset: str
    split: str
    sentences: tuple[str, ...]
    response: str | None
    pred_error: tuple[int, ...]
    pred_error_type: tuple[str, ...]
    annotators: tuple[Annotator, ...]

    @property
    def item_id(self) -> str:
        """The FRANK item's id, ``"<hash>/<model_name>"``."""
        return frank_item_id(self.hash, self.model_name)

    def human_majority(self) -> list[bool]:
        """Per sentence: more than half of the annotators labelled an error (3 annotators: at least 2)."""
        n = len(self.annotators)
        return [2 * sum(a.labels[i] for a in self.annotators) > n for i in range(len(self.sentences))]


class RecordedFactCheck(msgspec.Struct, frozen=True, kw_only=True):
    """One judge's file: its name, path and rows in file order."""

    judge: str
    path: str
    rows: tuple[FactCheckRow, ...]


_Keys = dict[tuple[str, str], tuple[str, str]]


def _row(judge: str, path: Path, line: int, raw: _Row, frank_keys: _Keys) -> FactCheckRow:
    where = frank_keys.get((raw.hash, raw.model_name))
    if where is None:
        raise DataError(path, line, f"(hash, model_name) {(raw.hash, raw.model_name)} is no FRANK item")
    if where != (raw.dataset, raw.split):
        raise DataError(path, line, f"dataset/split {(raw.dataset, raw.split)} disagree with FRANK's {where}")
    n = len(raw.sentences)
    if n == 0:
        raise DataError(path, line, "no sentences")
    if not raw.human_sentence_annotations:
        raise DataError(path, line, "no human_sentence_annotations")
    annotators = []
    for name, annotation in sorted(raw.human_sentence_annotations.items()):
        labels = annotation.factuality_labels
        if len(labels) != n or any(label not in (0, 1) for label in labels):
            raise DataError(path, line, f"annotator {name!r}: factuality_labels must be {n} values 0/1; got {labels}")
        types = tuple(annotation.factuality_types) if len(annotation.factuality_types) == n else None
        annotators.append(Annotator(name=name, labels=tuple(labels), types=types))
    return FactCheckRow(
        judge=judge,
        line=line,
        hash=raw.hash,
        model_name=raw.model_name,
        dataset=raw.dataset,
        split=raw.split,
        sentences=tuple(raw.sentences),
        response=raw.response,
        pred_error=tuple(raw.pred_error),
        pred_error_type=tuple(raw.pred_error_type),
        annotators=tuple(annotators),
    )


def load_finesure(data_dir: Path | str, frank: Frank) -> list[RecordedFactCheck]:
    """Every judge file under ``<data_dir>/frank/llm/finesure`` (module rules); [] when the folder is absent."""
    folder = Path(data_dir) / FINESURE_DIR
    if not folder.is_dir():
        return []
    frank_keys = {item.key: (item.dataset, item.split) for item in frank.items}
    judges = []
    for path in sorted(folder.glob("*.jsonl")):
        judge = path.name.removesuffix(".jsonl")
        rows, seen = [], set()
        for line, raw in decode_jsonl(path, _DECODER):
            row = _row(judge, path, line, raw, frank_keys)
            if row.item_id in seen:
                raise DataError(path, line, f"item {row.item_id!r} appears twice")
            seen.add(row.item_id)
            rows.append(row)
        if not rows:
            raise DataError(path, None, "no rows")
        judges.append(RecordedFactCheck(judge=judge, path=str(path), rows=tuple(rows)))
    return judges
