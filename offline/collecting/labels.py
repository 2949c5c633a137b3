"""``collect --labels FILE --judge NAME``: ask a live judge for the rows of a labelled file that have texts but no
verdict, and write a labelled file ready for ``calibrate --labels``.

Rules, stated once:

* **Input.** The labelled format (:mod:`artifact.labels`) with ``require_verdict=False``: a row without a verdict
  (and possibly without ``judge``) needs ``document``/``input`` and ``summary``/``output``; otherwise the run stops
  with the file and line named. Rows that already carry a verdict are copied through unchanged.
* **Prompt.** A criterion of RUBRICS_FILE (``--rubrics``) is asked with the rubric's prompt on its scale 1..K under
  the rubric's prompt family (:mod:`judges.prompts.rubric`, the prompt the service sends); SummEval's four
  criteria with the judge's configured prompt family on 1..5 (a row of those on another scale is refused: write a
  rubric for it). The same judge client as the service (:class:`judges.client.JudgeClient`).
* **Output** (``--out``; default ``<FILE stem>.<judge>.jsonl`` beside FILE): one row per input row, in input order;
  a judged row gets ``judge`` = NAME, ``judge_score``, ``judge_logprobs`` (when the judge returned them; tokens
  outside its top-k are omitted), ``prompt_family``, ``scale_max``. A failed call or an unreadable reply never loses
  its row: it goes to ``<out>.errors.jsonl`` with its line and the error, and is counted.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from artifact.labels import LabelRow, read_labels
from calibration.errors import LabelsError
from judges.prompts.families import CRITERIA
from judges.prompts.rubric import Rubric, rubric_messages
from offline.build.inputs.errors import DataError

__all__ = ["CollectLabelsReport", "collect_labels", "default_out", "read_unjudged"]

PROMPT_CRITERIA = tuple(c for c in CRITERIA if c != "faithfulness")  # the paper's direct-scoring prompts


@dataclass(frozen=True)
class CollectLabelsReport:
    """What a run did: rows judged now, copied (had a verdict), failed (in the errors file)."""

    out: Path
    errors: Path | None
    judged: int
    copied: int
    failed: int


def default_out(labels: Path, judge: str) -> Path:
    """``<stem>.<judge>.jsonl`` beside the labelled file (the judge name made file-safe)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in judge)
    return labels.with_name(f"{labels.stem}.{safe}.jsonl")


def read_unjudged(path: Path, *, scale: int, rubrics: dict[str, Rubric]) -> list[LabelRow]:
    """Read the file (verdicts optional) and check that every row to judge can be asked; DataError names the line."""
    try:
        rows = read_labels([(str(path), Path(path).read_bytes())], default_scale=scale, require_verdict=False)
    except FileNotFoundError:
        raise DataError(path, None, "file not found") from None
    except LabelsError as error:
        raise DataError(
            error.source, error.line, f"{error.field}: {error.problem}" if error.field else error.problem
        ) from None
    for row in rows:
        if row.judge_score is not None:
            continue
        if row.document is None or row.summary is None:
            raise DataError(
                path, row.line, "a row without a verdict needs document/input and summary/output to be judged"
            )
        rubric = rubrics.get(row.criterion)
        if rubric is not None:
            if rubric.scale_max != row.n_labels:
                raise DataError(
                    path,
                    row.line,
                    f"the rubric for {row.criterion!r} is on 1..{rubric.scale_max}, this row on 1..{row.n_labels}",
                )
        elif row.criterion in PROMPT_CRITERIA:
            if row.n_labels != 5:
                raise DataError(
                    path,
                    row.line,
                    f"the built-in prompt for {row.criterion!r} asks for 1..5, this row "
                    f"is on 1..{row.n_labels}: configure a rubric for it (--rubrics)",
                )
        else:
            raise DataError(
                path,
                row.line,
                f"no prompt for criterion {row.criterion!r}: it is not one of "
                f"{', '.join(PROMPT_CRITERIA)} nor in --rubrics",
            )
    return rows


def _row_dict(row: LabelRow) -> dict[str, Any]:
    data: dict[str, Any] = {
        "item_id": row.item_id,
        "criterion": row.criterion,
        "judge": row.judge,
        "human": row.human,
        "scale_max": row.n_labels,
        "prompt_family": row.prompt_family,
        "group": row.group,
    }
    if row.judge_score is not None:
        data["judge_score"] = row.judge_score
    if row.mean_of_samples is not None:
        data["mean_of_samples"] = row.mean_of_samples
    if row.document is not None:
        data["document"] = row.document
    if row.summary is not None:
        data["summary"] = row.summary
    return {k: v for k, v in data.items() if v is not None}


async def collect_labels(
    client: Any,
    rows: Sequence[LabelRow],
    raw_lines: dict[int, dict[str, Any]],
    *,
    judge: str,
    prompt_family: str,
    rubrics: dict[str, Rubric],
    out: Path,
    concurrency: int = 8,
    progress: bool = True,
) -> CollectLabelsReport:
    """Judge the rows without a verdict with ``client`` (module rules) and write ``out`` (+ its errors file)."""
    results: dict[int, dict[str, Any]] = {}
    errors: list[dict[str, Any]] = []
    todo = [row for row in rows if row.judge_score is None]
    bar = tqdm(total=len(todo), desc=f"collect {judge}", unit="call", disable=not progress, leave=False)
    gate = asyncio.Semaphore(max(1, concurrency))

    async def judge_one(row: LabelRow) -> None:
        rubric = rubrics.get(row.criterion)
        async with gate:
            try:
                assert row.document is not None and row.summary is not None
                if rubric is not None:
                    verdict = await client.score_messages(
                        rubric_messages(rubric, row.document, row.summary), n_labels=rubric.scale_max
                    )
                else:
                    verdict = await client.score(row.criterion, row.document, row.summary)
            except Exception as error:  # noqa: BLE001 - every failure is written and counted, never lost
                errors.append(
                    {
                        "line": row.line,
                        "item_id": row.item_id,
                        "criterion": row.criterion,
                        "error": f"{type(error).__name__}: {error}",
                    }
                )
            else:
                data = _row_dict(row)
                data.update(
                    judge=judge,
                    judge_score=verdict.judge_score,
                    prompt_family=rubric.family if rubric is not None else prompt_family,
                )
                if verdict.logprobs:
                    kept = {k: v for k, v in verdict.logprobs.items() if v is not None}
                    if kept:
                        data["judge_logprobs"] = kept
                results[row.line] = data
            bar.update(1)

    try:
        await asyncio.gather(*(judge_one(row) for row in todo))
    finally:
        bar.close()
    lines = []
    for row in rows:
        if row.judge_score is not None:
            lines.append(json.dumps(raw_lines[row.line]))
        elif row.line in results:
            lines.append(json.dumps(results[row.line]))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(line + "\n" for line in lines))
    error_path = None
    if errors:
        error_path = out.with_name(out.name + ".errors.jsonl")
        error_path.write_text("".join(json.dumps(e) + "\n" for e in sorted(errors, key=lambda e: e["line"])))
    return CollectLabelsReport(
        out=out, errors=error_path, judged=len(results), copied=len(rows) - len(todo), failed=len(errors)
    )
