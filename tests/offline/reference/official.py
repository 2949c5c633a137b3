"""SummEval's official annotation file (``model_annotations.aligned.jsonl``, which users download themselves).

Each line is one system summary of one document: ``id`` (the CNN/DailyMail document id, e.g.
``dm-test-8764fb...``), ``model_id`` (the system, ``M0``..``M23``), ``decoded`` (the summary),
``expert_annotations`` (list of three objects criterion -> int 1-5), ``turker_annotations`` (crowd ratings;
not used: the studies calibrate on experts), ``references`` (human reference summaries), ``filepath`` and, in the
"paired" version of the file, ``text`` (the article).

Mapping onto :class:`SummEvalItem`: ``doc_id = id``, ``system_id = model_id``,
``item_id = "<id>/<model_id>"``, ``summary = decoded``, ``expert_scores = expert_annotations`` and
``expert_mean[c]`` = mean over the experts of their rating for criterion ``c``. This reproduces the shipped
``summeval/items.jsonl`` for the same items (a test checks it on the sample files).

================================================  ==================================================
call                                              result
================================================  ==================================================
``load_official(path)``                           ``SummEval`` (items in file order; articles from
                                                  ``text``, refused when absent unless allowed)
``load_official([path1, path2])``                 several files (e.g. one per system) concatenated
================================================  ==================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from offline.build.inputs.errors import DataError, decode_jsonl
from offline.build.inputs.summeval import Article, SummEval, SummEvalItem, item_id_of, mean_expert_scores, validate_item

__all__ = ["load_official"]


class _Row(msgspec.Struct):
    id: str
    model_id: str
    decoded: str
    expert_annotations: list[dict[str, int]]
    references: list[str] = []
    text: str | None = None
    turker_annotations: list[dict[str, int]] | None = None
    filepath: str | None = None


def load_official(paths: Path | str | Sequence[Path | str], *, require_articles: bool = True) -> SummEval:
    """Load official-format SummEval annotations into a validated :class:`SummEval`.

    With ``require_articles`` (default) every document needs its ``text`` (the paired file); without it,
    documents lacking ``text`` are simply absent from ``articles``.

    Raises:
        DataError: missing file, malformed line, no expert annotation, unknown or missing criterion, rating
            off 1..5, duplicate item, conflicting article texts, or (when required) a missing ``text``.
    """
    files = [Path(paths)] if isinstance(paths, str | Path) else [Path(p) for p in paths]
    items: list[SummEvalItem] = []
    articles: dict[str, Article] = {}
    seen: dict[str, tuple[Path, int]] = {}
    decoder = msgspec.json.Decoder(_Row)
    for path in files:
        for line, row in decode_jsonl(path, decoder):
            if not row.expert_annotations:
                raise DataError(path, line, "expert_annotations is empty")
            item = SummEvalItem(
                item_id=item_id_of(row.id, row.model_id),
                doc_id=row.id,
                system_id=row.model_id,
                summary=row.decoded,
                expert_mean=mean_expert_scores(row.expert_annotations),
                expert_scores=row.expert_annotations,
            )
            validate_item(item, path, line)
            if item.item_id in seen:
                where = seen[item.item_id]
                raise DataError(path, line, f"duplicate item {item.item_id!r} (first at {where[0]}:{where[1]})")
            seen[item.item_id] = (path, line)
            if row.text is None:
                if require_articles:
                    raise DataError(
                        path,
                        line,
                        "no 'text' (article) field: use the paired file "
                        "(model_annotations.aligned.paired.jsonl) or pass require_articles=False",
                    )
            else:
                known = articles.setdefault(
                    row.id, Article(doc_id=row.id, article=row.text, references=tuple(row.references))
                )
                if known.article != row.text:
                    raise DataError(path, line, f"document {row.id!r} has a different text than on an earlier line")
            items.append(item)
    return SummEval(items=tuple(items), articles=articles)
