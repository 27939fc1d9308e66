"""The simulated user: plays the task's customer on any model and ends the conversation with the stop token."""

from __future__ import annotations

from pathlib import Path

from minidesk.agent import harness, solver
from minidesk.world import world

from atoll.evals import STOP_TOKEN, SimulatedUser, evaluate_batch, load_suite, user_for
from atoll.harnesses import Event, ScriptedUser
from atoll.harnesses.models import ModelRequest, ScriptedModel

TASK = """\
- id: refund-chatty
  split: val
  fixture: tiny
  user:
    message: "My order ORD-1 arrived broken."
    persona: "You are Ada Moreau, polite but in a hurry."
    facts: {email: ada@example.com, order: ORD-1}
    goal: "Get your money back for the broken order."
  expect:
    inserted: {refunds: [{order_id: ORD-1}]}
    reply_contains: ["welcome"]
"""


def conversation() -> list[Event]:
    return [
        Event(kind="user", agent="desk", content="My order ORD-1 arrived broken."),
        Event(kind="tool_call", agent="desk", tool="get_order", arguments={"order_id": "ORD-1"}),
        Event(kind="assistant", agent="desk", content="What is your email?"),
    ]


async def test_the_customer_sees_only_the_conversation_with_the_roles_turned_round() -> None:
    model = ScriptedModel(["It is ada@example.com."])
    user = SimulatedUser(
        model,
        opening="My order ORD-1 arrived broken.",
        persona="You are Ada.",
        goal="A refund.",
        facts={"email": "ada@example.com"},
        sample=4,
    )
    assert await user.respond(conversation()) == "It is ada@example.com."
    (request,) = model.requests
    system, *turns = request.messages
    assert "You are Ada." in system["content"] and "- email: ada@example.com" in system["content"]
    assert STOP_TOKEN in system["content"]
    assert turns == [
        {"role": "assistant", "content": "My order ORD-1 arrived broken."},
        {"role": "user", "content": "What is your email?"},
    ]
    assert request.sample == 4 and user.usage.completion_tokens > 0


async def test_the_stop_token_ends_the_conversation() -> None:
    user = SimulatedUser(ScriptedModel([f"Thanks, that is all. {STOP_TOKEN}"]), opening="hi")
    assert await user.respond(conversation()) is None


async def test_a_batch_plays_simulated_users_on_the_user_model(tmp_path: Path) -> None:
    root = tmp_path / "s"
    (root / "tasks").mkdir(parents=True)
    (root / "suite.yaml").write_text("name: s\nworld: minidesk.world\ndefault_seeds: [0, 1]\n")
    (root / "tasks" / "t.yaml").write_text(TASK)
    suite = load_suite(root, world=world)

    def customer(request: ModelRequest) -> str:
        said = sum(m["role"] == "assistant" for m in request.messages)
        return "Thank you!" if said == 1 else STOP_TOKEN

    customer_model = ScriptedModel(fn=customer, name="customer")
    agent_model = solver()
    result = await evaluate_batch(harness(), suite, model=agent_model, user_model=customer_model)
    assert [r.passed for r in result.results] == [True, True]
    episode = result.results[0].episode
    assert [e.content for e in episode.events if e.kind == "user"] == [
        "My order ORD-1 arrived broken.",
        "Thank you!",
    ]
    assert episode.replies[-1] == "You're welcome."
    assert {r.sample for r in customer_model.requests} == {0, 1} and len(customer_model.requests) == 4
    agent_calls = len(agent_model.requests) // 2  # two identical episodes
    assert episode.usage.model_calls == agent_calls + 2, "the customer's calls count in the episode's spend"


def test_a_task_with_scripted_replies_gets_the_scripted_user(tmp_path: Path) -> None:
    from minidesk.agent import SUITE

    suite = load_suite(SUITE, world=world)
    user = user_for(suite.task("refund-damaged"), model=None, sample=0)
    assert isinstance(user, ScriptedUser) and user.opening.startswith("My order ORD-1")


async def test_a_user_model_named_on_the_command_line_is_built_checked_and_plays_the_users(
    tmp_path: Path, monkeypatch
) -> None:
    import atoll.evals._batch as batch

    root = tmp_path / "s"
    (root / "tasks").mkdir(parents=True)
    (root / "suite.yaml").write_text("name: s\nworld: minidesk.world\ndefault_seeds: [0]\n")
    (root / "tasks" / "t.yaml").write_text(TASK)
    customer = ScriptedModel(fn=lambda request: STOP_TOKEN, name="openai/customer-sim")
    checked: list[str] = []
    monkeypatch.setattr(batch, "check_model", checked.append)
    monkeypatch.setattr(
        batch, "get_model", lambda name, cache=None: customer if name == customer.name else None
    )

    result = await evaluate_batch(
        harness(), load_suite(root, world=world), model=solver(), user_model=customer.name
    )

    assert checked == [customer.name]  # checked before any episode, like the agent's model
    assert customer.requests and result.results[0].episode.events[0].kind == "user"
