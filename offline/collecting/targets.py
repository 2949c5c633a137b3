"""What a collection run asks: the paper's SummEval subset, a seeded FRANK sample, and the answer keys (direct
and pairwise, both orders) of every item x criterion x repetition.

FRANK sample (:func:`frank_targets`): the items of the chosen split (``valid``, ``test`` or ``all``) in file
order; with ``limit=N`` the first N of ``numpy.random.default_rng(seed).permutation`` over them, put back in
file order. A larger ``limit`` with the same seed extends a smaller one, so the store's resume reuses every
answer already collected.

Default subset (:func:`default_subset`): the paper's "30 documents x 8 systems (systems 0, 2, 4, 6, 9, 11, 13,
15)". Reading chosen: the *positions* 0, 2, 4, 6, 9, 11, 13, 15 in SummEval's own per-document system order (the
order of ``items.jsonl``, the same for every document: M11, M13, M1, M14, M15, M12, M5, M17, M20, M23, M2, M0,
M22, M8, M10, M9), i.e. systems :data:`PAPER_SYSTEMS` = M11, M1, M15, M5, M23, M0, M8, M9, in the first 30
documents in file order. (Reading them as ids "M0, M2, M4, ..." is impossible: SummEval has no M4 or M6.)
The paper's call counts fit this subset with 1 repetition for direct scoring (4 judges x 960 = 3,840) and
k = 3 repetitions in one order for pairwise (4 x 28 pairs x 30 x 4 x 3 = 40,320).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import cast

import msgspec
import numpy as np

from offline.build.answers.records import AnswerKey, Order, Task
from offline.build.inputs.frank import FRANK_SPLITS, Frank
from offline.build.inputs.pairwise import pair_item_id
from offline.build.inputs.summeval import Article, SummEval, SummEvalItem

__all__ = [
    "PAPER_N_DOCUMENTS",
    "PAPER_REPETITIONS",
    "PAPER_SYSTEMS",
    "PAPER_SYSTEM_POSITIONS",
    "TargetItem",
    "default_subset",
    "direct_keys",
    "frank_targets",
    "pairwise_keys",
    "targets",
]


PAPER_N_DOCUMENTS = 30


PAPER_SYSTEM_POSITIONS: tuple[int, ...] = (0, 2, 4, 6, 9, 11, 13, 15)


PAPER_SYSTEMS: tuple[str, ...] = ("M11", "M1", "M15", "M5", "M23", "M0", "M8", "M9")


PAPER_REPETITIONS: dict[str, int] = {"direct": 1, "pairwise": 3}


class TargetItem(msgspec.Struct, frozen=True, kw_only=True):
    """One thing to judge: a summary of a document (``item_id`` is unique; ``system_id`` names its producer)."""

    item_id: str
    doc_id: str
    system_id: str
    document: str
    summary: str


def default_subset(
    summeval: SummEval,
    *,
    n_documents: int = PAPER_N_DOCUMENTS,
    positions: Sequence[int] = PAPER_SYSTEM_POSITIONS,
) -> list[SummEvalItem]:
    """The paper's subset: the first ``n_documents`` documents in file order and, in each, the items at
    ``positions`` of that document's block of items in file order (module docstring: M11, M1, M15, M5, M23, M0,
    M8, M9). Items come document by document, in position order.

    Raises:
        ValueError: fewer documents than asked, or a document with too few items for a position.
    """
    blocks: dict[str, list[SummEvalItem]] = {}
    for item in summeval.items:
        blocks.setdefault(item.doc_id, []).append(item)
    doc_ids = list(blocks)[:n_documents]
    if len(doc_ids) < n_documents:
        raise ValueError(f"asked for {n_documents} documents, the data has {len(doc_ids)}")
    subset: list[SummEvalItem] = []
    for doc_id in doc_ids:
        block = blocks[doc_id]
        if max(positions) >= len(block):
            raise ValueError(f"document {doc_id!r} has {len(block)} items, position {max(positions)} asked")
        subset.extend(block[p] for p in positions)
    return subset


def frank_targets(frank: Frank, *, split: str = "all", limit: int | None = None, seed: int = 0) -> list[TargetItem]:
    """FRANK items of ``split`` (``valid``/``test``/``all``) as TargetItems with their articles, file order;
    ``limit`` N keeps the first N of ``default_rng(seed).permutation`` over them (module docstring).

    ``item_id`` = ``"<hash>/<model_name>"``, ``doc_id`` = hash, ``system_id`` = model_name.

    Raises:
        ValueError: an unknown split, or a limit below 1.
    """
    if split not in (*FRANK_SPLITS, "all"):
        raise ValueError(f"split must be one of {(*FRANK_SPLITS, 'all')}, got {split!r}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    chosen = [item for item in frank.items if split == "all" or item.split == split]
    if limit is not None and limit < len(chosen):
        keep = np.sort(np.random.default_rng(seed).permutation(len(chosen))[:limit])
        chosen = [chosen[int(i)] for i in keep]
    return [
        TargetItem(
            item_id=item.item_id,
            doc_id=item.hash,
            system_id=item.model_name,
            document=frank.articles[item.hash].article,
            summary=item.summary,
        )
        for item in chosen
    ]


def targets(
    items: Iterable[SummEvalItem | TargetItem], articles: Mapping[str, Article | str] | None = None
) -> list[TargetItem]:
    """Turn SummEval items (with their ``articles``, by doc_id) into TargetItems; TargetItems pass through.

    Raises:
        ValueError: a SummEval item whose document is not in ``articles`` (or no ``articles`` given).
    """
    result = []
    for item in items:
        if isinstance(item, TargetItem):
            result.append(item)
            continue
        article = None if articles is None else articles.get(item.doc_id)
        if article is None:
            raise ValueError(f"no article for document {item.doc_id!r}: pass articles=summeval.articles")
        text = article if isinstance(article, str) else article.article
        result.append(
            TargetItem(
                item_id=item.item_id, doc_id=item.doc_id, system_id=item.system_id, document=text, summary=item.summary
            )
        )
    return result


def direct_keys(
    judge: str, prompt_family: str, task: str, items: Sequence[TargetItem], criteria: Sequence[str], repetitions: int
) -> list[AnswerKey]:
    """One key per (item, criterion, repetition) for a one-item task, in the order that lets a server reuse its
    prompt cache: document by document (in the items' order), and within a document criterion by criterion, every
    item of the document in turn. Consecutive calls then share the prompt up to the end of the article (llama.cpp,
    vLLM and Ollama reuse a cached prefix): on the local judge a SummEval call's prompt fell from about 700 tokens to
    evaluate to the summary's few dozen."""
    by_document: dict[str, list[TargetItem]] = {}
    for item in items:
        by_document.setdefault(item.doc_id, []).append(item)
    return [
        AnswerKey(
            judge=judge,
            prompt_family=prompt_family,
            task=cast(Task, task),
            criterion=criterion,
            item_id=item.item_id,
            repetition=rep,
        )
        for document_items in by_document.values()
        for criterion in criteria
        for item in document_items
        for rep in range(repetitions)
    ]


def pairwise_keys(
    judge: str,
    prompt_family: str,
    items: Sequence[TargetItem],
    criteria: Sequence[str],
    repetitions: int,
    *,
    both_orders: bool,
) -> list[AnswerKey]:
    """Keys for every pair of systems within each document x criterion x repetition x order(s).

    Raises:
        ValueError: two items of one document share a system id.
    """
    by_doc: dict[str, list[str]] = {}
    for item in items:
        systems = by_doc.setdefault(item.doc_id, [])
        if item.system_id in systems:
            raise ValueError(f"document {item.doc_id!r} lists system {item.system_id!r} twice")
        systems.append(item.system_id)
    orders = ("ab", "ba") if both_orders else ("ab",)
    return [
        AnswerKey(
            judge=judge,
            prompt_family=prompt_family,
            task="pairwise",
            criterion=criterion,
            item_id=pair_item_id(doc_id, x, y),
            repetition=rep,
            order=cast(Order, order),
        )
        for doc_id, systems in by_doc.items()
        for x, y in combinations(sorted(systems), 2)
        for criterion in criteria
        for rep in range(repetitions)
        for order in orders
    ]
