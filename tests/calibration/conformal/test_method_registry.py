"""The conformal methods are one immutable registry (calibration.conformal.methods), and nothing else dispatches on
their names (calibration/, artifact/, judges/, service/, offline/); every method's single-item path is the
corresponding row of its vectorised path."""

from __future__ import annotations

import ast
import json
from functools import partial
from pathlib import Path

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from artifact.thresholds import FORMAT_VERSION, ThresholdEntry, ThresholdsArtifact, validate_artifact
from calibration.conformal import METHODS, FittedConformal, fit_conformal, predict_sets, prediction_set
from calibration.conformal.methods import CONFORMAL_METHODS, Needs, conformal_method
from calibration.conformal.sets import compile_rule
from calibration.errors import ArtifactError, CalibrationError, UnknownMethodError

ROOT = Path(__file__).resolve().parents[3]
REGISTRY_MODULE = ROOT / "calibration" / "conformal" / "methods.py"
NAMES = frozenset(CONFORMAL_METHODS)


# --- the registry ---------------------------------------------------------------------------------------------


def test_the_registry_is_immutable_and_named_by_its_keys():
    with pytest.raises(TypeError):
        CONFORMAL_METHODS["extra"] = CONFORMAL_METHODS["lac"]  # type: ignore[index]
    with pytest.raises(AttributeError):
        CONFORMAL_METHODS["lac"].name = "other"  # type: ignore[misc]
    assert all(method.name == name for name, method in CONFORMAL_METHODS.items())
    assert tuple(CONFORMAL_METHODS) == METHODS


@pytest.mark.parametrize("name", ["nope", "LAC", "", " lac", None, 3])
def test_an_unknown_name_raises_the_core_error(name):
    with pytest.raises(UnknownMethodError, match="is not one of residual, residual_expected"):
        conformal_method(name)  # type: ignore[arg-type]


def test_mondrian_methods_are_a_score_with_a_grouping_not_a_score_of_their_own():
    assert conformal_method("mondrian_residual").score is conformal_method("residual").score
    assert conformal_method("label_conditional").score is conformal_method("learned_lac").score
    assert {m.grouping.name for m in CONFORMAL_METHODS.values()} == {None, "judge_score", "label"}


def _entry(method: str) -> ThresholdEntry:
    rng = np.random.default_rng(0)
    labels = rng.integers(1, 6, 200)
    judge = np.clip(labels + rng.integers(-1, 2, 200), 1, 5)
    probabilities = rng.dirichlet(np.ones(5), 200)
    fitted = fit_conformal(method, 0.1, labels, judge_scores=judge, probabilities=probabilities)
    return ThresholdEntry(
        judge="j", prompt_family="p", criterion="c", method=method, alpha=0.1, fitted=fitted, input_kind="probabilities"
    )


def _artifact(entries: list[ThresholdEntry]) -> ThresholdsArtifact:
    return ThresholdsArtifact(
        format_version=FORMAT_VERSION,
        created_at="x",
        code_version="x",
        data_hash="0" * 64,
        label_scale=[1, 2, 3, 4, 5],
        entries=entries,
    )


def test_the_registry_covers_exactly_the_names_the_artifact_and_the_api_accept():
    validate_artifact(_artifact([_entry(name) for name in METHODS]))  # every registered name is accepted
    renamed = msgspec.structs.replace(_entry("lac"), method="lac2")
    renamed = msgspec.structs.replace(renamed, fitted=msgspec.structs.replace(renamed.fitted, method="lac2"))
    with pytest.raises(ArtifactError, match="unknown method 'lac2'"):
        validate_artifact(_artifact([renamed]))
    spec = json.loads((ROOT / "openapi" / "openapi.json").read_text(encoding="utf-8"))
    enum = spec["components"]["schemas"]["ScoreRequest"]["properties"]["method"]["enum"]
    assert [name for name in enum if name is not None] == list(METHODS)
    shipped = json.loads((ROOT / "artifact" / "thresholds.json").read_text(encoding="utf-8"))
    assert {entry["method"] for entry in shipped["entries"]} <= NAMES


# --- no dispatch on method names outside the registry ---------------------------------------------------------


def _literal_names(node: ast.expr) -> set[str]:
    """The method names a comparison operand spells out: a string literal, or a collection of string literals."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} & NAMES
    if (
        isinstance(node, ast.Tuple | ast.List | ast.Set)
        and node.elts
        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
    ):
        return {e.value for e in node.elts if isinstance(e, ast.Constant)} & NAMES
    return set()


def name_dispatch(source: str) -> list[tuple[int, str]]:
    """(line, code) of every comparison against a method-name literal or a collection of them (directly, or through
    a module-level name bound to a literal collection: a hand-written set of methods is a property of methods that
    belongs in the registry), and every ``case "name":``. One designated method (``PAPER_METHOD = "residual"``,
    a fallback) compared by name is a choice of method, not dispatch on one: allowed."""
    tree = ast.parse(source)
    bound = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign) and not isinstance(node.value, ast.Constant) and _literal_names(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_literal_names(o) or (isinstance(o, ast.Name) and o.id in bound) for o in operands):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.MatchValue) and _literal_names(node.value):
            found.append((node.lineno, ast.unparse(node.value)))
    return found


@pytest.mark.parametrize(
    "source",
    [
        'if method == "lac":\n    pass',
        'x = fitted.method in ("residual", "mondrian_residual")',
        'ok = "aps_randomized" != m',
        'NAMES = ("lac", "aps")\ndef f(m):\n    return m in NAMES',
        'match method:\n    case "ordinal":\n        pass',
    ],
)
def test_the_check_finds_dispatch_on_a_name(source):
    assert name_dispatch(source)


@pytest.mark.parametrize(
    "source",
    [
        "conformal_method(method).score.randomised",
        "entries = [e for e in entries if e.method in METHODS]",  # a list of names is data
        'key = (features, "lac") in matrices',  # a composite key, not a method name
        'if kind == "score":\n    pass',
        'PAPER_METHOD = "residual"\ndef f(m):\n    return m == PAPER_METHOD',  # one designated method: a choice
    ],
)
def test_the_check_leaves_data_alone(source):
    assert not name_dispatch(source)


def test_no_module_outside_the_registry_branches_on_a_method_name():
    offenders = []
    for folder in ("calibration", "artifact", "judges", "service", "offline"):  # artifact/, judges/: moved out
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == REGISTRY_MODULE:
                continue
            offenders += [
                f"{path.relative_to(ROOT)}:{line}: {code}"
                for line, code in name_dispatch(path.read_text(encoding="utf-8"))
            ]
    assert not offenders, "look the method up (calibration.conformal.methods) instead:\n" + "\n".join(offenders)


# --- one rule: the single item is the row of the matrix -------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> tuple[FittedConformal, np.ndarray, np.ndarray | None, int]:
    """A registered method with random thresholds (some None, some equal to a score), groups and inputs."""
    name = draw(st.sampled_from(METHODS))
    method = conformal_method(name)
    k = draw(st.integers(2, 7))
    n = draw(st.integers(1, 12))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    judge = rng.integers(1, k + 1, n)
    tied = draw(st.booleans())  # small integer weights: equal probabilities, ties in the label order
    weights = rng.integers(0, 4, (n, k)).astype(float) if tied else rng.dirichlet(np.full(k, 0.5), n)
    weights[weights.sum(axis=1) == 0, 0] = 1.0
    probabilities = weights / weights.sum(axis=1, keepdims=True)
    if method.needs is Needs.SCORE or (method.needs is Needs.SCORE_OR_PROBABILITIES and draw(st.booleans())):
        probabilities = None
    learned = None
    if method.score.learned:
        table = rng.random((k, k)) + 0.01
        learned = (table / table.sum(axis=1, keepdims=True)).tolist()
    seen = method.score.matrix(
        n_labels=k, judge_scores=judge, probabilities=probabilities, learned_matrix=learned, uniforms=rng.random(n)
    ).ravel()

    def threshold() -> float | None:
        kind = draw(st.sampled_from(["none", "score", "random"]))
        if kind == "none":
            return None
        return float(seen[draw(st.integers(0, seen.size - 1))]) if kind == "score" else float(rng.uniform(-0.1, k))

    group_thresholds = None
    if method.grouping.name is not None:
        groups = draw(st.sets(st.integers(1, k)))
        group_thresholds = {g: threshold() for g in sorted(groups)}
    fitted = FittedConformal(
        method=name,
        alpha=0.1,
        n_labels=k,
        n_cal=10,
        threshold=threshold(),
        group_thresholds=group_thresholds,
        grouping=method.grouping.name,
        learned_matrix=learned,
    )
    return fitted, judge, probabilities, seed


@settings(max_examples=400, deadline=None)
@given(case=cases())
def test_every_method_gives_one_item_the_row_of_the_vectorised_sets(case):
    fitted, judge, probabilities, seed = case
    sets = predict_sets(fitted, judge_scores=judge, probabilities=probabilities, rng=np.random.default_rng(seed))
    rule = compile_rule(fitted)  # the service's path: the rule compiled once, then one item at a time
    for i in range(judge.size):
        row = tuple(int(y) + 1 for y in np.flatnonzero(sets[i]))
        item_probabilities = None if probabilities is None else probabilities[i].tolist()
        for one_set in (partial(prediction_set, fitted), rule.prediction_set):
            rng = np.random.default_rng(seed)
            rng.uniform(size=i)  # the vectorised path draws item i's uniform i-th
            one = one_set(judge_score=int(judge[i]), probabilities=item_probabilities, rng=rng)
            assert one == row, (fitted.method, i, one_set)


@settings(max_examples=300, deadline=None)
@given(case=cases())
def test_every_score_gives_one_item_the_row_of_the_matrix_to_the_last_bit(case):
    fitted, judge, probabilities, seed = case
    score = conformal_method(fitted.method).score
    uniforms = np.random.default_rng(seed).random(judge.size)
    matrix = score.matrix(
        n_labels=fitted.n_labels,
        judge_scores=judge,
        probabilities=probabilities,
        learned_matrix=fitted.learned_matrix,
        uniforms=uniforms if score.randomised else None,
    )
    for i in range(judge.size):
        row = score.one(
            fitted.n_labels,
            int(judge[i]),
            None if probabilities is None else probabilities[i].tolist(),
            fitted.learned_matrix,
            float(uniforms[i]) if score.randomised else 0.0,
        )
        assert row == matrix[i].tolist(), (fitted.method, i)


@settings(max_examples=200, deadline=None)
@given(
    case=cases(),
    judge_score=st.one_of(st.none(), st.integers(-1, 8), st.just(True), st.just(2.0)),
    given_probabilities=st.sampled_from(["as drawn", "none", "too few", "negative"]),
)
def test_the_compiled_rule_refuses_and_answers_as_prediction_set_does(case, judge_score, given_probabilities):
    fitted, _, probabilities, _ = case
    item = {
        "as drawn": None if probabilities is None else probabilities[0].tolist(),
        "none": None,
        "too few": [1.0],
        "negative": [-1.0] + [1.0] * (fitted.n_labels - 1),
    }[given_probabilities]
    outcomes = []
    for one_set in (partial(prediction_set, fitted), compile_rule(fitted).prediction_set):
        try:
            outcomes.append(one_set(judge_score=judge_score, probabilities=item))
        except CalibrationError as error:
            outcomes.append((type(error), str(error)))
    assert outcomes[0] == outcomes[1]
