"""``summeval/items.jsonl`` and ``summeval/articles.jsonl`` from three pinned upstream copies of SummEval.

- johnplake/llm-gv-gap-research ``summeval_cnndm_v2g_candidates.jsonl``: the 1,600 (document, system) rows in
  G-Eval's order, with the ids (``prompt_id`` = doc_id, ``candidate_id`` = system_id) and the summaries. Its row
  order is the items' order.
- BruceSheng1202/Analyzing_Uncertainty_of_LLM-as-a-Judge ``model_logits/qwen/Summeval_<criterion>_logits.csv``:
  row ``k`` (after the header ``1,2,3,4,5,<criterion>``) is G-Eval row ``k``; its last column is the mean of the
  three experts for that criterion (``expert_mean``).
- DAMO-NLP-SG/LLM_summeval ``model_output_annotations/M<n>_outputs_annotations.jsonl`` (SummEval's own rows for the
  12 abstractive systems): ``expert_annotations`` (``expert_scores``; null for the other 4 systems), and each
  document's ``text`` and ``references`` (articles, in the order documents first occur in the G-Eval rows).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from offline.data.convert.files import Inputs, dump_jsonl, json_lines

__all__ = ["CRITERIA", "articles", "geval_rows", "items"]

CRITERIA = ("coherence", "consistency", "fluency", "relevance")
GEVAL_ROWS = "*/summeval_cnndm_v2g_candidates.jsonl"
MEANS = "*/model_logits/qwen/Summeval_{criterion}_logits.csv"
ANNOTATIONS = "*/model_output_annotations/M*_outputs_annotations.jsonl"


def geval_rows(inputs: Inputs) -> list[dict[str, Any]]:
    """The G-Eval-ordered rows (``prompt_id``, ``candidate_id``, ``candidate``).

    Raises:
        ValueError: a row lacks one of these fields.
    """
    key, raw = inputs.one(GEVAL_ROWS)
    rows = []
    for number, row in json_lines(key, raw):
        if not all(isinstance(row.get(f), str) for f in ("prompt_id", "candidate_id", "candidate")):
            raise ValueError(f"{key}:{number}: a row needs prompt_id, candidate_id and candidate strings")
        rows.append(row)
    return rows


def csv_rows(key: str, raw: bytes, header: list[str]) -> list[list[str]]:
    """A raw CSV file's rows after checking its header.

    Raises:
        ValueError: the header differs.
    """
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8"))))
    if not rows or rows[0] != header:
        raise ValueError(f"{key}: header {rows[0] if rows else None!r}, expected {header!r}")
    return rows[1:]


def _expert_means(inputs: Inputs, count: int) -> dict[str, list[float]]:
    means = {}
    for criterion in CRITERIA:
        key, raw = inputs.one(MEANS.format(criterion=criterion))
        rows = csv_rows(key, raw, ["1", "2", "3", "4", "5", criterion])
        if len(rows) != count:
            raise ValueError(f"{key}: {len(rows)} rows, expected {count} (one per G-Eval row)")
        means[criterion] = [float(row[5]) for row in rows]
    return means


def _annotations(inputs: Inputs) -> dict[str, dict[str, Any]]:
    """SummEval's rows by item id ``<id>/<model_id>``."""
    found: dict[str, dict[str, Any]] = {}
    for key, raw in inputs.each(ANNOTATIONS):
        for number, row in json_lines(key, raw):
            try:
                found[f"{row['id']}/{row['model_id']}"] = row
            except (KeyError, TypeError):
                raise ValueError(f"{key}:{number}: a row needs id and model_id") from None
    return found


def items(inputs: Inputs, options: Mapping[str, Any]) -> bytes:
    """``summeval/items.jsonl``: one row per G-Eval row, in that order."""
    rows = geval_rows(inputs)
    means = _expert_means(inputs, len(rows))
    annotated = _annotations(inputs)
    out = []
    for k, row in enumerate(rows):
        item_id = f"{row['prompt_id']}/{row['candidate_id']}"
        source = annotated.get(item_id)
        out.append(
            {
                "item_id": item_id,
                "doc_id": row["prompt_id"],
                "system_id": row["candidate_id"],
                "summary": row["candidate"],
                "expert_mean": {c: means[c][k] for c in CRITERIA},
                "expert_scores": None if source is None else source["expert_annotations"],
            }
        )
    return dump_jsonl(out)


def articles(inputs: Inputs, options: Mapping[str, Any]) -> bytes:
    """``summeval/articles.jsonl``: one row per document, in the order documents first occur in the G-Eval rows.

    Raises:
        ValueError: a document has no annotated row carrying its text.
    """
    annotated = _annotations(inputs)
    by_doc: dict[str, dict[str, Any]] = {}
    for item_id, row in annotated.items():
        by_doc.setdefault(item_id.split("/")[0], row)
    out = []
    seen: set[str] = set()
    for row in geval_rows(inputs):
        doc = row["prompt_id"]
        if doc in seen:
            continue
        seen.add(doc)
        if doc not in by_doc:
            raise ValueError(f"document {doc!r} has no row in {ANNOTATIONS} to take its text from")
        out.append({"doc_id": doc, "article": by_doc[doc]["text"], "references": by_doc[doc]["references"]})
    return dump_jsonl(out)
