"""The optimization loop end to end, on the helpdesk world with a scripted agent.

The scripted agent adds an order note only when its system prompt says ALWAYS ADD A NOTE, so
an operator that writes that line truly helps and one that adds a template comment does
nothing. Only the helpful one may ever be committed.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
from pathlib import Path

import pytest

from evals import RunStore
from harnesses.models import ScriptedModel
from optimizer import OptimizeConfig, OptimizerError, Proposal, ProposalContext, optimize

PROMPT = "prompts/desk.md.j2"
MAGIC = "ALWAYS ADD A NOTE when asked."


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def agent(request) -> str | dict:
    system, last = request.messages[0]["content"], request.messages[-1]
    if last["role"] == "tool":
        return "Done, the note is on the order."
    if MAGIC in system:
        order = re.search(r"ORD-\d+", last["content"]).group()
        return {
            "tool_calls": [{"name": "add_order_note", "arguments": {"order_id": order, "note": "called"}}]
        }
    return "Sorry, I can't do that."


class Helpful:
    name = "helpful"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        files = dict(context.files)
        files[PROMPT] = files[PROMPT] + MAGIC + "\n"
        return Proposal.build(
            operator=self.name,
            rationale="Tell the agent to add notes.",
            parent=context.files,
            files=files,
            parent_hash=context.harness_hash,
        )


class DoesNothing:
    name = "does_nothing"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        files = dict(context.files)
        files[PROMPT] = files[PROMPT] + f"{{# tweak {context.iteration} #}}\n"
        return Proposal.build(
            operator=self.name,
            rationale="A comment the model never sees.",
            parent=context.files,
            files=files,
            parent_hash=context.harness_hash,
        )


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    tmp_path = tmp_path / "repo"
    write(
        tmp_path / "h",
        {
            "harness.yaml": "name: notes_desk\nworld: helpdesk\nmodel: scripted\nentry: desk\nagents:\n  desk:\n    prompt: prompts/desk.md.j2\n",
            "tools.yaml": "desk: [add_order_note]\n",
            PROMPT: "You keep notes on orders.\n",
        },
    )
    tasks = []
    for i in range(1, 13):
        order = f"ORD-{1000 + i}"
        tasks.append(
            f"- id: note-{i}\n  split: {'train' if i <= 6 else 'val'}\n  fixture: small_shop\n"
            f"  user: {{message: 'Please add a note to order {order} that I called.'}}\n"
            f"  reference: [{{add_order_note: {{order_id: {order}, note: called}}}}]\n"
            f"  expect:\n    inserted: {{order_notes: [{{order_id: {order}}}]}}\n    no_other_writes: true\n"
        )
    write(
        tmp_path / "s",
        {
            "suite.yaml": "name: notes\nworld: helpdesk\ndefault_seeds: [0]\n",
            "tasks/notes.yaml": "".join(tasks),
        },
    )
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "t@example.invalid")
    git(tmp_path, "config", "user.name", "T")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "init")
    return tmp_path


def config(root: Path, **overrides) -> OptimizeConfig:
    return OptimizeConfig(
        harness=root / "h", suite=root / "s", max_proposals=2, max_minutes=None, concurrency=4, **overrides
    )


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
        if (
            event.kind == stage
            and event.status.iteration == 2
            or (stage == "evaluate" and event.kind == stage)
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
    from optimizer import _records

    original = _records.Records.save_step
    crashed = {"done": False}

    def crash_once(self, run_id, iteration, **values):
        if "commit_sha" in values and not crashed["done"]:
            crashed["done"] = True
            raise KeyboardInterrupt
        return original(self, run_id, iteration, **values)

    monkeypatch.setattr(_records.Records, "save_step", crash_once)
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
