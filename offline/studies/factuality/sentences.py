"""Sentence-level LLM fact-checks on FRANK: parse, store, and compare with FRANK's human annotations.

The recorded judges (``offline.build.inputs.finesure``) answered with the FineSurE fact-checking prompt, not the prompts
of paper 001: every output says so.

=========================================================  ==============================================
call                                                       result
=========================================================  ==============================================
``sentence_records(check)``                                ``(AnswerRecord list, ParseStats)`` of one judge
``ingest_sentences(store, checks)``                        puts every judge's records, ``[ParseStats]``
``sentence_answers_from_store(store, items)``              ``{(judge, "sentences"): [FactualityAnswer]}``
``run_sentence_study(frank, checks, parse_stats)``         ``SentenceStudySummary``
``write_sentence_study(summary, report_dir)``              ``factuality/llm_sentences.{json,md}``
=========================================================  ==============================================

The parse and store calls live in :mod:`offline.build.factuality.sentences`, the artifact's calibration of
these cells (``sentence_fits``, ``without_prompt_family``) in :mod:`offline.build.factuality.validity` and its
report (``sentence_validity``, ``write_sentence_validity``) in :mod:`offline.studies.factuality.sentences_validity`,
the result types in
:mod:`offline.studies.factuality.sentences_results`; ``write_sentence_study`` and the markdown in
:mod:`offline.studies.factuality.sentences_report`.

Rules, stated once (also written into ``llm_sentences.json`` under ``rules``):

* **Parse.** Each raw ``response`` is read by ``judges.factuality.sentence_parse.parse_sentence_verdicts`` with the
  row's sentence count. ``parse_rate`` = share of rows whose reply gives a list of well-formed verdicts (any
  length); a list whose length differs from the sentence count is excluded and counted (``n_wrong_count``),
  never padded or cut. Agreement with the recorder's ``pred_error`` / ``pred_error_type``: share of rows read
  by both where the two readings give the same list (row level), and of their sentences (sentence level).
* **Store.** Task and prompt family ``factuality_sentences``, criterion ``faithfulness``, repetition 0,
  ``item_id`` ``"<hash>/<model_name>"``, ``raw_reply`` the response, ``parse_rule`` the parser's rule,
  ``judge_score`` = ``1 + round_half_up(4 x item score)`` (None when excluded), ``model`` the judge's name.
* **Item score.** Share of the summary's sentences judged error-free (``no error``).
* **Correlations.** Partial Pearson and Spearman with FRANK ``Factuality`` controlling for the system (one-hot
  ``model_name``; least squares), p-value from the t-test with n - 2 - k df, on each judge's included items:
  overall and per dataset. Ablation: the same with ``Flip_<category>``; ``delta`` = overall - flipped
  (positive: the judge's correlation depends on that error type).
* **Sentence agreement.** Human label of a sentence = majority of FRANK's annotators (>= 2 of 3 marked an
  error); precision, recall and F1 of the judge's "has an error" against it, pooled over included rows.
* **Error types.** A sentence's human type is the type named by a majority of the annotators whose type list
  is aligned to the sentences (one type per sentence); for each FRANK type, recall = share of the sentences of
  that human type (human majority error) that the judge labelled with the same type. Confusion matrix: human
  majority type (``NoE`` for human majority no-error sentences) x the judge's category; sentences with a human
  error but no majority type are counted (``n_no_majority_type``), not placed.
* **Baselines.** FactCC, BERTScore-P-Art and QAGS, correlated overall on exactly the items each judge has
  included (the same rows), so each LLM is ranked against the baselines on its own 200 items.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from calibration.estimates.intervals import fisher_z_interval
from judges.factuality.sentence_parse import CATEGORY_CODES, ParsedSentences
from offline.build.factuality.sentences import ParseStats, item_score, parse_row, parse_statistics
from offline.build.inputs.finesure import FactCheckRow, RecordedFactCheck
from offline.build.inputs.frank import CATEGORY_COLUMNS, FRANK_DATASETS, Frank, FrankItem, baseline_scores
from offline.studies.factuality.sentences_results import (
    AblationRow,
    BaselineRow,
    ConfusionMatrix,
    CorrelationRow,
    ErrorTypeRow,
    SentenceAgreement,
    SentenceStudySummary,
)
from offline.studies.factuality.study import CorrelationCell, align_scores, correlation_cell

__all__ = [
    "BASELINES",
    "FIGURE_FILE",
    "JSON_FILE",
    "MARKDOWN_FILE",
    "RULES",
    "TYPE_CODES",
    "run_sentence_study",
]

JSON_FILE = "factuality/llm_sentences.json"
MARKDOWN_FILE = "factuality/llm_sentences.md"
FIGURE_FILE = "factuality/llm_sentences_confusion.png"
BASELINES: tuple[str, ...] = ("FactCC", "BertScore P Art", "QAGS")
# FRANK's error types as the annotators write them; the judge's categories map onto the same codes.
TYPE_CODES: tuple[str, ...] = ("RelE", "EntE", "CircE", "CorefE", "LinkE", "OutE", "GramE", "OtherE")
MATRIX_CODES: tuple[str, ...] = (*TYPE_CODES, "NoE")
SOURCE_NOTE = (
    "Recorded with the FineSurE fact-checking prompt (Song et al., ACL 2024; a 2025 re-run, "
    "wjkim9653/FineSurE-ACL24): real LLM judges on FRANK, not the prompts or models of paper 001."
)
RULES = {
    "source": SOURCE_NOTE,
    "parse": "judges.factuality.sentence_parse.parse_sentence_verdicts with the row's sentence count; parse_rate = "
    "rows giving a list of well-formed verdicts; a list whose length differs from the sentence count is excluded "
    "and counted (n_wrong_count), never padded",
    "item_score": "share of the summary's sentences judged 'no error'",
    "correlation": "partial Pearson / Spearman with FRANK Factuality controlling for the system (one-hot "
    "model_name, least squares), t-test p-value with n - 2 - k df, on each judge's included items; 95% Fisher-z "
    "interval tanh(atanh(r) -+ 1.96/sqrt(n - k - 3)), k = systems present - 1; recorded_partial_*: the same on "
    "the recorder's pred_error (share of sentences without an error; rows with one flag per sentence)",
    "ablation": "delta = partial correlation with Factuality - with Flip_<category> (positive: depends on it)",
    "sentence_agreement": "human label = majority of annotators (>= 2 of 3 marked an error); precision, recall, "
    "F1 of the judge's 'has an error', pooled over included rows",
    "error_types": "human type = the type named by a majority of the annotators whose type list is aligned to "
    "the sentences; recall per type among human-majority error sentences of that type; confusion matrix human "
    "majority type (NoE for no-error sentences) x judge category",
    "baselines": f"{', '.join(BASELINES)} correlated overall on exactly each judge's included items",
}


def _stat(cell: CorrelationCell, which: str) -> tuple[float | None, float | None]:
    result = getattr(cell, which)
    return (None, None) if result is None else (result.statistic, result.p_value)


def _n_controls(items: Sequence[FrankItem], scores: np.ndarray, dataset: str | None) -> int:
    """k: independent one-hot system columns among the rows used (systems present - 1)."""
    return (
        len(
            {
                item.model_name
                for item, score in zip(items, scores, strict=True)
                if not np.isnan(score) and (dataset is None or item.dataset == dataset)
            }
        )
        - 1
    )


def _recorded_score(row: FactCheckRow) -> float | None:
    """Item score from the recorder's own ``pred_error`` (share of sentences without an error); None unless it
    gives one flag per sentence (the rule our parser's rows follow too)."""
    if not row.pred_error or len(row.pred_error) != len(row.sentences):
        return None
    return 1 - sum(row.pred_error) / len(row.pred_error)


def _correlation_row(
    judge: str, cell: CorrelationCell, k: int = 0, recorded: CorrelationCell | None = None
) -> CorrelationRow:
    pearson, p_pearson = _stat(cell, "pearson")
    spearman, p_spearman = _stat(cell, "spearman")
    rec_pearson, _ = _stat(recorded, "pearson") if recorded is not None else (None, None)
    rec_spearman, _ = _stat(recorded, "spearman") if recorded is not None else (None, None)
    return CorrelationRow(
        judge=judge,
        dataset=cell.subset,
        n=cell.n,
        partial_pearson=pearson,
        partial_spearman=spearman,
        p_value=p_pearson,
        spearman_p_value=p_spearman,
        problem=cell.problem,
        partial_pearson_ci=None if pearson is None else fisher_z_interval(pearson, cell.n, k, 0.05),
        partial_spearman_ci=None if spearman is None else fisher_z_interval(spearman, cell.n, k, 0.05),
        recorded_partial_pearson=rec_pearson,
        recorded_partial_spearman=rec_spearman,
        recorded_n=None if recorded is None else recorded.n,
    )


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def _majority_type(row: FactCheckRow, index: int) -> str | None:
    votes: dict[str, int] = {}
    aligned = [a for a in row.annotators if a.types is not None]
    for annotator in aligned:
        assert annotator.types is not None
        votes[annotator.types[index]] = votes.get(annotator.types[index], 0) + 1
    winners = [t for t, count in votes.items() if 2 * count > len(aligned)]
    return winners[0] if winners else None


def _sentence_tables(
    judge: str, pairs: Sequence[tuple[FactCheckRow, ParsedSentences]]
) -> tuple[SentenceAgreement, list[ErrorTypeRow], ConfusionMatrix]:
    tp = fp = fn = tn = 0
    index = {code: i for i, code in enumerate(MATRIX_CODES)}
    counts = np.zeros((len(MATRIX_CODES), len(MATRIX_CODES)), dtype=np.int64)
    no_majority = 0
    for row, parsed in pairs:
        assert parsed.verdicts is not None
        for i, (human, verdict) in enumerate(zip(row.human_majority(), parsed.verdicts, strict=True)):
            tp += human and verdict.error
            fp += (not human) and verdict.error
            fn += human and not verdict.error
            tn += (not human) and not verdict.error
            judged = CATEGORY_CODES[verdict.category]
            if not human:
                counts[index["NoE"], index[judged]] += 1
                continue
            human_type = _majority_type(row, i)
            if human_type is None or human_type not in index or human_type == "NoE":
                no_majority += 1
                continue
            counts[index[human_type], index[judged]] += 1
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    f1 = None if not precision or not recall else 2 * precision * recall / (precision + recall)
    agreement = SentenceAgreement(
        judge=judge,
        n_sentences=tp + fp + fn + tn,
        n_human_error=tp + fn,
        n_judge_error=tp + fp,
        true_positive=tp,
        precision=precision,
        recall=recall,
        f1=f1,
        accuracy=(tp + tn) / max(1, tp + fp + fn + tn),
    )
    types = []
    for code in TYPE_CODES:
        row_counts = counts[index[code]]
        n = int(row_counts.sum())
        same, flagged = int(row_counts[index[code]]), n - int(row_counts[index["NoE"]])
        types.append(
            ErrorTypeRow(
                judge=judge,
                error_type=code,
                n=n,
                same_type=same,
                flagged=flagged,
                recall=_ratio(same, n),
                detection=_ratio(flagged, n),
            )
        )
    matrix = ConfusionMatrix(
        judge=judge, labels=list(MATRIX_CODES), counts=counts.tolist(), n_no_majority_type=no_majority
    )
    return agreement, types, matrix


def run_sentence_study(
    frank: Frank, checks: Sequence[RecordedFactCheck], parse_stats: Sequence[ParseStats] | None = None
) -> SentenceStudySummary:
    """Every table of the module rules for every judge, judges in name order."""
    by_judge = {s.judge: s for s in (parse_stats or [])}
    rows, baselines, ablation, agreements, types, matrices, parse = [], [], [], [], [], [], []
    metric_columns = {metric: baseline_scores(frank, metric) for metric in BASELINES if metric in frank.metric_names}
    for check in sorted(checks, key=lambda c: c.judge):
        parsed = [parse_row(row) for row in check.rows]
        parse.append(by_judge.get(check.judge) or parse_statistics(check.judge, check.rows, parsed))
        included = [(row, p) for row, p in zip(check.rows, parsed, strict=True) if p.ok]
        scores = align_scores(frank.items, {(r.hash, r.model_name): item_score(p) for r, p in included})
        overall = correlation_cell(frank.items, scores)
        recorded = align_scores(frank.items, {(r.hash, r.model_name): _recorded_score(r) for r in check.rows})
        rows.append(
            _correlation_row(
                check.judge, overall, _n_controls(frank.items, scores, None), correlation_cell(frank.items, recorded)
            )
        )
        rows += [
            _correlation_row(
                check.judge,
                correlation_cell(frank.items, scores, dataset=ds),
                _n_controls(frank.items, scores, ds),
                correlation_cell(frank.items, recorded, dataset=ds),
            )
            for ds in FRANK_DATASETS
        ]
        for category in CATEGORY_COLUMNS:
            flipped = correlation_cell(frank.items, scores, target=f"Flip_{category}")
            fp, _ = _stat(flipped, "pearson")
            fs, _ = _stat(flipped, "spearman")
            op, _ = _stat(overall, "pearson")
            os_, _ = _stat(overall, "spearman")
            ablation.append(
                AblationRow(
                    judge=check.judge,
                    category=category,
                    flipped_pearson=fp,
                    flipped_spearman=fs,
                    delta_pearson=None if op is None or fp is None else op - fp,
                    delta_spearman=None if os_ is None or fs is None else os_ - fs,
                )
            )
        mask = ~np.isnan(scores)
        for metric, column in metric_columns.items():
            values = np.where(mask, column, np.nan)
            cell = correlation_cell(frank.items, values)
            pearson, p_pearson = _stat(cell, "pearson")
            spearman, p_spearman = _stat(cell, "spearman")
            baselines.append(
                BaselineRow(
                    judge=check.judge,
                    metric=metric,
                    n=cell.n,
                    partial_pearson=pearson,
                    partial_spearman=spearman,
                    p_value=p_pearson,
                    spearman_p_value=p_spearman,
                )
            )
        agreement, type_rows, matrix = _sentence_tables(check.judge, included)
        agreements.append(agreement)
        types += type_rows
        matrices.append(matrix)
    return SentenceStudySummary(
        source=SOURCE_NOTE,
        rules=dict(RULES),
        judges=[p.judge for p in parse],
        parse=parse,
        rows=rows,
        baselines=baselines,
        ablation=ablation,
        sentence_agreement=agreements,
        error_types=types,
        confusion=matrices,
    )
