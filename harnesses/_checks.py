"""Every check a harness passes at load time, each problem named by file and field.

Problems are collected, not raised one by one, so a single load reports all of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import jinja2
import yaml
from jinja2.sandbox import SecurityError
from pydantic import ValidationError

from atoll.worlds import World

from ._files import HarnessError
from ._format import DELEGATE_PREFIX, REPLY_TOOL, SKILL_TOOL, AgentConfig, Demo, HarnessConfig, ToolOverride

if TYPE_CHECKING:
    from ._harness import Harness

HARNESS_FILE = "harness.yaml"
TOOLS_FILE = "tools.yaml"
# What a prompt template may use; see harnesses/support_agent/prompts for examples.
TEMPLATE_VARIABLES = ("agent", "harness", "documents", "task", "skills", "tools", "demos", "protocol", "now")


class Problems:
    """Collects every problem of a load, so one run of `load_harness` reports them all."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: list[str] = []

    def add(self, file: str, field: str, message: str) -> None:
        where = f"{self.source}/{file}" if self.source else file
        self.lines.append(f"{where}: {field}: {message}" if field else f"{where}: {message}")

    def add_validation(self, file: str, error: ValidationError, prefix: str = "") -> None:
        for item in error.errors():
            field = prefix
            for part in item["loc"]:
                field += f"[{part}]" if isinstance(part, int) else f".{part}" if field else str(part)
            message = item["msg"].removeprefix("Value error, ")
            if item["type"] == "extra_forbidden":
                message = "unknown field (a typo?)"
            elif item["type"] == "missing":
                message = "missing: add it"
            self.add(file, field or "(top level)", message)

    def error(self) -> HarnessError:
        return HarnessError("\n".join(self.lines))

    def raise_if_any(self) -> None:
        if self.lines:
            raise self.error()


_JINJA_PROBES = frozenset({"unsafe_callable", "alters_data", "jinja_pass_arg"})


class AnyValue(str):
    """A stand-in task value: text that also takes arithmetic, comparison, indexing and iteration.

    The trial render cannot know a real task's values, so nothing a template does with one may fail
    there; every other render error is the template's own and fails the load.
    """

    def __getattr__(self, name: str) -> AnyValue:
        # What jinja probes for (`__html__`, the sandbox's `unsafe_callable`) must find a plain string.
        if name.startswith("_") or name in _JINJA_PROBES:
            raise AttributeError(name)
        return self

    def __getitem__(self, key: object) -> AnyValue:
        return self

    def __iter__(self) -> Iterator[AnyValue]:
        return iter((self, self))  # two, so `{% for key, value in task.x.items() %}` unpacks

    def __call__(self, *args: object, **kwargs: object) -> AnyValue:
        return self

    def _same(self, *args: object) -> AnyValue:
        return self

    def _true(self, other: object) -> bool:
        return True

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _same
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _same
    __pow__ = __rpow__ = __neg__ = __pos__ = __abs__ = __round__ = _same
    __lt__ = __le__ = __gt__ = __ge__ = _true

    def __int__(self) -> int:
        return 0

    def __float__(self) -> float:
        return 0.0


class AnyTask(dict):
    """A stand-in task context for the load-time trial render: every field exists, as an AnyValue."""

    def __getattr__(self, name: str) -> AnyValue:
        return AnyValue(f"<task.{name}>")

    def __getitem__(self, name: str) -> AnyValue:
        return AnyValue(f"<task.{name}>")

    def get(self, name: str, default: object = None) -> AnyValue:
        return self[name]

    def __contains__(self, name: object) -> bool:
        return True


def error_line(error: BaseException) -> str:
    """` (template, line N)` of the innermost template frame of a jinja error, or ''."""
    traceback, line = error.__traceback__, ""
    while traceback is not None:
        name = traceback.tb_frame.f_code.co_filename
        if not name.endswith(".py"):
            line = f" ({name}, line {traceback.tb_lineno})"
        traceback = traceback.tb_next
    return line


def render_problem(error: Exception) -> str:
    """One line saying why a template failed to render: jinja's own message, else the Python error."""
    if isinstance(error, SecurityError):
        text = f"refused by the template sandbox: {error}"
    elif isinstance(error, jinja2.TemplateError):
        text = error.message or str(error)
    else:
        text = f"{type(error).__name__}: {error}"
    return text.replace("\n", " ")


INVALID = object()  # what load_yaml returns for a file that does not parse (the problem is recorded)


class _NoAliasLoader(yaml.SafeLoader):
    """Safe YAML without anchors and aliases: harness files are model-written, and nested aliases
    (a "billion laughs") expand exponentially when a demo is rendered into a prompt."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed in harness files", self.peek_event().start_mark
            )
        return super().compose_node(parent, index)


def load_yaml(files: Mapping[str, str], name: str, problems: Problems) -> Any:
    """The parsed file; an empty file is `{}`, an unparsable one INVALID."""
    try:
        value = yaml.load(files[name], Loader=_NoAliasLoader)  # a SafeLoader: no Python tags
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        problems.add(name, where, f"invalid YAML: {problem}")
        return INVALID
    return {} if value is None else value


def check_graph(config: HarnessConfig, files: Mapping[str, str], problems: Problems) -> None:
    agents = config.agents
    if config.entry not in agents:
        problems.add(
            HARNESS_FILE, "entry", f"no agent {config.entry!r}; agents: {', '.join(agents) or 'none'}"
        )
    for name, agent in agents.items():
        field = f"agents.{name}"
        if not name.isidentifier():
            problems.add(
                HARNESS_FILE, field, "an agent name must be a Python-style identifier (letters, digits, _)"
            )
        if agent.prompt not in files:
            problems.add(HARNESS_FILE, f"{field}.prompt", f"file {agent.prompt} not found")
        for i, target in enumerate(agent.delegates):
            if target not in agents:
                problems.add(
                    HARNESS_FILE,
                    f"{field}.delegates[{i}]",
                    f"no agent {target!r}; agents: {', '.join(agents)}",
                )
            elif target == name:
                problems.add(HARNESS_FILE, f"{field}.delegates[{i}]", "an agent cannot delegate to itself")
        for i, skill in enumerate(agent.skills):
            if f"skills/{skill}.md" not in files:
                problems.add(
                    HARNESS_FILE, f"{field}.skills[{i}]", f"no skill {skill!r} (skills/{skill}.md not found)"
                )
        for i, demo in enumerate(agent.demos):
            if f"demos/{demo}.yaml" not in files:
                problems.add(
                    HARNESS_FILE, f"{field}.demos[{i}]", f"no demo {demo!r} (demos/{demo}.yaml not found)"
                )
        check_demo_pool(name, agent, files, problems)
    cycle = find_cycle(agents)
    if cycle:
        problems.add(HARNESS_FILE, f"agents.{cycle[0]}.delegates", f"delegation cycle {' -> '.join(cycle)}")


def check_demo_pool(name: str, agent: AgentConfig, files: Mapping[str, str], problems: Problems) -> None:
    """Pool names that exist, once each, and a k that the pool (less the fixed demos) can fill."""
    field = f"agents.{name}"
    for i, demo in enumerate(agent.demo_pool):
        if f"demos/{demo}.yaml" not in files:
            problems.add(
                HARNESS_FILE, f"{field}.demo_pool[{i}]", f"no demo {demo!r} (demos/{demo}.yaml not found)"
            )
        elif demo in agent.demo_pool[:i]:
            problems.add(HARNESS_FILE, f"{field}.demo_pool[{i}]", f"{demo!r} is listed twice")
    candidates = set(agent.demo_pool) - set(agent.demos)
    if agent.retrieve_demos > len(candidates):
        problems.add(
            HARNESS_FILE,
            f"{field}.retrieve_demos",
            f"{agent.retrieve_demos} is more than the {len(candidates)} demo_pool demos not already in demos",
        )


def find_cycle(agents: Mapping[str, AgentConfig]) -> list[str] | None:
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> list[str] | None:
        state[name] = "open"
        for target in agents[name].delegates:
            if target not in agents or target == name:
                continue
            if state.get(target) == "open":
                return [*path[path.index(target) :], target] if target in path else [name, target]
            if target not in state:
                found = visit(target, [*path, target])
                if found:
                    return found
        state[name] = "done"
        return None

    for name in agents:
        if name not in state:
            found = visit(name, [name])
            if found:
                return found
    return None


def load_tools(
    files: Mapping[str, str], config: HarnessConfig, world: World, problems: Problems
) -> dict[str, dict[str, ToolOverride]]:
    """tools.yaml: per agent, a list of world tool names or a mapping name -> override."""
    tools: dict[str, dict[str, ToolOverride]] = {name: {} for name in config.agents}
    if TOOLS_FILE not in files:
        return tools
    raw = load_yaml(files, TOOLS_FILE, problems)
    if raw is INVALID:
        return tools
    if not isinstance(raw, dict):
        problems.add(
            TOOLS_FILE, "", "expected a mapping: agent name -> its tools (a list, or name -> override)"
        )
        return tools
    reserved = {REPLY_TOOL, SKILL_TOOL}
    for agent, entries in raw.items():
        if agent not in config.agents:
            problems.add(
                TOOLS_FILE,
                str(agent),
                f"no agent {agent!r} in {HARNESS_FILE}; agents: {', '.join(config.agents)}",
            )
            continue
        if isinstance(entries, list):
            if not all(isinstance(entry, str) for entry in entries):
                problems.add(
                    TOOLS_FILE,
                    agent,
                    "a list holds tool names only; to override a tool, make the entry a mapping name -> override",
                )
                continue
            entries = dict.fromkeys(entries)
        if not isinstance(entries, dict):
            problems.add(
                TOOLS_FILE, agent, "expected a list of tool names or a mapping tool name -> override"
            )
            continue
        for tool_name, override in entries.items():
            field = f"{agent}.{tool_name}"
            tool = world.tools.get(str(tool_name))
            if tool is None:
                problems.add(
                    TOOLS_FILE,
                    field,
                    f"agent {agent!r}: world {world.name!r} has no tool {tool_name!r}; "
                    f"its tools: {', '.join(world.tools)}",
                )
                continue
            if tool_name in reserved or str(tool_name).startswith(DELEGATE_PREFIX):
                problems.add(
                    TOOLS_FILE, field, f"{tool_name!r} is a name the runtime reserves for its own tools"
                )
                continue
            try:
                parsed = ToolOverride.model_validate(override or {})
            except ValidationError as error:
                problems.add_validation(TOOLS_FILE, error, prefix=field)
                continue
            for i, required in enumerate(parsed.requires):
                if required == tool_name:
                    problems.add(TOOLS_FILE, f"{field}.requires[{i}]", "a tool cannot require itself")
                elif required not in entries:
                    problems.add(
                        TOOLS_FILE,
                        f"{field}.requires[{i}]",
                        f"{required!r} is not among the tools tools.yaml gives agent {agent!r}",
                    )
            known = tool.parameters_schema().get("properties", {})
            for parameter in parsed.parameters:
                if parameter not in known:
                    problems.add(
                        TOOLS_FILE,
                        f"{field}.parameters.{parameter}",
                        f"tool {tool_name!r} has no parameter {parameter!r}; it has: {', '.join(known) or 'none'}",
                    )
            tools[agent][tool_name] = parsed
    return tools


def load_demos(files: Mapping[str, str], problems: Problems) -> dict[str, Demo]:
    """demos/<name>.yaml by name."""
    demos = {}
    for path in sorted(files):
        if not (path.startswith("demos/") and path.endswith(".yaml") and path.count("/") == 1):
            continue
        raw = load_yaml(files, path, problems)
        if raw is INVALID:
            continue
        try:
            demos[path[len("demos/") : -len(".yaml")]] = Demo.model_validate(raw)
        except ValidationError as error:
            problems.add_validation(path, error)
    return demos


def check_agent_references(
    config: HarnessConfig,
    tools: Mapping[str, Mapping[str, ToolOverride]],
    demos: Mapping[str, Demo],
    problems: Problems,
) -> None:
    """Stop tools the agent must see, and demo calls the agent must be able to make."""
    for name, agent in config.agents.items():
        surface = set(tools[name]) | {f"{DELEGATE_PREFIX}{d}" for d in agent.delegates}
        if agent.skill_tool and agent.skills:
            surface.add(SKILL_TOOL)
        for i, stop in enumerate(agent.stop_tools):
            if stop not in tools[name]:
                problems.add(
                    HARNESS_FILE,
                    f"agents.{name}.stop_tools[{i}]",
                    f"{stop!r} is not among the tools tools.yaml gives agent {name!r}",
                )
        for demo_name in dict.fromkeys([*agent.demos, *agent.demo_pool]):
            demo = demos.get(demo_name)
            for j, step in enumerate(demo.steps if demo else []):
                if step.call is not None and step.call not in surface:
                    problems.add(
                        f"demos/{demo_name}.yaml",
                        f"steps[{j}].call",
                        f"agent {name!r} (which shows this demo) has no tool {step.call!r}; "
                        f"its tools: {', '.join(sorted(surface)) or 'none'}",
                    )


def check_templates(harness: Harness, files: Mapping[str, str], problems: Problems) -> None:
    """Compile every template, then render each agent's prompt once per protocol with a stand-in task."""
    broken = set()
    for name in files:
        if not name.endswith(".j2"):
            continue
        try:
            harness.template(name)
        except jinja2.TemplateSyntaxError as error:
            broken.add(name)
            problems.add(name, f"line {error.lineno}", f"template syntax: {error.message}")
    for agent_name, agent in harness.agents.items():
        if agent.prompt in broken or agent.prompt not in files:
            continue
        for protocol in ("text", "native"):
            context = {
                "agent": agent_name,
                "harness": harness.name,
                "documents": harness.world.documents,
                "task": AnyTask(),
                "skills": {s: harness.skills[s] for s in agent.skills},
                "tools": "",
                "demos": "",
                "protocol": protocol,
                "now": "2026-01-01 00:00:00",
            }
            try:
                harness.template(agent.prompt).render(context)
            except Exception as error:  # any: a template that cannot render must fail here, not mid-batch
                hint = (
                    f" (variables: {', '.join(TEMPLATE_VARIABLES)})"
                    if isinstance(error, jinja2.UndefinedError)
                    else ""
                )
                problems.add(
                    agent.prompt,
                    f"agent {agent_name}, {protocol} protocol{error_line(error)}",
                    render_problem(error) + hint,
                )
                break
