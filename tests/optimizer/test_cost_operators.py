"""The cost operators on the desk harness of test_operators.py, fed its real train episodes.

The passing note episodes are the evidence: each makes 3 model calls (get_order, add_order_note,
a reply; the longest completion is 7 scripted tokens) and 2 tool calls, and reads get_order results
of 1,508 and 1,704 characters. The failing parcel episodes loop until the turn limit: they are what a
lower cap saves on, never evidence of need. Every proposal must lower its setting, name the evidence,
and load; with no passing episode, or no headroom, an operator returns None.
"""

from __future__ import annotations

import pytest
import yaml
from test_operators import GREET, LOOKUP, ROOT, context_for, desk_files, loaded, propose, write_suite

from atoll.evals import Suite, load_suite
from atoll.harnesses import Harness, load_harness
from atoll.harnesses._prompt import render_prompt
from atoll.optimizer._operators import (
    PromptDiet,
    TightenObservations,
    TrimMaxTokens,
    TrimTurns,
    cost_operators,
    default_operators,
)

SEARCH = {
    "title": "Find a product",
    "steps": [
        {"user": "Do you sell lamps?"},
        {"call": "search_products", "args": {"query": "lamp"}, "result": [{"name": "Desk lamp"}]},
        {"reply": "Yes, a desk lamp."},
    ],
}
POLICY = "Notes policy.\n" + "A note records what the customer said, in their words, with the date. " * 8


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    return load_suite(write_suite(tmp_path_factory.mktemp("desk_suite")))


def configured(files: dict[str, str], **top: object) -> dict[str, str]:
    """`files` with harness.yaml's top-level settings (params, limits) set."""
    config = yaml.safe_load(files["harness.yaml"])
    config.update(top)
    return {**files, "harness.yaml": yaml.safe_dump(config, sort_keys=False)}


def with_skill(
    prompt_prints_it: bool, demos: dict[str, dict] | None = None, **desk: object
) -> dict[str, str]:
    """The desk harness whose agent has skill `policy`, printed by its prompt or not."""
    files = desk_files(demos=demos, skills=["policy"], **desk)
    files["skills/policy.md"] = POLICY
    if prompt_prints_it:
        files["prompts/desk.md.j2"] = (
            "You help customers of the shop.\n{{ skills.policy }}\n{{ tools }}\n\n{{ demos }}\n"
        )
    return files


def top(proposal) -> dict:
    return yaml.safe_load(proposal.files["harness.yaml"])


# -- max_tokens -----------------------------------------------------------------------------------


def test_trim_max_tokens_lowers_the_harness_cap_to_the_longest_passing_completion_with_a_margin(suite: Suite):
    proposal = propose(
        TrimMaxTokens(), context_for(configured(desk_files(), params={"max_tokens": 120}), suite)
    )

    harness, _, _ = loaded(proposal, suite)
    assert harness.params_for("desk").max_tokens == 32
    assert proposal.rationale.startswith("max_tokens 120 -> 32 for the harness")
    assert "2 passing episodes used 7 tokens" in proposal.rationale


def test_trim_max_tokens_sets_a_cap_where_there_was_none_and_lowers_an_agents_own(suite: Suite):
    unset = propose(TrimMaxTokens(), context_for(desk_files(), suite))
    assert loaded(unset, suite)[0].params_for("desk").max_tokens == 32
    assert unset.rationale.startswith("max_tokens unset -> 32")
    assert list(top(unset))[:4] == ["name", "world", "model", "params"]  # placed where a person puts it

    own = configured(desk_files(params={"max_tokens": 200}), params={"max_tokens": 120})
    proposal = propose(TrimMaxTokens(), context_for(own, suite))
    _, desk, _ = loaded(proposal, suite)
    assert desk["params"] == {"max_tokens": 32} and top(proposal)["params"] == {"max_tokens": 120}
    assert proposal.rationale.startswith("max_tokens 200 -> 32 for agent 'desk'")


def test_trim_max_tokens_needs_headroom_and_passing_episodes(suite: Suite):
    tight = configured(desk_files(), params={"max_tokens": 32})
    assert propose(TrimMaxTokens(), context_for(tight, suite)) is None
    loose = configured(desk_files(), params={"max_tokens": 120})
    assert propose(TrimMaxTokens(), context_for(loose, suite, episodes=False)) is None


# -- turns and tool calls -------------------------------------------------------------------------


def test_trim_turns_lowers_one_limit_to_what_passing_episodes_used_plus_a_margin(suite: Suite):
    files = configured(desk_files(), limits={"turns": 12, "tool_calls": 16})
    seen = {}
    for seed in range(8):
        proposal = propose(TrimTurns(), context_for(files, suite, seed))
        harness, _, _ = loaded(proposal, suite)
        changed = {k for k, v in top(proposal)["limits"].items() if v != {"turns": 12, "tool_calls": 16}[k]}
        [key] = changed
        seen[key] = (harness.config.limits, proposal.rationale)

    assert set(seen) == {"turns", "tool_calls"}
    limits, rationale = seen["turns"]
    assert limits.turns == 5  # the failing episodes used all 12: they are not evidence of need
    assert (
        rationale
        == "limits.turns 12 -> 5: the most model calls any of 2 passing episodes made was 3 (plus a margin of 2)."
    )
    limits, rationale = seen["tool_calls"]
    assert limits.tool_calls == 4 and "the most tool calls any of 2 passing episodes made was 2" in rationale


def test_trim_turns_never_goes_below_what_a_passing_episode_needed(suite: Suite):
    tight = configured(desk_files(), limits={"turns": 5, "tool_calls": 4})
    assert propose(TrimTurns(), context_for(tight, suite)) is None
    assert propose(TrimTurns(), context_for(desk_files(), suite, episodes=False)) is None


# -- observations ---------------------------------------------------------------------------------


def test_tighten_observations_lowers_the_cut_to_the_longest_result_passing_episodes_read(suite: Suite):
    files = configured(desk_files(), limits={"turns": 4, "observation_chars": 4000})
    proposal = propose(TightenObservations(), context_for(files, suite))

    harness, _, _ = loaded(proposal, suite)
    assert harness.config.limits.observation_chars == 2200  # 1,704 x 1.25, rounded up to 100
    assert proposal.rationale.startswith("limits.observation_chars 4000 -> 2200: the longest of the 4 tool")
    assert "2 passing episodes read had 1704 characters" in proposal.rationale


def test_tighten_observations_keeps_every_skill_load_skill_returns_whole(suite: Suite):
    files = with_skill(False, skill_tool=True)
    files["skills/policy.md"] = POLICY * 5  # longer than any tool result
    files = configured(files, limits={"turns": 4, "observation_chars": 6000})
    proposal = propose(TightenObservations(), context_for(files, suite))

    limit = loaded(proposal, suite)[0].config.limits.observation_chars
    assert len(POLICY * 5) < limit < 6000 and limit % 100 == 0
    assert "every skill load_skill returns fits" in proposal.rationale


def test_tighten_observations_needs_headroom_and_passing_episodes(suite: Suite):
    # At the default 1,500 the passing episodes already read a cut get_order result: nothing to spare.
    assert propose(TightenObservations(), context_for(desk_files(), suite)) is None
    files = configured(desk_files(), limits={"turns": 4, "observation_chars": 4000})
    assert propose(TightenObservations(), context_for(files, suite, episodes=False)) is None


# -- prompt diet ----------------------------------------------------------------------------------


def test_prompt_diet_drops_only_demos_no_passing_episode_needs(suite: Suite):
    files = desk_files(demos={"lookup": LOOKUP, "greet": GREET, "search": SEARCH})
    dropped = {}
    for seed in range(8):
        proposal = propose(PromptDiet(), context_for(files, suite, seed))
        _, desk, _ = loaded(proposal, suite)
        [gone] = {"lookup", "greet", "search"} - set(desk["demos"])
        assert f"demos/{gone}.yaml" not in proposal.files
        dropped[gone] = proposal.rationale

    assert set(dropped) == {"greet", "search"}  # every passing episode called get_order, as lookup does
    assert dropped["search"] == (
        "Drop demo 'search' from the demos of agent 'desk': it calls search_products, and in each of "
        "the 2 passing episodes it ran in the agent called none of these."
    )
    assert "it replies without a tool" in dropped["greet"]


def test_prompt_diet_moves_a_long_skill_out_of_the_prompt_behind_load_skill(suite: Suite):
    proposal = propose(PromptDiet(), context_for(with_skill(True), suite))

    harness, desk, _ = loaded(proposal, suite)
    assert desk["skill_tool"] is True and desk["skills"] == ["policy"]
    assert "skills.policy" not in proposal.files["prompts/desk.md.j2"]
    prompt, *_demos = render_prompt(harness, model_name="scripted")  # the native demos follow the prompt
    assert "in their words" not in prompt.text and "load_skill" in prompt.text  # its title stays listed
    assert proposal.rationale.startswith("Move skill 'policy' of agent 'desk' out of its prompt")
    assert f"its {len(POLICY)} characters went with each of the 6 model calls" in proposal.rationale


def test_prompt_diet_drops_a_loadable_skill_no_passing_episode_loaded(suite: Suite):
    proposal = propose(PromptDiet(), context_for(with_skill(False, skill_tool=True), suite))

    _, desk, _ = loaded(proposal, suite)
    assert "skills" not in desk and "skill_tool" not in desk
    assert "skills/policy.md" not in proposal.files
    assert "none of the 2 passing episodes it ran in loaded it" in proposal.rationale
    assert "load_skill goes" in proposal.rationale


def test_prompt_diet_keeps_a_skill_a_demo_loads_and_a_short_one_the_prompt_prints(suite: Suite):
    load = {"steps": [{"user": "Hi"}, {"call": "load_skill", "args": {"name": "policy"}}, {"reply": "Ok."}]}
    files = with_skill(False, skill_tool=True, demo_pool=["load"])
    files["demos/load.yaml"] = yaml.safe_dump(load)
    assert propose(PromptDiet(), context_for(files, suite)) is None

    files = with_skill(True)
    files["skills/policy.md"] = "Notes record the customer's words."
    assert propose(PromptDiet(), context_for(files, suite)) is None


def test_prompt_diet_needs_passing_episodes(suite: Suite):
    files = with_skill(True, demos={"lookup": LOOKUP, "greet": GREET})
    assert propose(PromptDiet(), context_for(files, suite, episodes=False)) is None


# -- all of them ----------------------------------------------------------------------------------


def mine() -> list:
    """The four operators of `_cost` (cost_operators() may hold others, tested beside them)."""
    return [TrimMaxTokens(), TrimTurns(), TightenObservations(), PromptDiet()]


def test_every_cost_operator_proposes_a_loadable_harness_or_none(suite: Suite):
    names = [operator.name for operator in cost_operators()]
    assert len(set(names)) == len(names) and set(names) & {op.name for op in default_operators()} == {
        "project_results"
    }
    assert {operator.name for operator in mine()} <= set(names)
    starts = [
        configured(desk_files(), params={"max_tokens": 120}, limits={"turns": 12, "observation_chars": 4000}),
        with_skill(True, demos={"lookup": LOOKUP, "greet": GREET}),
    ]
    made = set()
    for files in starts:
        for seed in range(3):
            context = context_for(files, suite, seed)
            for operator in mine():
                proposal = propose(operator, context)
                if proposal is not None:
                    Harness.from_files(proposal.files, world=suite.world)
                    assert proposal.operator == operator.name and proposal.patch
                    made.add(operator.name)
    assert made == {operator.name for operator in mine()}


def test_on_the_shipped_support_agent_no_cost_operator_proposes_without_evidence():
    helpdesk = load_suite(ROOT / "evals" / "helpdesk")
    files = load_harness(ROOT / "harnesses" / "support_agent").files()
    context = context_for(files, helpdesk, episodes=False)
    assert [propose(operator, context) for operator in mine()] == [None] * 4
