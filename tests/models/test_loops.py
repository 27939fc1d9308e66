"""A local model that writes one span again and again is stopped after the third copy."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from atoll.harnesses.models._loops import COPIES, LONGEST, SHORTEST, in_a_loop

tokens = st.lists(st.integers(0, 50_000), max_size=200)


@given(before=tokens, span=st.lists(st.integers(0, 50_000), min_size=SHORTEST, max_size=LONGEST))
def test_a_span_written_three_times_back_to_back_is_a_loop(before: list[int], span: list[int]) -> None:
    assert in_a_loop(before + span * COPIES)


@given(before=tokens, span=st.lists(st.integers(0, 50_000), min_size=SHORTEST, max_size=LONGEST))
def test_two_copies_are_not_yet_a_loop(before: list[int], span: list[int]) -> None:
    answer = [-1, *span, -2, *span]  # two copies, each after a token of its own: no span repeats thrice
    assert not in_a_loop(before + answer)


def test_a_short_pattern_said_a_few_times_is_no_loop() -> None:
    assert not in_a_loop([7, 1, 2] * 8)  # "a, b, c" eight times: shorter than three copies of SHORTEST
    assert not in_a_loop(list(range(300)))
    assert in_a_loop([7, 1, 2] * 9)  # nine times is three copies of a 9-token span
