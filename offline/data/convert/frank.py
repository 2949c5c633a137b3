"""``frank/items.jsonl`` and ``frank/articles.jsonl`` from the FRANK repository (artidoro/frank).

Inputs: ``data/human_annotations.json`` (a JSON list, one row per (article ``hash``, ``model_name``) with the
annotation shares as strings; at the commit holding the LICENSE) and ``data/articles-wfactcc-json/<hash>.json``
(one object per article: ``article``, ``url``, each system's summary under its model name and the reference under
``<model>_reference``, ``Gold`` or ``reference``; at the last commit holding these files).

- items: one row per annotation row, in its order: ``hash``, ``model_name``, ``dataset``, ``split``, ``summary``,
  ``reference``, then every annotation share as a float, in :data:`SHARES` order.
- articles: one row per article, sorted by ``hash``: ``dataset`` and ``split`` of its first annotation row,
  ``url``, ``article``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from offline.data.convert.files import Inputs, dump_jsonl

__all__ = ["SHARES", "articles", "items"]

SHARES = (
    "Factuality",
    "Semantic_Frame_Errors",
    "Discourse_Errors",
    "Content_Verifiability_Errors",
    "RelE",
    "EntE",
    "CircE",
    "OutE",
    "GramE",
    "CorefE",
    "LinkE",
    "Other",
    *(
        f"Flip_{name}"
        for name in (
            "Semantic_Frame_Errors",
            "Discourse_Errors",
            "Content_Verifiability_Errors",
            "RelE",
            "EntE",
            "CircE",
            "OutE",
            "GramE",
            "CorefE",
            "LinkE",
            "Other",
        )
    ),
)
ANNOTATIONS = "*/data/human_annotations.json"
ARTICLE = "*/data/articles-wfactcc-json/{hash}.json"


def _annotations(inputs: Inputs) -> list[dict[str, Any]]:
    key, raw = inputs.one(ANNOTATIONS)
    rows = json.loads(raw)
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError(f"{key}: expected a JSON list of objects")
    return rows


def _article(inputs: Inputs, cache: dict[str, dict[str, Any]], article_hash: str) -> dict[str, Any]:
    if article_hash not in cache:
        _, raw = inputs.one(ARTICLE.format(hash=article_hash))
        cache[article_hash] = json.loads(raw)
    return cache[article_hash]


def items(inputs: Inputs, options: Mapping[str, Any]) -> bytes:
    """The annotated summaries with their references and shares.

    Raises:
        ValueError: an article file lacks the summary or any reference, or a share is not a number.
    """
    cache: dict[str, dict[str, Any]] = {}
    out = []
    for row in _annotations(inputs):
        article = _article(inputs, cache, row["hash"])
        model = row["model_name"]
        reference = next((article[k] for k in (f"{model}_reference", "Gold", "reference") if k in article), None)
        if model not in article or reference is None:
            raise ValueError(f"article {row['hash']}: no summary or reference for {model!r}")
        out.append(
            {
                "hash": row["hash"],
                "model_name": model,
                "dataset": row["dataset"],
                "split": row["split"],
                "summary": article[model],
                "reference": reference,
                **{share: float(row[share]) for share in SHARES},
            }
        )
    return dump_jsonl(out)


def articles(inputs: Inputs, options: Mapping[str, Any]) -> bytes:
    """The annotated articles, sorted by hash."""
    cache: dict[str, dict[str, Any]] = {}
    first: dict[str, dict[str, Any]] = {}
    for row in _annotations(inputs):
        first.setdefault(row["hash"], row)
    out = []
    for article_hash in sorted(first):
        article = _article(inputs, cache, article_hash)
        row = first[article_hash]
        out.append(
            {
                "hash": article_hash,
                "dataset": row["dataset"],
                "split": row["split"],
                "url": article["url"],
                "article": article["article"],
            }
        )
    return dump_jsonl(out)
