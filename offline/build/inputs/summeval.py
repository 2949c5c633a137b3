"""SummEval: 100 CNN/DailyMail documents x 16 systems, rated 1-5 by three experts on four criteria.

Reads ``<data_dir>/summeval/items.jsonl`` and ``articles.jsonl`` (formats in the data directory's README)
into frozen, typed records, checking every row; a bad row raises :class:`DataError` naming file and line.

=====================================  ==============================================================
call                                   result
=====================================  ==============================================================
``load_summeval(data_dir)``            ``SummEval``: ``items`` (file order), ``articles`` by ``doc_id``
``human_target(item.expert_mean[c])``  the calibration label y* in 1..5 (nearest integer, halves up)
``summeval.items_by_id()``             ``dict[item_id, SummEvalItem]``
``summeval.doc_ids()``                 document ids in file order
=====================================  ==============================================================
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import msgspec

from calibration.errors import ScoreOutOfRangeError
from offline.build.inputs.errors import DataError, decode_jsonl

__all__ = [
    "CRITERIA",
    "Article",
    "SummEval",
    "SummEvalItem",
    "human_target",
    "item_id_of",
    "load_summeval",
    "mean_expert_scores",
]

CRITERIA: tuple[str, ...] = ("coherence", "consistency", "fluency", "relevance")
N_LABELS = 5
# Means of three integer ratings are k/3; compare them with a tolerance well below 1/3.
_MEAN_TOLERANCE = 1e-9


class SummEvalItem(msgspec.Struct, frozen=True, kw_only=True):
    """One system summary of one document with its expert ratings.

    ``expert_mean`` maps each criterion to the mean of the three experts (k/3 on 1..5); ``expert_scores`` holds
    the three experts' integer ratings, or None where SummEval kept only the means (systems M0, M1, M2, M5).
    """

    item_id: str
    doc_id: str
    system_id: str
    summary: str
    expert_mean: dict[str, float]
    expert_scores: list[dict[str, int]] | None = None


class Article(msgspec.Struct, frozen=True, kw_only=True):
    """One source document with its human reference summaries."""

    doc_id: str
    article: str
    references: tuple[str, ...] = ()


class SummEval(msgspec.Struct, frozen=True, kw_only=True):
    """The loaded dataset: items in file order and the articles they summarise, keyed by ``doc_id``."""

    items: tuple[SummEvalItem, ...]
    articles: dict[str, Article]

    def items_by_id(self) -> dict[str, SummEvalItem]:
        """Map ``item_id`` -> item (built on each call)."""
        return {item.item_id: item for item in self.items}

    def doc_ids(self) -> list[str]:
        """Document ids in the order of their first item in the file."""
        return list(dict.fromkeys(item.doc_id for item in self.items))

    def document(self, doc_id: str) -> str:
        """The article text of ``doc_id`` (KeyError when absent)."""
        return self.articles[doc_id].article


def item_id_of(doc_id: str, system_id: str) -> str:
    """SummEval's item id: ``"<doc_id>/<system_id>"``."""
    return f"{doc_id}/{system_id}"


def human_target(expert_mean: float, *, n_labels: int = N_LABELS) -> int:
    """Return y* = the expert mean rounded to the nearest integer, halves rounded up (2.5 -> 3).

    SummEval's means are k/3, so a half never occurs there; the rule is stated for other data (a custom set
    with two annotators). A tolerance of 1e-9 absorbs float noise (2.4999999999 counts as 2.5).

    Raises:
        ScoreOutOfRangeError: the mean is not finite or lies outside 1..n_labels.
    """
    value = float(expert_mean)
    if not math.isfinite(value) or value < 1 - _MEAN_TOLERANCE or value > n_labels + _MEAN_TOLERANCE:
        raise ScoreOutOfRangeError(f"expert mean {expert_mean!r} is outside the label scale 1..{n_labels}")
    return int(math.floor(value + 0.5 + _MEAN_TOLERANCE))


def mean_expert_scores(expert_scores: list[dict[str, int]]) -> dict[str, float]:
    """Per criterion, the arithmetic mean over annotators of their integer ratings."""
    criteria = list(dict.fromkeys(c for scores in expert_scores for c in scores))
    return {c: sum(scores[c] for scores in expert_scores) / len(expert_scores) for c in criteria}


class _ArticleRow(msgspec.Struct):
    doc_id: str
    article: str
    references: list[str] = []


class _ItemRow(msgspec.Struct):
    item_id: str
    doc_id: str
    system_id: str
    summary: str
    expert_mean: dict[str, float]
    expert_scores: list[dict[str, int]] | None = None


def _check_criteria(keys: Mapping[str, object], path: Path, line: int, what: str) -> None:
    unknown = sorted(set(keys) - set(CRITERIA))
    if unknown:
        raise DataError(path, line, f"unknown criterion {unknown[0]!r} in {what} (known: {', '.join(CRITERIA)})")
    missing = [c for c in CRITERIA if c not in keys]
    if missing:
        raise DataError(path, line, f"{what} lacks the criterion {missing[0]!r}")


def validate_item(row: SummEvalItem, path: Path, line: int) -> None:
    """Check one item's ids, criteria and ratings; raise DataError naming ``path`` and ``line``."""
    if not row.doc_id or not row.system_id:
        raise DataError(path, line, "empty doc_id or system_id")
    if row.item_id != item_id_of(row.doc_id, row.system_id):
        raise DataError(path, line, f"item_id {row.item_id!r} is not '<doc_id>/<system_id>'")
    _check_criteria(row.expert_mean, path, line, "expert_mean")
    for criterion, value in row.expert_mean.items():
        if not (math.isfinite(value) and 1 <= value <= N_LABELS):
            raise DataError(path, line, f"expert_mean[{criterion!r}] = {value!r} is outside 1..{N_LABELS}")
    if row.expert_scores is None:
        return
    if not row.expert_scores:
        raise DataError(path, line, "expert_scores is an empty list (use null when absent)")
    for scores in row.expert_scores:
        _check_criteria(scores, path, line, "expert_scores")
        for criterion, value in scores.items():
            if not 1 <= value <= N_LABELS:
                raise DataError(path, line, f"expert score {criterion!r} = {value!r} is outside 1..{N_LABELS}")
    for criterion, mean in mean_expert_scores(row.expert_scores).items():
        if abs(mean - row.expert_mean[criterion]) > _MEAN_TOLERANCE:
            raise DataError(
                path,
                line,
                f"expert_mean[{criterion!r}] = {row.expert_mean[criterion]!r} differs from the mean "
                f"of expert_scores ({mean!r})",
            )


def load_articles(path: Path) -> dict[str, Article]:
    """Read a SummEval ``articles.jsonl``: ``doc_id`` -> Article, refusing duplicates (DataError)."""
    articles: dict[str, Article] = {}
    for line, row in decode_jsonl(path, msgspec.json.Decoder(_ArticleRow)):
        if not row.doc_id:
            raise DataError(path, line, "empty doc_id")
        if row.doc_id in articles:
            raise DataError(path, line, f"duplicate doc_id {row.doc_id!r}")
        articles[row.doc_id] = Article(doc_id=row.doc_id, article=row.article, references=tuple(row.references))
    return articles


def load_items(path: Path, articles: dict[str, Article] | None = None) -> tuple[SummEvalItem, ...]:
    """Read a SummEval ``items.jsonl`` in file order, validating each row (and its doc when ``articles`` given).

    Raises:
        DataError: malformed line, unknown or missing criterion, rating off the scale, inconsistent ids,
            duplicate item, or an item whose document is not in ``articles``.
    """
    items: list[SummEvalItem] = []
    seen: set[str] = set()
    for line, row in decode_jsonl(path, msgspec.json.Decoder(_ItemRow)):
        item = SummEvalItem(
            item_id=row.item_id,
            doc_id=row.doc_id,
            system_id=row.system_id,
            summary=row.summary,
            expert_mean=row.expert_mean,
            expert_scores=row.expert_scores,
        )
        validate_item(item, path, line)
        if item.item_id in seen:
            raise DataError(path, line, f"duplicate item_id {item.item_id!r}")
        if articles is not None and item.doc_id not in articles:
            raise DataError(path, line, f"doc_id {item.doc_id!r} has no article in articles.jsonl")
        seen.add(item.item_id)
        items.append(item)
    return tuple(items)


def load_summeval(data_dir: Path | str) -> SummEval:
    """Load ``<data_dir>/summeval/{articles,items}.jsonl`` into a validated :class:`SummEval`.

    Raises:
        DataError: a missing file or any bad row (file and line named).
    """
    folder = Path(data_dir) / "summeval"
    articles = load_articles(folder / "articles.jsonl")
    items = load_items(folder / "items.jsonl", articles)
    return SummEval(items=items, articles=articles)
