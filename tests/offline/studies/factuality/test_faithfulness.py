"""offline.build.factuality.faithfulness and factuality_llm on real FRANK rows: target/split pairing, store reading,
test-split figures, defaults by the SummEval rule, and the factuality part writing nothing without answers."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import numpy as np
import pytest

from artifact.thresholds import load_artifact
from calibration.conformal import METHODS, evaluate_sets, predict_sets
from offline.build.answers.records import AnswerRecord
from offline.build.answers.store import AnswerStore
from offline.build.cell_data import SCORE_ONLY_METHODS
from offline.build.cell_figures import choose_default
from offline.build.factuality.answers import FactualityAnswer, factuality_answers_from_store, faithfulness_target
from offline.build.factuality.faithfulness import faithfulness_data, run_faithfulness_study
from offline.build.inputs.frank import Frank, FrankDataError, load_frank
from offline.pipeline_factuality import calibrate_factuality
from offline.report.index import NO_LLM_FACTUALITY
from offline.studies.conformal.rules import ALPHAS


@pytest.fixture(scope="module")
def frank(data_dir: Path) -> Frank:
    return load_frank(data_dir)


def _answers(frank: Frank, *, method: str = "direct", every: int = 1, seed: int = 3) -> list[FactualityAnswer]:
    """Answers of a judge that is the human label give or take one, on every ``every``-th FRANK item."""
    rng = np.random.default_rng(seed)
    family = f"factuality_{method}"
    result = []
    for item in frank.items[::every]:
        score = int(np.clip(faithfulness_target(item.factuality) + rng.choice([0, 0, 0, 1, -1]), 1, 5))
        logprobs = {str(k): -1.5 * abs(k - score) for k in range(1, 6)} if method == "direct" else None
        result.append(
            FactualityAnswer(
                judge="j",
                method=method,
                prompt_family=family,
                item_id=item.item_id,
                judge_score=score,
                score=float(score),
                logprobs=logprobs,
            )
        )
    return result


def test_target_and_split_pairing_on_every_real_row(frank: Frank) -> None:
    answers = _answers(frank)
    (part,) = faithfulness_data(frank.items, {("j", "direct"): answers})
    assert (part.n_fit, part.n_test) == (671, 1575)
    by_id = {item.item_id: item for item in frank.items}
    fit_ids, test_ids = part.data.item_ids[: part.n_fit], part.data.item_ids[part.n_fit :]
    assert {by_id[i].split for i in fit_ids} == {"valid"} and {by_id[i].split for i in test_ids} == {"test"}
    # Each label is round_half_up(1 + 4 x Factuality) of its own row, and each verdict stays with its item.
    assert part.data.labels.tolist() == [faithfulness_target(by_id[i].factuality) for i in part.data.item_ids]
    given = {a.item_id: a.judge_score for a in answers}
    assert part.data.judge_scores.tolist() == [given[i] for i in part.data.item_ids]
    assert part.data.labels.tolist().count(1) > 400 and set(part.data.labels.tolist()) == {1, 2, 3, 4, 5}
    assert part.data.probabilities is not None and part.data.probabilities.shape == (2246, 5)


def test_missing_scores_are_excluded_and_probabilities_need_every_item(frank: Frank) -> None:
    answers = _answers(frank, every=7)
    answers[0] = msgspec.structs.replace(answers[0], judge_score=None, score=None, error="JudgeCallError: 500")
    answers[1] = msgspec.structs.replace(answers[1], logprobs=None)
    (part,) = faithfulness_data(frank.items, {("j", "direct"): answers})
    assert (part.data.n_answered, part.data.n_excluded) == (len(answers), 1)
    assert part.data.probabilities is None  # one used item has no log-probs: score-only methods


def test_study_figures_are_the_test_split_of_the_exported_predictor(frank: Frank) -> None:
    answers = {("j", "direct"): _answers(frank, every=3), ("j", "qa"): _answers(frank, method="qa", every=3)}
    datasets = faithfulness_data(frank.items, answers)
    study = run_faithfulness_study(datasets, seed=5)
    summary = study.summary
    assert summary.n_splits == 1 and summary.skipped == []
    direct = [c for c in summary.cells if c.prompt_family == "factuality_direct"]
    qa = [c for c in summary.cells if c.prompt_family == "factuality_qa"]
    assert len(direct) == len(METHODS) * len(ALPHAS) and len(qa) == len(SCORE_ONLY_METHODS) * len(ALPHAS)
    for part in datasets:
        data, test = part.data, slice(part.n_fit, None)
        for cell in (c for c in summary.cells if c.prompt_family == data.prompt_family):
            fitted = study.fitted[(cell.judge, cell.prompt_family, cell.method, cell.alpha)]
            assert fitted.n_cal <= part.n_fit and cell.n_cal == part.n_fit and cell.n_test == part.n_test
            if cell.method == "aps_randomized":
                continue  # its sets depend on the uniforms drawn after the fit
            sets = predict_sets(
                fitted,
                judge_scores=data.judge_scores[test],
                probabilities=None if data.probabilities is None else data.probabilities[test],
            )
            evaluation = evaluate_sets(sets, data.labels[test])
            assert cell.coverage == pytest.approx(evaluation.coverage)
            assert cell.set_size == pytest.approx(evaluation.mean_set_size)
    for default in summary.default_methods:
        cells = [
            c
            for c in summary.cells
            if (c.judge, c.prompt_family) == (default.judge, default.prompt_family) and abs(c.alpha - 0.10) < 1e-9
        ]
        assert default == choose_default(cells)
    assert [(d.prompt_family, d.criterion) for d in summary.default_methods] == [
        ("factuality_direct", "faithfulness"),
        ("factuality_qa", "faithfulness"),
    ]


def test_too_few_fit_items_skip_the_cell(frank: Frank) -> None:
    test_only = [
        a
        for a in _answers(frank, every=5)
        if a.item_id.split("/")[0] in {item.hash for item in frank.items if item.split == "test"}
    ]
    study = run_faithfulness_study(faithfulness_data(frank.items, {("j", "direct"): test_only}))
    assert study.summary.cells == [] and study.fitted == {}
    assert "0 scored valid (fit)" in study.summary.skipped[0]


def _record(item_id: str, family: str, **values: object) -> AnswerRecord:
    return AnswerRecord(
        judge="j",
        prompt_family=family,
        task=family,
        criterion="faithfulness",  # type: ignore[arg-type]
        item_id=item_id,
        **values,
    )  # type: ignore[arg-type]


def test_store_reading_uses_the_one_family_and_the_qa_score(frank: Frank, tmp_path: Path) -> None:
    first, second = frank.items[0].item_id, frank.items[1].item_id
    with AnswerStore(tmp_path / "a.sqlite") as store:
        store.put(_record(first, "factuality_qa", judge_score=3, raw_reply='{"score": 0.375, "evidence": []}'))
        store.put(_record(second, "factuality_qa", error="JudgeReplyError: no pairs"))
        store.put(_record(first, "factuality_direct", judge_score=4, logprobs={"4": -0.1}))
        # An answer under the judge's own family is not the factuality prompts' answer: it is not read.
        store.put(
            AnswerRecord(
                judge="j",
                prompt_family="paper",
                task="factuality_direct",
                criterion="faithfulness",
                item_id=second,
                judge_score=1,
            )
        )
        answers = factuality_answers_from_store(store, frank.items)
        assert sorted(answers) == [("j", "direct"), ("j", "qa")]
        assert [(a.item_id, a.judge_score, a.score) for a in answers[("j", "direct")]] == [(first, 4, 4.0)]
        qa = {a.item_id: a for a in answers[("j", "qa")]}
        assert (qa[first].judge_score, qa[first].score) == (3, 0.375)
        assert qa[second].score is None and qa[second].error is not None
        store.put(_record("nohash/bart", "factuality_direct", judge_score=2))
        with pytest.raises(FrankDataError, match="nohash/bart"):
            factuality_answers_from_store(store, frank.items)


def test_without_answers_nothing_is_written_for_llms(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    stale = out / "factuality" / "llm.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")  # a previous run's file must not survive a run without answers
    result = calibrate_factuality(
        data_dir=data_dir, out_dir=out, thresholds_path=tmp_path / "t.json", store_path=tmp_path / "empty.sqlite"
    )
    assert result.n_answers == 0 and result.faithfulness is None
    assert sorted(p.name for p in (out / "factuality").iterdir()) == ["baselines.json", "baselines.md"]
    index = (out / "index.md").read_text()
    assert NO_LLM_FACTUALITY in index
    assert "no LLM factuality answers collected: run `python -m offline collect --task factuality_direct" in index
    assert load_artifact(tmp_path / "t.json").entries == []
    assert json.loads((out / "factuality" / "baselines.json").read_text())["FactCC"]["n"] == 2246
