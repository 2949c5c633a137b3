"""Judge panels: several judges' verdicts on one item combined into one ``mean`` verdict, calibrated like a judge.

Pure (numbers in, numbers out); the offline study (:mod:`offline.studies.panels.study`) and the service
(:mod:`service.scoring.panels`) call the same functions, so a panel verdict is combined the same way where it is
calibrated and where it is served. Rules, stated once:

* **Name.** A panel is identified by its members: ``panel:<m1>+<m2>+...`` with the member names sorted
  (:func:`panel_name`); its artifact cell is (that name, the members' inputs as prompt family, criterion: next
  rules) and its input kind is ``mean``. Two callers listing the same judges in another order get the same cell.
* **A member's expected score** (:func:`expected_score`): its ``mean_of_samples`` when it sends one; else
  ``sum_k k * p_k`` over its probabilities (renormalised log-probs of "1".."K") when it has them; else its
  integer score.
* **The panel's verdict** (:func:`panel_mean`): the arithmetic mean of the members' expected scores, clipped to
  [1, K] (only float noise can leave it). It is a ``mean`` verdict (:mod:`calibration.input_kinds.verdicts`): the core
  sees score = round_half_up(m) and the two-point law on floor(m), ceil(m) with mean m.
* **Inputs are matched** (:func:`member_input`, :func:`panel_family`): the cell's prompt family records which
  input each member's expected score came from, in the sorted member order: ``panel:<input>+<input>...`` with
  ``mean``, ``probabilities`` or ``score`` per member (e.g. ``panel:probabilities+score``). A panel verdict is
  served only by the cell whose family matches its members' inputs, as a single judge's verdict is served only by
  thresholds of its input kind: an integer score where the panel was fitted on that member's log-probs is another
  input, never served by those thresholds.
* **Disagreement** (:func:`disagreement`): the spread max - min of the members' expected scores and their
  population standard deviation.
* **Missing members** (:func:`served_panel`): a verdict lacking some member is answered by the sub-panel of the
  members present (its own name, its own thresholds), never by the full panel's; fewer than two present ->
  no panel.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec
import numpy as np
from numpy.typing import NDArray

from calibration.input_kinds.fit import KindData
from calibration.input_kinds.verdicts import kind_inputs

__all__ = [
    "PANEL_INPUT_KIND",
    "PANEL_PREFIX",
    "PANEL_PROMPT_FAMILY",
    "Disagreement",
    "disagreement",
    "expected_score",
    "expected_scores",
    "is_panel_family",
    "is_panel_name",
    "member_input",
    "panel_family",
    "panel_kind_data",
    "panel_mean",
    "panel_means",
    "panel_members",
    "panel_name",
    "served_panel",
]

PANEL_PREFIX = "panel:"
PANEL_PROMPT_FAMILY = "panel"
PANEL_INPUT_KIND = "mean"
MEMBER_INPUTS = ("mean", "probabilities", "score")
_SEPARATOR = "+"


class Disagreement(msgspec.Struct, frozen=True, kw_only=True):
    """How far the members' expected scores lie apart: max - min and the population standard deviation."""

    spread: float
    std: float


def panel_name(members: Iterable[str]) -> str:
    """The canonical name ``panel:<sorted members joined by +>``; ValueError for < 2 distinct or bad names."""
    names = sorted(set(members))
    if len(names) < 2:
        raise ValueError(f"a panel needs at least two distinct judges; got {names}")
    for name in names:
        if not name or _SEPARATOR in name or name.startswith(PANEL_PREFIX):
            raise ValueError(f"judge name {name!r} cannot be a panel member (empty, contains '+', or a panel)")
    return PANEL_PREFIX + _SEPARATOR.join(names)


def is_panel_name(name: str) -> bool:
    """True for a ``panel:`` cell name."""
    return name.startswith(PANEL_PREFIX)


def panel_members(name: str) -> tuple[str, ...]:
    """The members of a canonical panel name (sorted); ValueError when it is not one."""
    if not is_panel_name(name):
        raise ValueError(f"{name!r} is not a panel name (panel:<judge>+<judge>...)")
    members = tuple(name[len(PANEL_PREFIX) :].split(_SEPARATOR))
    if panel_name(members) != name:
        raise ValueError(f"{name!r} is not a canonical panel name (members sorted, distinct, at least two)")
    return members


def member_input(
    *,
    judge_score: int | None = None,
    probabilities: Sequence[float] | np.ndarray | None = None,
    mean: float | None = None,
) -> str:
    """Which input a member's expected score comes from (the rule of :func:`expected_score`)."""
    if mean is not None:
        return "mean"
    if probabilities is not None:
        return "probabilities"
    if judge_score is None:
        raise ValueError("a member verdict needs mean_of_samples, probabilities or a judge score")
    return "score"


def panel_family(inputs: Sequence[str]) -> str:
    """The prompt family of a panel cell: ``panel:`` + the members' inputs (sorted member order) joined by +."""
    if len(inputs) < 2 or any(i not in MEMBER_INPUTS for i in inputs):
        raise ValueError(f"member inputs must be two or more of {', '.join(MEMBER_INPUTS)}; got {list(inputs)}")
    return PANEL_PREFIX + _SEPARATOR.join(inputs)


def is_panel_family(family: str) -> bool:
    """True for a panel cell's prompt family."""
    return family == PANEL_PROMPT_FAMILY or family.startswith(PANEL_PREFIX)


def expected_score(
    n_labels: int,
    *,
    judge_score: int | None = None,
    probabilities: Sequence[float] | None = None,
    mean: float | None = None,
) -> float:
    """One member's expected score (module rule): mean_of_samples, else sum_k k p_k, else the integer score."""
    if mean is not None:
        return float(mean)
    if probabilities is not None:
        if len(probabilities) != n_labels:
            raise ValueError(f"probabilities have {len(probabilities)} entries, the scale has {n_labels}")
        return float(sum((k + 1) * float(p) for k, p in enumerate(probabilities)))
    if judge_score is None:
        raise ValueError("a member verdict needs mean_of_samples, probabilities or a judge score")
    return float(judge_score)


def expected_scores(
    n_labels: int,
    *,
    judge_scores: np.ndarray | None = None,
    probabilities: np.ndarray | None = None,
    means: np.ndarray | None = None,
) -> np.ndarray:
    """The vector twin of :func:`expected_score` for n verdicts of one member (the same rule, item by item)."""
    if means is not None:
        return np.asarray(means, dtype=float)
    if probabilities is not None:
        probs = np.asarray(probabilities, dtype=float)
        if probs.ndim != 2 or probs.shape[1] != n_labels:
            raise ValueError(f"probabilities must be (n, {n_labels})")
        expected: NDArray[np.float64] = probs @ np.arange(1, n_labels + 1, dtype=float)
        return expected
    if judge_scores is None:
        raise ValueError("member verdicts need means, probabilities or judge scores")
    return np.asarray(judge_scores, dtype=float)


def panel_mean(expected: Sequence[float], n_labels: int) -> float:
    """The panel's ``mean`` verdict: the members' mean expected score clipped to [1, K]."""
    if len(expected) < 2:
        raise ValueError("a panel verdict needs at least two members' expected scores")
    return float(np.clip(np.mean(np.asarray(expected, dtype=float)), 1.0, float(n_labels)))


def panel_means(expected: np.ndarray, n_labels: int) -> np.ndarray:
    """Row-wise :func:`panel_mean` of an (n_items, n_members) matrix."""
    matrix = np.asarray(expected, dtype=float)
    if matrix.ndim != 2 or matrix.shape[1] < 2:
        raise ValueError("expected scores must be an (n_items, n_members >= 2) matrix")
    means: NDArray[np.float64] = np.clip(matrix.mean(axis=1), 1.0, float(n_labels))
    return means


def disagreement(expected: Sequence[float]) -> Disagreement:
    """Spread (max - min) and population std of the members' expected scores."""
    values = np.asarray(expected, dtype=float)
    if values.size == 0:
        raise ValueError("no expected scores")
    return Disagreement(spread=float(values.max() - values.min()), std=float(values.std()))


def panel_kind_data(expected: np.ndarray, labels: np.ndarray, groups: np.ndarray, n_labels: int = 5) -> KindData:
    """A panel cell's items as ``mean`` verdicts (core inputs by
    :func:`calibration.input_kinds.verdicts.kind_inputs`)."""
    means = panel_means(expected, n_labels)
    scores, probabilities = kind_inputs(PANEL_INPUT_KIND, n_labels, means=means)
    return KindData(
        kind=PANEL_INPUT_KIND,
        labels=np.asarray(labels),
        judge_scores=scores,
        probabilities=probabilities,
        groups=np.asarray(groups),
        n_labels=n_labels,
    )


def served_panel(members: Sequence[str], present: Iterable[str]) -> str | None:
    """The panel cell that may serve a verdict in which only ``present`` members answered: the sub-panel of the
    present members (its own canonical name), or None when fewer than two are present."""
    wanted = set(members)
    answered = sorted(set(present) & wanted)
    return panel_name(answered) if len(answered) >= 2 else None
