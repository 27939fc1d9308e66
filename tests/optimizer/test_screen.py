"""The screen's race: which candidates reach the gate, and how many train episodes it spends deciding."""

from __future__ import annotations

import random

from atoll.optimizer._screen import Repair, race, race_order, round_sizes

# The incumbent fails t0..t5 and passes t6..t15: a train sample of 16.
INCUMBENT = {f"t{i}": [0.0 if i < 6 else 1.0] for i in range(16)}
ORDER = [f"t{i}" for i in range(16)]


class Candidate:
    """Scores the candidate gets per task (default: the incumbent's), recording each round's tasks."""

    def __init__(self, **scores: float) -> None:
        self.scores = {task: scores.get(task, INCUMBENT[task][0]) for task in INCUMBENT}
        self.rounds: list[list[str]] = []

    async def __call__(self, tasks: list[str]) -> dict[str, list[float | None]]:
        self.rounds.append(tasks)
        return {task: [self.scores[task]] for task in tasks}


def test_round_sizes_double_up_to_the_train_sample():
    assert round_sizes(3, 16) == [3, 6, 12, 16]
    assert round_sizes(3, 12) == [3, 6, 12]
    assert round_sizes(6, 4) == [4]
    assert round_sizes(3, 0) == []


def test_the_race_starts_on_failing_tasks_in_a_seeded_order():
    failing, passing = ["t2", "t0", "t1"], ["t3", "t4"]

    order = race_order(failing, passing, random.Random(7))

    assert set(order[:3]) == set(failing) and set(order[3:]) == set(passing)
    assert order == race_order(failing, passing, random.Random(7))


def test_the_failing_tasks_a_proposal_aims_at_run_first_and_a_passing_or_unknown_target_is_ignored():
    failing, passing = [f"f{i}" for i in range(8)], ["p0", "p1"]

    order = race_order(failing, passing, random.Random(7), targets=["f5", "p1", "nope"])

    assert order[0] == "f5" and sorted(order) == sorted(failing + passing)
    assert set(order[-2:]) == set(passing)


async def test_a_candidate_that_ties_everywhere_is_dropped_after_one_round():
    candidate = Candidate()

    record = await race(ORDER, INCUMBENT, candidate, first=3)

    assert not record.passed and record.stopped == "no_change"
    assert candidate.rounds == [["t0", "t1", "t2"]]
    assert "changed no outcome in round 1" in record.reason


async def test_a_candidate_behind_in_round_one_is_dropped_without_running_round_two():
    candidate = Candidate(t0=1.0, t6=0.0, t7=0.0)  # fixes one task, breaks two

    record = await race(["t6", "t0", "t7", *ORDER[8:]], INCUMBENT, candidate, first=3)

    assert not record.passed and record.stopped == "fell_behind"
    assert len(candidate.rounds) == 1 and len(record.rounds) == 1
    assert record.rounds[0].wins == 1 and record.rounds[0].losses == 2
    assert record.candidate_mean < record.incumbent_mean


async def test_a_candidate_that_wins_a_failing_task_advances_to_the_gate():
    candidate = Candidate(t1=1.0)

    record = await race(ORDER, INCUMBENT, candidate, first=3)

    assert record.passed and record.stopped == "ahead"
    assert [r.seen for r in record.rounds] == [3, 6, 12, 16]
    assert record.rounds[0].incumbent_mean == 0.0 and record.rounds[0].candidate_mean == 1 / 3


async def test_the_race_stops_at_the_train_sample_and_runs_each_task_once():
    candidate = Candidate(t1=1.0)

    record = await race(ORDER[:10], INCUMBENT, candidate, first=3)

    assert [len(tasks) for tasks in candidate.rounds] == [3, 3, 4]
    assert sorted(t for tasks in candidate.rounds for t in tasks) == sorted(ORDER[:10])
    assert record.tasks == ORDER[:10] and record.passed


async def test_a_candidate_that_changed_outcomes_but_ties_on_the_whole_sample_goes_to_the_gate():
    candidate = Candidate(t0=1.0, t6=0.0)  # one fixed, one broken: the gate decides

    record = await race(ORDER, INCUMBENT, candidate, first=3)

    assert record.passed and record.stopped == "tied"
    assert len(record.rounds) == 4 and record.candidate_mean == record.incumbent_mean


async def test_a_repair_that_ties_the_incumbent_early_races_on_and_goes_to_the_gate_if_it_moved_its_parent():
    # The parent (a vetoed winner) fixed t0 and t1 and broke t9; its repair swaps a demo for one kind of
    # request (t14: the incumbent passed it, the parent broke it) and changes nothing on the first round.
    parent = {**INCUMBENT, "t0": [1.0], "t1": [1.0], "t9": [0.0], "t14": [0.0]}
    order = ["t3", "t4", "t5", *[t for t in ORDER if t not in ("t3", "t4", "t5")]]
    repair = Candidate(t0=1.0, t1=1.0, t9=0.0, t14=1.0)

    record = await race(order, INCUMBENT, repair, first=3, repair=Repair(parent))

    assert record.rounds[0].wins == record.rounds[0].losses == 0  # a plain candidate stops here
    assert record.passed and record.stopped == "ahead" and len(record.rounds) == 4


async def test_a_repair_that_plays_the_whole_sample_as_its_parent_did_is_dropped():
    parent = {**INCUMBENT, "t0": [1.0], "t1": [1.0], "t9": [0.0]}
    repair = Candidate(t0=1.0, t1=1.0, t9=0.0)

    record = await race(ORDER, INCUMBENT, repair, first=3, repair=Repair(parent))

    assert not record.passed and record.stopped == "no_change" and len(record.rounds) == 4
    assert "as its parent did" in record.reason

    # Unless it mended a train task outside the sample that its parent broke: its edit reached the
    # kind of request its parent got wrong, which the sample did not hold.
    record = await race(
        ORDER, INCUMBENT, Candidate(t0=1.0, t1=1.0, t9=0.0), first=3, repair=Repair(parent, 2, 1)
    )

    assert record.passed and record.stopped == "ahead"
    assert "mended 1 of the 2 it broke outside the sample" in record.reason


async def test_a_repair_that_gave_back_most_of_its_parents_gain_is_dropped_before_the_gate():
    # The parent fixed t0..t3 and broke t9; the repair mends t9 but is copied where it does not fit: of
    # the parent's four wins it keeps one. Against the incumbent alone it is ahead.
    parent = {**INCUMBENT, "t0": [1.0], "t1": [1.0], "t2": [1.0], "t3": [1.0], "t9": [0.0]}
    repair = Candidate(t0=1.0)

    record = await race(ORDER, INCUMBENT, repair, first=3, repair=Repair(parent))

    assert record.candidate_mean > record.incumbent_mean
    assert not record.passed and record.stopped == "fell_behind" and len(record.rounds) == 4
    assert "kept less than 50% of its parent's gain" in record.reason


async def test_a_repair_that_kept_most_of_its_parents_gain_goes_to_the_gate():
    parent = {**INCUMBENT, "t0": [1.0], "t1": [1.0], "t2": [1.0], "t3": [1.0], "t9": [0.0]}
    repair = Candidate(t0=1.0, t1=1.0, t2=1.0)  # one win given back, the break mended

    record = await race(ORDER, INCUMBENT, repair, first=3, repair=Repair(parent))

    assert record.passed and record.stopped == "ahead"
