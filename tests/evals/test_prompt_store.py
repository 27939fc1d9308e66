"""The prompts an episode was sent, in the runs store: each text once per hash, read back with the episode,
shown by `optimize show RUN TASK [--prompt]`, and an older store without them still opens."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from minidesk.agent import SUITE, harness, solver
from minidesk.world import world
from typer.testing import CliRunner

from atoll.cli import app
from atoll.evals import RunStore, evaluate_batch, load_suite

runner = CliRunner()


@pytest.fixture(scope="module")
def suite():
    return load_suite(SUITE, world=world)


def show(path: Path, *args: str):
    return runner.invoke(app, ["show", *args], env={"ATOLL_RUNS_DB": str(path), "COLUMNS": "200"})


async def test_each_prompt_text_is_kept_once_and_comes_back_with_its_episodes(suite, tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    with RunStore(path) as store:
        result = await evaluate_batch(harness(), suite, model=solver(), store=store, run_id="eval-p")
        stored = store.episodes("eval-p")
        assert [r.episode for r in stored] == [
            r.episode for r in sorted(result.results, key=lambda r: (r.task_id, r.seed))
        ]
        hashes = {r.episode.prompt_hash for r in stored}
        assert None not in hashes and all(r.episode.prompts for r in stored)
        kept = store.db.execute("SELECT count(*) FROM prompts").fetchone()[0]
        assert kept == len(hashes) < len(stored), "episodes sharing a prompt share one row"
        (row,) = store.db.execute(
            "SELECT episode FROM episodes WHERE task_id = 'refund-damaged' AND seed = 1"
        )
        assert "prompt_hash" in row[0] and "You run the desk" not in row[0], (
            "the text lives in `prompts` only"
        )
    episode = stored[0].episode
    shown = show(path, "eval-p", episode.task_id or "")
    assert shown.exit_code == 0 and f"prompt {episode.prompt_hash[:12]}" in shown.stdout
    assert "You run the desk" not in shown.stdout
    with_prompt = show(path, "eval-p", episode.task_id or "", "--seed", str(stored[0].seed), "--prompt")
    assert with_prompt.exit_code == 0, with_prompt.output
    assert (
        "desk: system prompt" in with_prompt.stdout and episode.prompts[0].text.rstrip() in with_prompt.stdout
    )
    assert f"prompt sha256 {episode.prompt_hash}" in with_prompt.stdout
    alone = show(path, "eval-p", "--prompt")
    assert alone.exit_code == 2 and "name the task" in re.sub(r"\s+", " ", alone.stderr)


async def test_a_store_from_before_prompts_were_kept_opens_and_says_so(suite, tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    with RunStore(path) as store:
        await evaluate_batch(harness(), suite, model=solver(), store=store, run_id="eval-old", split="train")
    # Make it a store of the previous format: no `prompts` table, no `prompt_hash` column nor field.
    connection = sqlite3.connect(path)
    with connection:
        connection.execute("DROP TABLE prompts")
        connection.execute("ALTER TABLE episodes DROP COLUMN prompt_hash")
        connection.execute("UPDATE episodes SET episode = json_remove(episode, '$.prompt_hash')")
    connection.close()

    with RunStore(path) as store:
        (old, *_) = store.episodes("eval-old")
        assert old.episode.prompt_hash is None and old.episode.prompts == []
        new = await evaluate_batch(
            harness(), suite, model=solver(), store=store, run_id="eval-new", split="train", reuse=False
        )
        assert all(r.episode.prompts for r in store.episodes(new.run_id)), (
            "the migrated store keeps new prompts"
        )
    shown = show(path, "eval-old", old.task_id, "--prompt")
    assert shown.exit_code == 0, shown.output
    assert "prompt not recorded" in shown.stdout and "Traceback" not in shown.output
