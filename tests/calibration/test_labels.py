"""The labelled JSON Lines reader: every refusal names source, line and field; cells carry scale and groups."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from calibration.errors import LabelsError
from calibration.labels import labelled_cells, min_items_for, parse_labels, read_labels


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
    data = b"\n".join([
        _line(item_id="b", document="doc1"), _line(item_id="a", group="g7"),
        _line(item_id="c", judge_logprobs={"3": -0.1}), _line(item_id="a", judge="other", scale_max=5),
    ])
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
