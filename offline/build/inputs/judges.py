"""Recorded answers of real LLM judges on SummEval items (direct 1-5 scoring).

Every ``<data_dir>/judges/summeval/*.jsonl`` is one judge; its name is the file name without ``.jsonl``.
Model, provider, prompt family and sampling settings come from ``judges/summeval/judges.json`` when the judge is
listed there; an unlisted judge gets ``prompt_family="unknown"`` and ``model`` = its name.

One row per (item, criterion): ``item_id``, ``criterion``, ``score`` (int 1-5 or null), ``logprobs`` (object
"1".."5" -> log-probability, or null), ``response`` (raw reply text, or null); or, for a judge whose score is a
mean of sampled scores (G-Eval style), ``mean_of_samples`` (a real number in [1, 5]) with ``n_samples`` and
``score``/``logprobs``/``response`` null. Rows are never dropped: a row
with neither score nor response is kept and flagged (``row.is_missing``); a row with only a response needs the
reply parser (``row.needs_parse``).

=============================================  ====================================================
call                                           result
=============================================  ====================================================
``load_recorded_judges(data_dir, items)``      ``list[RecordedJudge]`` sorted by name, rows validated
``load_judges(data_dir)``                      the same, loading SummEval's items itself
``load_judge_infos(path)``                     ``dict[name, JudgeInfo]`` from a ``judges.json``
=============================================  ====================================================
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import msgspec

from offline.build.inputs.errors import DataError, decode_jsonl
from offline.build.inputs.summeval import CRITERIA, N_LABELS, SummEvalItem, load_summeval

__all__ = [
    "UNKNOWN_PROMPT_FAMILY",
    "JudgeInfo",
    "JudgeRow",
    "RecordedJudge",
    "judge_info_for",
    "load_judge_infos",
    "load_judges",
    "load_recorded_judges",
    "validate_logprobs",
]

UNKNOWN_PROMPT_FAMILY = "unknown"
LABEL_KEYS: tuple[str, ...] = tuple(str(label) for label in range(1, N_LABELS + 1))


class JudgeInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What is known about a recorded judge; ``listed`` is False when no ``judges.json`` entry names it."""

    name: str
    model: str
    prompt_family: str = UNKNOWN_PROMPT_FAMILY
    provider: str | None = None
    temperature: float | None = None
    top_k: int | None = None
    logprobs: bool | None = None
    recorded: str | None = None
    source: str | None = None
    listed: bool = False


class JudgeRow(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded answer; ``line`` is its 1-based line in the judge's file."""

    item_id: str
    criterion: str
    score: int | None
    logprobs: dict[str, float] | None
    response: str | None
    line: int
    mean_of_samples: float | None = None
    n_samples: int | None = None

    @property
    def is_missing(self) -> bool:
        """True when the row holds neither a score, a mean of samples nor a reply (the study counts these)."""
        return self.score is None and self.response is None and self.mean_of_samples is None

    @property
    def needs_parse(self) -> bool:
        """True when only the raw reply was recorded, so the score must be parsed from it."""
        return self.score is None and self.response is not None


class RecordedJudge(msgspec.Struct, frozen=True, kw_only=True):
    """One judge file: its info, its rows in file order and the file it came from."""

    info: JudgeInfo
    rows: tuple[JudgeRow, ...]
    path: str

    @property
    def name(self) -> str:
        """The judge's name (file name without ``.jsonl``)."""
        return self.info.name

    def n_missing(self) -> int:
        """Rows with neither score nor reply."""
        return sum(row.is_missing for row in self.rows)

    def n_needs_parse(self) -> int:
        """Rows with a reply but no recorded score."""
        return sum(row.needs_parse for row in self.rows)


class _InfoEntry(msgspec.Struct):
    model: str | None = None
    provider: str | None = None
    prompt_family: str | None = None
    temperature: float | None = None
    top_k: int | None = None
    logprobs: bool | None = None
    recorded: str | None = None
    source: str | None = None


class _Row(msgspec.Struct):
    item_id: str
    criterion: str
    score: int | None = None
    logprobs: dict[str, float] | None = None
    response: str | None = None
    mean_of_samples: float | None = None
    n_samples: int | None = None


def load_judge_infos(path: Path) -> dict[str, JudgeInfo]:
    """Read a ``judges.json`` (object: judge name -> settings); an absent file gives ``{}``.

    Raises:
        DataError: the file is not valid JSON or an entry has fields of the wrong type.
    """
    if not path.exists():
        return {}
    try:
        entries = msgspec.json.decode(path.read_bytes(), type=dict[str, _InfoEntry])
    except msgspec.ValidationError as exc:
        raise DataError(path, None, f"invalid judge list: {exc}") from None
    except msgspec.DecodeError as exc:
        raise DataError(path, None, f"malformed JSON: {exc}") from None
    return {
        name: JudgeInfo(
            name=name,
            model=entry.model or name,
            prompt_family=entry.prompt_family or UNKNOWN_PROMPT_FAMILY,
            provider=entry.provider,
            temperature=entry.temperature,
            top_k=entry.top_k,
            logprobs=entry.logprobs,
            recorded=entry.recorded,
            source=entry.source,
            listed=True,
        )
        for name, entry in entries.items()
    }


def judge_info_for(name: str, infos: dict[str, JudgeInfo]) -> JudgeInfo:
    """The listed info of ``name``, else an unlisted JudgeInfo with prompt family "unknown"."""
    return infos.get(name) or JudgeInfo(name=name, model=name)


def validate_logprobs(logprobs: dict[str, float], path: Path, line: int) -> None:
    """Check a log-prob object: keys among "1".."5", values finite and <= 0 (DataError otherwise)."""
    for key, value in logprobs.items():
        if key not in LABEL_KEYS:
            raise DataError(path, line, f"logprobs key {key!r} is not a label among {', '.join(LABEL_KEYS)}")
        if not math.isfinite(value) or value > 1e-9:
            raise DataError(path, line, f"logprobs[{key!r}] = {value!r} is not a finite log-probability <= 0")


def _read_judge_file(path: Path, info: JudgeInfo, item_ids: set[str]) -> RecordedJudge:
    rows: list[JudgeRow] = []
    seen: set[tuple[str, str]] = set()
    for line, row in decode_jsonl(path, msgspec.json.Decoder(_Row)):
        if row.criterion not in CRITERIA:
            raise DataError(path, line, f"unknown criterion {row.criterion!r} (known: {', '.join(CRITERIA)})")
        if row.item_id not in item_ids:
            raise DataError(path, line, f"item_id {row.item_id!r} is not in the SummEval items")
        if row.score is not None and not 1 <= row.score <= N_LABELS:
            raise DataError(path, line, f"score {row.score!r} is outside 1..{N_LABELS}")
        if row.logprobs is not None:
            validate_logprobs(row.logprobs, path, line)
        if row.mean_of_samples is not None:
            if not math.isfinite(row.mean_of_samples) or not 1 <= row.mean_of_samples <= N_LABELS:
                raise DataError(path, line, f"mean_of_samples {row.mean_of_samples!r} is outside 1..{N_LABELS}")
            if row.score is not None or row.logprobs is not None:
                raise DataError(
                    path,
                    line,
                    "a mean_of_samples row carries no score or logprobs (its kind of verdict is the mean alone)",
                )
        if row.n_samples is not None and row.n_samples < 1:
            raise DataError(path, line, f"n_samples {row.n_samples!r} must be at least 1")
        key = (row.item_id, row.criterion)
        if key in seen:
            raise DataError(path, line, f"duplicate row for item {row.item_id!r}, criterion {row.criterion!r}")
        seen.add(key)
        rows.append(
            JudgeRow(
                item_id=row.item_id,
                criterion=row.criterion,
                score=row.score,
                logprobs=row.logprobs,
                response=row.response,
                line=line,
                mean_of_samples=row.mean_of_samples,
                n_samples=row.n_samples,
            )
        )
    return RecordedJudge(info=info, rows=tuple(rows), path=str(path))


def load_recorded_judges(data_dir: Path | str, items: Iterable[SummEvalItem]) -> list[RecordedJudge]:
    """Load every ``judges/summeval/*.jsonl`` (sorted by judge name), checking each row against ``items``.

    Raises:
        DataError: malformed line, unknown criterion, a score off 1..5, bad log-probs, a duplicate
            (item, criterion), or an ``item_id`` that ``items`` lacks; file and line are named.
    """
    folder = Path(data_dir) / "judges" / "summeval"
    if not folder.is_dir():
        raise DataError(folder, None, "the recorded-judges folder does not exist")
    infos = load_judge_infos(folder / "judges.json")
    item_ids = {item.item_id for item in items}
    return [
        _read_judge_file(path, judge_info_for(path.name.removesuffix(".jsonl"), infos), item_ids)
        for path in sorted(folder.glob("*.jsonl"))
    ]


def load_judges(data_dir: Path | str) -> list[RecordedJudge]:
    """Load SummEval's items, then every recorded judge (see :func:`load_recorded_judges`)."""
    return load_recorded_judges(data_dir, load_summeval(data_dir).items)
