"""Sentence-level LLM fact-checks on FRANK, parsed and stored: each recorded reply read by the service's parser,
its parse statistics, its answer-store record, and the stored answers read back.

The parse and store rules are stated in :mod:`offline.studies.factuality.sentences` (the study of these checks).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from judges.factuality.sentence_check import judge_score_from_share
from judges.factuality.sentence_parse import ParsedSentences, parse_sentence_verdicts
from offline.build.answers.records import AnswerRecord
from offline.build.answers.store import AnswerStore
from offline.build.factuality.answers import CRITERION, FactualityAnswer
from offline.build.inputs.finesure import FactCheckRow, RecordedFactCheck
from offline.build.inputs.frank import FrankDataError, FrankItem

__all__ = [
    "METHOD",
    "ParseStats",
    "PROMPT_FAMILY",
    "ingest_sentences",
    "item_score",
    "judge_score_of",
    "parse_row",
    "parse_statistics",
    "sentence_answers_from_store",
    "sentence_records",
]

METHOD = "sentences"
PROMPT_FAMILY = "factuality_sentences"


class ParseStats(msgspec.Struct, frozen=True, kw_only=True):
    """How one judge's replies read: rows, lists read, count mismatches (excluded), agreement with the recorder."""

    judge: str
    n_rows: int
    n_read: int  # replies giving a list of well-formed verdicts (any length)
    n_included: int  # read and one verdict per sentence
    n_wrong_count: int  # read, but the count differs from the sentences: excluded
    n_unreadable: int  # no list of well-formed verdicts
    n_escapes_repaired: int
    parse_rate: float
    rules: dict[str, int]
    recorded_row_agreement: float | None  # same (error, category) lists as pred_error/pred_error_type
    recorded_sentence_agreement: float | None  # same error flag, sentence by sentence, where the lengths match
    n_compared_rows: int


def item_score(parsed: ParsedSentences) -> float | None:
    """Share of sentences judged error-free, or None when the reply gave no verdicts per sentence."""
    if parsed.verdicts is None or not parsed.verdicts:
        return None
    return sum(not v.error for v in parsed.verdicts) / len(parsed.verdicts)


def judge_score_of(score: float) -> int:
    """The 1-5 verdict of an item score in [0, 1]: ``1 + round_half_up(4 x score)``, the service's rule
    (``judges.factuality.sentence_check.judge_score_from_share``), so offline and live verdicts agree."""
    return judge_score_from_share(score)


def parse_row(row: FactCheckRow) -> ParsedSentences:
    """The row's reply read with its sentence count (module rules)."""
    return parse_sentence_verdicts(row.response, n_sentences=len(row.sentences))


def parse_statistics(judge: str, rows: Sequence[FactCheckRow], parsed: Sequence[ParsedSentences]) -> ParseStats:
    """One judge's parse statistics: parse rate, rules, and agreement with the recorder's own reading."""
    rules: dict[str, int] = {}
    for p in parsed:
        rules[p.rule] = rules.get(p.rule, 0) + 1
    n_wrong = rules.get("wrong_count", 0)
    n_included = sum(p.ok for p in parsed)
    compared = same_rows = same_sentences = n_sentences = 0
    for row, p in zip(rows, parsed, strict=True):
        loose = p if p.ok else parse_sentence_verdicts(row.response)  # a wrong-count list is still a reading
        if loose.verdicts is None:
            continue
        compared += 1
        ours = ([int(v.error) for v in loose.verdicts], [v.category for v in loose.verdicts])
        same_rows += ours == (list(row.pred_error), list(row.pred_error_type))
        if len(ours[0]) == len(row.pred_error):
            n_sentences += len(ours[0])
            same_sentences += sum(a == b for a, b in zip(ours[0], row.pred_error, strict=True))
    return ParseStats(
        judge=judge,
        n_rows=len(rows),
        n_read=n_included + n_wrong,
        n_included=n_included,
        n_wrong_count=n_wrong,
        n_unreadable=len(rows) - n_included - n_wrong,
        n_escapes_repaired=sum(p.escapes_repaired for p in parsed),
        parse_rate=(n_included + n_wrong) / len(rows) if rows else 0.0,
        rules=dict(sorted(rules.items())),
        recorded_row_agreement=same_rows / compared if compared else None,
        recorded_sentence_agreement=same_sentences / n_sentences if n_sentences else None,
        n_compared_rows=compared,
    )


def sentence_records(check: RecordedFactCheck) -> tuple[list[AnswerRecord], ParseStats]:
    """The store records of one judge's recorded fact-checks (module rules) and its parse statistics."""
    parsed = [parse_row(row) for row in check.rows]
    records = []
    for row, p in zip(check.rows, parsed, strict=True):
        score = item_score(p)
        records.append(
            AnswerRecord(
                judge=check.judge,
                prompt_family=PROMPT_FAMILY,
                task="factuality_sentences",
                criterion=CRITERION,
                item_id=row.item_id,
                judge_score=None if score is None else judge_score_of(score),
                raw_reply=row.response,
                parse_rule=p.rule,
                model=check.judge,
            )
        )
    return records, parse_statistics(check.judge, check.rows, parsed)


def ingest_sentences(store: AnswerStore, checks: Sequence[RecordedFactCheck]) -> list[ParseStats]:
    """Put every judge's records into the store in one transaction; return each judge's parse statistics."""
    records: list[AnswerRecord] = []
    stats = []
    for check in checks:
        judge_records, judge_stats = sentence_records(check)
        records += judge_records
        stats.append(judge_stats)
    if records:
        store.put_many(records)
    return stats


def sentence_answers_from_store(
    store: AnswerStore, items: Sequence[FrankItem]
) -> dict[tuple[str, str], list[FactualityAnswer]]:
    """Every judge's stored sentence fact-checks as ``FactualityAnswer`` (score = item score, re-read from the
    stored reply; judge_score as stored), keyed ``(judge, "sentences")``, each ordered by item_id.

    Raises FrankDataError when a stored item_id names no FRANK item.
    """
    known = {item.item_id for item in items}
    result: dict[tuple[str, str], list[FactualityAnswer]] = {}
    for record in store.iter_answers(task="factuality_sentences", prompt_family=PROMPT_FAMILY, criterion=CRITERION):
        if record.repetition != 0:
            continue
        if record.item_id not in known:
            raise FrankDataError(
                None,
                None,
                f"stored {PROMPT_FAMILY} answer of judge {record.judge!r} names item "
                f"{record.item_id!r}, which is no FRANK '<hash>/<model_name>'",
            )
        ok = record.error is None and record.judge_score is not None
        score = item_score(parse_sentence_verdicts(record.raw_reply)) if ok else None
        result.setdefault((record.judge, METHOD), []).append(
            FactualityAnswer(
                judge=record.judge,
                method=METHOD,
                prompt_family=PROMPT_FAMILY,
                item_id=record.item_id,
                judge_score=record.judge_score if ok and score is not None else None,
                score=score,
                model=record.model,
                error=record.error,
            )
        )
    for answers in result.values():
        answers.sort(key=lambda answer: answer.item_id)
    return dict(sorted(result.items()))
