"""``judges/summeval/{gpt-4o-mini-2024-07-18,qwen2.5-72b-instruct}.jsonl`` from Sheng et al.'s recorded G-Eval runs.

Inputs (BruceSheng1202/Analyzing_Uncertainty_of_LLM-as-a-Judge, one model folder): for each criterion,
``model_logits/<model>/Summeval_<criterion>_logits.csv`` (header ``1,2,3,4,5,<criterion>``: the log-probabilities of
the score tokens 1..5, then the experts' mean) and ``raw_scores/<model>/Summeval_<criterion>_raw.csv`` (header
``raw_score``: the sampled score; an empty cell when the reply held none), plus the G-Eval-ordered SummEval rows
(``summeval_cnndm_v2g_candidates.jsonl``) that name each row's item.

Options: ``model`` (the folder name, ``qwen`` or ``4omini``) and ``row_order``, the row order of the CSV files:
``geval`` (row ``k`` is G-Eval row ``k``: the Qwen files) or ``doc_sorted`` (row ``k`` is the ``k``-th G-Eval row
after a stable sort by ``doc_id``: the GPT-4o-mini files).
Which one a folder uses was established by matching the expert-mean column against SummEval's own means; the
converter checks it the same way, so a wrong option is refused rather than written.

Output: one row per (item, criterion), the criteria in the order coherence, consistency, fluency, relevance, and
within a criterion the items sorted by ``item_id``; ``score`` an int or null, ``logprobs`` the five floats as
read, ``response`` null.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from offline.data.convert.files import Inputs, dump_jsonl
from offline.data.convert.summeval import CRITERIA, csv_rows, geval_rows

__all__ = ["ROW_ORDERS", "judge"]

ROW_ORDERS = ("geval", "doc_sorted")
SCORES = ("1", "2", "3", "4", "5")


def _item_order(inputs: Inputs, row_order: str) -> list[str]:
    rows = geval_rows(inputs)
    ids = [f"{r['prompt_id']}/{r['candidate_id']}" for r in rows]
    if row_order == "geval":
        return ids
    if row_order == "doc_sorted":
        return [ids[k] for k in sorted(range(len(rows)), key=lambda k: rows[k]["prompt_id"])]
    raise ValueError(f"row_order must be one of {', '.join(ROW_ORDERS)}, got {row_order!r}")


def _score(key: str, line: int, cells: list[str]) -> int | None:
    text = cells[0].strip() if cells else ""
    if not text:
        return None
    value = float(text)
    if value != int(value) or not 1 <= value <= 5:
        raise ValueError(f"{key}:{line}: score {text!r} is not an integer 1..5")
    return int(value)


def judge(inputs: Inputs, options: Mapping[str, Any]) -> bytes:
    """One recorded G-Eval judge's rows.

    Raises:
        ValueError: a header differs, a file has the wrong number of rows, a score is off 1..5, or the experts'
            means of the CSV do not match the items in the chosen row order.
    """
    model = str(options["model"])
    order = _item_order(inputs, str(options.get("row_order", "geval")))
    geval = {f"{r['prompt_id']}/{r['candidate_id']}": k for k, r in enumerate(geval_rows(inputs))}
    out: list[dict[str, Any]] = []
    for criterion in CRITERIA:
        logits_key, logits_raw = inputs.one(f"*/model_logits/{model}/Summeval_{criterion}_logits.csv")
        scores_key, scores_raw = inputs.one(f"*/raw_scores/{model}/Summeval_{criterion}_raw.csv")
        logits = csv_rows(logits_key, logits_raw, [*SCORES, criterion])
        scores = csv_rows(scores_key, scores_raw, ["raw_score"])
        if len(logits) != len(order) or len(scores) != len(order):
            raise ValueError(f"{logits_key}, {scores_key}: {len(logits)} and {len(scores)} rows, expected {len(order)}")
        _check_order(inputs, criterion, logits, order, geval, logits_key)
        rows = {
            item_id: {
                "item_id": item_id,
                "criterion": criterion,
                "score": _score(scores_key, k + 2, scores[k]),
                "logprobs": {s: float(logits[k][i]) for i, s in enumerate(SCORES)},
                "response": None,
            }
            for k, item_id in enumerate(order)
        }
        out.extend(rows[item_id] for item_id in sorted(rows))
    return dump_jsonl(out)


def _check_order(
    inputs: Inputs, criterion: str, logits: list[list[str]], order: list[str], geval: dict[str, int], key: str
) -> None:
    """The CSV's experts'-mean column must be the items' means in ``order`` (the Qwen file is the reference)."""
    _, reference_raw = inputs.one(f"*/model_logits/qwen/Summeval_{criterion}_logits.csv")
    reference = csv_rows("qwen", reference_raw, [*SCORES, criterion])
    wrong = sum(1 for k, item_id in enumerate(order) if float(logits[k][5]) != float(reference[geval[item_id]][5]))
    if wrong:
        raise ValueError(f"{key}: {wrong} rows' experts' mean do not match their items in this row order")
