"""Transitivity on real round-robin tournaments: Vicuna80 (80 questions x 5 assistants, 5 LLM judges, human votes).

Input: the Vicuna80 verdicts read back from the answer store (``offline.ingest.ingest_vicuna80``: the parsed
choice where the reply parses, else the recorded label) and the human votes (``offline.data.vicuna80``).
Rules, stated once (also written into the JSON):

* **Input** x = one (question, source); source = a judge, ``panel`` (all five judges' verdicts pooled) or
  ``human`` (every human vote on the question). Candidates: the question's assistants, sorted by name.
* **Aggregations.** ``both_orders``: net votes per pair over both presentation orders and every repetition
  (:func:`calibration.tournament.build_tournament`; a zero net or only tie verdicts is a tied pair, never an
  edge). ``order_a``: only verdicts whose ``first`` sorts before ``second`` (plain string order); ``order_b``:
  the others. Human votes come in one presentation order per pair, so humans are reported under
  ``both_orders`` only (their majority per pair).
* **rho(x)** = directed 3-cycles / C(n, 3); per source and aggregation: mean, median, max, share of questions
  with >= 1 cycle, tied pairs (:func:`calibration.tournament.summarize_violation_rates`).
* **Rankings vs humans** (``both_orders``). Per question, each of the five methods ranks the assistants from
  the source's tournament; the reference is the human tournament of the same question ranked by the same method
  (``reference: same_method``) or by win rate (``reference: win_rate``). Agreement = Kendall tau-b between the
  method's scores and the reference scores (ties stay ties; undefined when either is constant: counted, not
  averaged). Reported: mean, sample std (ddof 1), quartiles over questions. Pooled: one tournament per source
  over all questions, the same comparison once.
* **Position bias** per judge: candidates are question-scoped; consistency = pairs whose per-order majority
  survives the swap (:func:`calibration.tournament.position_consistency`); first-shown wins over decisive verdicts.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec
import numpy as np

from calibration.errors import CalibrationError
from calibration.ranking import Ranking, rank_all
from calibration.stats import kendall_tau_b_statistic
from calibration.tournament import (
    RANDOM_TOURNAMENT_VIOLATION_RATE,
    PairwiseVerdict,
    Tournament,
    build_tournament,
    position_consistency,
    summarize_violation_rates,
    three_cycles,
    violation_rate,
)
from offline.data.pairwise import presented
from offline.data.vicuna80 import Vicuna80, load_vicuna80, vicuna80_dir
from offline.ingest import (
    RECORDED_LABEL_RULE,
    VICUNA80_CRITERION,
    VICUNA80_PROMPT_FAMILY,
    ChoiceParseCounts,
    ingest_vicuna80,
)
from offline.jsonfile import write_json
from offline.store import AnswerStore
from offline.studies.vicuna80_results import (
    BestMethod,
    MfasVersusCopeland,
    QuestionRankings,
    Spread,
    Vicuna80Input,
    Vicuna80ParseRow,
    Vicuna80PositionRow,
    Vicuna80RankingRow,
    Vicuna80Row,
    Vicuna80Summary,
)

__all__ = [
    "AGGREGATIONS",
    "HUMAN",
    "JSON_FILE",
    "PANEL",
    "RANKING_METHODS",
    "Vicuna80Verdict",
    "aggregate",
    "run_vicuna80_study",
    "verdicts_from_store",
    "vicuna80_step",
    "write_vicuna80_study",
]

JSON_FILE = "transitivity/vicuna80.json"
AGGREGATIONS: tuple[str, ...] = ("both_orders", "order_a", "order_b")
PANEL = "panel"
HUMAN = "human"
RANKING_METHODS: tuple[str, ...] = ("win_rate", "bradley_terry", "schulze", "mfas_copeland", "mfas_ilp")
REFERENCES: tuple[str, ...] = ("same_method", "win_rate")

RULES = {
    "input": "one (question, source); source = a judge, 'panel' (the five judges pooled) or 'human'; candidates = "
    "the question's 5 assistants sorted by name",
    "verdict": "the parsed choice (judges.parse_choice.parse_choice) where the reply parses, else the recorded label",
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
}


class Vicuna80Verdict(msgspec.Struct, frozen=True, kw_only=True):
    """One verdict as shown (judge or human vote): ``outcome`` relative to the order shown."""

    source: str
    item_id: str
    first: str
    second: str
    outcome: str
    repetition: int = 0


def verdicts_from_store(
    store: AnswerStore, judges: Iterable[str] | None = None
) -> tuple[list[Vicuna80Verdict], dict[str, Counter[str]]]:
    """The stored Vicuna80 verdicts as shown (store key order) and, per judge, the count of each parse rule;
    with ``judges``, only theirs (a judge whose file left the data directory keeps its rows in a persistent store)."""
    verdicts: list[Vicuna80Verdict] = []
    rules: dict[str, Counter[str]] = {}
    wanted = None if judges is None else set(judges)
    for record in store.iter_answers(
        prompt_family=VICUNA80_PROMPT_FAMILY, task="pairwise", criterion=VICUNA80_CRITERION
    ):
        if wanted is not None and record.judge not in wanted:
            continue
        if record.outcome is None or record.error is not None:
            continue  # ingest always stores a verdict; a collected failure has none and no place here
        item_id, first, second = presented(record.item_id, record.order)
        verdicts.append(
            Vicuna80Verdict(
                source=record.judge,
                item_id=item_id,
                first=first,
                second=second,
                outcome=record.outcome,
                repetition=record.repetition,
            )
        )
        rules.setdefault(record.judge, Counter())[record.parse_rule or ""] += 1
    return verdicts, rules


def aggregate(verdicts: Iterable[Vicuna80Verdict], aggregation: str) -> list[PairwiseVerdict]:
    """The verdicts an aggregation keeps, as tournament verdicts (module rules)."""
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    return [
        PairwiseVerdict(first=v.first, second=v.second, outcome=v.outcome)  # type: ignore[arg-type]
        for v in verdicts
        if aggregation == "both_orders" or (v.first < v.second) == (aggregation == "order_a")
    ]


def _by_question(verdicts: Iterable[Vicuna80Verdict]) -> dict[str, list[Vicuna80Verdict]]:
    grouped: dict[str, list[Vicuna80Verdict]] = {}
    for verdict in verdicts:
        grouped.setdefault(verdict.item_id, []).append(verdict)
    return grouped


def _tau(scores: dict[str, float], reference: dict[str, float], candidates: Sequence[str]) -> float | None:
    # Statistic only: scipy's per-call overhead was most of the study's time (5,000 five-candidate rankings).
    return kendall_tau_b_statistic([scores[c] for c in candidates], [reference[c] for c in candidates])


def _spread(values: list[float | None]) -> Spread:
    defined = [v for v in values if v is not None]
    if not defined:
        return {"mean_tau": None, "std_tau": None, "q25": None, "median_tau": None, "q75": None}
    q25, median, q75 = (float(q) for q in np.quantile(defined, [0.25, 0.5, 0.75]))
    return {
        "mean_tau": statistics.fmean(defined),
        "std_tau": statistics.stdev(defined) if len(defined) > 1 else None,
        "q25": q25,
        "median_tau": median,
        "q75": q75,
    }


def _reference_scores(human: dict[str, Ranking], method: str, reference: str) -> dict[str, float]:
    return human[method if reference == "same_method" else "win_rate"].scores


def _ranking_rows(
    source: str,
    per_question: dict[str, dict[str, Ranking]],
    human: dict[str, dict[str, Ranking]],
    candidates: dict[str, tuple[str, ...]],
    references: Sequence[str] = REFERENCES,
) -> list[Vicuna80RankingRow]:
    rows = []
    for method in RANKING_METHODS:
        for reference in references:
            taus = [
                _tau(per_question[q][method].scores, _reference_scores(human[q], method, reference), candidates[q])
                for q in sorted(per_question)
                if q in human
            ]
            rows.append(
                Vicuna80RankingRow(
                    judge=source,
                    method=method,
                    reference=reference,
                    scope="per_question",
                    n_questions=len(taus),
                    n_undefined=sum(t is None for t in taus),
                    **_spread(taus),
                )
            )
    return rows


def _pooled_rows(
    source: str, pooled: dict[str, Ranking], human: dict[str, Ranking], candidates: Sequence[str]
) -> list[Vicuna80RankingRow]:
    rows = []
    for method in RANKING_METHODS:
        for reference in REFERENCES:
            ref = human[method if reference == "same_method" else "win_rate"]
            tau = _tau(pooled[method].scores, ref.scores, candidates)
            rows.append(
                Vicuna80RankingRow(
                    judge=source,
                    method=method,
                    reference=reference,
                    scope="pooled",
                    mean_tau=tau,
                    std_tau=None,
                    q25=None,
                    median_tau=tau,
                    q75=None,
                    n_questions=1,
                    n_undefined=int(tau is None),
                    order=list(pooled[method].order),
                    human_order=list(ref.order),
                )
            )
    return rows


def _conclusions(
    rows: list[Vicuna80RankingRow], judges: Sequence[str]
) -> tuple[dict[str, BestMethod], dict[str, MfasVersusCopeland]]:
    per_question = {(r.judge, r.method, r.reference): r for r in rows if r.scope == "per_question"}
    best: dict[str, BestMethod] = {}
    for reference in REFERENCES:
        means: dict[str, float | None] = {}
        for method in RANKING_METHODS:
            values = [
                tau
                for j in judges
                if (j, method, reference) in per_question
                and (tau := per_question[j, method, reference].mean_tau) is not None
            ]
            means[method] = statistics.fmean(values) if values else None
        defined = {m: v for m, v in means.items() if v is not None}
        best[reference] = {
            "method": max(defined, key=lambda m: defined[m]) if defined else None,
            "mean_tau_over_judges": means,
        }
    versus: dict[str, MfasVersusCopeland] = {}
    for reference in REFERENCES:
        diffs: dict[str, float] = {}
        for judge in (*judges, PANEL):
            ilp = per_question.get((judge, "mfas_ilp", reference))
            cop = per_question.get((judge, "mfas_copeland", reference))
            if ilp is not None and cop is not None and ilp.mean_tau is not None and cop.mean_tau is not None:
                diffs[judge] = ilp.mean_tau - cop.mean_tau
        versus[reference] = {
            "ilp_minus_copeland": diffs,
            "ilp_better": sorted(j for j, d in diffs.items() if d > 1e-12),
            "copeland_better": sorted(j for j, d in diffs.items() if d < -1e-12),
            "equal": sorted(j for j, d in diffs.items() if abs(d) <= 1e-12),
        }
    return best, versus


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
    )
    return row, inputs


def _position_row(judge: str, verdicts: Sequence[Vicuna80Verdict]) -> Vicuna80PositionRow:
    result = position_consistency(
        PairwiseVerdict(first=f"{v.item_id}/{v.first}", second=f"{v.item_id}/{v.second}", outcome=v.outcome)  # type: ignore[arg-type]
        for v in verdicts
    )
    return Vicuna80PositionRow(
        judge=judge,
        consistency=result.rate,
        n_pairs_both_orders=result.n_pairs_both_orders,
        n_consistent=result.n_consistent,
        first_win_rate=result.first_win_rate,
        tie_rate=result.tie_rate,
        n_verdicts=result.n_verdicts,
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
        grouped = _by_question(group)
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
        rankings.extend(_ranking_rows(source_name, per_question, human_rankings, candidates))
        pooled = rank_all(build_tournament(everyone, aggregate(by_source[source_name], "both_orders")))
        rankings.extend(_pooled_rows(source_name, pooled, human_pooled, everyone))
    # Context: each method on the human tournament against its win rate (how much the method alone matters).
    rankings.extend(_ranking_rows(HUMAN, human_rankings, human_rankings, candidates, ("win_rate",)))
    best, versus = _conclusions(rankings, judges)

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
