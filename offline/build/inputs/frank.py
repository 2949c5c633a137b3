"""Loader for the FRANK factuality benchmark (Pagnoni et al., NAACL 2021) as shipped in ``<data_dir>/frank``.

==========================================  ====================================================
call                                        result
==========================================  ====================================================
``load_frank(data_dir)``                    :class:`Frank`: items, articles, baseline records
``frank.item_keys()``                       ``(hash, model_name)`` per item, in file order
``item.item_id`` / ``frank_item_id(h, m)``  ``"<hash>/<model_name>"``: the item's id in the answer store
``baseline_scores(frank, "FactCC")``        float array aligned to ``frank.items``, NaN = missing
==========================================  ====================================================

Files read (all UTF-8): ``items.jsonl`` (one human-annotated summary per line), ``articles.jsonl`` (one
source article per line) and ``baseline_metrics.json`` (a JSON array: FRANK's released outputs of earlier
metrics, one record per ``(hash, model_name)``). Every problem raises :class:`FrankDataError` (a
:class:`offline.build.inputs.errors.DataError`), reading ``<file>:<line>: <problem>``; in the JSON array the line is
where the record starts and the problem begins with ``record <index>:``.

Alignment rule: items and baseline records are matched on ``(hash, model_name)``; both must hold exactly the
same keys, once each, with the same ``dataset`` and ``split``. Every item's ``hash`` must have an article.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from offline.build.inputs.errors import DataError

__all__ = [
    "CATEGORY_COLUMNS",
    "ERROR_CATEGORIES",
    "ERROR_GROUPS",
    "FRANK_DATASETS",
    "FRANK_SPLITS",
    "BaselineRecord",
    "Frank",
    "FrankArticle",
    "FrankDataError",
    "FrankItem",
    "baseline_scores",
    "frank_item_id",
    "load_frank",
]

FRANK_DATASETS: tuple[str, ...] = ("cnndm", "bbc")
FRANK_SPLITS: tuple[str, ...] = ("valid", "test")
# Per-category human scores: share of the summary's sentences WITHOUT that error. RelE is FRANK's PredE.
ERROR_CATEGORIES: tuple[str, ...] = ("RelE", "EntE", "CircE", "CorefE", "LinkE", "OutE", "GramE", "Other")
ERROR_GROUPS: tuple[str, ...] = ("Semantic_Frame_Errors", "Discourse_Errors", "Content_Verifiability_Errors")
CATEGORY_COLUMNS: tuple[str, ...] = ERROR_CATEGORIES + ERROR_GROUPS

_ITEM_TEXT_FIELDS = ("hash", "model_name", "dataset", "split", "summary", "reference")
_ITEM_SCORE_FIELDS = ("Factuality", *CATEGORY_COLUMNS, *(f"Flip_{c}" for c in CATEGORY_COLUMNS))
_ARTICLE_FIELDS = ("hash", "dataset", "split", "url", "article")
_BASELINE_KEY_FIELDS = ("hash", "model_name", "dataset", "split")


class FrankDataError(DataError):
    """A FRANK file is missing, malformed or inconsistent with the others, or scores do not align with items.

    ``str(error)`` reads ``"<path>:<line>: <problem>"`` (see :class:`offline.build.inputs.errors.DataError`).
    """


@dataclass(frozen=True)
class _At:
    """Where a row sits: file, 1-based line (None for whole-file problems), and a note such as a record index."""

    path: Path
    line: int | None = None
    note: str = ""

    def error(self, problem: str) -> FrankDataError:
        return FrankDataError(self.path, self.line, f"{self.note}{problem}")


class FrankItem(msgspec.Struct, frozen=True, kw_only=True):
    """One human-annotated summary; scores are shares of sentences (0..1) without an error.

    ``categories[c]`` is the share without error category ``c`` (keys: :data:`CATEGORY_COLUMNS`);
    ``flips[c]`` is FRANK's ``Flip_<c>`` column, the factuality score when errors of ``c`` are ignored.
    """

    hash: str
    model_name: str
    dataset: str
    split: str
    summary: str
    reference: str
    factuality: float
    categories: dict[str, float]
    flips: dict[str, float]

    @property
    def key(self) -> tuple[str, str]:
        """The item's identity, ``(hash, model_name)``."""
        return (self.hash, self.model_name)

    @property
    def item_id(self) -> str:
        """The item's id in the answer store and reports: ``"<hash>/<model_name>"``."""
        return frank_item_id(self.hash, self.model_name)


class FrankArticle(msgspec.Struct, frozen=True, kw_only=True):
    """One source article of the benchmark."""

    hash: str
    dataset: str
    split: str
    url: str
    article: str


class BaselineRecord(msgspec.Struct, frozen=True, kw_only=True):
    """FRANK's released metric outputs for one item; ``metrics[name]`` is None where FRANK has no value."""

    hash: str
    model_name: str
    dataset: str
    split: str
    metrics: dict[str, float | None]


class Frank(msgspec.Struct, frozen=True, kw_only=True):
    """The loaded benchmark: items in file order, articles by hash, baselines by (hash, model_name)."""

    items: tuple[FrankItem, ...]
    articles: dict[str, FrankArticle]
    baselines: dict[tuple[str, str], BaselineRecord]
    metric_names: tuple[str, ...]

    def item_keys(self) -> list[tuple[str, str]]:
        """``(hash, model_name)`` of every item, in file order."""
        return [item.key for item in self.items]


def frank_item_id(hash_: str, model_name: str) -> str:
    """``"<hash>/<model_name>"``: one FRANK item's id (hashes are hex digests, so the first ``/`` splits it)."""
    return f"{hash_}/{model_name}"


def _text(row: Mapping[str, Any], field: str, at: _At) -> str:
    if field not in row:
        raise at.error(f"missing field {field!r}")
    value = row[field]
    if not isinstance(value, str):
        raise at.error(f"field {field!r} must be a string; got {value!r:.60}")
    return value


def _number(row: Mapping[str, Any], field: str, at: _At, *, optional: bool = False) -> float | None:
    if field not in row:
        raise at.error(f"missing field {field!r}")
    value = row[field]
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise at.error(f"field {field!r} must be a finite number; got {value!r:.60}")
    return float(value)


def _share(row: Mapping[str, Any], field: str, at: _At) -> float:
    value = _number(row, field, at)
    assert value is not None
    if not 0.0 <= value <= 1.0:
        raise at.error(f"field {field!r} must lie in [0, 1]; got {value}")
    return value


def _check_dataset_split(row: Mapping[str, Any], at: _At) -> tuple[str, str]:
    dataset, split = _text(row, "dataset", at), _text(row, "split", at)
    if dataset not in FRANK_DATASETS:
        raise at.error(f"unknown dataset {dataset!r} (expected one of {FRANK_DATASETS})")
    if split not in FRANK_SPLITS:
        raise at.error(f"unknown split {split!r} (expected one of {FRANK_SPLITS})")
    return dataset, split


def _read_jsonl(path: Path) -> list[tuple[_At, dict[str, Any]]]:
    """Rows of a JSON Lines file with their location; blank lines are skipped."""
    if not path.is_file():
        raise FrankDataError(path, None, "file not found")
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            at = _At(path, number)
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise at.error(f"invalid JSON ({exc.msg})") from exc
            if not isinstance(row, dict):
                raise at.error(f"expected a JSON object; got {type(row).__name__}")
            rows.append((at, row))
    return rows


def _parse_item(row: Mapping[str, Any], at: _At) -> FrankItem:
    texts = {field: _text(row, field, at) for field in _ITEM_TEXT_FIELDS}
    _check_dataset_split(row, at)
    scores = {field: _share(row, field, at) for field in _ITEM_SCORE_FIELDS}
    return FrankItem(
        **texts,
        factuality=scores["Factuality"],
        categories={c: scores[c] for c in CATEGORY_COLUMNS},
        flips={c: scores[f"Flip_{c}"] for c in CATEGORY_COLUMNS},
    )


def _parse_article(row: Mapping[str, Any], at: _At) -> FrankArticle:
    _check_dataset_split(row, at)
    return FrankArticle(**{field: _text(row, field, at) for field in _ARTICLE_FIELDS})


def _read_json_array(path: Path) -> list[tuple[_At, Any]]:
    """Elements of a top-level JSON array, each located by the line where it starts and its index."""
    if not path.is_file():
        raise FrankDataError(path, None, "file not found")
    text = path.read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    counted = [0, 1]  # offsets only grow, so count newlines incrementally: [offset, line at offset]

    def line_of(offset: int) -> int:
        counted[1] += text.count("\n", counted[0], offset)
        counted[0] = offset
        return counted[1]

    def skip_space(offset: int) -> int:
        while offset < len(text) and text[offset].isspace():
            offset += 1
        return offset

    position = skip_space(0)
    if not text.startswith("[", position):
        raise FrankDataError(path, line_of(position), "expected a JSON array of records")
    position = skip_space(position + 1)
    elements: list[tuple[_At, Any]] = []
    while not text.startswith("]", position):
        at = _At(path, line_of(position), f"record {len(elements)}: ")
        try:
            element, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise FrankDataError(path, exc.lineno, f"invalid JSON ({exc.msg})") from exc
        elements.append((at, element))
        position = skip_space(position)
        if text.startswith(",", position):
            position = skip_space(position + 1)
        elif not text.startswith("]", position):
            raise FrankDataError(path, line_of(position), "expected ',' or ']' after a record")
    if skip_space(position + 1) != len(text):
        raise FrankDataError(path, line_of(position), "unexpected text after the array")
    return elements


def _load_baselines(path: Path) -> tuple[dict[tuple[str, str], BaselineRecord], tuple[str, ...]]:
    records = _read_json_array(path)
    if not records:
        raise FrankDataError(path, None, "no records")
    metric_names: tuple[str, ...] | None = None
    baselines: dict[tuple[str, str], BaselineRecord] = {}
    for at, row in records:
        if not isinstance(row, dict):
            raise at.error(f"expected a JSON object; got {type(row).__name__}")
        keys = {field: _text(row, field, at) for field in _BASELINE_KEY_FIELDS}
        _check_dataset_split(row, at)
        names = tuple(name for name in row if name not in _BASELINE_KEY_FIELDS)
        if metric_names is None:
            metric_names = names
        elif set(names) != set(metric_names):
            difference = sorted(set(names) ^ set(metric_names))
            raise at.error(f"metric fields {difference} differ from the first record's")
        metrics = {name: _number(row, name, at, optional=True) for name in metric_names}
        record = BaselineRecord(**keys, metrics=metrics)
        key = (record.hash, record.model_name)
        if key in baselines:
            raise at.error(f"duplicate (hash, model_name) {key}")
        baselines[key] = record
    assert metric_names is not None
    return baselines, metric_names


def load_frank(data_dir: Path) -> Frank:
    """Load and cross-validate ``<data_dir>/frank``; raises FrankDataError naming file and line on problems."""
    folder = Path(data_dir) / "frank"
    items_path, articles_path = folder / "items.jsonl", folder / "articles.jsonl"
    baselines_path = folder / "baseline_metrics.json"

    articles: dict[str, FrankArticle] = {}
    for at, row in _read_jsonl(articles_path):
        article = _parse_article(row, at)
        if article.hash in articles:
            raise at.error(f"duplicate article hash {article.hash!r}")
        articles[article.hash] = article

    items: list[FrankItem] = []
    seen: set[tuple[str, str]] = set()
    for at, row in _read_jsonl(items_path):
        item = _parse_item(row, at)
        if item.key in seen:
            raise at.error(f"duplicate (hash, model_name) {item.key}")
        seen.add(item.key)
        if item.hash not in articles:
            raise at.error(f"hash {item.hash!r} has no article in {articles_path}")
        article = articles[item.hash]
        if (article.dataset, article.split) != (item.dataset, item.split):
            raise at.error(
                f"dataset/split {(item.dataset, item.split)} disagree with the article's "
                f"{(article.dataset, article.split)}"
            )
        items.append(item)
    if not items:
        raise FrankDataError(items_path, None, "no items")

    baselines, metric_names = _load_baselines(baselines_path)
    for item in items:
        record = baselines.get(item.key)
        if record is None:
            raise FrankDataError(baselines_path, None, f"no record for item {item.key} of {items_path}")
        if (record.dataset, record.split) != (item.dataset, item.split):
            raise FrankDataError(
                baselines_path,
                None,
                f"record {item.key} has dataset/split {(record.dataset, record.split)}, "
                f"the item has {(item.dataset, item.split)}",
            )
    extra = set(baselines) - seen
    if extra:
        raise FrankDataError(
            baselines_path, None, f"{len(extra)} records match no item of {items_path}, e.g. {min(extra)}"
        )
    return Frank(items=tuple(items), articles=articles, baselines=baselines, metric_names=metric_names)


def baseline_scores(frank: Frank, metric: str) -> np.ndarray:
    """One baseline metric as a float array aligned to ``frank.items`` (NaN where FRANK has no value)."""
    if metric not in frank.metric_names:
        raise KeyError(f"unknown baseline metric {metric!r}; known: {', '.join(frank.metric_names)}")
    values = [frank.baselines[item.key].metrics[metric] for item in frank.items]
    return np.array([np.nan if value is None else value for value in values], dtype=float)
