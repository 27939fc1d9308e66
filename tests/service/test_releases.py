"""The release chain end to end: a small harness on the helpdesk world in a throwaway git repo, gated with
a scripted agent that adds the order note a task asks for only when its prompt says ALWAYS ADD A NOTE.

So committing a prompt without that line is a regression the gate must refuse, and a template comment
the model never sees is a change it must let through.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from atoll.cli import app
from atoll.evals import RunStore
from atoll.harnesses import content_hash
from atoll.harnesses.models import ScriptedModel
from atoll.service import (
    Release,
    ReleaseChain,
    ReleaseError,
    ReleaseRefused,
    StaleRelease,
    _publish,
    release_harness,
    rollback_harness,
)

sys.path.insert(0, str(Path(__file__).parents[1] / "optimizer"))

from notes_desk import HARNESS_YAML, MAGIC, PROMPT, agent, git, make_workspace

ROOT = Path(__file__).resolve().parents[2]
NAME = "notes_desk"
GOOD = f"You keep notes on orders.\n{MAGIC}\n"
HARNESS = {"harness.yaml": HARNESS_YAML, "tools.yaml": "desk: [add_order_note]\n", PROMPT: GOOD}


def commit_prompt(root: Path, text: str) -> str:
    (root / "h" / PROMPT).write_text(text)
    git(root, "commit", "-qam", "prompt")
    return git(root, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repo with the harness in h/ and a four-task val suite in s/; the runs store beside them."""
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    monkeypatch.setenv("ATOLL_RUNS_DB", str(tmp_path / "runs.sqlite"))
    return make_workspace(tmp_path / "repo", prompt=GOOD, val=[1, 2, 3, 4], tasks=4, seeds="[0, 1]")


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    with RunStore(tmp_path / "runs.sqlite") as store:
        yield store


def release(root: Path, store: RunStore, **options) -> Release:
    model = ScriptedModel(fn=agent)
    return asyncio.run(release_harness(root / "h", store=store, model=model, suite=root / "s", **options))


def tag(root: Path, number: int) -> str | None:
    found = git(root, "tag", "--list", f"atoll/release/{NAME}/{number}")
    return git(root, "rev-parse", f"{found}^{{commit}}") if found else None


def test_the_first_release_is_published_without_a_gate_and_says_so(repo: Path, store: RunStore):
    model = ScriptedModel(fn=agent)
    first = asyncio.run(release_harness(repo / "h", store=store, model=model))

    head = git(repo, "rev-parse", "HEAD")
    assert (first.harness, first.number, first.parent, first.kind) == (NAME, 1, None, "publish")
    assert first.commit == head and tag(repo, 1) == head
    assert first.evidence["gate"] is None and "no head to gate against" in first.evidence["summary"]
    assert model.requests == []  # nothing was evaluated
    chain = ReleaseChain(store)
    assert chain.head(NAME) == first
    assert chain.files(first) == HARNESS and first.content_hash == content_hash(HARNESS)


def test_a_change_that_passes_the_gate_moves_the_head_and_tags_its_commit(repo: Path, store: RunStore):
    first = release(repo, store)
    commit = commit_prompt(repo, GOOD + "{# reworded later #}\n")

    second = release(repo, store, note="a comment")

    assert (second.number, second.parent, second.commit, second.note) == (2, 1, commit, "a comment")
    assert second.evidence["gate"] == "pass"
    assert second.evidence["against"] == {
        "release": 1,
        "commit": first.commit,
        "content_hash": first.content_hash,
    }
    assert store.has_run(second.evidence["base_run"]) and store.has_run(second.evidence["candidate_run"])
    assert ReleaseChain(store).head(NAME) == second
    assert tag(repo, 2) == commit and tag(repo, 1) == first.commit


def test_a_regression_is_refused_with_the_gates_report_and_the_head_stays(repo: Path, store: RunStore):
    first = release(repo, store)
    commit_prompt(repo, "You keep notes on orders.\n")

    with pytest.raises(ReleaseRefused, match="regression") as refused:
        release(repo, store)

    assert refused.value.exit_code == 1 and refused.value.report.verdict == "regression"
    assert "release 1 stays the head" in str(refused.value)
    assert ReleaseChain(store).list(NAME) == [first]
    assert tag(repo, 2) is None


def test_a_dirty_folder_is_refused_but_a_named_commit_is_gated_in_a_worktree(repo: Path, store: RunStore):
    release(repo, store)
    commit = commit_prompt(repo, GOOD + "{# reworded later #}\n")
    (repo / "h" / PROMPT).write_text("You keep notes on orders.\n")  # uncommitted sabotage

    with pytest.raises(ReleaseError, match="uncommitted changes"):
        release(repo, store)
    second = release(repo, store, ref=commit)

    assert (second.number, second.commit, second.evidence["gate"]) == (2, commit, "pass")
    assert ReleaseChain(store).files(second)[PROMPT] == GOOD + "{# reworded later #}\n"
    assert len(git(repo, "worktree", "list").splitlines()) == 1  # the gate's worktree is gone


def test_a_head_whose_commit_the_repository_lacks_is_gated_against_its_stored_files(
    repo: Path, store: RunStore
):
    chain = ReleaseChain(store)
    chain.publish(NAME, HARNESS, commit="0" * 40, evidence={"gate": None}, expected_head=None)
    commit_prompt(repo, "You keep notes on orders.\n")

    with pytest.raises(ReleaseRefused, match="regression"):
        release(repo, store)
    assert chain.head(NAME).number == 1


def test_a_harness_outside_git_is_released_without_a_commit_and_gated_from_its_stored_files(
    repo: Path, store: RunStore, tmp_path: Path
):
    plain = tmp_path / "plain"
    shutil.copytree(repo / "h", plain / "h")
    shutil.copytree(repo / "s", plain / "s")
    first = release(plain, store)
    (plain / "h" / PROMPT).write_text(GOOD + "{# reworded later #}\n")
    second = release(plain, store)
    (plain / "h" / PROMPT).write_text("You keep notes on orders.\n")

    with pytest.raises(ReleaseRefused, match="regression"):
        release(plain, store)
    assert (first.commit, second.commit, second.evidence["gate"]) == (None, None, "pass")
    with pytest.raises(ReleaseError, match="not in a git repository"):
        release(plain, store, ref="HEAD")


def test_a_folder_changed_while_it_is_gated_is_not_released_on_evidence_about_other_files(
    repo: Path, store: RunStore, monkeypatch: pytest.MonkeyPatch
):
    first = release(repo, store)
    commit_prompt(repo, "You keep notes on orders.\n")  # a regression, committed: the candidate
    gate = _publish.run_gate

    async def edited_meanwhile(config, **options):  # someone fixes the folder while the gate runs
        (repo / "h" / PROMPT).write_text(GOOD + "{# fixed, not committed #}\n")
        return await gate(config, **options)

    monkeypatch.setattr(_publish, "run_gate", edited_meanwhile)

    with pytest.raises(ReleaseError, match="the harness folder changed while it was gated") as refused:
        release(repo, store)

    assert not isinstance(refused.value, ReleaseRefused) and "run again" in str(refused.value)
    assert ReleaseChain(store).list(NAME) == [first]  # the committed regression was not published
    assert tag(repo, 2) is None


def test_a_release_identical_to_the_head_is_refused(repo: Path, store: RunStore):
    release(repo, store)

    with pytest.raises(ReleaseError, match="release 1 of notes_desk already serves these files"):
        release(repo, store)


RACER = """
import json, sys
from atoll.evals import RunStore
from atoll.service import ReleaseChain, StaleRelease

chain = ReleaseChain(RunStore(sys.argv[1]))
head = chain.head("notes_desk")  # both racers read the same head before either publishes
print("ready", flush=True)
sys.stdin.readline()
files = json.loads(sys.argv[2])
try:
    won = chain.publish("notes_desk", files, commit=None, evidence={"gate": "pass"}, expected_head=head.number)
    print(json.dumps({"won": won.number}))
except StaleRelease as error:
    print(json.dumps({"stale": str(error)}))
"""


def test_of_two_processes_publishing_on_the_same_head_exactly_one_wins(tmp_path: Path, store: RunStore):
    chain = ReleaseChain(store)
    chain.publish(NAME, HARNESS, commit=None, evidence={"gate": None}, expected_head=None)
    candidates = [{**HARNESS, PROMPT: GOOD + f"{{# racer {i} #}}\n"} for i in (0, 1)]
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(store.path), json.dumps(files)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for files in candidates
    ]
    for racer in racers:
        assert racer.stdout.readline().strip() == "ready"
    for racer in racers:  # both are past reading the head: now they publish at once
        racer.stdin.write("go\n")
        racer.stdin.flush()
    results = [json.loads(racer.communicate(timeout=30)[0]) for racer in racers]

    winners = [i for i, result in enumerate(results) if result.get("won") == 2]
    assert len(winners) == 1
    stale = results[1 - winners[0]]["stale"]
    assert "release 2 of notes_desk was published by another publisher" in stale
    assert "expected head 1" in stale and "optimize release" in stale
    head = chain.head(NAME)
    assert head.number == 2 and chain.files(head) == candidates[winners[0]]
    assert [r.number for r in chain.list(NAME)] == [1, 2]


def test_a_rollback_is_a_new_release_with_the_older_content_and_commit(repo: Path, store: RunStore):
    chain = ReleaseChain(store)
    first = release(repo, store)
    second = chain.publish(
        NAME, {**HARNESS, PROMPT: GOOD + "{# v2 #}\n"}, commit=None, evidence={}, expected_head=1
    )

    back = rollback_harness(NAME, 1, store=store, folder=repo / "h", note="v2 misbehaves")

    assert (back.number, back.parent, back.kind, back.note) == (3, 2, "rollback", "v2 misbehaves")
    assert (back.content_hash, back.commit) == (first.content_hash, first.commit)
    assert back.evidence["gate"] is None and back.evidence["rollback_to"] == 1
    assert chain.head(NAME) == back and chain.files(back) == HARNESS
    assert tag(repo, 3) == first.commit
    assert chain.list(NAME)[:2] == [first, second]
    with pytest.raises(ReleaseError, match="already serves the files of release 1"):
        chain.rollback(NAME, 1, expected_head=3)
    with pytest.raises(StaleRelease, match="expected head 2"):
        chain.rollback(NAME, 2, expected_head=2)
    with pytest.raises(ReleaseError, match="has no release 9"):
        chain.rollback(NAME, 9, expected_head=3)


def test_the_chain_is_append_only(store: RunStore):
    chain = ReleaseChain(store)
    first = chain.publish(NAME, HARNESS, commit=None, evidence={"gate": None}, expected_head=None)
    chain.publish(NAME, {**HARNESS, PROMPT: "v2\n"}, commit=None, evidence={}, expected_head=1)
    chain.rollback(NAME, 1, expected_head=2)

    public = {name for name in dir(ReleaseChain) if not name.startswith("_")}
    assert public == {
        "head",
        "get",
        "list",
        "lengths",
        "numbers",
        "files",
        "publish",
        "rollback",
    }  # nothing updates or deletes
    assert chain.get(NAME, 1) == first
    with pytest.raises(sqlite3.IntegrityError):  # the key refuses a second release 2, whoever writes it
        store.db["releases"].insert({**first.model_dump(), "number": 2, "evidence": "{}"})
    with pytest.raises(ReleaseError, match="are harness 'notes_desk'"):
        chain.publish("other", HARNESS, commit=None, evidence={}, expected_head=None)


def test_release_list_and_show_print_the_chain(repo: Path):
    runner = CliRunner()
    published = runner.invoke(app, ["release", str(repo / "h")])
    with RunStore() as store:
        evidence = {"gate": "pass", "summary": "pass: 1.00 → 1.00"}
        ReleaseChain(store).publish(
            NAME, {**HARNESS, PROMPT: "v2\n"}, commit=None, evidence=evidence, expected_head=1
        )

    listed = runner.invoke(app, ["release", "list", str(repo / "h")])
    shown = runner.invoke(app, ["release", "show", NAME, "1"])
    as_json = runner.invoke(app, ["release", "show", str(repo / "h"), "--json"])
    unknown = runner.invoke(app, ["release", "show", NAME, "7"])

    assert published.exit_code == 0, published.output
    assert "notes_desk 1: published (first release)" in published.stdout
    assert f"atoll/release/{NAME}/1" in published.stdout
    assert listed.exit_code == 0, listed.output
    rows = " ".join(listed.stdout.split())
    assert "1 │ publish │ - │" in rows and "│ no gate │" in rows
    assert "2 (head) │ publish │ 1 │ - │" in rows and "│ pass │" in rows
    assert shown.exit_code == 0 and "no head to gate against" in " ".join(shown.stdout.split())
    assert git(repo, "rev-parse", "HEAD") in shown.stdout and "harness.yaml" in shown.stdout
    data = json.loads(as_json.stdout)
    assert (data["number"], data["parent"], data["evidence"]["gate"]) == (2, 1, "pass")
    assert unknown.exit_code == 2 and "notes_desk has no release 7" in unknown.stderr


def test_release_refuses_a_regression_showing_the_gate(repo: Path, monkeypatch: pytest.MonkeyPatch):
    gate = _publish.run_gate  # the CLI resolves models by name; give the gate the scripted agent
    monkeypatch.setattr(
        _publish,
        "run_gate",
        lambda config, model, store, on_progress: gate(config, model=ScriptedModel(fn=agent), store=store),
    )
    runner = CliRunner()
    first = runner.invoke(app, ["release", str(repo / "h")])
    commit_prompt(repo, "You keep notes on orders.\n")

    refused = runner.invoke(app, ["release", str(repo / "h"), "--suite", str(repo / "s")])

    assert first.exit_code == 0, first.output
    assert refused.exit_code == 1, refused.output
    assert "REGRESSION" in refused.stdout
    assert "notes_desk was not released" in " ".join(refused.stderr.split())
    listed = runner.invoke(app, ["release", "list", NAME, "--json"])
    assert [release["number"] for release in json.loads(listed.stdout)] == [1]
