"""ChooseModel on the shipped support agent (triage, the entry, and its refunds sub-agent): it switches one
agent to another of the run's models, the proposal loads, and the rationale names the agent and both models."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from pathlib import Path

import pytest
import yaml

from atoll.harnesses import Harness, load_harness
from atoll.optimizer import ProposalContext, default_operators
from atoll.optimizer._operators import ChooseModel, model_operators

ROOT = Path(__file__).parents[2]
GEMMA, QWEN, SMOL = "local/gemma-3-270m", "local/qwen2.5-coder-0.5b", "local/smollm2-135m"
GPT = "openai/gpt-4o-mini"


def with_config(harness: Harness, change) -> Harness:
    """The harness with harness.yaml changed by `change(config)` (a plain dict), reloaded."""
    config = yaml.safe_load(harness.files()["harness.yaml"])
    change(config)
    return harness.with_files({"harness.yaml": yaml.safe_dump(config, sort_keys=False)})


@pytest.fixture(scope="module")
def support() -> Harness:
    """The shipped support agent with gemma as its model, one line changed (the rest as shipped)."""
    harness = load_harness(ROOT / "harnesses" / "support_agent")
    text = harness.files()["harness.yaml"]
    shipped = f"model: {harness.config.model}\n"
    assert shipped in text
    return harness.with_files({"harness.yaml": text.replace(shipped, f"model: {GEMMA}\n")})


def context(harness: Harness, models: list[str], seed: int = 0) -> ProposalContext:
    return ProposalContext(
        files=harness.files(),
        harness_hash=harness.hash,
        harness=harness,
        rng=random.Random(seed),
        models=models,
    )


def propose(harness: Harness, models: list[str], seed: int = 0):
    proposal = asyncio.run(ChooseModel().propose(context(harness, models, seed)))
    if proposal is None:
        return None, None
    loaded = Harness.from_files(proposal.files, world=harness.world)  # every proposal must load
    return proposal, loaded


def switching(harness: Harness, models: list[str], agent: str):
    """The first proposal (over seeds) that switches `agent`, loaded."""
    for seed in range(20):
        proposal, loaded = propose(harness, models, seed)
        if repr(agent) in proposal.rationale:
            return proposal, loaded
    raise AssertionError(f"agent {agent!r} was never switched")


def test_without_another_allowed_model_there_is_nothing_to_propose(support: Harness):
    assert propose(support, [])[0] is None
    assert propose(support, [GEMMA])[0] is None  # every agent already runs it


def test_one_agent_is_switched_and_the_rationale_names_it_and_both_models(support: Harness):
    proposal, loaded = propose(support, [GEMMA, QWEN])

    switched = [a for a, cfg in loaded.agents.items() if cfg.model == QWEN]
    assert len(switched) == 1
    agent = switched[0]
    assert all(cfg.model is None for a, cfg in loaded.agents.items() if a != agent)
    assert loaded.config.model == GEMMA
    assert proposal.operator == "choose_model"
    assert f"{agent!r} on {QWEN} instead of {GEMMA}" in proposal.rationale
    assert set(proposal.files) == set(support.files())  # only harness.yaml changed ...
    changed = [name for name, text in proposal.files.items() if support.files()[name] != text]
    assert changed == ["harness.yaml"]
    # ... by one added line, the rest (comments included) as it was.
    assert [
        line for line in proposal.patch.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ] == [f"+    model: {QWEN}"]


def test_sub_agents_are_drawn_more_often_than_the_entry_and_the_same_seed_proposes_the_same(
    support: Harness,
):
    drawn = Counter()
    for seed in range(60):
        proposal, loaded = propose(support, [GEMMA, QWEN, SMOL], seed)
        agent = next(a for a, cfg in loaded.agents.items() if cfg.model)
        drawn[agent, loaded.agents[agent].model] += 1
        assert proposal.files == propose(support, [GEMMA, QWEN, SMOL], seed)[0].files

    by_agent = Counter()
    for (agent, _), count in drawn.items():
        by_agent[agent] += count
    assert by_agent["refunds"] > by_agent["triage"] > 0
    assert set(drawn) == {(a, m) for a in ("triage", "refunds") for m in (QWEN, SMOL)}


def test_an_agent_back_on_the_harness_model_loses_its_own_model_line(support: Harness):
    harness = with_config(support, lambda c: c["agents"]["refunds"].update(model=QWEN))

    proposal, loaded = switching(harness, [GEMMA, QWEN], "refunds")

    assert "model" not in yaml.safe_load(proposal.files["harness.yaml"])["agents"]["refunds"]
    assert loaded.agents["refunds"].model is None and loaded.agents["triage"].model is None
    assert f"sub-agent 'refunds' on {GEMMA} instead of {QWEN}" in proposal.rationale


def test_once_every_sub_agent_runs_every_allowed_model_the_entry_agent_is_switched(support: Harness):
    harness = with_config(support, lambda c: c["agents"]["refunds"].update(model=GPT))

    for seed in range(5):
        proposal, loaded = propose(harness, [GPT], seed)

        assert loaded.agents["triage"].model == GPT
        assert f"entry agent 'triage' on {GPT} instead of {GEMMA}" in proposal.rationale


def test_an_agent_told_to_speak_native_gets_the_text_protocol_on_a_model_that_writes_no_tool_calls(
    support: Harness,
):
    def on_qwen(config):
        config["model"] = QWEN
        for agent in config["agents"].values():
            agent["protocol"] = "native"

    harness = with_config(support, on_qwen)

    for agent in ("refunds", "triage"):
        proposal, loaded = switching(harness, [QWEN, SMOL], agent)

        assert loaded.agents[agent].model == SMOL
        assert loaded.agents[agent].protocol == "text"
        assert "text protocol" in proposal.rationale
        other = next(a for a in loaded.agents if a != agent)
        assert loaded.agents[other].protocol == "native"  # the other agent is left alone


def test_a_protocols_pattern_that_would_give_a_base_model_native_calls_is_overridden_for_that_agent(
    support: Harness,
):
    harness = with_config(support, lambda c: c.update(model=GPT, protocols={"*": "native"}))

    for seed in range(10):
        _, loaded = propose(harness, [GPT, GEMMA], seed)
        agent = next(a for a, cfg in loaded.agents.items() if cfg.model)
        assert loaded.protocol_for(agent, GEMMA) == "text"
        other = next(a for a in loaded.agents if a != agent)
        assert loaded.agents[other].protocol is None  # the other agent is left alone


def test_a_chat_model_needs_no_protocol_change(support: Harness):
    for seed in range(10):
        proposal, loaded = propose(support, [GEMMA, GPT], seed)
        assert all(cfg.protocol is None for cfg in loaded.agents.values())
        assert "protocol" not in proposal.rationale


def test_choose_model_is_a_model_operator_and_not_a_default_one():
    assert [type(op) for op in model_operators()] == [ChooseModel]
    assert not any(isinstance(op, ChooseModel) for op in default_operators())
    assert ChooseModel().usage.cost_usd == 0
