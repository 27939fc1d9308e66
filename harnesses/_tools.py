"""What tools one agent sees: world tools with the harness's wording, plus delegation and skills.

The model reads the harness's descriptions (tools.yaml overrides), while the call still runs
the world's tool with the world's argument validation. A tool's `fields` (tools.yaml) project the
result the model reads (`ToolSpec.shown`, `project`); the world still returns all of it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from ._format import DELEGATE_PREFIX, SKILL_TOOL
from ._harness import Harness

ToolKind = Literal["world", "delegate", "skill"]


@dataclass(frozen=True)
class ToolSpec:
    """One tool as an agent is shown it."""

    name: str
    description: str
    parameters: dict[str, Any]
    kind: ToolKind = "world"
    target: str | None = None  # the agent a delegation tool hands over to
    stops: bool = False  # a successful call ends the agent's run
    required: tuple[str, ...] = field(default=())
    requires: tuple[str, ...] = field(default=())  # tools one of which must succeed first (a guard)
    fields: tuple[str, ...] | None = None  # the result fields the model reads; None: all

    def shown(self, value: Any) -> Any:
        """What the model reads of a successful result: its `fields` only, when tools.yaml lists some."""
        return value if self.fields is None else project(value, self.fields)

    def schema(self) -> dict[str, Any]:
        """The OpenAI-style function schema (native protocol)."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def line(self) -> str:
        """One compact line for a text-protocol prompt: `name(a, b?): description a: …`."""
        properties = self.parameters.get("properties", {})
        arguments = ", ".join(p if p in self.required else f"{p}?" for p in properties)
        described = " ".join(
            f"{p}: {_sentence(spec['description'])}"
            for p, spec in properties.items()
            if spec.get("description")
        )
        summary = _sentence(self.description.split("\n\n", 1)[0])
        return f"- {self.name}({arguments}): {summary}{' ' + described if described else ''}"


def project(value: Any, fields: Iterable[str]) -> Any:
    """`value` keeping only `fields`: keys, or dotted paths into nested mappings. A list (the value,
    or one met on a path) is projected element by element; a plain value met before a path's end
    is kept as it is, and keys the value lacks are left out. Key order is the value's own.

    >>> project({"id": 1, "items": [{"sku": "A", "qty": 2}], "notes": []}, ["id", "items.sku"])
    {'id': 1, 'items': [{'sku': 'A'}]}
    """
    tree: dict[str, Any] = {}
    for path in fields:
        node: dict[str, Any] | None = tree
        *parents, last = path.split(".")
        for part in parents:
            node = node.setdefault(part, {}) if node is not None else None
        if node is not None:  # None: a shorter path listed already shows all of this one
            node[last] = None
    return _keep(value, tree)


def _keep(value: Any, tree: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        return {
            key: item if tree[str(key)] is None else _keep(item, tree[str(key)])
            for key, item in value.items()
            if str(key) in tree
        }
    if isinstance(value, list | tuple):
        return [_keep(item, tree) for item in value]
    return value


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?")) else f"{text}."


def tool_specs(harness: Harness, agent: str) -> list[ToolSpec]:
    """The agent's tools in the order tools.yaml lists them, then delegations, then load_skill."""
    key = ("tool_specs", agent)
    if key not in harness.memo:
        harness.memo[key] = _build_specs(harness, agent)
    return harness.memo[key]


def _build_specs(harness: Harness, agent_name: str) -> list[ToolSpec]:
    agent = harness.agent(agent_name)
    specs = []
    for name, override in harness.tools[agent_name].items():
        tool = harness.world.tools[name]
        parameters = copy.deepcopy(tool.parameters_schema())
        for parameter, text in override.parameters.items():
            parameters["properties"][parameter]["description"] = text
        specs.append(
            ToolSpec(
                name=name,
                description=override.description or tool.description,
                parameters=parameters,
                stops=name in agent.stop_tools,
                required=tuple(parameters.get("required", ())),
                requires=tuple(override.requires),
                fields=tuple(override.fields) if override.fields is not None else None,
            )
        )
    for target in agent.delegates:
        about = harness.agent(target).description or f"the {target} agent"
        specs.append(
            ToolSpec(
                name=f"{DELEGATE_PREFIX}{target}",
                description=f"Hand a request to {target}: {about} It works on the same systems and answers "
                "with what it did.",
                parameters={
                    "type": "object",
                    "properties": {
                        "request": {
                            "type": "string",
                            "description": "What to do, with every id and fact it needs.",
                        }
                    },
                    "required": ["request"],
                },
                kind="delegate",
                target=target,
                required=("request",),
            )
        )
    if agent.skill_tool and agent.skills:
        listing = "; ".join(f"{s}: {_first_line(harness.skills[s])}" for s in agent.skills)
        specs.append(
            ToolSpec(
                name=SKILL_TOOL,
                description=f"Read a skill document before acting. Skills: {listing}",
                parameters={
                    "type": "object",
                    "properties": {"name": {"type": "string", "enum": list(agent.skills)}},
                    "required": ["name"],
                },
                kind="skill",
                required=("name",),
            )
        )
    return specs


def _first_line(text: str) -> str:
    return next((line.lstrip("# ").strip() for line in text.splitlines() if line.strip()), "")
