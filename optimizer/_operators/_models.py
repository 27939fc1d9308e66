"""Model operators: give one agent another of the models the run may use (`ProposalContext.models`).

A small model that fails at one agent's job may do it under another model, and a large model may
be more than a sub-agent needs; which is better is for the screen and the acceptance rule (on
`--objective cost`, the cheaper one with quality held) to decide, as for any other edit.
"""

from __future__ import annotations

from atoll.harnesses.models import local_protocol

from .._proposal import Proposal, ProposalContext
from ._common import Edit, Operator

_SUB_AGENT_WEIGHT = 2  # a sub-agent's draw weight against the entry agent's 1


class ChooseModel(Operator):
    """Switch one agent to another model of the run's `models`: a sub-agent twice as often as the entry
    agent (a sub-agent sees only the requests handed to it, so its switch risks less), the model
    drawn from those the agent does not run yet. An agent switched to the harness's own model loses
    its `model` line. Where the new model is an embedded one that cannot write tool calls (a base
    model) and the agent would speak native tool calling to it, the agent is set to the text protocol."""

    name = "choose_model"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        harness = context.harness
        default = harness.config.model
        current = {agent: cfg.model or default for agent, cfg in harness.agents.items()}
        others = {
            agent: [m for m in dict.fromkeys(context.models) if m != model]
            for agent, model in current.items()
        }
        agents = [a for a in harness.agents if a != harness.entry] + [harness.entry]
        agents = [a for a in agents if others[a]]
        if not agents:
            return None
        weights = [1 if a == harness.entry else _SUB_AGENT_WEIGHT for a in agents]
        agent = context.rng.choices(agents, weights=weights)[0]
        model = context.rng.choice(others[agent])

        edit = Edit(context)
        settings = edit.agent(agent)
        if model == default:
            settings.pop("model", None)
        else:
            settings["model"] = model
        role = "entry agent" if agent == harness.entry else "sub-agent"
        change = f"Run {role} {agent!r} on {model} instead of {current[agent]}"
        protocol = ""
        if local_protocol(model) == "text" and harness.protocol_for(agent, model) == "native":
            settings["protocol"] = "text"
            protocol = f"; it speaks the text protocol, as {model} writes no tool calls"
        allowed = ", ".join(m for m in dict.fromkeys(context.models))
        return edit.proposal(self.name, f"{change}{protocol} (the run may use {allowed}).")
