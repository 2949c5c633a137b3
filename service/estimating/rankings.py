"""``POST /v1/rankings``: battles -> ``calibration.estimates.rank_sets`` (prediction-powered ranking) as it is.

Battles with a human verdict are the labelled set (their judge verdicts pair with the human ones); the rest are
the unlabelled set. Models are numbered by name (sorted), and ``calibration.estimates.rank_sets`` sorts the battles, so
the answer is the same for every order of the same battles (ties in win rate are listed by name). Each side's outcome: 1
for a win, 0 for a loss, and for a tie 0 (``ties: "zero"``, the paper's convention) or 1/2 (``ties: "half"``).

Under-labelled guard (``calibration.estimates.rank_sets``, ``min_labelled``): a model with fewer labelled battles than
the request's ``min_labelled_battles`` (default: the setting ``MIN_LABELLED_BATTLES_PER_MODEL``) is unknown, in the PPR
and in the human-only answer alike: its rank set is [1, k], no pair involving it is separable, its interval is [0, 1]
(the range of a win rate: its variance is treated as infinite) and ``under_labelled`` is true. Its win rate is still
reported.

A battle of a model against itself is no comparison (JSON Schema cannot say that two fields differ, so the request
is answered): it is left out of every figure and listed in ``ignored_battles`` with its index. A model that appears in
such battles only is not ranked. The figures are those of the battles kept: when every battle is left out there is
nothing to rank (no model, no pair); when no kept battle has a human verdict, no model has an estimate (every win rate
null, every rank set [1, k]); when every kept battle has one, the judge adds nothing and the answer is the human-only
one (``method`` "human only", ``lam`` 0).

Refused with a 422 ``invalid-request``: more battles than ``MAX_RANKING_BATTLES`` or more models than
``MAX_RANKING_MODELS`` (settings), and, as the spec states, battles that are all labelled or all unlabelled.
"""

from __future__ import annotations

import math

import numpy as np

from calibration.estimates.rank_sets import Battles, RankSets, WinRateEstimate, ppr_win_rates, rank_sets, win_rates
from service.config.limits import LimitSettings
from service.errors import InvalidRequestError
from service.wire.estimates import (
    Battle,
    IgnoredBattle,
    ModelRanking,
    RankingRequest,
    RankingResponse,
    SeparablePair,
)

__all__ = ["rank_models"]

_SIDES = {"a": (1.0, 0.0), "b": (0.0, 1.0)}


def _kept_battles(request: RankingRequest) -> tuple[list[Battle], list[IgnoredBattle]]:
    """The battles of two different models, and the others (a model against itself) as ignored."""
    kept: list[Battle] = []
    ignored: list[IgnoredBattle] = []
    for index, battle in enumerate(request.battles):
        if battle.model_a == battle.model_b:
            reason = f"a self-battle: model {battle.model_a!r} against itself is no comparison"
            ignored.append(IgnoredBattle(index=index, reason=reason))
        else:
            kept.append(battle)
    return kept, ignored


def _model_index(battles: list[Battle], limits: LimitSettings) -> tuple[list[str], np.ndarray, np.ndarray]:
    names: dict[str, int] = {}
    a = np.empty(len(battles), dtype=np.int64)
    b = np.empty_like(a)
    for index, battle in enumerate(battles):
        a[index] = names.setdefault(battle.model_a, len(names))
        b[index] = names.setdefault(battle.model_b, len(names))
        if len(names) > limits.max_ranking_models:
            raise InvalidRequestError(
                f"the battles name more than MAX_RANKING_MODELS={limits.max_ranking_models} models"
            )
    # numbered by name (not by first appearance): the answer then depends on the battles' multiset only
    ordered = sorted(names)
    number = np.empty(len(ordered), dtype=np.int64)
    number[[names[name] for name in ordered]] = np.arange(len(ordered))
    return ordered, number[a], number[b]


def _outcomes(verdicts: list[str], tie: float) -> tuple[np.ndarray, np.ndarray]:
    pairs = [_SIDES.get(verdict, (tie, tie)) for verdict in verdicts]
    array = np.asarray(pairs, dtype=float).reshape(-1, 2)
    return array[:, 0], array[:, 1]


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _bounds(low: float, high: float) -> tuple[float, float] | None:
    return (float(low), float(high)) if math.isfinite(low) and math.isfinite(high) else None


def _clipped(low: np.ndarray, high: np.ndarray, unknown: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every interval within [0, 1], the range of a win rate (the intersection keeps the coverage); an
    under-labelled model's (-inf, inf) is then [0, 1]. NaN (no estimate) stays NaN."""
    low, high = np.where(unknown, 0.0, low), np.where(unknown, 1.0, high)
    with np.errstate(invalid="ignore"):
        return np.where(low < 0.0, 0.0, low), np.where(high > 1.0, 1.0, high)


def _pairs(sets: RankSets, names: list[str]) -> list[SeparablePair]:
    worse, better = np.nonzero(sets.above)  # above[i, j]: j is certainly above i
    return [
        SeparablePair(better=names[j], worse=names[i]) for i, j in zip(worse.tolist(), better.tolist(), strict=True)
    ]


def rank_models(request: RankingRequest, limits: LimitSettings) -> RankingResponse:
    """Win rates, rank sets and separable pairs of the battles' models (see the module docstring)."""
    if len(request.battles) > limits.max_ranking_battles:
        raise InvalidRequestError(
            f"the request holds {len(request.battles)} battles; the limit is "
            f"MAX_RANKING_BATTLES={limits.max_ranking_battles}"
        )
    given = np.asarray([battle.human is not None for battle in request.battles])
    if given.all() or not given.any():  # the spec's rule (some battle labelled, some not)
        raise InvalidRequestError(
            "need battles with a human verdict (a uniform random subset) and battles "
            f"with the judge's verdict only; got {int(given.sum())} labelled of "
            f"{given.size}"
        )
    battles, ignored = _kept_battles(request)
    names, model_a, model_b = _model_index(battles, limits)
    k = len(names)
    floor = (
        limits.min_labelled_battles_per_model if request.min_labelled_battles is None else request.min_labelled_battles
    )
    if k == 0:  # every battle a self-battle: nothing to rank
        return _nothing_to_rank(request, floor, ignored)
    labelled = np.asarray([battle.human is not None for battle in battles], dtype=bool)
    tie = 0.5 if request.ties == "half" else 0.0
    judge_a, judge_b = _outcomes([battle.judge for battle in battles], tie)
    human_a, human_b = _outcomes([battle.human for battle in battles if battle.human is not None], tie)
    lab, unl = np.flatnonzero(labelled), np.flatnonzero(~labelled)
    human = Battles(model_a=model_a[lab], model_b=model_b[lab], win_a=human_a, win_b=human_b)
    judge = Battles(model_a=model_a[lab], model_b=model_b[lab], win_a=judge_a[lab], win_b=judge_b[lab])
    judge_unlabelled = Battles(model_a=model_a[unl], model_b=model_b[unl], win_a=judge_a[unl], win_b=judge_b[unl])
    human_only = win_rates(human, k)
    # the judge's verdicts help only beside human ones and with battles of their own (module docstring)
    estimate = ppr_win_rates(human, judge, judge_unlabelled, k) if lab.size and unl.size else human_only
    sets = rank_sets(estimate, request.alpha, request.construction, min_labelled=floor)
    human_sets = rank_sets(human_only, request.alpha, request.construction, min_labelled=floor)
    unlabelled_counts = np.bincount(judge_unlabelled.model_a, minlength=k) + np.bincount(
        judge_unlabelled.model_b, minlength=k
    )
    models = _models(names, estimate, human_only, sets, human_sets, unlabelled_counts, request.alpha, floor)
    return RankingResponse(
        alpha=request.alpha,
        construction=request.construction,
        ties=request.ties,
        method=estimate.method,
        lam=None if estimate.lam is None else _finite(estimate.lam),
        n_labelled=int(lab.size),
        n_unlabelled=int(unl.size),
        min_labelled_battles=floor,
        models=models,
        separable=_pairs(sets, names),
        human_only_separable=_pairs(human_sets, names),
        ignored_battles=ignored,
    )


def _nothing_to_rank(request: RankingRequest, floor: int, ignored: list[IgnoredBattle]) -> RankingResponse:
    """The answer when every battle was left out: no model, no pair."""
    return RankingResponse(
        alpha=request.alpha,
        construction=request.construction,
        ties=request.ties,
        method="human only",
        lam=0.0,
        n_labelled=0,
        n_unlabelled=0,
        min_labelled_battles=floor,
        models=[],
        separable=[],
        human_only_separable=[],
        ignored_battles=ignored,
    )


def _models(
    names: list[str],
    estimate: WinRateEstimate,
    human_only: WinRateEstimate,
    sets: RankSets,
    human_sets: RankSets,
    unlabelled_counts: np.ndarray,
    alpha: float,
    floor: int,
) -> list[ModelRanking]:
    with np.errstate(invalid="ignore"):  # a rounding-negative variance gives NaN: reported as no interval
        low, high = estimate.intervals(alpha, floor)
        h_low, h_high = human_only.intervals(alpha, floor)
    unknown = estimate.under_labelled(floor)  # the same labelled battles as human_only's
    (low, high), (h_low, h_high) = _clipped(low, high, unknown), _clipped(h_low, h_high, unknown)
    models = [
        ModelRanking(
            model=name,
            win_rate=_finite(estimate.theta[i]),
            interval=_bounds(low[i], high[i]),
            rank_set=(int(sets.low[i]), int(sets.high[i])),
            human_only_win_rate=_finite(human_only.theta[i]),
            human_only_interval=_bounds(h_low[i], h_high[i]),
            human_only_rank_set=(int(human_sets.low[i]), int(human_sets.high[i])),
            battles_labelled=int(estimate.counts[i]),
            battles_unlabelled=int(unlabelled_counts[i]),
            under_labelled=bool(unknown[i]),
        )
        for i, name in enumerate(names)
    ]
    return sorted(models, key=lambda m: (m.win_rate is None, -(m.win_rate or 0.0)))  # stable: ties by name
