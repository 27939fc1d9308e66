"""The test grounded_args and the `ungrounded_argument` pattern share: a text argument may quote only
runs of digits the agent was told."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from atoll.harnesses._grounding import digit_runs, ungrounded

told_texts = st.lists(st.text(alphabet="abc -0123456789", max_size=30), max_size=4)


@given(told_texts, st.data())
def test_an_argument_built_from_what_was_told_is_never_refused(texts: list[str], data: st.DataObject) -> None:
    heard = digit_runs(texts)
    runs = heard.split()
    quoted = data.draw(st.lists(st.sampled_from(runs), max_size=3)) if runs else []
    # Any part of a told run, with any words around it.
    parts = [run[data.draw(st.integers(0, len(run) - 1)) :] for run in quoted]
    argument = "ID-" + "/".join(parts)
    assert ungrounded({"id": argument, "items": [argument]}, heard) == []


@given(told_texts, st.integers(100, 10**9))
def test_a_run_of_three_digits_or_more_nobody_said_is_named_by_its_path(
    texts: list[str], number: int
) -> None:
    heard = digit_runs(texts)
    fresh = str(number)
    arguments = {"order": {"lines": ["ITM", f"ITM-{fresh}-1"]}, "total": number, "note": "ok"}
    expected = [] if fresh in heard else ["order.lines[1]"]
    assert ungrounded(arguments, heard) == expected  # never `total`: a number may be worked out


def test_short_runs_and_numbers_are_never_checked() -> None:
    assert ungrounded({"order_id": "C12", "quantity": 4821, "pin": 4821}, heard="") == []
    assert ungrounded({"pin": "4821"}, heard="") == ["pin"]
    assert ungrounded({"pin": "4821"}, heard=digit_runs(["Call 555-0148213"])) == []
