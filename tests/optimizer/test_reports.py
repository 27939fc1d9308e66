"""Reports: harness diffs, task flips, world diffs, the optimization report and the accepted history.

One scripted optimization (the agent adds order notes only when its prompt says ALWAYS ADD A NOTE,
and one proposer writes that line) and two eval runs, before and after that line, are made once
for the module; every report is then rendered from the store and git as a user would see it.
"""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from notes_desk import HARNESS_YAML, MAGIC, PROMPT, Helpful, agent, git, make_workspace, write
from rich.console import Console
from rich.text import Text

from atoll.evals import RunStore, evaluate_batch
from atoll.harnesses import load_harness
from atoll.harnesses.models import ScriptedModel
from atoll.optimizer import (
    OptimizeConfig,
    PairedScores,
    Proposal,
    ReportError,
    commit_message,
    decide,
    history,
    load_run_report,
    optimize,
    resolve_side,
    task_flips,
)
from atoll.optimizer._history import parse_commit
from atoll.views.compare import render_comparison
from atoll.views.harness_diff import DELETED, INSERTED, render_harness_diff, word_diff, yaml_changes
from atoll.views.history import render_history
from atoll.views.report import render_report, render_run_report, write_html_report


class World:
    """What the module's reports are made from."""

    def __init__(self, root: Path) -> None:
        self.root, self.harness = root, root / "h"
        self.store = RunStore(root / "runs.sqlite")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("reports")
    make_workspace(
        root, prompt="You keep notes on orders.\n", val=list(range(7, 13)), extra={"skills/.gitkeep": ""}
    )
    made = World(root)
    before = load_harness(made.harness)
    config = OptimizeConfig(harness=made.harness, suite=root / "s", max_proposals=1, max_minutes=None)
    made.optimization = asyncio.run(
        optimize(config, store=made.store, model=ScriptedModel(fn=agent), proposers=[Helpful()])
    ).run_id
    made.runs = [
        asyncio.run(
            evaluate_batch(harness, root / "s", model=ScriptedModel(fn=agent), split="val", store=made.store)
        ).run_id
        for harness in (before, load_harness(made.harness))
    ]
    yield made
    made.store.close()


def render(renderable, width: int) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(renderable)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    return text


def styled(text: Text, style: str) -> list[str]:
    return [text.plain[span.start : span.end] for span in text.spans if span.style == style]


# -- word and YAML diffs ---------------------------------------------------------------------------


def test_a_reworded_prompt_shows_only_the_changed_words_struck_and_inserted():
    diff = word_diff("Be kind to users.\n", "Be very kind to customers.\n")

    assert [part.strip() for part in styled(diff, INSERTED)] == ["very", "customers"]
    assert styled(diff, DELETED) == ["users"]
    assert _sides(diff) == ("Be kind to users.\n", "Be very kind to customers.\n")


def test_a_long_unchanged_stretch_is_cut_to_the_lines_around_the_change():
    lines = [f"Rule {i}: follow the policy." for i in range(40)]
    changed = [*lines[:20], "Rule 20: follow the policy, always.", *lines[21:]]

    text = word_diff("\n".join(lines), "\n".join(changed)).plain

    assert text.startswith("⋯ 18 unchanged lines ⋯\nRule 18:") and text.endswith(
        "Rule 22: follow the policy.\n⋯ 17 unchanged lines ⋯"
    )
    assert "Rule 18" in text and "Rule 22" in text and "Rule 5:" not in text


def _sides(diff: Text) -> tuple[str, str]:
    inserted = {i for s in diff.spans if s.style == INSERTED for i in range(s.start, s.end)}
    deleted = {i for s in diff.spans if s.style == DELETED for i in range(s.start, s.end)}
    before = "".join(c for i, c in enumerate(diff.plain) if i not in inserted)
    after = "".join(c for i, c in enumerate(diff.plain) if i not in deleted)
    return before, after


words = st.lists(st.sampled_from(["the", "agent", "refund", "policy", " ", "\n", ",", "."]), max_size=40)


@given(words, words)
def test_a_word_diff_without_cuts_holds_both_texts_exactly(before: list[str], after: list[str]):
    a, b = "".join(before), "".join(after)

    assert _sides(word_diff(a, b, context=None)) == (a, b)


def test_yaml_changes_are_reported_by_dotted_path():
    before = HARNESS_YAML + "    demos: [refusal, status]\n    skills: [policy]\nlimits: {turns: 8}\n"
    after = HARNESS_YAML + "    demos: [refusal, refund]\n    description: The desk.\nlimits: {turns: 6}\n"

    changes = {change.path: change for change in yaml_changes(before, after)}

    assert changes["agents.desk.demos"].kind == "changed"
    assert changes["agents.desk.skills"].kind == "removed"
    assert changes["agents.desk.description"].after == "The desk."
    assert (changes["limits.turns"].before, changes["limits.turns"].after) == (8, 6)


def test_yaml_lists_of_mappings_are_compared_item_by_item():
    before = "steps:\n  - user: hi\n  - reply: hello\n"
    after = "steps:\n  - user: hi\n  - reply: hello there\n  - reply: bye\n"

    assert [(c.path, c.kind) for c in yaml_changes(before, after)] == [
        ("steps[1].reply", "changed"),
        ("steps[2]", "added"),
    ]


@pytest.mark.parametrize("width", [60, 160])
def test_a_harness_diff_renders_every_kind_of_file_at_any_width(width: int):
    a = {"harness.yaml": HARNESS_YAML, PROMPT: "Be kind.\n", "skills/old.md": "old\n", "notes.cfg": "a=1\n"}
    b = {
        "harness.yaml": HARNESS_YAML.replace("notes_desk", "desk2"),
        PROMPT: "Be very kind.\n",
        "skills/new.md": "new\n",
        "notes.cfg": "a=2\n",
    }

    text = render(render_harness_diff(a, b, labels=("HEAD~1", "HEAD")), width)

    assert "name" in text and "desk2" in text and "very" in text and "a=2" in text
    assert "+ skills/new.md (new file" in text and "− skills/old.md (removed" in text


# -- sides, flips and world diffs ------------------------------------------------------------------


def test_sides_resolve_from_git_the_working_tree_runs_and_hashes(world: World):
    head = resolve_side("HEAD", world.harness, world.store)
    first = resolve_side("HEAD~1", world.harness, world.store)
    run = resolve_side(world.runs[0], world.harness, world.store)
    snapshot = resolve_side(f"hash:{run.run.harness_hash[:10]}", world.harness, world.store)

    assert MAGIC in head.files[PROMPT] and MAGIC not in first.files[PROMPT]
    assert resolve_side("worktree", world.harness).files == head.files
    assert run.run.id == world.runs[0] and run.files == first.files == snapshot.files
    with pytest.raises(ReportError, match="'nope' is not a git ref"):
        resolve_side("nope", world.harness, world.store)


def test_flips_between_two_runs_name_every_task_that_changed_fate(world: World):
    flips, unpaired = task_flips(world.store, world.runs[0], world.runs[1])

    assert {flip.status for flip in flips} == {"newly passing"}
    assert sorted(flip.task for flip in flips) == sorted(f"note-{i}" for i in range(7, 13))
    assert flips[0].delta > 0 and unpaired == []
    backwards, _ = task_flips(world.store, world.runs[1], world.runs[0])
    assert {flip.status for flip in backwards} == {"newly failing"}


@pytest.mark.parametrize("width", [60, 160])
def test_diff_of_two_runs_renders_files_flips_and_world_diffs(world: World, width: int):
    a, b = (resolve_side(run, world.harness, world.store) for run in world.runs)

    text = render(render_comparison(a, b, world.store, task="note-7"), width)

    assert "ALWAYS" in text and "6 newly passing" in text
    assert "Task note-7, seed 0" in text and "order_notes" in text and "ORD-1007" in text


def test_world_diffs_need_two_runs(world: World):
    a = resolve_side("HEAD~1", world.harness, world.store)
    b = resolve_side("HEAD", world.harness, world.store)

    with pytest.raises(ReportError, match="need two eval runs"):
        render_comparison(a, b, world.store, task="note-7")


# -- the optimization report and the history -------------------------------------------------------


@pytest.mark.parametrize("width", [60, 160])
def test_the_run_report_shows_trajectory_proposals_spend_and_final_diff(world: World, width: int):
    text = render(render_report(world.store, world.optimization), width)

    assert "Gate score per accepted step  ▅█" in text
    assert "helpful" in text and "accept" in text
    assert "episodes" in text and "ALWAYS" in text


def test_the_run_report_reads_the_figures_back_from_the_store(world: World):
    report = load_run_report(world.store, "latest")

    assert [(p.label, p.score) for p in report.trajectory] == [("start", 0.5), ("#1 helpful", 1.0)]
    assert report.accepted == 1 and report.proposals[0].record == "6 better / 0 worse / 0 tied"
    assert report.episodes > 0 and report.usage.total_tokens > 0


def test_the_html_report_is_one_self_contained_page(world: World, tmp_path: Path):
    page = write_html_report(world.store, world.optimization, tmp_path / "report.html").read_text()

    assert page.startswith("<!doctype html>") and world.optimization in page
    assert "<svg" in page and "<style>" in page and "Tell the agent to add notes." in page
    assert "ALWAYS" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page) and "<script" not in page


def test_an_interrupted_run_still_reports_what_it_measured(world: World, tmp_path: Path):
    def stop_at_the_first_proposal(event) -> None:
        if event.kind == "proposal":
            raise KeyboardInterrupt

    store = RunStore(tmp_path / "runs.sqlite")
    config = OptimizeConfig(harness=world.harness, suite=world.root / "s", max_proposals=1, max_minutes=None)
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(
            optimize(
                config,
                store=store,
                model=ScriptedModel(fn=agent),
                proposers=[Helpful()],
                on_event=stop_at_the_first_proposal,
            )
        )

    report = load_run_report(store, "latest")
    assert report.status == "interrupted" and report.proposals == []
    assert [(p.label, p.score) for p in report.trajectory] == [("start", 1.0)]
    assert "interrupted" in render(render_run_report(report), 60)
    store.close()


def test_an_unknown_optimization_run_is_an_error_that_says_what_to_run(world: World):
    with pytest.raises(ReportError, match="no optimization run 'opt-nope'"):
        load_run_report(world.store, "opt-nope")


def test_history_lists_the_accepted_commits_with_their_figures(world: World):
    [entry] = history(world.harness)

    assert (entry.operator, entry.run, entry.iteration) == ("helpful", world.optimization, 0)
    assert (entry.before, entry.after, entry.delta) == (0.5, 1.0, 0.5)
    assert (entry.wins, entry.losses, entry.ties, entry.tasks, entry.seeds) == (6, 0, 0, 6, 1)
    assert entry.p_value == pytest.approx(0.015625, rel=1e-3)
    for width in (60, 160):
        assert "helpful" in render(render_history(world.harness), width)


def test_every_figure_commit_message_writes_is_parsed_back():
    decision = decide(
        PairedScores(
            incumbent={"a": [0.0, 0.5], "b": [0.0, 1.0]}, candidate={"a": [1.0, 1.0], "b": [1.0, 1.0]}
        )
    )
    proposal = Proposal(operator="add_demo", rationale="Show a refund.", files={}, parent_hash="p", patch="")

    entry = parse_commit("abc", "2026-01-01", commit_message(proposal, decision, "opt-1", 3, 2, "h" * 64))

    c = decision.comparison
    assert (entry.title, entry.operator, entry.iteration, entry.harness_hash) == (
        "atoll(add_demo): Show a refund.",
        "add_demo",
        3,
        "h" * 64,
    )
    assert (entry.before, entry.after, entry.seeds) == (
        round(c.incumbent_mean, 3),
        round(c.candidate_mean, 3),
        2,
    )
    assert entry.lower_bound == round(c.lower_bound, 3) and (entry.wins, entry.losses) == (c.wins, c.losses)


def test_a_harness_without_accepted_variants_says_so(tmp_path: Path):
    write(tmp_path / "h", {"harness.yaml": HARNESS_YAML})
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "t@example.invalid")
    git(tmp_path, "config", "user.name", "T")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "init")

    assert "No accepted variants" in render(render_history(tmp_path / "h"), 80)
