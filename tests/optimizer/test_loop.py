"""The optimization loop end to end, on the helpdesk world with a scripted agent.

The scripted agent adds an order note only when its system prompt says ALWAYS ADD A NOTE, so
an operator that writes that line truly helps and one that adds a template comment does
nothing. Only the helpful one may ever be committed.
"""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest
from notes_desk import HARNESS_YAML, MAGIC, PROMPT, DoesNothing, Helpful, agent, git, make_workspace
from rich.console import Console

from atoll.evals import RunStore
from atoll.harnesses.models import ModelUnavailable, ScriptedModel
from atoll.optimizer import Operator, OptimizeConfig, OptimizerError, OptimizerPaused, optimize
from atoll.optimizer._optimizations import OptimizationStore
from atoll.optimizer._screen import round_line
from atoll.views.optimize import event_line, render_optimize_result
from atoll.worlds.base import process_owner


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "repo", prompt="You keep notes on orders.\n", val=list(range(7, 13)))


def config(root: Path, **overrides) -> OptimizeConfig:
    options = {"suite": root / "s", "max_proposals": 2, "max_minutes": None, "concurrency": 4, **overrides}
    return OptimizeConfig(harness=root / "h", **options)


def run(root: Path, *, resume: str | None = None, on_event=None, **overrides):
    store = RunStore(root.parent / "runs.sqlite")
    try:
        return asyncio.run(
            optimize(
                config(root, **overrides),
                resume=resume,
                store=store,
                model=ScriptedModel(fn=agent),
                proposers=[DoesNothing(), Helpful()],
                on_event=on_event,
            )
        )
    finally:
        store.close()


def atoll_commits(root: Path) -> list[str]:
    return [m for m in git(root, "log", "--format=%B%x00").split("\x00") if m.strip().startswith("atoll(")]


def test_only_the_helpful_operator_is_committed_with_its_figures(workspace: Path):
    result = run(workspace)

    assert [step.verdict for step in result.steps] == ["screened_out", "accept"]
    assert result.val_start < 1.0 and result.val_final == 1.0
    assert MAGIC in (workspace / "h" / PROMPT).read_text()
    [message] = atoll_commits(workspace)
    assert message.startswith("atoll(helpful): Tell the agent to add notes.")
    assert "-> 1.000" in message and "p=0.01562" in message and "6 tasks better" in message
    assert f"Atoll-Run: {result.run_id}" in message
    assert git(workspace, "show", "--name-only", "--format=", "HEAD").split() == [f"h/{PROMPT}"]
    assert git(workspace, "status", "--porcelain") == ""


def test_a_dirty_harness_folder_is_refused(workspace: Path):
    (workspace / "h" / PROMPT).write_text("edited by hand\n")
    with pytest.raises(OptimizerError, match="uncommitted changes"):
        run(workspace)


@pytest.mark.parametrize("stage", ["evaluate", "proposal", "screen", "decision", "commit"])
def test_a_run_interrupted_at_any_stage_resumes_without_losing_or_repeating_a_commit(
    workspace: Path, stage: str
):
    seen = {"n": 0}

    def interrupt(event) -> None:
        if (event.kind == stage and event.status.iteration == 2) or (
            stage == "evaluate" and event.kind == stage
        ):
            seen["n"] += 1
            if seen["n"] == 1:
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(workspace, on_event=interrupt)
    store = RunStore(workspace.parent / "runs.sqlite")
    run_id = store.db.execute("SELECT id FROM optimizations").fetchone()[0]
    assert store.db.execute("SELECT status FROM optimizations").fetchone()[0] == "interrupted"
    store.close()

    result = run(workspace, resume=run_id)

    assert result.run_id == run_id
    assert [step.verdict for step in result.steps] == ["screened_out", "accept"]
    assert len(atoll_commits(workspace)) == 1
    assert MAGIC in (workspace / "h" / PROMPT).read_text()


def test_a_crash_between_commit_and_record_does_not_commit_twice(workspace: Path, monkeypatch):
    from atoll.optimizer import _optimizations

    original = _optimizations.OptimizationStore.save_step
    crashed = {"done": False}

    def crash_once(self, run_id, iteration, **values):
        if "commit_sha" in values and not crashed["done"]:
            crashed["done"] = True
            raise KeyboardInterrupt
        return original(self, run_id, iteration, **values)

    monkeypatch.setattr(_optimizations.OptimizationStore, "save_step", crash_once)
    with pytest.raises(KeyboardInterrupt):
        run(workspace)
    assert len(atoll_commits(workspace)) == 1

    result = run(workspace, resume="latest")

    assert len(atoll_commits(workspace)) == 1
    assert result.steps[-1].commit == git(workspace, "rev-parse", "HEAD").strip()


def test_committing_on_another_branch_leaves_the_checkout_alone(workspace: Path):
    result = run(workspace, branch="atoll/better")

    assert result.accepted
    assert MAGIC not in (workspace / "h" / PROMPT).read_text()
    assert MAGIC in git(workspace, "show", f"atoll/better:h/{PROMPT}")
    assert git(workspace, "status", "--porcelain") == ""


def test_a_spent_time_budget_stops_before_the_next_proposal_and_says_why(workspace: Path):
    result = run(workspace, max_minutes=1e-6)

    assert result.steps == []
    assert result.stop_reason.startswith("time budget")
    assert atoll_commits(workspace) == []


def test_a_model_outage_pauses_the_run_and_resume_finishes_it(workspace: Path):
    down = ScriptedModel(fn=lambda request: ModelUnavailable("503 from the provider, after 4 retries"))
    store = RunStore(workspace.parent / "runs.sqlite")
    with pytest.raises(OptimizerPaused, match="the model stopped answering.*--resume"):
        asyncio.run(optimize(config(workspace), store=store, model=down, proposers=[Helpful()]))
    assert store.db.execute("SELECT status FROM optimizations").fetchone()[0] == "paused"
    store.close()

    result = run(workspace, resume="latest")

    assert result.accepted and len(atoll_commits(workspace)) == 1


def test_the_pareto_strategy_commits_only_what_passes_the_rule_too(workspace: Path):
    result = run(workspace, strategy="pareto", max_proposals=3)

    assert [step.verdict for step in result.steps][:2] == ["screened_out", "accept"]
    assert len(atoll_commits(workspace)) == len(result.accepted) == 1


class EditsAFile(Operator):
    """A proposer that makes one fixed edit to one harness file."""

    def __init__(self, name: str, file: str, edit) -> None:
        self.name, self.file, self.edit = name, file, edit

    async def propose(self, context):
        from atoll.optimizer import Proposal

        files = {**context.files, self.file: self.edit(context.files[self.file])}
        return Proposal.build(
            operator=self.name,
            rationale=self.name,
            parent=context.files,
            files=files,
            parent_hash=context.harness_hash,
        )


def run_with(workspace: Path, proposers: list, **overrides):
    store = RunStore(workspace.parent / "runs.sqlite")
    try:
        return asyncio.run(
            optimize(
                config(workspace, **overrides),
                store=store,
                model=ScriptedModel(fn=agent),
                proposers=proposers,
            )
        )
    finally:
        store.close()


def test_a_proposal_that_fails_to_render_is_invalid_and_the_run_goes_on(workspace: Path):
    breaks = EditsAFile("breaks_the_template", PROMPT, lambda text: text + "{{ 1 / 0 }}\n")

    result = run_with(workspace, [breaks, Helpful()])

    assert [step.verdict for step in result.steps] == ["invalid", "accept"]
    assert "division by zero" in result.steps[0].reasons[0]
    assert len(atoll_commits(workspace)) == 1
    console = Console(width=400, record=True)
    console.print(render_optimize_result(result))
    shown = console.export_text()
    assert "why not:" in shown and "ZeroDivisionError: division by zero" in shown


def test_resume_latest_means_the_newest_unfinished_run_not_the_newest_run(workspace: Path):
    def interrupt(event) -> None:
        if event.kind == "proposal":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(workspace, on_event=interrupt)
    finished = run(workspace, max_proposals=0)
    store = RunStore(workspace.parent / "runs.sqlite")
    records = OptimizationStore(store)
    interrupted = next(row["id"] for row in store.db["optimizations"].rows if row["id"] != finished.run_id)
    assert records.latest() == finished.run_id
    assert records.latest_unfinished() == interrupted
    store.close()

    result = run(workspace, resume="latest")

    assert result.run_id == interrupted and result.accepted


def test_a_run_whose_process_was_killed_reads_interrupted_and_is_what_latest_resumes(workspace: Path):
    run(workspace, max_proposals=0)
    store = RunStore(workspace.parent / "runs.sqlite")
    records = OptimizationStore(store)
    (row,) = store.db["optimizations"].rows
    dead = json.dumps({"host": socket.gethostname(), "pid": 2**22 + 1, "token": "gone"})
    store.db["optimizations"].update(row["id"], {"status": "running", "owner": dead})
    assert records.run(row["id"])["status"] == "interrupted"
    assert records.latest_unfinished() == row["id"]
    store.db["optimizations"].update(row["id"], {"owner": process_owner()})  # alive: never resumed twice
    assert records.run(row["id"])["status"] == "running" and records.latest_unfinished() is None
    store.close()


def test_resume_latest_with_nothing_unfinished_says_so(workspace: Path):
    run(workspace, max_proposals=0)
    with pytest.raises(OptimizerError, match="no unfinished optimization run to resume"):
        run(workspace, resume="latest")


def test_a_proposal_that_changes_the_harness_world_is_invalid(workspace: Path):
    moves = EditsAFile(
        "moves_the_world",
        "harness.yaml",
        lambda text: text.replace("world: helpdesk", "world: tests.shop_world"),
    )

    result = run_with(workspace, [moves], max_proposals=1)

    assert [step.verdict for step in result.steps] == ["invalid"]
    assert "may not change the harness's world" in result.steps[0].reasons[0]


def test_a_proposal_that_changes_the_harness_suite_is_invalid(workspace: Path):
    moves = EditsAFile("moves_the_suite", "harness.yaml", lambda text: text + "suite: ../easier\n")

    result = run_with(workspace, [moves], max_proposals=1)

    assert [step.verdict for step in result.steps] == ["invalid"]
    assert "may not change the harness's suite" in result.steps[0].reasons[0]


def test_a_run_started_from_another_directory_finds_the_suite_harness_yaml_names(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    (workspace / "h" / "harness.yaml").write_text(HARNESS_YAML + "suite: ../s\n")
    git(workspace, "commit", "-qam", "name the suite")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")

    result = run(workspace, suite=None)

    assert [step.verdict for step in result.steps] == ["screened_out", "accept"]


def test_the_screen_drops_the_change_that_moved_nothing_and_races_the_helpful_one_to_the_gate(
    workspace: Path,
):
    result = run(workspace, screen_size=2)

    nothing, helpful = result.steps
    assert (nothing.operator, nothing.verdict) == ("does_nothing", "screened_out")
    assert nothing.reasons[0].startswith("screen: changed no outcome in round 1")
    assert (helpful.operator, helpful.verdict) == ("helpful", "accept")
    store = RunStore(workspace.parent / "runs.sqlite")
    screens = [json.loads(row["screen"]) for row in OptimizationStore(store).proposal_rows(result.run_id)]
    store.close()
    assert [len(r["tasks"]) for r in screens[0]["rounds"]] == [2]  # one round, then dropped
    assert [r["seen"] for r in screens[1]["rounds"]] == [2, 4, 6]  # the whole train sample
    assert screens[1]["passed"] and screens[1]["candidate_mean"] == 1.0


@pytest.mark.parametrize(
    "screen_size,expected",
    [
        (
            4,
            [
                "screening round 1 of 2: 4 of 6 train tasks",
                "screening round 2 of 2: 2 more train tasks, 6 of 6",
            ],
        ),
        (8, ["screening round 1 of 1: all 6 train tasks (--screen-size is 8, but there are only 6)"]),
    ],
)
def test_the_screen_lines_print_the_rounds_the_screen_size_makes_of_the_train_tasks(
    workspace: Path, screen_size: int, expected: list[str]
):
    lines: list[str] = []

    def helpful_screen_lines(event) -> None:
        if event.kind == "screen" and event.status.operator == "helpful":
            lines.append(event_line(event).split("] ", 1)[1])

    result = run(workspace, screen_size=screen_size, on_event=helpful_screen_lines)

    assert lines == [*expected, "confirming on the val split"]
    assert result.steps[-1].verdict == "accept"


def test_a_screen_line_says_which_round_of_how_many_and_how_far_into_the_train_tasks():
    assert round_line(1, [3, 6, 12, 16], first=3) == "screening round 1 of 4: 3 of 16 train tasks"
    assert round_line(4, [3, 6, 12, 16], first=3) == "screening round 4 of 4: 4 more train tasks, 16 of 16"
    assert round_line(1, [5], first=6) == (
        "screening round 1 of 1: all 5 train tasks (--screen-size is 6, but there are only 5)"
    )


def test_a_run_resumed_mid_screen_reaches_the_same_decision_without_rerunning_its_rounds(workspace: Path):
    rounds = {"n": 0}

    def interrupt(event) -> None:
        if event.kind == "screen" and event.status.operator == "helpful":
            rounds["n"] += 1
            if rounds["n"] == 2:  # round 1 ran, round 2 is about to
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(workspace, screen_size=3, on_event=interrupt)
    calls = []

    def counting_agent(request):
        calls.append((request.messages[0]["content"], request.messages[-1]["content"]))
        return agent(request)

    store = RunStore(workspace.parent / "runs.sqlite")
    try:
        result = asyncio.run(
            optimize(
                config(workspace, screen_size=3),
                resume="latest",
                store=store,
                model=ScriptedModel(fn=counting_agent),
                proposers=[DoesNothing(), Helpful()],
            )
        )
        (screen,) = [
            json.loads(r["screen"])
            for r in OptimizationStore(store).proposal_rows(result.run_id)
            if r["operator"] == "helpful"
        ]
    finally:
        store.close()

    assert [step.verdict for step in result.steps] == ["screened_out", "accept"]
    first_round = {f"ORD-{1000 + int(task.split('-')[1])}" for task in screen["rounds"][0]["tasks"]}
    rerun = [user for system, user in calls if MAGIC in system and any(o in str(user) for o in first_round)]
    assert rerun == [] and len(screen["rounds"]) == 2


def test_a_later_run_on_the_same_harness_starts_from_the_operators_past_record(workspace: Path):
    first = run(workspace)
    second = run(workspace, max_proposals=1)

    store = RunStore(workspace.parent / "runs.sqlite")
    records = OptimizationStore(store)
    priors = {
        run_id: json.loads(records.run(run_id)["operator_priors"]) for run_id in (first.run_id, second.run_id)
    }
    store.close()
    assert priors[first.run_id] == {}
    assert priors[second.run_id] == {"does_nothing": [0.0, 0.5], "helpful": [1.0, 0.0]}


def with_test_split(root: Path) -> Path:
    """The workspace with four more tasks, note-13..16, in the test split."""
    made = make_workspace(root, prompt="You keep notes on orders.\n", val=list(range(7, 13)), tasks=16)
    tasks = made / "s" / "tasks" / "notes.yaml"
    text = tasks.read_text()
    for i in range(13, 17):
        text = text.replace(f"- id: note-{i}\n  split: train", f"- id: note-{i}\n  split: test")
    tasks.write_text(text)
    git(made, "commit", "-qam", "a test split")
    return made


def scored_on_test(root: Path, run_id: str) -> dict[str, int]:
    """Test-split episodes stored per evaluation of an optimization run."""
    store = RunStore(root.parent / "runs.sqlite")
    rows = store.db.execute(
        "SELECT run_id, count(*) FROM episodes WHERE run_id LIKE ? GROUP BY run_id", [f"{run_id}-test-%"]
    ).fetchall()
    store.close()
    return dict(rows)


def test_with_nothing_accepted_the_test_split_is_scored_once_at_the_end(tmp_path: Path):
    root = with_test_split(tmp_path / "repo")
    stages: list[str] = []
    store = RunStore(tmp_path / "runs.sqlite")
    try:
        result = asyncio.run(
            optimize(
                config(root),
                store=store,
                model=ScriptedModel(fn=agent),
                proposers=[DoesNothing()],
                on_event=lambda event: stages.append(f"{event.kind} {event.status.stage}"),
            )
        )
    finally:
        store.close()

    assert not result.accepted and result.test_start is not None and result.test_final == result.test_start
    assert list(scored_on_test(root, result.run_id).values()) == [4]
    tested = [i for i, stage in enumerate(stages) if stage.startswith("evaluate test:")]
    assert len(tested) == 1 and tested[0] > max(i for i, s in enumerate(stages) if s.startswith("decision"))


def test_with_an_accepted_variant_start_and_final_are_scored_on_test_at_the_end(tmp_path: Path):
    root = with_test_split(tmp_path / "repo")
    stages: list[str] = []

    result = run(root, on_event=lambda event: stages.append(f"{event.kind} {event.status.stage}"))

    assert result.accepted and result.test_start < result.test_final == 1.0
    assert list(scored_on_test(root, result.run_id).values()) == [4, 4]
    tested = [i for i, stage in enumerate(stages) if stage.startswith("evaluate test:")]
    assert len(tested) == 2 and min(tested) > max(i for i, s in enumerate(stages) if s.startswith("commit"))


def test_a_run_interrupted_while_scoring_test_resumes_and_fills_both_test_scores(tmp_path: Path):
    root = with_test_split(tmp_path / "repo")

    def interrupt(event) -> None:
        if event.kind == "progress" and event.status.stage.startswith("test:") and event.status.batch_done:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(root, on_event=interrupt, concurrency=1)

    result = run(root, resume="latest")

    assert result.test_start < result.test_final == 1.0
    assert list(scored_on_test(root, result.run_id).values()) == [4, 4]
    assert len(atoll_commits(root)) == 1


def test_a_second_run_on_the_same_harness_reuses_its_start_scoring_without_a_model_call(tmp_path: Path):
    root = with_test_split(tmp_path / "repo")
    first = run(root, max_proposals=0)
    model = ScriptedModel(fn=agent)
    store = RunStore(tmp_path / "runs.sqlite")
    try:
        second = asyncio.run(optimize(config(root, max_proposals=0), store=store, model=model, proposers=[]))
    finally:
        store.close()

    assert model.requests == [] and second.episodes == 0 and first.episodes == 10
    assert (second.val_start, second.test_start) == (first.val_start, first.test_start)
