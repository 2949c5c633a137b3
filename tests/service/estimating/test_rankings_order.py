"""``POST /v1/rankings`` answers the multiset of its battles: the same battles in any order, or with a battle's two
sides swapped (and its verdicts with them), give the identical answer."""

from __future__ import annotations

import msgspec
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from calibration.estimates.rank_sets import Battles, canonical_battles, ppr_win_rates
from service.config.limits import LimitSettings
from service.estimating.rankings import rank_models
from service.wire.estimates import Battle, RankingRequest

_MODELS = ["m1", "m2", "m3", "m4"]
_FLIP = {"a": "b", "b": "a", "tie": "tie"}


def _battle(draw: st.DrawFn) -> Battle:
    first, second = draw(st.sampled_from([(a, b) for a in _MODELS for b in _MODELS if a != b]))
    judge = draw(st.sampled_from(["a", "b", "tie"]))
    human = draw(st.sampled_from(["a", "b", "tie", None]))
    return Battle(model_a=first, model_b=second, judge=judge, human=human)


@st.composite
def _battles(draw: st.DrawFn) -> list[Battle]:
    battles = draw(st.lists(st.composite(lambda d: _battle(d))(), min_size=6, max_size=60))
    # at least one labelled and one unlabelled battle
    return [
        Battle(model_a="m1", model_b="m2", judge="a", human="a"),
        Battle(model_a="m3", model_b="m4", judge="b"),
        *battles,
    ]


def _flipped(battle: Battle) -> Battle:
    return Battle(
        model_a=battle.model_b,
        model_b=battle.model_a,
        judge=_FLIP[battle.judge],
        human=None if battle.human is None else _FLIP[battle.human],
    )


@settings(max_examples=40, deadline=None)
@given(battles=_battles(), seed=st.integers(0, 2**32 - 1), ties=st.sampled_from(["zero", "half"]))
def test_shuffled_or_turned_battles_give_the_identical_answer(battles: list[Battle], seed: int, ties: str) -> None:
    rng = np.random.default_rng(seed)
    shuffled = [battles[i] for i in rng.permutation(len(battles))]
    turned = [_flipped(b) if rng.random() < 0.5 else b for b in shuffled]
    limits = LimitSettings(min_labelled_battles_per_model=0)
    answers = [
        msgspec.to_builtins(rank_models(RankingRequest(battles=order, alpha=0.2, ties=ties), limits))  # type: ignore[arg-type]
        for order in (battles, shuffled, turned)
    ]
    assert answers[0] == answers[1] == answers[2]


def test_canonical_battles_keeps_the_pairs_of_aligned_sets_together() -> None:
    human = Battles(
        model_a=np.array([2, 0, 1]),
        model_b=np.array([0, 1, 2]),
        win_a=np.array([1.0, 0, 0]),
        win_b=np.array([0, 1.0, 1]),
    )
    judge = Battles(
        model_a=human.model_a, model_b=human.model_b, win_a=np.array([1.0, 1, 0]), win_b=np.array([0, 0, 1.0])
    )
    h, j = canonical_battles(human, judge)
    np.testing.assert_array_equal(h.model_a, [0, 0, 1])
    np.testing.assert_array_equal(h.model_b, [1, 2, 2])
    np.testing.assert_array_equal(h.win_a, [0, 0, 0])  # battle (2 beats 0) turned: 0 lost to 2
    np.testing.assert_array_equal(j.win_a, [1, 0, 0])
    # the estimate is that of the battles as given
    unl = Battles(
        model_a=np.array([0, 1]), model_b=np.array([1, 2]), win_a=np.array([1.0, 0]), win_b=np.array([0, 1.0])
    )
    np.testing.assert_allclose(ppr_win_rates(human, judge, unl, 3).theta, ppr_win_rates(h, j, unl, 3).theta)
