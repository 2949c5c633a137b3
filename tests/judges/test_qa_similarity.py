"""SQuAD-style normalisation, token F1 and exact match on hand-computed cases and invariants."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judges.factuality.qa_similarity import exact_match, normalize_answer, token_f1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The  U.S.!", "us"),
        ("An apple, a pear and the banana", "apple pear and banana"),
        ("Theatre of the Absurd", "theatre of absurd"),  # articles only as whole words
        ("THE Cat", "cat"),  # lower-cased before the articles go
        ("3,000 people", "3000 people"),  # punctuation is deleted, not replaced by a space
        ("\u201cHello\u201d \u2014 world\u2019s end", "hello worlds end"),  # Unicode quotes and dash
        ("a\tb\n  c", "b c"),
        ("$5 + tax", "5 tax"),  # ASCII symbols in string.punctuation go too, as in SQuAD
        ("", ""),
        ("  The . ", ""),
        # PTB-tokenised clitics join their word, so tokenised summaries meet untokenised articles.
        ("angelina jolie 's character", "angelina jolies character"),
        ("Angelina Jolie\u2019s character", "angelina jolies character"),
        ("they do n't know", "they dont know"),
        ("we 'll see", "well see"),
        ("he said 'hello'", "he said hello"),  # an opening quote is not a clitic
        ("-lrb- cnn -rrb- the boy", "cnn boy"),
    ],
)
def test_normalize_answer_hand_cases(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # "cat sat on mat" vs "cat on mat": 3 common, P = 3/4, R = 1 -> 2*(3/4)/(7/4) = 6/7
        ("the cat sat on the mat", "a cat on a mat", 6 / 7),
        # multiset: [new, new, york] vs [new, york]: common 2, P = 2/3, R = 1 -> 4/5
        ("new new york", "New York", 0.8),
        ("Barack Obama", "obama", 2 / 3),
        ("obama", "Barack Obama", 2 / 3),
        ("Paris", "London", 0.0),
        ("The Eiffel Tower.", "eiffel tower", 1.0),
        # "red car" vs "car is red": 2 common, P = 1, R = 2/3 -> 0.8 (order does not matter)
        ("red car", "car is red", 0.8),
        ("", "", 1.0),  # SQuAD convention: both empty agree
        ("the", "a.", 1.0),  # both empty after normalisation
        ("", "cat", 0.0),
        ("cat", "", 0.0),
        ("an", "cat", 0.0),
        # tokenised vs untokenised: equal after clitic joining; without it 2*2/(3+4) = 4/7
        ("jolie 's new film", "Jolie's new film", 1.0),
    ],
)
def test_token_f1_hand_cases(a: str, b: str, expected: float) -> None:
    assert token_f1(a, b) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("The Eiffel Tower.", "eiffel tower", 1.0),
        ("Eiffel Tower", "Eiffel tower in Paris", 0.0),
        ("new york", "york new", 0.0),  # token order matters for exact match
        ("", "", 1.0),
        ("the", "", 1.0),
        ("", "x", 0.0),
        ("U.S.", "US", 1.0),
        ("do n't stop", "Don\u2019t stop!", 1.0),
    ],
)
def test_exact_match_hand_cases(a: str, b: str, expected: float) -> None:
    assert exact_match(a, b) == expected


_WORDS = st.sampled_from(["the", "a", "cat", "Cat.", "dog", "new", "york", "3,000", "U.S.", "\u2014", "'s", "n't", ""])
_PHRASES = st.lists(_WORDS, max_size=7).map(" ".join)


@given(_PHRASES, _PHRASES)
def test_token_f1_matches_dice_formula_and_invariants(a: str, b: str) -> None:
    tokens_a, tokens_b = normalize_answer(a).split(), normalize_answer(b).split()
    f1 = token_f1(a, b)
    assert 0.0 <= f1 <= 1.0
    assert f1 == token_f1(b, a)
    if tokens_a and tokens_b:
        # F1 of multiset overlap equals the Dice coefficient 2|A∩B| / (|A| + |B|).
        common = sum((Counter(tokens_a) & Counter(tokens_b)).values())
        assert f1 == pytest.approx(2 * common / (len(tokens_a) + len(tokens_b)))
    assert (f1 == pytest.approx(1.0)) == (sorted(tokens_a) == sorted(tokens_b))
    if exact_match(a, b) == 1.0:
        assert f1 == 1.0


@given(_PHRASES)
def test_normalize_answer_is_idempotent(text: str) -> None:
    once = normalize_answer(text)
    assert normalize_answer(once) == once
    assert once == once.strip()
    assert "  " not in once
