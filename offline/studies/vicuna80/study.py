"""Transitivity on real round-robin tournaments: Vicuna80 (80 questions x 5 assistants, 5 LLM judges, human votes).

Input: the Vicuna80 verdicts read back from the answer store
(``offline.build.answers.ingest.ingest_vicuna80``: the parsed choice where the reply parses, else the recorded
label) and the human votes (``offline.build.inputs.vicuna80``).
Rules, stated once (also written into the JSON):

* **Input** x = one (question, source); source = a judge, ``panel`` (all five judges' verdicts pooled) or
  ``human`` (every human vote on the question). Candidates: the question's assistants, sorted by name.
* **Aggregations.** ``both_orders``: net votes per pair over both presentation orders and every repetition
  (:func:`calibration.tournaments.tournament.build_tournament`; a zero net or only tie verdicts is a tied pair, never an
  edge). ``order_a``: only verdicts whose ``first`` sorts before ``second`` (plain string order); ``order_b``:
  the others. Human votes come in one presentation order per pair, so humans are reported under
  ``both_orders`` only (their majority per pair).
* **rho(x)** = directed 3-cycles / C(n, 3); per source and aggregation: mean, median, max, share of questions
  with >= 1 cycle, tied pairs (:func:`calibration.tournaments.tournament.summarize_violation_rates`).
* **Rankings vs humans** (``both_orders``). Per question, each of the five methods ranks the assistants from
  the source's tournament; the reference is the human tournament of the same question ranked by the same method
  (``reference: same_method``) or by win rate (``reference: win_rate``). Agreement = Kendall tau-b between the
  method's scores and the reference scores (ties stay ties; undefined when either is constant: counted, not
  averaged). Reported: mean, sample std (ddof 1), quartiles over questions. Pooled: one tournament per source
  over all questions, the same comparison once.
* **Position bias** per judge: candidates are question-scoped; consistency = pairs whose per-order majority
  survives the swap (:func:`calibration.tournaments.position_consistency.position_consistency`); first-shown wins over
  decisive verdicts.
* **Intervals** (95%, the question is the unit): the share of questions with a cycle, exact Clopper-Pearson; the
  mean rho, the mean per-question tau (over its defined values) and the pooled position shares (consistency,
  first-shown wins), percentile bootstrap over questions, 2,000 draws, seed 0 (:mod:`calibration.unit_bootstrap`;
  :func:`offline.studies.tournaments.position_bias.unit_intervals`). A pooled ranking is one tournament: no interval.

Modules: verdicts and aggregations in :mod:`offline.studies.vicuna80.verdicts`, rankings and conclusions in
:mod:`offline.studies.vicuna80.rankings`, result types in :mod:`offline.studies.vicuna80.results`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from calibration.errors import CalibrationError
from calibration.tournaments.position_consistency import position_consistency
from calibration.tournaments.ranking import rank_all
from calibration.tournaments.tournament import (
    RANDOM_TOURNAMENT_VIOLATION_RATE,
    PairwiseVerdict,
    Tournament,
    build_tournament,
    summarize_violation_rates,
    three_cycles,
    violation_rate,
)
from offline.build.answers.ingest import RECORDED_LABEL_RULE, ChoiceParseCounts, ingest_vicuna80
from offline.build.answers.store import AnswerStore
from offline.build.inputs.vicuna80 import Vicuna80, load_vicuna80, vicuna80_dir
from offline.jsonfile import write_json
from offline.studies.tournaments.position_bias import unit_intervals
from offline.studies.vicuna80.rankings import PANEL, RANKING_METHODS, conclusions, pooled_rows, ranking_rows
from offline.studies.vicuna80.results import (
    QuestionRankings,
    Vicuna80Input,
    Vicuna80ParseRow,
    Vicuna80PositionRow,
    Vicuna80RankingRow,
    Vicuna80Row,
    Vicuna80Summary,
)
from offline.studies.vicuna80.verdicts import AGGREGATIONS, Vicuna80Verdict, aggregate, by_question, verdicts_from_store

__all__ = [
    "HUMAN",
    "JSON_FILE",
    "run_vicuna80_study",
    "vicuna80_step",
    "write_vicuna80_study",
]

JSON_FILE = "transitivity/vicuna80.json"
HUMAN = "human"

RULES = {
    "input": "one (question, source); source = a judge, 'panel' (the five judges pooled) or 'human'; candidates = "
    "the question's 5 assistants sorted by name",
    "verdict": "the parsed choice (judges.parsing.choice.parse_choice) where the reply parses, else the recorded label",
    "both_orders": "net votes per pair over both orders and all repetitions; zero net or only ties = tied pair, no "
    "edge",
    "order_a": "only verdicts whose first-shown assistant sorts before the second (plain string order)",
    "order_b": "only verdicts whose first-shown assistant sorts after the second",
    "human": "majority of the human votes per pair (both_orders only: each pair was shown to humans in one order); "
    "votes on assistants an item lacks (guanaco models) are left out and counted",
    "violation_rate": "directed 3-cycles / C(5, 3)",
    "rankings": "both_orders; per question Kendall tau-b between the method's scores and the human tournament's "
    "scores by the same method (same_method) or by win rate (win_rate); undefined when either side is constant "
    "(counted, not averaged); std with ddof 1; pooled = one tournament per source over all questions",
    "position_bias": "question-scoped pairs judged in both orders whose per-order majority names the same assistant "
    "(or ties in both); first_win_rate over decisive verdicts",
    "intervals": "95%, questions as the unit: share_with_cycle_ci exact Clopper-Pearson; violation_rate_ci (of the "
    "mean rate) and mean_tau_ci (per question, over the defined taus) percentile bootstrap over questions; "
    "consistency_ci and first_win_rate_ci percentile bootstrap of the pooled share over questions; 2000 draws, "
    "seed 0; pooled rankings (one tournament) carry none",
}


def _tournaments(
    grouped: dict[str, list[Vicuna80Verdict]], candidates: dict[str, tuple[str, ...]], aggregation: str
) -> dict[str, Tournament]:
    return {q: build_tournament(candidates[q], aggregate(vs, aggregation)) for q, vs in sorted(grouped.items())}


def _rate_rows(
    source: str, aggregation: str, tournaments: dict[str, Tournament], n_verdicts: int
) -> tuple[Vicuna80Row, list[Vicuna80Input]]:
    inputs = []
    for question, tournament in tournaments.items():
        cycles = three_cycles(tournament)
        inputs.append(
            Vicuna80Input(
                judge=source,
                aggregation=aggregation,
                item_id=question,
                violation_rate=violation_rate(tournament),
                n_cycles=len(cycles),
                cycles=[list(c) for c in cycles],
                n_tied_pairs=tournament.n_tied_pairs,
                n_missing_pairs=tournament.n_missing_pairs,
            )
        )
    summary = summarize_violation_rates([x.violation_rate for x in inputs])
    row = Vicuna80Row(
        judge=source,
        aggregation=aggregation,
        mean=summary.mean,
        median=summary.median,
        max=summary.max,
        share_with_cycle=summary.share_with_cycle,
        n_with_cycle=sum(x.n_cycles > 0 for x in inputs),
        n_cycles=sum(x.n_cycles for x in inputs),
        n_inputs=summary.n_inputs,
        n_tied_pairs=sum(x.n_tied_pairs for x in inputs),
        n_missing_pairs=sum(x.n_missing_pairs for x in inputs),
        n_verdicts=n_verdicts,
        violation_rate_ci=summary.mean_ci,
        share_with_cycle_ci=summary.share_with_cycle_ci,
    )
    return row, inputs


def _scoped(verdicts: Iterable[Vicuna80Verdict]) -> list[PairwiseVerdict]:
    return [
        PairwiseVerdict(first=f"{v.item_id}/{v.first}", second=f"{v.item_id}/{v.second}", outcome=v.outcome)  # type: ignore[arg-type]
        for v in verdicts
    ]


def _position_row(judge: str, verdicts: Sequence[Vicuna80Verdict]) -> Vicuna80PositionRow:
    result = position_consistency(_scoped(verdicts))
    consistency_ci, first_win_rate_ci = unit_intervals({q: _scoped(vs) for q, vs in by_question(verdicts).items()})
    return Vicuna80PositionRow(
        judge=judge,
        consistency=result.rate,
        n_pairs_both_orders=result.n_pairs_both_orders,
        n_consistent=result.n_consistent,
        first_win_rate=result.first_win_rate,
        tie_rate=result.tie_rate,
        n_verdicts=result.n_verdicts,
        consistency_ci=consistency_ci,
        first_win_rate_ci=first_win_rate_ci,
    )


def _parse_rows(counts: Sequence[ChoiceParseCounts], stored_rules: dict[str, Counter[str]]) -> list[Vicuna80ParseRow]:
    rows = []
    for c in counts:
        stored = stored_rules.get(c.judge, Counter())
        from_label = sum(n for rule, n in stored.items() if rule.startswith(RECORDED_LABEL_RULE))
        if sum(stored.values()) != c.rows or from_label != c.from_label:
            raise CalibrationError(
                f"the answer store's Vicuna80 verdicts of {c.judge} ({sum(stored.values())}, "
                f"{from_label} from labels) differ from this ingest ({c.rows}, {c.from_label}): "
                "rows left the judge's file since the store was written; remove the store file "
                "(--store) and rerun"
            )
        rows.append(
            Vicuna80ParseRow(
                judge=c.judge,
                n_rows=c.rows,
                n_parsed=c.parsed,
                n_from_label=c.from_label,
                parse_rate=c.parse_rate,
                agreement_with_label=c.agreement,
                rules=c.rules,
            )
        )
    return rows


def run_vicuna80_study(
    data: Vicuna80,
    verdicts: Sequence[Vicuna80Verdict],
    parse_counts: Sequence[ChoiceParseCounts],
    stored_rules: dict[str, Counter[str]],
    *,
    source: str,
    progress: Callable[[Iterable], Iterable] = lambda it: it,
) -> Vicuna80Summary:
    """Every table of the study (module rules) from the judges' verdicts and ``data``'s human votes."""
    judges = sorted({v.source for v in verdicts})
    candidates = {q: tuple(sorted(item.answers)) for q, item in data.items.items()}
    everyone = tuple(sorted({a for names in candidates.values() for a in names}))
    by_source: dict[str, list[Vicuna80Verdict]] = {j: [v for v in verdicts if v.source == j] for j in judges}
    by_source[PANEL] = list(verdicts)
    human = [
        Vicuna80Verdict(source=HUMAN, item_id=v.item_id, first=v.first, second=v.second, outcome=v.vote)
        for v in data.human
    ]

    rows: list[Vicuna80Row] = []
    inputs: list[Vicuna80Input] = []
    both: dict[str, dict[str, Tournament]] = {}
    for source_name in progress([*judges, PANEL, HUMAN]):
        group = human if source_name == HUMAN else by_source[source_name]
        grouped = by_question(group)
        for aggregation in AGGREGATIONS if source_name != HUMAN else ("both_orders",):
            tournaments = _tournaments(grouped, candidates, aggregation)
            n_verdicts = len(aggregate(group, aggregation))
            row, source_inputs = _rate_rows(source_name, aggregation, tournaments, n_verdicts)
            rows.append(row)
            inputs.extend(source_inputs)
            if aggregation == "both_orders":
                both[source_name] = tournaments

    human_rankings = {q: rank_all(t) for q, t in both[HUMAN].items()}
    human_pooled = rank_all(build_tournament(everyone, aggregate(human, "both_orders")))
    rankings: list[Vicuna80RankingRow] = []
    question_rankings: list[QuestionRankings] = []
    for source_name in (*judges, PANEL):
        per_question = {q: rank_all(t) for q, t in both[source_name].items()}
        question_rankings.extend(
            QuestionRankings(judge=source_name, item_id=q, orders={m: list(r[m].order) for m in RANKING_METHODS})
            for q, r in per_question.items()
        )
        rankings.extend(ranking_rows(source_name, per_question, human_rankings, candidates))
        pooled = rank_all(build_tournament(everyone, aggregate(by_source[source_name], "both_orders")))
        rankings.extend(pooled_rows(source_name, pooled, human_pooled, everyone))
    # Context: each method on the human tournament against its win rate (how much the method alone matters).
    rankings.extend(ranking_rows(HUMAN, human_rankings, human_rankings, candidates, ("win_rate",)))
    best, versus = conclusions(rankings, judges)

    return Vicuna80Summary(
        label="real tournaments (Vicuna80, PRD): recorded LLM judges and human votes",
        source=source,
        rules=dict(RULES),
        random_baseline=RANDOM_TOURNAMENT_VIOLATION_RATE,
        judges=judges,
        assistants=list(everyone),
        n_questions=len(data.items),
        n_human_votes=len(data.human),
        human_votes_left_out=dict(data.human_outside),
        n_human_votes_left_out=data.n_human_left_out,
        rows=rows,
        rankings=rankings,
        position_bias=[_position_row(j, by_source[j]) for j in judges],
        parse=_parse_rows(parse_counts, stored_rules),
        best_method=best,
        mfas_vs_copeland=versus,
        inputs=inputs,
        question_rankings=question_rankings,
    )


def write_vicuna80_study(summary: Vicuna80Summary, out: Path) -> Path:
    """``<out>/transitivity/vicuna80.json`` (indented; undefined statistics are null)."""
    path = out / JSON_FILE
    write_json(summary, path)
    return path


def vicuna80_step(
    store: AnswerStore, data_dir: Path, out: Path, *, progress: Callable[[Iterable], Iterable] = lambda it: it
) -> Vicuna80Summary | None:
    """Calibrate's step: load ``pairwise/vicuna80``, ingest its verdicts into ``store``, run the study from the
    store, write the JSON. Without the folder: remove a previous run's JSON and return None.

    Raises:
        DataError: a refused file or row (``file:line: problem``).
    """
    if not vicuna80_dir(data_dir).is_dir():
        (out / JSON_FILE).unlink(missing_ok=True)
        return None
    data = load_vicuna80(data_dir)
    ingested = ingest_vicuna80(store, data)
    verdicts, rules = verdicts_from_store(store, data.judges)
    summary = run_vicuna80_study(
        data,
        verdicts,
        ingested.judges,
        rules,
        progress=progress,
        source=f"{vicuna80_dir(data_dir)} (judges/*.jsonl via the answer store; human.jsonl)",
    )
    write_vicuna80_study(summary, out)
    return summary
