"""The order of a one-item task's calls: document by document, criterion by criterion within a document, so that
consecutive calls share their prompt up to the end of the article (a server's prefix cache reuses it)."""

from __future__ import annotations

from judges.prompts.families import direct_prompt
from offline.collecting.targets import TargetItem, direct_keys


def _item(document: str, system: str) -> TargetItem:
    article = f"The article {document}, long enough to matter."
    return TargetItem(
        item_id=f"{document}/{system}", doc_id=document, system_id=system, document=article, summary=f"By {system}."
    )


def test_keys_go_document_by_document_then_criterion_by_criterion() -> None:
    items = [_item("d1", "A"), _item("d1", "B"), _item("d2", "A"), _item("d1", "C"), _item("d2", "B")]
    keys = direct_keys("j", "paper", "direct", items, ["coherence", "relevance"], repetitions=2)
    assert len(keys) == len({(k.item_id, k.criterion, k.repetition) for k in keys}) == 5 * 2 * 2  # each once
    order = [(k.item_id, k.criterion, k.repetition) for k in keys]
    assert order[:12] == [
        (f"d1/{s}", criterion, rep) for criterion in ("coherence", "relevance") for s in "ABC" for rep in (0, 1)
    ]
    assert [k.item_id.split("/")[0] for k in keys] == ["d1"] * 12 + ["d2"] * 8  # d1's C joins its document


def test_consecutive_calls_of_a_document_and_criterion_share_the_prompt_through_the_article() -> None:
    items = [_item("d1", "A"), _item("d1", "B")]
    first, second = (
        direct_prompt(k.criterion, items[0].document, {i.item_id: i for i in items}[k.item_id].summary,
                      prompt_family="paper")[-1]["content"]
        for k in direct_keys("j", "paper", "direct", items, ["coherence"], repetitions=1)
    )  # fmt: skip
    shared = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
    assert first.index(items[0].document) + len(items[0].document) < shared
