"""Prompt-lookup guesses: the tokens that followed the newest earlier run of the context's last tokens."""

from hypothesis import given
from hypothesis import strategies as st

from atoll.harnesses.models._lookup import NGRAM, _Lookup


def test_a_guess_continues_the_newest_earlier_run_of_the_last_tokens():
    run = list(range(100, 100 + NGRAM))
    lookup = _Lookup([*run, 1, *run, 2, 3, 9, *run])

    assert lookup.guess(3) == [2, 3, 9]  # after the newest earlier [5, 6], not the first one
    assert lookup.guess(0) == []


def test_no_guess_without_an_earlier_run():
    assert _Lookup([1, 2, 3, 4]).guess(4) == []
    assert _Lookup([1]).guess(4) == []


@given(st.lists(st.integers(0, 4), max_size=60), st.integers(1, 6))
def test_a_guess_is_what_followed_some_earlier_run_and_extending_equals_building(tokens, limit):
    lookup = _Lookup(tokens[: len(tokens) // 2])
    lookup.extend(tokens[len(tokens) // 2 :])
    guess = lookup.guess(limit)

    assert guess == _Lookup(tokens).guess(limit)
    assert len(guess) <= limit
    if guess:
        tail = tokens[-NGRAM:]
        starts = [i for i in range(len(tokens) - NGRAM) if tokens[i : i + NGRAM] == tail]
        newest = max(starts)
        assert guess == tokens[newest + NGRAM : newest + NGRAM + limit]
