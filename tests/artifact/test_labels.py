"""The labelled JSON Lines reader: every refusal names source, line and field; cells carry scale and groups."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from artifact.labels import labelled_cells, min_items_for, parse_labels, read_labels
from calibration.errors import LabelsError


def _line(**fields: object) -> bytes:
    row = {"item_id": "a", "criterion": "helpfulness", "judge": "j", "human": 3, "judge_score": 3}
    row.update(fields)
    return json.dumps({k: v for k, v in row.items() if v is not ...}).encode()


def _error(data: bytes, **kwargs: object) -> LabelsError:
    with pytest.raises(LabelsError) as caught:
        parse_labels(data, source="f.jsonl", **kwargs)  # type: ignore[arg-type]
    return caught.value


@pytest.mark.parametrize(
    ("data", "line", "field"),
    [
        (_line(human=...), 1, "human"),
        (_line(human="3"), 1, "human"),
        (_line(judge=...), 1, "judge"),
        (_line(colour=1), 1, "colour"),
        (b"\n" + _line(human=6), 2, "human"),
        (_line(human=0.5), 1, "human"),
        (_line(judge_score=6), 1, "judge_score"),
        (_line(judge_score=None), 1, "judge_score"),
        (_line(judge_logprobs={"6": -0.1}), 1, "judge_logprobs"),
        (_line(judge_logprobs={"2": 0.5}), 1, "judge_logprobs"),
        (_line(mean_of_samples=5.5), 1, "mean_of_samples"),
        (_line(criterion="two words"), 1, "criterion"),
        (_line(scale_max=11), 1, "scale_max"),
        (_line(document="x", input="y"), 1, "input"),
        (_line(item_id=" "), 1, "item_id"),
    ],
)
def test_bad_rows_are_refused_with_line_and_field(data: bytes, line: int, field: str) -> None:
    error = _error(data)
    assert (error.source, error.line, error.field) == ("f.jsonl", line, field)
    assert str(error).startswith(f"f.jsonl:{line}: {field}: ")


def test_empty_file_and_malformed_json() -> None:
    assert "empty" in str(_error(b"\n  \n"))
    assert _error(b"{]").line == 1


def test_duplicate_per_judge_criterion_item_across_files_names_both() -> None:
    with pytest.raises(LabelsError) as caught:
        read_labels([("a.jsonl", _line()), ("b.jsonl", b"\n" + _line(human=4))])
    error = caught.value
    assert (error.source, error.line, error.field) == ("b.jsonl", 2, "item_id")
    assert "a.jsonl:1" in error.problem
    # another judge, or another criterion, is not a repeat
    rows = read_labels([("a", _line()), ("b", _line(judge="k")), ("c", _line(criterion="other"))])
    assert len(rows) == 3


def test_one_scale_per_criterion() -> None:
    with pytest.raises(LabelsError, match="1..7 here but 1..5"):
        read_labels([("a", _line() + b"\n" + _line(item_id="b", scale_max=7))])


def test_scale_from_row_or_default() -> None:
    [row] = parse_labels(_line(human=6.5, judge_score=7, scale_max=7), source="s")
    assert (row.n_labels, row.label, row.judge_score) == (7, 7, 7)
    [row] = parse_labels(_line(human=9.5, judge_score=10), source="s", default_scale=10)
    assert (row.n_labels, row.label) == (10, 10)
    assert _error(_line(human=6, judge_score=6)).field == "human"


def test_verdict_from_logprobs_or_mean() -> None:
    [row] = parse_labels(_line(judge_score=..., judge_logprobs={"2": -0.7, "4": -0.7}), source="s")
    assert row.judge_score == 2  # ties: the lower label
    assert row.probabilities is not None and math.isclose(sum(row.probabilities), 1.0)
    [row] = parse_labels(_line(judge_score=..., mean_of_samples=3.5), source="s")
    assert row.judge_score == 4 and row.probabilities is None


def test_cells_group_sort_and_carry_groups() -> None:
    data = b"\n".join(
        [
            _line(item_id="b", document="doc1"),
            _line(item_id="a", group="g7"),
            _line(item_id="c", judge_logprobs={"3": -0.1}),
            _line(item_id="a", judge="other", scale_max=5),
        ]
    )
    cells = labelled_cells(read_labels([("s", data)]))
    assert [c.key for c in cells] == [("j", "custom", "helpfulness"), ("other", "custom", "helpfulness")]
    first = cells[0]
    assert first.item_ids == ("a", "b", "c") and first.groups == ("g7", "doc1", "c")
    assert first.probabilities is None  # not every row had log-probs
    assert first.labels.dtype == np.int64 and first.n_labels == 5


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1, 0.15, 0.2, 0.3, 1 / 3])
def test_min_items_is_the_smallest_n_with_a_finite_rank(alpha: float) -> None:
    def finite(n: int) -> bool:
        return math.ceil(round((1 - alpha) * (n + 1), 9)) <= n

    need = min_items_for(alpha)
    assert finite(need) and not finite(need - 1)


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1, 0.2, 0.3])
def test_min_items_pac_is_the_smallest_n_with_a_finite_rank(alpha: float) -> None:
    from fractions import Fraction

    from calibration.order_statistics import threshold_rank

    a, d = Fraction(alpha).limit_denominator(10**9), Fraction(1, 20)
    need = min_items_for(alpha, 0.05)
    assert threshold_rank(need, a, d) <= need and threshold_rank(need - 1, a, d) > need - 1
    assert (1 - alpha) ** need <= 0.05 < (1 - alpha) ** (need - 1)  # the sample maximum's coverage law


# ---- Exact refusals and accepted edges (each message is part of the contract: it names the value and the rule).


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_line(item_id=" "), "f.jsonl:1: item_id: is empty"),
        (
            _line(criterion="two words"),
            "f.jsonl:1: criterion: 'two words' is not a name (a letter, then letters, digits, '_' or '-', at most 64)",
        ),
        (
            _line(criterion="a" * 65),
            f"f.jsonl:1: criterion: {'a' * 65!r} is not a name (a letter, then letters, "
            "digits, '_' or '-', at most 64)",
        ),
        (
            _line(criterion="1abc"),
            "f.jsonl:1: criterion: '1abc' is not a name (a letter, then letters, digits, '_' or '-', at most 64)",
        ),
        (_line(judge=...), "f.jsonl:1: judge: Object missing required field `judge`"),
        (_line(judge=" "), "f.jsonl:1: judge: must be a non-empty name of at most 200 characters"),
        (_line(judge="x" * 201), "f.jsonl:1: judge: must be a non-empty name of at most 200 characters"),
        (_line(prompt_family=" "), "f.jsonl:1: prompt_family: must be a non-empty name of at most 200 characters"),
        (
            _line(prompt_family="p" * 201),
            "f.jsonl:1: prompt_family: must be a non-empty name of at most 200 characters",
        ),
        (_line(scale_max=1), "f.jsonl:1: scale_max: 1 must lie in 2..10"),
        (_line(scale_max=11), "f.jsonl:1: scale_max: 11 must lie in 2..10"),
        (_line(human=0.99), "f.jsonl:1: human: 0.99 is outside the scale 1..5"),
        (_line(human=5.01), "f.jsonl:1: human: 5.01 is outside the scale 1..5"),
        (_line(human=7.5, scale_max=7), "f.jsonl:1: human: 7.5 is outside the scale 1..7"),
        (
            _line(judge_score=...),
            "f.jsonl:1: judge_score: a verdict is required: judge_score, judge_logprobs or mean_of_samples",
        ),
        (_line(judge_score=0), "f.jsonl:1: judge_score: 0 is outside the scale 1..5"),
        (_line(judge_score=6), "f.jsonl:1: judge_score: 6 is outside the scale 1..5"),
        (_line(judge_score=..., mean_of_samples=0.9), "f.jsonl:1: mean_of_samples: 0.9 is outside the scale 1..5"),
        (_line(judge_score=..., mean_of_samples=5.5), "f.jsonl:1: mean_of_samples: 5.5 is outside the scale 1..5"),
        (_line(judge_logprobs={}), "f.jsonl:1: judge_logprobs: holds no token"),
        (_line(judge_logprobs={"0": -1}), "f.jsonl:1: judge_logprobs: key '0' is not a label among 1..5"),
        (
            _line(judge_logprobs={"6": -1}, scale_max=6, human=2, judge_score=2)
            + b"\n"
            + _line(item_id="b", judge_logprobs={"6": -1}),
            "f.jsonl:2: judge_logprobs: key '6' is not a label among 1..5",
        ),
        (_line(judge_logprobs={"2": 0.5}), "f.jsonl:1: judge_logprobs: ['2'] = 0.5 is not a log-probability <= 0"),
        (_line(judge_logprobs={"2": 2e-9}), "f.jsonl:1: judge_logprobs: ['2'] = 2e-09 is not a log-probability <= 0"),
        (_line(document="x", input="y"), "f.jsonl:1: input: give document or input, not both"),
        (_line(summary="x", output="y"), "f.jsonl:1: output: give summary or output, not both"),
        (_line(document=" "), "f.jsonl:1: document: is blank"),
        (_line(input=" "), "f.jsonl:1: input: is blank"),
        (_line(summary=" "), "f.jsonl:1: summary: is blank"),
        (_line(output="  "), "f.jsonl:1: output: is blank"),
        (_line(group=" "), "f.jsonl:1: group: is blank"),
        (_line(human="3"), "f.jsonl:1: human: Expected `float`, got `str` - at `$.human`"),
        (_line(colour=1), "f.jsonl:1: colour: Object contains unknown field `colour`"),
        (b"[1]", "f.jsonl:1: Expected `object`, got `array`"),
        (b"\n\n{]", "f.jsonl:3: malformed JSON: JSON is malformed: object keys must be strings (byte 1)"),
    ],
)
def test_each_refusal_reads_exactly(data: bytes, message: str) -> None:
    assert str(_error(data)) == message


def test_labels_error_keeps_its_parts_and_reads_without_a_line_or_field() -> None:
    error = LabelsError("up.jsonl", 7, "human", "is odd")
    assert (error.source, error.line, error.field, error.problem) == ("up.jsonl", 7, "human", "is odd")
    assert str(error) == "up.jsonl:7: human: is odd"
    assert str(LabelsError("up.jsonl", None, "human", "is odd")) == "up.jsonl: human: is odd"
    assert str(LabelsError("up.jsonl", 3, None, "is odd")) == "up.jsonl:3: is odd"
    assert str(LabelsError("up.jsonl", None, None, "is odd")) == "up.jsonl: is odd"
    assert isinstance(error, ValueError)


@pytest.mark.parametrize("scale", [1, 11])
def test_the_default_scale_is_checked_first(scale: int) -> None:
    error = _error(_line(), default_scale=scale)
    assert (error.line, error.field) == (None, "scale_max")
    assert str(error) == f"f.jsonl: scale_max: the default scale {scale} must lie in 2..10"


def test_an_empty_chunk_reads_exactly() -> None:
    error = _error(b"\n  \n")
    assert (error.line, error.field, str(error)) == (None, None, "f.jsonl: holds no labelled row (an empty file)")


def test_accepted_edges() -> None:
    rows = parse_labels(
        b"\n".join(
            [
                _line(
                    item_id="a",
                    criterion="A" + "b_-9" * 15 + "xyz",
                    judge="j" * 200,
                    prompt_family="p" * 200,
                    human=1,
                    judge_score=1,
                ),
                _line(item_id="b", criterion="k", human=2, judge_score=2, scale_max=2),
                _line(item_id="c", criterion="m", human=10, judge_score=10, scale_max=10),
                _line(item_id="d", judge_score=..., judge_logprobs={"5": 1e-9, "1": -50.0}),
                _line(item_id="e", judge_score=..., mean_of_samples=1.0),
                _line(item_id="f", judge_score=..., mean_of_samples=5.0, human=5),
            ]
        ),
        source="s",
    )
    assert len(rows[0].criterion) == 64 and len(rows[0].judge) == 200 and len(rows[0].prompt_family) == 200
    assert [(r.n_labels, r.label, r.judge_score) for r in rows] == [
        (5, 1, 1),
        (2, 2, 2),
        (10, 10, 10),
        (5, 3, 5),
        (5, 3, 1),
        (5, 5, 5),
    ]
    assert rows[3].probabilities == pytest.approx(
        (math.exp(-50) / (1 + math.exp(-50)), 0, 0, 0, 1 / (1 + math.exp(-50))), rel=1e-9, abs=0
    )


def test_row_fields_defaults_aliases_and_groups() -> None:
    [row] = parse_labels(_line(human=2.5, input="the doc", output="the summary"), source="src", default_scale=6)
    assert (row.source, row.line, row.item_id, row.criterion, row.judge, row.prompt_family) == (
        "src",
        1,
        "a",
        "helpfulness",
        "j",
        "custom",
    )
    assert (row.n_labels, row.human, row.label, row.judge_score, row.probabilities, row.mean_of_samples) == (
        6,
        2.5,
        3,
        3,
        None,
        None,
    )
    assert (row.group, row.document, row.summary) == ("the doc", "the doc", "the summary")
    assert type(row.human) is float
    [row] = parse_labels(_line(document="d", summary="s", group="g", prompt_family="fam"), source="src")
    assert (row.group, row.document, row.summary, row.prompt_family) == ("g", "d", "s", "fam")
    [row] = parse_labels(_line(), source="src")
    assert (row.group, row.document, row.summary) == ("a", None, None)


def test_score_from_the_highest_log_prob_and_means_halves_up() -> None:
    [row] = parse_labels(
        _line(judge_score=..., judge_logprobs={"1": -2.0, "3": -0.1, "4": -0.1, "5": -1.0}), source="s"
    )
    assert row.judge_score == 3
    [row] = parse_labels(_line(judge_score=..., judge_logprobs={"2": -3.0, "4": -0.2}), source="s")
    assert row.judge_score == 4
    [row] = parse_labels(_line(judge_score=..., mean_of_samples=2.49), source="s")
    assert (row.judge_score, row.mean_of_samples) == (2, 2.49)
    [row] = parse_labels(_line(judge_score=4, mean_of_samples=1.2, judge_logprobs={"1": -0.01}), source="s")
    assert row.judge_score == 4  # judge_score first, then log-probs, then the mean
    [row] = parse_labels(_line(judge_score=..., mean_of_samples=1.2, judge_logprobs={"5": -0.01}), source="s")
    assert row.judge_score == 5


def test_rows_without_a_verdict_when_allowed() -> None:
    rows = read_labels([("s", _line(judge=..., judge_score=...) + b"\n" + _line(item_id="b"))], require_verdict=False)
    assert [(r.judge, r.judge_score) for r in rows] == [("", None), ("j", 3)]
    (cell,) = labelled_cells(rows)
    assert cell.item_ids == ("b",)
    assert [r.n_labels for r in read_labels([("s", _line(human=7, judge_score=7))], default_scale=7)] == [7]


def test_repeat_and_scale_messages_name_both_places() -> None:
    with pytest.raises(LabelsError) as caught:
        read_labels([("a.jsonl", _line()), ("b.jsonl", b"\n" + _line(human=4))])
    assert str(caught.value) == (
        "b.jsonl:2: item_id: 'a' is repeated for judge 'j' and criterion 'helpfulness' (first at a.jsonl:1)"
    )
    with pytest.raises(LabelsError) as caught:
        read_labels([("a", _line()), ("b", _line(item_id="b", scale_max=7))])
    assert str(caught.value) == ("b:1: scale_max: criterion 'helpfulness' is on the scale 1..7 here but 1..5 at a:1")
    rows = read_labels([("a", _line()), ("b", _line(item_id="b", judge="k"))])
    assert [(r.source, r.line, r.judge) for r in rows] == [("a", 1, "j"), ("b", 1, "k")]


def test_cells_with_probabilities_and_means_are_sorted_arrays() -> None:
    data = b"\n".join(
        [
            _line(item_id="z", judge="b", judge_score=..., judge_logprobs={"2": -0.5, "3": -1.0}, mean_of_samples=2.2),
            _line(item_id="y", judge="b", judge_score=..., judge_logprobs={"4": -0.1}, mean_of_samples=3.6, human=4),
            _line(item_id="x", judge="a", prompt_family="q", scale_max=4, criterion="c"),
            _line(item_id="w", judge="a", prompt_family="p", scale_max=4, criterion="c"),
        ]
    )
    cells = labelled_cells(read_labels([("s", data)]))
    assert [c.key for c in cells] == [("a", "p", "c"), ("a", "q", "c"), ("b", "custom", "helpfulness")]
    assert [c.n_labels for c in cells] == [4, 4, 5]
    last = cells[2]
    assert last.item_ids == ("y", "z") and last.labels.tolist() == [4, 3] and last.judge_scores.tolist() == [4, 2]
    assert last.judge_scores.dtype == np.int64 and last.probabilities.dtype == float
    p = math.exp(-0.5) / (math.exp(-0.5) + math.exp(-1.0))
    np.testing.assert_allclose(last.probabilities, [[0, 0, 0, 1, 0], [0, p, 1 - p, 0, 0]], rtol=1e-12, atol=0)
    np.testing.assert_array_equal(last.means, [3.6, 2.2])
    assert cells[0].means is None and cells[0].probabilities is None


@pytest.mark.parametrize(
    ("alpha", "delta", "need"),
    [
        (0.1, None, 9),
        (0.05, None, 19),
        (0.3, None, 3),
        (0.96, 0.05, 1),
        (0.9, 0.05, 2),
        (0.1, 0.05, 29),
        (0.05, 0.1, 45),
    ],
)
def test_min_items_by_hand(alpha: float, delta: float | None, need: int) -> None:
    # marginal: ceil((1 - alpha) / alpha); PAC: the smallest n with (1 - alpha)^n <= delta (the sample maximum)
    assert min_items_for(alpha, delta) == need
    if delta is not None:
        assert (1 - alpha) ** need <= delta < (1 - alpha) ** (need - 1)


def test_the_smallest_default_scale_is_accepted_and_a_verdict_is_required_by_default() -> None:
    [row] = parse_labels(_line(human=2, judge_score=1), source="s", default_scale=2)
    assert row.n_labels == 2
    with pytest.raises(LabelsError) as caught:
        read_labels([("s", _line(judge_score=...))])
    assert caught.value.field == "judge_score"
    with pytest.raises(LabelsError):
        read_labels([("s", _line(judge_score=...))], require_verdict=True)


def test_min_items_pac_reads_delta_to_nine_digits() -> None:
    # (1 - alpha)^7 = 0.01232 lies between delta = 0.0123 and 1/81 (0.012346, the nearest fraction with a
    # denominator <= 90): 7 items are too few at delta = 0.0123, 8 suffice
    alpha = 1 - 0.01232 ** (1 / 7)
    assert min_items_for(alpha, 0.0123) == 8
    assert min_items_for(alpha, 1 / 81) == 7
