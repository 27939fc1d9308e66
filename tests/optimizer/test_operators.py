"""The LLM-free operators on a small desk harness of the helpdesk world, fed real train episodes.

The scripted agent adds a note when asked (and passes), and asks where a parcel is with
`track_shipment` when it has that tool; without it, it repeats the same `get_order` until the turn
limit and never replies. So the train episodes carry real evidence: passing note episodes, failing
status episodes with repeat_call, turn_limit and no_reply patterns, and references that use a tool
the agent lacks. Every proposal must load as a harness, change what its rationale says, and come
from that evidence: with none, an operator returns None.
"""

from __future__ import annotations

import asyncio
import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from atoll.evals import RunStore, Suite, evaluate_batch, load_suite
from atoll.harnesses import Harness, content_hash, load_harness
from atoll.harnesses.models import ScriptedModel
from atoll.optimizer import (
    AddDemo,
    AddRule,
    CallingDemos,
    DisableGuard,
    DropDemo,
    DropRule,
    EnableGuard,
    EnableRetrieval,
    ExposeToolWithDemo,
    GrowPool,
    HideTool,
    HideUnusedTools,
    MergeAgents,
    OptimizeConfig,
    Proposal,
    ProposalContext,
    RequireFirstCall,
    SplitAgent,
    TuneRetrieval,
    default_operators,
    optimize,
)
from atoll.optimizer._loop import _failure_report
from atoll.optimizer._operators import RULES
from atoll.optimizer._operators._settings import learned_requires

ROOT = Path(__file__).parents[2]
LOOKUP = {
    "title": "Look an order up",
    "steps": [
        {"user": "What is in order ORD-1001?"},
        {"call": "get_order", "args": {"order_id": "ORD-1001"}, "result": {"id": "ORD-1001"}},
        {"reply": "ORD-1001 holds one item."},
    ],
}
GREET = {"title": "A greeting", "steps": [{"user": "Hello there"}, {"reply": "Hello! How can I help?"}]}


def note_task(task_id: str, split: str, order: str, message: str) -> str:
    return (
        f"- id: {task_id}\n  split: {split}\n  fixture: small_shop\n  tags: [note, easy]\n"
        f"  user: {{message: '{message}'}}\n"
        f"  reference: [{{get_order: {{order_id: {order}}}}},\n"
        f"    {{add_order_note: {{order_id: {order}, note: called}}}}]\n"
        f"  expect:\n    inserted: {{order_notes: [{{order_id: {order}}}]}}\n    no_other_writes: true\n"
    )


def track_task(task_id: str, split: str, order: str, message: str) -> str:
    return (
        f"- id: {task_id}\n  split: {split}\n  fixture: small_shop\n  tags: [status, easy]\n"
        f"  user: {{message: '{message}'}}\n  reference: [{{track_shipment: {{order_id: {order}}}}}]\n"
        f"  expect:\n    no_other_writes: true\n    reply_contains: [delivered]\n"
    )


def cancel_task(task_id: str, split: str, message: str) -> str:
    return (
        f"- id: {task_id}\n  split: {split}\n  fixture: small_shop\n  tags: [cancellation, medium]\n"
        f"  user: {{message: '{message}'}}\n"
        f"  reference: [{{cancel_order: {{order_id: ORD-1101, reason: wrong colour}}}}]\n"
        f"  expect:\n    updated: {{orders: [{{key: {{id: ORD-1101}}, after: {{status: cancelled}}}}]}}\n"
    )


# Val and test hold what a proposer would love to copy: notes worded otherwise, and a kind of request
# (cancellation, with a tool no train task uses) that train lacks.
HELD_OUT = {
    "note-val": "Could you put a note on ORD-1007 saying that I phoned today?",
    "cancel-val": "Please cancel my order ORD-1101, I ordered the wrong lamp colour.",
    "track-test": "My parcel for ORD-1042 has not come, where is it now?",
    "cancel-test": "I want ORD-1101 cancelled before it ships, thank you.",
}
TASKS = "".join(
    [
        note_task("note-1003", "train", "ORD-1003", "Please add a note to order ORD-1003 that I called."),
        note_task("note-1004", "train", "ORD-1004", "Please add a note to order ORD-1004 that I called."),
        track_task("track-1020", "train", "ORD-1020", "Where is my parcel for ORD-1020?"),
        track_task("track-1021", "train", "ORD-1021", "Where is my parcel for ORD-1021?"),
        note_task("note-val", "val", "ORD-1007", HELD_OUT["note-val"]),
        cancel_task("cancel-val", "val", HELD_OUT["cancel-val"]),
        track_task("track-test", "test", "ORD-1042", HELD_OUT["track-test"]),
        cancel_task("cancel-test", "test", HELD_OUT["cancel-test"]),
    ]
)


def call(tool: str, **args: object) -> dict:
    return {"tool_calls": [{"name": tool, "arguments": args}]}


def desk_agent(request) -> str | dict:
    """Notes: get_order, add_order_note, reply. Parcels: track_shipment if offered, else get_order forever."""
    tools = {spec["function"]["name"] for spec in request.tools or []}
    # Native demos come first, as earlier conversations: the live request is the last user message.
    user = [m["content"] for m in request.messages if m["role"] == "user" and "ORD-" in m["content"]][-1]
    order = re.search(r"ORD-\d+", user).group()
    done = sum(m["role"] == "tool" and not m["tool_call_id"].startswith("demo") for m in request.messages)
    if "note" in user:
        steps = [call("get_order", order_id=order), call("add_order_note", order_id=order, note="called")]
        return steps[done] if done < len(steps) else "Done, the note is on the order."
    if "track_shipment" in tools:
        return call("track_shipment", order_id=order) if not done else "It was delivered."
    return call("get_order", order_id=order)


def desk_files(tools: Any = None, demos: dict[str, dict] | None = None, **desk: Any) -> dict[str, str]:
    """The desk harness: one agent, the given tools.yaml entry and demos, agent settings from `desk`."""
    demos = {"lookup": LOOKUP} if demos is None else demos
    config = {
        "name": "desk",
        "world": "helpdesk",
        "model": "scripted",
        "limits": {"turns": 4},
        "entry": "desk",
        "agents": {"desk": {"prompt": "prompts/desk.md.j2", "demos": list(demos), **desk}},
    }
    return {
        "harness.yaml": yaml.safe_dump(config, sort_keys=False),
        "tools.yaml": yaml.safe_dump(
            {"desk": tools if tools is not None else ["get_order", "add_order_note", "search_products"]}
        ),
        "prompts/desk.md.j2": "You help customers of the shop.\n{{ tools }}\n\n{{ demos }}\n",
        **{f"demos/{name}.yaml": yaml.safe_dump(demo, sort_keys=False) for name, demo in demos.items()},
    }


def write_suite(root: Path) -> Path:
    (root / "tasks").mkdir(parents=True)
    (root / "suite.yaml").write_text("name: desk\nworld: helpdesk\ndefault_seeds: [0]\n")
    (root / "tasks" / "desk.yaml").write_text(TASKS)
    return root


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    return load_suite(write_suite(tmp_path_factory.mktemp("desk_suite")))


_TRAIN_RUNS: dict[str, list[Any]] = {}  # harness hash -> its train episodes: the agent is deterministic


def context_for(
    files: dict[str, str], suite: Suite, seed: int = 0, *, episodes: bool = True
) -> ProposalContext:
    """The harness's train episodes under the scripted agent, as the loop hands them to proposers."""
    harness = Harness.from_files(files, world=suite.world)
    results = []
    if episodes:
        if harness.hash not in _TRAIN_RUNS:
            model = ScriptedModel(fn=desk_agent)
            batch = asyncio.run(evaluate_batch(harness, suite, model=model, split="train", k=1))
            _TRAIN_RUNS[harness.hash] = batch.results
        results = _TRAIN_RUNS[harness.hash]
    return ProposalContext(
        files=harness.files(),
        harness_hash=harness.hash,
        harness=harness,
        failures=[_failure_report(r, suite) for r in results if not r.passed],
        passing_episodes=[r for r in results if r.passed],
        train_tasks=suite.select(split="train"),
        world_tools=list(suite.world.tools),
        rng=random.Random(seed),
    )


def propose(operator: Any, context: ProposalContext) -> Proposal | None:
    return asyncio.run(operator.propose(context))


def loaded(proposal: Proposal | None, suite: Suite) -> tuple[Harness, dict, dict]:
    """The proposal as a harness (it must load), with its harness.yaml agent and its tools.yaml."""
    assert proposal is not None
    harness = Harness.from_files(proposal.files, world=suite.world)
    config = yaml.safe_load(proposal.files["harness.yaml"])["agents"]["desk"]
    return harness, config, yaml.safe_load(proposal.files["tools.yaml"])


def test_the_train_episodes_carry_the_evidence_the_operators_read(suite: Suite):
    context = context_for(desk_files(), suite)

    assert sorted(r.task_id for r in context.passing_episodes) == ["note-1003", "note-1004"]
    assert sorted(f.task_id for f in context.failures) == ["track-1020", "track-1021"]
    patterns = context.failures[0].patterns
    assert patterns["repeat_call"] == 3 and patterns["turn_limit"] == 1 and patterns["no_reply"] == 1


# -- retrieval ------------------------------------------------------------------------------------


def test_enable_retrieval_moves_the_demos_to_a_pool_grown_from_train_and_retrieves_one(suite: Suite):
    proposal = propose(EnableRetrieval(), context_for(desk_files(), suite))

    harness, desk, _ = loaded(proposal, suite)
    assert desk["demos"] == [] and desk["retrieve_demos"] == 1
    assert desk["demo_pool"][0] == "lookup" and len(desk["demo_pool"]) == 2
    added = harness.demos[desk["demo_pool"][1]]
    assert added.title.startswith("From a passing episode of note-100")  # one demo for the note kind
    assert [s.call for s in added.steps if s.call] == ["get_order", "add_order_note"]
    assert "Retrieve demos for agent 'desk'" in proposal.rationale and "note-100" in proposal.rationale


def test_enable_retrieval_needs_two_demos_to_choose_from(suite: Suite):
    context = context_for(desk_files(demos={}), suite, episodes=False)
    assert propose(EnableRetrieval(), context) is None  # no demo, no passing episode, no usable reference


def retrieving(tools: Any = None, pool: dict[str, dict] | None = None, k: int = 1) -> dict[str, str]:
    pool = pool if pool is not None else {"lookup": LOOKUP, "greet": GREET}
    files = desk_files(tools=tools, demos=pool)
    config = yaml.safe_load(files["harness.yaml"])
    config["agents"]["desk"] = {"prompt": "prompts/desk.md.j2", "demo_pool": list(pool), "retrieve_demos": k}
    files["harness.yaml"] = yaml.safe_dump(config, sort_keys=False)
    return files


def test_tune_retrieval_moves_k_within_the_pool(suite: Suite):
    proposal = propose(TuneRetrieval(), context_for(retrieving(k=1), suite, episodes=False))

    _, desk, _ = loaded(proposal, suite)
    assert desk["retrieve_demos"] == 2  # 0 would turn retrieval off, 3 exceed the pool
    assert proposal.rationale == "Agent 'desk' retrieves 2 demo(s) per episode instead of 1."
    assert propose(TuneRetrieval(), context_for(desk_files(), suite, episodes=False)) is None


def test_grow_pool_adds_one_demo_per_kind_of_train_request_the_pool_lacks(suite: Suite):
    tools = ["get_order", "add_order_note", "track_shipment"]
    proposal = propose(GrowPool(), context_for(retrieving(tools), suite))

    harness, desk, _ = loaded(proposal, suite)
    added = desk["demo_pool"][2:]
    assert sorted(added) == ["auto_note_1003", "auto_track_1020"]  # not 1004 nor 1021: same kinds
    assert [s.call for s in harness.demos["auto_track_1020"].steps if s.call] == ["track_shipment"]
    assert "note-1003" in proposal.rationale and "track-1020" in proposal.rationale
    again = context_for(proposal.files, suite)
    assert propose(GrowPool(), again) is None  # every kind has its example now


def test_grow_pool_needs_retrieval(suite: Suite):
    assert propose(GrowPool(), context_for(desk_files(), suite)) is None


# -- demos ----------------------------------------------------------------------------------------


def test_drop_demo_keeps_pool_demos_and_lowers_k_when_the_pool_shrinks(suite: Suite):
    files = retrieving(pool={"lookup": LOOKUP, "greet": GREET}, k=2)
    proposal = propose(DropDemo(), context_for(files, suite, episodes=False))

    _, desk, _ = loaded(proposal, suite)
    assert len(desk["demo_pool"]) == 1 and desk["retrieve_demos"] == 1
    dropped = ({"lookup", "greet"} - set(desk["demo_pool"])).pop()
    assert f"demos/{dropped}.yaml" not in proposal.files
    assert "retrieve_demos 2 -> 1" in proposal.rationale

    files = desk_files(demos={"lookup": LOOKUP, "greet": GREET})
    config = yaml.safe_load(files["harness.yaml"])
    config["agents"]["desk"]["demo_pool"] = ["lookup"]  # fixed and pooled: its file must stay
    files["harness.yaml"] = yaml.safe_dump(config, sort_keys=False)
    for seed in range(6):
        proposal = propose(DropDemo(), context_for(files, suite, seed, episodes=False))
        _, desk, _ = loaded(proposal, suite)
        assert "demos/lookup.yaml" in proposal.files


def test_add_demo_never_reuses_a_pool_name(suite: Suite):
    pool = {"auto_note_1003": GREET, "auto_note_1004": GREET}
    context = context_for(retrieving(pool=pool), suite)
    assert propose(AddDemo(), context) is None  # both passing tasks have a pool demo; no reference fits


def test_calling_demos_swaps_a_demo_without_a_call_for_a_passing_episode_that_calls_first(suite: Suite):
    note = {
        "title": "A note",
        "steps": [{"user": "Please add a note to my order that I called"}, {"reply": "Ok."}],
    }
    files = desk_files(demos={"lookup": LOOKUP, "note": note}, tool_choice="first")
    proposal = propose(CallingDemos(), context_for(files, suite))

    harness, desk, _ = loaded(proposal, suite)
    assert desk["demos"][0] == "lookup" and desk["demos"][1] in ("auto_note_1003", "auto_note_1004")
    swapped = harness.demos[desk["demos"][1]]
    assert [s.call for s in swapped.steps if s.call] == ["get_order", "add_order_note"]
    assert "demos/note.yaml" not in proposal.files  # no agent shows it any more
    assert proposal.targets == ["track-1020", "track-1021"]  # the failing train requests most like it
    assert "note -> auto_note_100" in proposal.rationale

    # A demo is matched by what both sides say: a request worded more like a note request than a parcel
    # one, answered with a delivery status, is swapped for a passing parcel lookup, not for a note.
    told = {
        "title": "A parcel, asked in a note's words",
        "steps": [{"user": "That I called about ORD-1099?"}, {"reply": "It was delivered."}],
    }
    tracking = ["get_order", "add_order_note", "track_shipment"]
    files = desk_files(tools=tracking, demos={"lookup": LOOKUP, "told": told}, tool_choice="first")
    harness, desk, _ = loaded(propose(CallingDemos(), context_for(files, suite)), suite)
    assert desk["demos"][1] in ("auto_track_1020", "auto_track_1021")

    # Once this run has tried a swap, the next likest episode is offered, and none after the last.
    files = desk_files(demos={"lookup": LOOKUP, "note": note}, tool_choice="first")
    context = context_for(files, suite)

    def after(*tried: Proposal) -> Proposal | None:
        hashes = frozenset(content_hash(p.files) for p in tried)
        return propose(CallingDemos(), context.model_copy(update={"tried": hashes}))

    first = after()
    second = after(first)
    _, first_desk, _ = loaded(first, suite)
    _, desk, _ = loaded(second, suite)
    assert desk["demos"][1].startswith("auto_") and desk["demos"][1] != first_desk["demos"][1]
    offered = {content_hash(first.files), content_hash(second.files)}
    while (
        more := propose(CallingDemos(), context.model_copy(update={"tried": frozenset(offered)}))
    ) is not None:
        assert content_hash(more.files) not in offered
        offered.add(content_hash(more.files))
    assert 2 <= len(offered) <= 3  # SWAP_OPTIONS

    # An agent free to answer first, or one whose demos all call, has nothing to swap.
    free = desk_files(demos={"lookup": LOOKUP, "note": note})
    assert propose(CallingDemos(), context_for(free, suite)) is None
    calling = desk_files(tool_choice="first")
    assert propose(CallingDemos(), context_for(calling, suite)) is None


# -- tools ----------------------------------------------------------------------------------------


def test_expose_tool_with_demo_exposes_what_a_failing_task_needs_and_shows_it_used(suite: Suite):
    proposal = propose(ExposeToolWithDemo(), context_for(desk_files(), suite))

    harness, desk, tools = loaded(proposal, suite)
    assert "track_shipment" in tools["desk"]
    [new] = [d for d in desk["demos"] if d != "lookup"]
    assert new in ("auto_track_1020", "auto_track_1021")
    assert [s.call for s in harness.demos[new].steps if s.call] == ["track_shipment"]
    assert proposal.rationale.startswith("Expose track_shipment to agent 'desk' and show it the reference")
    solved = context_for(proposal.files, suite)
    assert not solved.failures and propose(ExposeToolWithDemo(), solved) is None


def test_hide_unused_tools_hides_what_passing_episodes_never_called(suite: Suite):
    proposal = propose(HideUnusedTools(), context_for(desk_files(), suite))

    _, _, tools = loaded(proposal, suite)
    assert tools["desk"] == ["get_order", "add_order_note"]
    assert "Hide search_products from agent 'desk'" in proposal.rationale
    assert propose(HideUnusedTools(), context_for(desk_files(), suite, episodes=False)) is None


def test_tools_a_demo_calls_or_another_tool_requires_are_never_hidden(suite: Suite):
    tools = {
        "get_order": None,
        "add_order_note": {"requires": ["search_products"]},
        "search_products": None,
        "find_customer": None,
    }
    find = {"steps": [{"user": "Who is ann@example.com?"}, {"call": "find_customer"}, {"reply": "Ann."}]}
    context = context_for(desk_files(tools=tools, demos={"lookup": LOOKUP, "find": find}), suite)

    assert propose(HideUnusedTools(), context) is None
    assert propose(HideTool(), context) is None


# -- guards and rules -------------------------------------------------------------------------------


def test_enable_guard_turns_on_what_the_failures_call_for(suite: Suite):
    proposals = {}
    for seed in range(12):
        proposal = propose(EnableGuard(), context_for(desk_files(), suite, seed))
        harness, desk, tools = loaded(proposal, suite)
        [guard] = desk["guards"]
        proposals[guard] = (proposal, harness, tools)

    assert set(proposals) == {"repeat_notice", "reply_nudge", "preconditions"}
    assert "show 6 repeat_call" in proposals["repeat_notice"][0].rationale
    assert "no_reply" in proposals["reply_nudge"][0].rationale
    _, harness, tools = proposals["preconditions"]
    assert harness.tools["desk"]["add_order_note"].requires == ["get_order"]
    assert set(tools["desk"]) == {"get_order", "add_order_note", "search_products"}  # the list became a map
    assert "add_order_note after get_order" in proposals["preconditions"][0].rationale


def test_enable_guard_turns_grounded_args_on_for_calls_quoting_digits_nobody_gave(suite: Suite):
    context = context_for(desk_files(), suite)
    first = context.failures[0]
    made_up = first.model_copy(update={"patterns": {**first.patterns, "ungrounded_argument": 2}})
    context.failures[0] = made_up
    chosen = {}
    for seed in range(16):
        context.rng = random.Random(seed)
        proposal = propose(EnableGuard(), context)
        assert proposal is not None
        chosen[proposal.rationale.split()[3]] = proposal

    grounded = chosen["grounded_args"]
    harness, desk, _ = loaded(grounded, suite)
    assert desk["guards"] == {"grounded_args": True} and harness.agent("desk").guards.grounded_args
    assert "show 2 ungrounded_argument" in grounded.rationale
    assert grounded.targets == [made_up.task_id]  # the screen runs the episode it should change first


def test_require_first_call_makes_agents_with_tools_call_before_answering(suite: Suite):
    proposal = propose(RequireFirstCall(), context_for(desk_files(), suite))

    harness, desk, _ = loaded(proposal, suite)
    assert desk["tool_choice"] == "first" and harness.agent("desk").tool_choice == "first"
    assert "no_reply" in proposal.rationale and "tool_choice: first" in proposal.rationale
    assert (
        propose(RequireFirstCall(), context_for(desk_files(tool_choice="first"), suite)) is None
    )  # set already
    assert (
        propose(RequireFirstCall(), context_for(desk_files(), suite, episodes=False)) is None
    )  # no evidence


def test_enable_guard_needs_failures(suite: Suite):
    assert propose(EnableGuard(), context_for(desk_files(), suite, episodes=False)) is None


def test_preconditions_are_learned_from_what_every_reference_does_first(suite: Suite):
    train = suite.select(split="train")
    assert learned_requires(train, {"get_order", "add_order_note", "track_shipment"}) == {
        "add_order_note": "get_order"
    }
    assert learned_requires(train, {"add_order_note", "track_shipment"}) == {}  # get_order not the agent's


def test_disable_guard_turns_one_off(suite: Suite):
    files = desk_files(guards={"repeat_notice": True})
    proposal = propose(DisableGuard(), context_for(files, suite))

    _, desk, _ = loaded(proposal, suite)
    assert "guards" not in desk
    assert "Turn off guard repeat_notice for agent 'desk'" in proposal.rationale
    assert propose(DisableGuard(), context_for(desk_files(), suite, episodes=False)) is None


def test_add_rule_adds_the_rule_for_the_most_frequent_failure_not_yet_there(suite: Suite):
    proposal = propose(AddRule(), context_for(desk_files(), suite))

    _, desk, _ = loaded(proposal, suite)
    assert desk["rules"] == [RULES["repeat_call"]]
    assert "6 repeat_call" in proposal.rationale
    nxt = propose(AddRule(), context_for(proposal.files, suite))
    assert loaded(nxt, suite)[1]["rules"] == [RULES["repeat_call"], RULES["no_reply"]]
    assert propose(AddRule(), context_for(desk_files(), suite, episodes=False)) is None


def test_drop_rule_prefers_a_rule_whose_failure_is_gone(suite: Suite):
    files = desk_files(rules=[RULES["repeat_call"], RULES["unknown_tool"]])
    for seed in range(4):
        proposal = propose(DropRule(), context_for(files, suite, seed))
        _, desk, _ = loaded(proposal, suite)
        assert desk["rules"] == [RULES["repeat_call"]]
        assert "no failing train episode shows unknown_tool" in proposal.rationale
    assert propose(DropRule(), context_for(desk_files(), suite, episodes=False)) is None


# -- all of them ----------------------------------------------------------------------------------


def test_every_default_operator_proposes_a_loadable_harness_or_none(suite: Suite):
    names = [operator.name for operator in default_operators()]
    assert len(set(names)) == len(names)
    starts = [desk_files(), retrieving(["get_order", "add_order_note", "track_shipment"], k=2)]
    made = set()
    for files in starts:
        for seed in range(3):
            context = context_for(files, suite, seed)
            for operator in default_operators():
                proposal = propose(operator, context)
                if proposal is not None:
                    Harness.from_files(proposal.files, world=suite.world)
                    assert proposal.operator == operator.name and proposal.patch
                    made.add(operator.name)
    assert {"enable_retrieval", "expose_tool_with_demo", "enable_guard", "add_rule", "grow_pool"} <= made
    assert {"tune_retrieval", "hide_unused_tools", "drop_demo", "tune_sampling"} <= made


def test_an_operator_leaves_every_file_it_does_not_change_byte_for_byte(suite: Suite):
    files = desk_files()
    files["harness.yaml"] = files["harness.yaml"].replace("\n  ", "\n    ")  # 4-space indents: not ruamel's
    proposal = propose(HideUnusedTools(), context_for(files, suite))

    assert proposal.files["harness.yaml"] == files["harness.yaml"]
    assert proposal.files["tools.yaml"] != files["tools.yaml"]


# -- the agent graph ------------------------------------------------------------------------------


def test_split_agent_makes_a_router_with_one_specialist_per_kind_of_train_request(suite: Suite):
    proposal = propose(SplitAgent(), context_for(desk_files(), suite))

    harness, desk, tools = loaded(proposal, suite)
    assert desk["delegates"] == ["desk_note", "desk_status"]
    assert set(tools["desk_note"]) == {"get_order", "add_order_note"}
    assert set(tools["desk_status"]) == {"track_shipment"}
    assert harness.agents["desk_status"].demos == ["auto_track_1020"]  # a failing task's reference first
    assert harness.agents["desk_note"].demos == ["auto_note_1003"]
    handoffs = [d for d in desk["demos"] if d.startswith("auto_route_")]
    assert sorted(handoffs) == ["auto_route_note_1003", "auto_route_track_1020"]
    assert harness.demos["auto_route_track_1020"].steps[1].call == "delegate_to_desk_status"
    prompt = proposal.files["prompts/desk_status.md.j2"]
    assert "you handle status requests" in prompt and "{{ tools }}" in prompt and "{{ demos }}" in prompt
    assert "desk_note (add_order_note, get_order; example note-1003)" in proposal.rationale
    assert propose(SplitAgent(), context_for(proposal.files, suite)) is None  # already split


def test_split_agent_needs_two_kinds_of_request(suite: Suite):
    context = context_for(desk_files(), suite)
    context.train_tasks = [task for task in context.train_tasks if "note" in task.tags]
    assert propose(SplitAgent(), context) is None


def test_merge_agents_folds_a_specialist_back_into_its_router(suite: Suite):
    split = propose(SplitAgent(), context_for(desk_files(), suite))
    proposal = propose(MergeAgents(), context_for(split.files, suite))

    harness, desk, tools = loaded(proposal, suite)
    [gone] = {"desk_note", "desk_status"} - set(harness.agents)
    assert desk["delegates"] == [{"desk_note", "desk_status"}.difference([gone]).pop()]
    assert set(tools["desk"]) >= set(loaded(split, suite)[2][gone])
    route = "auto_route_note_1003" if gone == "desk_note" else "auto_route_track_1020"
    assert route not in desk["demos"] and f"demos/{route}.yaml" not in proposal.files
    assert f"prompts/{gone}.md.j2" not in proposal.files and gone not in tools
    assert proposal.rationale.startswith(f"Merge agent {gone!r} back into 'desk'")
    assert propose(MergeAgents(), context_for(desk_files(), suite, episodes=False)) is None


def test_merge_agents_keeps_the_specialists_wording_of_a_tool_it_brings(suite: Suite):
    files = dict(propose(SplitAgent(), context_for(desk_files(), suite)).files)
    tools = yaml.safe_load(files["tools.yaml"])
    tools["desk_status"] = {"track_shipment": {"description": "Where a parcel is."}}
    files["tools.yaml"] = yaml.safe_dump(tools)

    proposals = [propose(MergeAgents(), context_for(files, suite, seed, episodes=False)) for seed in range(8)]
    [proposal, *_] = [p for p in proposals if "'desk_status' back" in p.rationale]

    harness, _, tools = loaded(proposal, suite)
    assert harness.tools["desk"]["track_shipment"].description == "Where a parcel is."
    assert tools["desk"]["get_order"] is None  # the router's plain list became a mapping, same tools


@pytest.fixture(scope="module")
def helpdesk() -> Suite:
    return load_suite(ROOT / "evals" / "helpdesk")


def test_on_the_shipped_support_agent_every_operator_proposes_a_loadable_harness(helpdesk: Suite):
    files = load_harness(ROOT / "harnesses" / "support_agent").files()
    for seed in range(2):
        context = context_for(files, helpdesk, seed, episodes=False)
        for operator in default_operators():
            proposal = propose(operator, context)
            if proposal is not None:
                Harness.from_files(proposal.files, world=helpdesk.world)


def test_merging_the_shipped_refunds_agent_gives_triage_its_tools_and_demos(helpdesk: Suite):
    files = load_harness(ROOT / "harnesses" / "support_agent").files()
    proposal = propose(MergeAgents(), context_for(files, helpdesk, episodes=False))

    harness = Harness.from_files(proposal.files, world=helpdesk.world)
    assert list(harness.agents) == ["triage"] and not harness.agents["triage"].delegates
    assert harness.agents["triage"].demos == [
        "triage_refusal",
        "triage_status",
        "refunds_late_return",
        "refunds_damaged",
    ]
    assert {"refund_items", "start_return"} <= set(harness.tools["triage"])
    assert harness.tools["triage"]["refund_items"].description.startswith("Refund whole order lines")
    assert "demos/triage_refund.yaml" not in proposal.files and "prompts/refunds.md.j2" not in proposal.files


def test_the_default_operators_run_in_the_loop_and_every_candidate_loads(tmp_path: Path):
    for name, text in desk_files().items():
        (tmp_path / "h" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "h" / name).write_text(text)
    write_suite(tmp_path / "s")
    config = OptimizeConfig(
        harness=tmp_path / "h",
        suite=tmp_path / "s",
        max_proposals=16,
        max_minutes=None,
        commit=False,
        patience=None,
    )
    store = RunStore(tmp_path / "runs.sqlite")
    try:
        result = asyncio.run(optimize(config, store=store, model=ScriptedModel(fn=desk_agent)))
    finally:
        store.close()

    assert len(result.steps) == 16
    assert "invalid" not in [step.verdict for step in result.steps]
    assert len({step.operator for step in result.steps}) >= 8
