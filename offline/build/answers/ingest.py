"""Put the recorded judge answers shipped in the data directory into the answer store.

Rules:

- Direct answers (``judges/summeval/*.jsonl``): key (judge, prompt family from ``judges.json`` or "unknown",
  ``"direct"``, criterion, item_id, repetition 0, order ""). A recorded ``score`` is kept as is (parse rule
  ``"recorded"``); a row with only a ``response`` is read by ``judges.parsing.reply.parse_score`` (its rule is
  stored; ``judge_score`` None when no score can be read); a row with neither is stored with rule ``"missing"``.
  Log-probs and the raw reply are stored whenever present. No row is dropped.
- Pairwise verdicts (``pairwise/summeval/*.jsonl``): key (judge, family, ``"pairwise"``, criterion,
  ``pair_item_id(doc, first, second)``, repetition 0, order ``"ab"`` when ``first`` sorts before ``second`` in
  plain string order, else ``"ba"``); ``outcome`` ("first"/"second"/"tie", relative to the order shown) by
  ``judges.parsing.reply.parse_preference`` (rule ``"preference"``, or ``"no_preference"`` when unreadable).
- Vicuna80 verdicts (``pairwise/vicuna80/judges/*.jsonl``, :func:`ingest_vicuna80`): key (judge = file name,
  ``"prd"``, ``"pairwise"``, ``"overall"``, ``pair_item_id(question, first, second)``, repetition, order as
  above); ``outcome`` by ``judges.parsing.choice.parse_choice`` where the reply parses, else the recorded label
  (rule ``"recorded_label:<reason>"``).
- Idempotent: one ``put_many`` transaction; re-ingesting unchanged data inserts and updates nothing.

Counts per (judge, task): ``rows`` = ``recorded`` (score in the file) + ``parsed`` (read from the reply) +
``unparsed`` (reply without a readable verdict) + ``missing`` (neither score nor reply).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

import msgspec

from offline.build.answers.records import AnswerRecord, Outcome, PutStats
from offline.build.answers.store import AnswerStore
from offline.build.inputs.judges import RecordedJudge, load_recorded_judges
from offline.build.inputs.pairwise import RecordedPairwise, load_pairwise, pair_item_id, presentation_order
from offline.build.inputs.summeval import load_summeval
from offline.build.inputs.vicuna80 import JudgeVerdict, Vicuna80

__all__ = [
    "RECORDED_LABEL_RULE",
    "VICUNA80_CRITERION",
    "VICUNA80_PROMPT_FAMILY",
    "ChoiceParseCounts",
    "IngestReport",
    "JudgeIngestCounts",
    "Vicuna80Ingest",
    "direct_records",
    "format_report",
    "ingest_recorded",
    "ingest_vicuna80",
    "pairwise_records",
    "vicuna80_records",
]

MAX_EXAMPLES = 5


class ParsedLike(Protocol):
    """What a score parser returns (``judges.parsing.reply.ParsedScore``): a score or None, and the rule."""

    @property
    def score(self) -> int | None: ...
    @property
    def rule(self) -> str: ...


ScoreParser = Callable[[str | None], ParsedLike]
PreferenceParser = Callable[[str | None], Outcome | None]


class JudgeIngestCounts(msgspec.Struct, frozen=True, kw_only=True):
    """Per (judge, task) ingest counts; ``unparsed_examples`` holds up to 5 replies that could not be read."""

    judge: str
    prompt_family: str
    task: str
    rows: int
    recorded: int
    parsed: int
    unparsed: int
    missing: int
    unparsed_examples: tuple[str, ...] = ()

    @property
    def parse_rate(self) -> float | None:
        """Share of free-text replies that gave a verdict; None when the judge recorded no free text."""
        replies = self.parsed + self.unparsed
        return self.parsed / replies if replies else None


class IngestReport(msgspec.Struct, frozen=True, kw_only=True):
    """What one ingest did: per-judge counts, store changes, elapsed seconds."""

    judges: tuple[JudgeIngestCounts, ...]
    inserted: int
    updated: int
    unchanged: int
    seconds: float

    def for_judge(self, judge: str, task: str = "direct") -> JudgeIngestCounts:
        """The counts of one judge and task (KeyError when absent)."""
        for counts in self.judges:
            if counts.judge == judge and counts.task == task:
                return counts
        raise KeyError((judge, task))


def _default_parsers() -> tuple[ScoreParser, PreferenceParser]:
    # Imported here so the data loaders stay usable (and testable) without the service package.
    from judges.parsing.reply import parse_preference, parse_score

    return parse_score, parse_preference


class _Tally:
    def __init__(self) -> None:
        self.rows = self.recorded = self.parsed = self.unparsed = self.missing = 0
        self.examples: list[str] = []

    def unreadable(self, reply: str) -> None:
        self.unparsed += 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(reply)

    def counts(self, judge: str, prompt_family: str, task: str) -> JudgeIngestCounts:
        return JudgeIngestCounts(
            judge=judge,
            prompt_family=prompt_family,
            task=task,
            rows=self.rows,
            recorded=self.recorded,
            parsed=self.parsed,
            unparsed=self.unparsed,
            missing=self.missing,
            unparsed_examples=tuple(self.examples),
        )


def direct_records(judge: RecordedJudge, parse_score: ScoreParser) -> tuple[list[AnswerRecord], JudgeIngestCounts]:
    """The store records of one recorded direct-scoring judge (by the module's rules) and their counts."""
    info = judge.info
    tally = _Tally()
    records = []
    for row in judge.rows:
        tally.rows += 1
        score, rule = row.score, "recorded"
        if row.score is not None:
            tally.recorded += 1
        elif row.mean_of_samples is not None:
            rule = "mean_of_samples"
            tally.recorded += 1
        elif row.response is None:
            rule = "missing"
            tally.missing += 1
        else:
            parsed = parse_score(row.response)
            score, rule = parsed.score, parsed.rule
            if score is None:
                tally.unreadable(row.response)
            else:
                tally.parsed += 1
        records.append(
            AnswerRecord(
                judge=info.name,
                prompt_family=info.prompt_family,
                task="direct",
                criterion=row.criterion,
                item_id=row.item_id,
                repetition=0,
                order="",
                judge_score=score,
                logprobs=row.logprobs,
                raw_reply=row.response,
                parse_rule=rule,
                model=info.model,
                mean_of_samples=row.mean_of_samples,
            )
        )
    return records, tally.counts(info.name, info.prompt_family, "direct")


def pairwise_records(
    judge: RecordedPairwise, parse_preference: PreferenceParser
) -> tuple[list[AnswerRecord], JudgeIngestCounts]:
    """The store records of one recorded pairwise judge (by the module's rules) and their counts."""
    info = judge.info
    tally = _Tally()
    records = []
    for row in judge.rows:
        tally.rows += 1
        outcome, rule = None, "missing"
        if row.response is None:
            tally.missing += 1
        else:
            outcome = parse_preference(row.response)
            rule = "preference" if outcome is not None else "no_preference"
            if outcome is None:
                tally.unreadable(row.response)
            else:
                tally.parsed += 1
        records.append(
            AnswerRecord(
                judge=info.name,
                prompt_family=info.prompt_family,
                task="pairwise",
                criterion=row.criterion,
                item_id=row.item_id,
                repetition=0,
                order=row.order,
                outcome=outcome,
                raw_reply=row.response,
                parse_rule=rule,
                model=info.model,
            )
        )
    return records, tally.counts(info.name, info.prompt_family, "pairwise")


def ingest_recorded(
    store: AnswerStore,
    data_dir: Path | str,
    *,
    parse_score: ScoreParser | None = None,
    parse_preference: PreferenceParser | None = None,
) -> IngestReport:
    """Load, validate and upsert every recorded direct and pairwise answer under ``data_dir`` (module rules).

    The parsers default to ``judges.parsing.reply``'s. Raises DataError (from the loaders) for bad files; the
    store is left unchanged then, since nothing is written before every file has loaded.
    """
    started = time.perf_counter()
    if parse_score is None or parse_preference is None:
        default_score, default_preference = _default_parsers()
        parse_score = parse_score or default_score
        parse_preference = parse_preference or default_preference
    summeval = load_summeval(data_dir)
    judges = load_recorded_judges(data_dir, summeval.items)
    pairwise = load_pairwise(data_dir, summeval)
    records: list[AnswerRecord] = []
    counts: list[JudgeIngestCounts] = []
    for judge in judges:
        judge_records, judge_counts = direct_records(judge, parse_score)
        records.extend(judge_records)
        counts.append(judge_counts)
    for verdicts in pairwise:
        judge_records, judge_counts = pairwise_records(verdicts, parse_preference)
        records.extend(judge_records)
        counts.append(judge_counts)
    stats: PutStats = store.put_many(records)
    return IngestReport(
        judges=tuple(counts),
        inserted=stats.inserted,
        updated=stats.updated,
        unchanged=stats.unchanged,
        seconds=time.perf_counter() - started,
    )


def format_report(report: IngestReport) -> Iterable[str]:
    """Human-readable lines: one per (judge, task) with counts and parse rate, then the store changes."""
    for c in report.judges:
        rate = "" if c.parse_rate is None else f" parse_rate={c.parse_rate:.4f}"
        yield (
            f"{c.judge} [{c.prompt_family}/{c.task}] rows={c.rows} recorded={c.recorded} parsed={c.parsed} "
            f"unparsed={c.unparsed} missing={c.missing}{rate}"
        )
    yield (
        f"store: inserted={report.inserted} updated={report.updated} unchanged={report.unchanged} "
        f"({report.seconds:.2f} s)"
    )


# ------------------------------------------------------------------------------------ Vicuna80 tournaments

#: Store key fields of the Vicuna80 verdicts: the PRD prompt asks for one overall quality choice. The criterion
#: is outside SummEval's, so the SummEval pairwise studies never read these answers.
VICUNA80_PROMPT_FAMILY = "prd"
VICUNA80_CRITERION = "overall"
#: ``parse_rule`` prefix of a verdict taken from the recorded label because the reply did not parse.
RECORDED_LABEL_RULE = "recorded_label"


class ChoiceParseCounts(msgspec.Struct, frozen=True, kw_only=True):
    """Per Vicuna80 judge: replies read by ``parse_choice``, replies left to the recorded label, agreement."""

    judge: str
    rows: int
    parsed: int
    from_label: int
    agree: int  # parsed verdicts equal to the recorded label
    rules: dict[str, int]

    @property
    def parse_rate(self) -> float:
        """parsed / rows."""
        return self.parsed / self.rows if self.rows else 0.0

    @property
    def agreement(self) -> float | None:
        """agree / parsed (None when nothing parsed)."""
        return self.agree / self.parsed if self.parsed else None


class Vicuna80Ingest(msgspec.Struct, frozen=True, kw_only=True):
    """What ingesting the Vicuna80 verdicts did: per-judge parse counts and store changes."""

    judges: tuple[ChoiceParseCounts, ...]
    inserted: int
    updated: int
    unchanged: int


def vicuna80_records(
    judge: str, verdicts: Iterable[JudgeVerdict], parse_choice: Callable[[str | None], Any]
) -> tuple[list[AnswerRecord], ChoiceParseCounts]:
    """Store records of one Vicuna80 judge: key (judge, "prd", "pairwise", "overall", pair item id, repetition,
    order); ``outcome`` = the parsed choice where the reply parses, else the recorded label (rule
    ``recorded_label:<why the parser refused>``)."""
    records: list[AnswerRecord] = []
    rules: Counter[str] = Counter()
    parsed = agree = rows = 0
    for verdict in verdicts:
        rows += 1
        choice = parse_choice(verdict.response)
        rules[choice.rule] += 1
        if choice.outcome is not None:
            parsed += 1
            agree += choice.outcome == verdict.label
            outcome, rule = choice.outcome, choice.rule
        else:
            outcome, rule = verdict.label, f"{RECORDED_LABEL_RULE}:{choice.rule}"
        records.append(
            AnswerRecord(
                judge=judge,
                prompt_family=VICUNA80_PROMPT_FAMILY,
                task="pairwise",
                criterion=VICUNA80_CRITERION,
                item_id=pair_item_id(verdict.item_id, verdict.first, verdict.second),
                repetition=verdict.repetition,
                order=presentation_order(verdict.first, verdict.second),
                outcome=outcome,
                raw_reply=verdict.response,
                parse_rule=rule,
                model=judge,
            )
        )
    counts = ChoiceParseCounts(
        judge=judge, rows=rows, parsed=parsed, from_label=rows - parsed, agree=agree, rules=dict(sorted(rules.items()))
    )
    return records, counts


def ingest_vicuna80(
    store: AnswerStore, data: Vicuna80, *, parse_choice: Callable[[str | None], Any] | None = None
) -> Vicuna80Ingest:
    """Upsert every Vicuna80 judge verdict (``vicuna80_records``) in one transaction; idempotent."""
    if parse_choice is None:
        from judges.parsing.choice import parse_choice as default_parse_choice

        parse_choice = default_parse_choice
    records: list[AnswerRecord] = []
    counts = []
    for judge, verdicts in data.judges.items():
        judge_records, judge_counts = vicuna80_records(judge, verdicts, parse_choice)
        records.extend(judge_records)
        counts.append(judge_counts)
    stats = store.put_many(records)
    return Vicuna80Ingest(
        judges=tuple(counts), inserted=stats.inserted, updated=stats.updated, unchanged=stats.unchanged
    )
