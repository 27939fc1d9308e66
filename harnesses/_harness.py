"""A loaded harness: its files, checked against each other and against the world they drive.

Loading does every check it can (YAML shapes, files that must exist, tool names the world
must have, the delegation graph, templates that must compile and render) so that a broken
harness, handwritten or mutated by the optimizer, fails at once with every problem named by
file and field, never halfway through a batch of episodes.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError
from pydantic import ValidationError

from atoll.worlds import World, WorldError, get_world

from . import _checks as checks
from ._checks import HARNESS_FILE, Problems, error_line, render_problem
from ._files import HarnessError, bad_name, content_hash, read_tree, write_tree
from ._format import AgentConfig, Demo, HarnessConfig, ProtocolName, ToolOverride
from .models import ModelParams, local_protocol


class _FileLoader(jinja2.BaseLoader):
    """Templates from the harness's files; includes (`{% include "skills/x.md" %}`) resolve the same way."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.files = files

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Any]:
        if template not in self.files:
            raise jinja2.TemplateNotFound(template)
        # The name doubles as the code's filename, so a render error can say which line failed.
        return self.files[template], template, lambda: True


# The largest string or list a template's `*` may build, and the largest exponent of an integer `**`.
MAX_REPEAT = 1_000_000
MAX_EXPONENT = 1_000


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """jinja2's sandbox, plus bounds on `*` and `**`: `{{ 'x' * 10**10 }}` in a model-written prompt
    must be a load error, not a machine out of memory."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if (
            operator == "**"
            and isinstance(right, int)
            and isinstance(left, int)
            and abs(right) > MAX_EXPONENT
        ):
            raise SecurityError(f"exponent {right} is above the template limit of {MAX_EXPONENT}")
        if operator == "*":
            for sequence, count in ((left, right), (right, left)):
                repeats = isinstance(sequence, str | list | tuple) and isinstance(count, int)
                if repeats and len(sequence) * count > MAX_REPEAT:
                    raise SecurityError(f"a repeat of {count} builds more than {MAX_REPEAT:,} items")
        return super().call_binop(context, operator, left, right)


class Harness:
    """A harness, validated. Build it with `load_harness(path)` or `Harness.from_files(files)`."""

    def __init__(
        self,
        *,
        config: HarnessConfig,
        files: dict[str, str],
        source: str,
        world: World,
        tools: dict[str, dict[str, ToolOverride]],
        demos: dict[str, Demo],
    ) -> None:
        self.config = config
        self.source = source
        self.world = world
        self.tools = tools
        self.demos = demos
        self.hash = content_hash(files)
        self._files = files
        self.memo: dict[Any, Any] = {}  # derived data episodes reuse: tool specs, prompts, demo indexes
        # Sandboxed: the LLM proposer writes prompts from transcript text, so a template must not reach
        # Python internals (`cycler.__init__.__globals__.os`) nor mutate the values it is given.
        self._env = BoundedSandbox(
            loader=_FileLoader(files),
            undefined=jinja2.StrictUndefined,
            keep_trailing_newline=True,
            trim_blocks=True,
            lstrip_blocks=True,
            autoescape=False,
        )

    def __repr__(self) -> str:
        return f"Harness({self.name!r}, {len(self._files)} files, hash {self.hash[:12]})"

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def entry(self) -> str:
        return self.config.entry

    @property
    def agents(self) -> dict[str, AgentConfig]:
        return self.config.agents

    @property
    def skills(self) -> dict[str, str]:
        """skills/<name>.md texts by name."""
        return {
            path[len("skills/") : -len(".md")]: text
            for path, text in self._files.items()
            if path.startswith("skills/") and path.endswith(".md") and path.count("/") == 1
        }

    # -- as files -------------------------------------------------------------------------------

    def files(self) -> dict[str, str]:
        """Relative path -> text: everything the harness is, ready to mutate and reload."""
        return dict(self._files)

    @classmethod
    def from_files(cls, files: Mapping[str, str], *, source: str = "", world: World | None = None) -> Harness:
        """Validate `files` as a harness. `source` prefixes file names in errors; `world` skips the import."""
        return _build(dict(files), source=source, world=world)

    def with_files(self, changes: Mapping[str, str | None]) -> Harness:
        """A new harness with some files replaced, added, or (mapped to None) removed; validated."""
        files = self.files()
        for name, text in changes.items():
            if text is None:
                files.pop(name, None)
            else:
                files[name] = text
        return _build(files, source=self.source, world=self.world)

    def write(self, path: Path | str) -> None:
        """Write the harness to the folder `path`, replacing it whole (see `write_tree`)."""
        write_tree(self._files, Path(path))

    # -- what the runtime asks ------------------------------------------------------------------

    def agent(self, name: str) -> AgentConfig:
        try:
            return self.config.agents[name]
        except KeyError:
            raise HarnessError(
                f"harness {self.name!r} has no agent {name!r}; it has {', '.join(self.agents)}"
            ) from None

    def params_for(self, agent: str) -> ModelParams:
        """Sampling parameters: the model layer's defaults, then harness.yaml's, then the agent's."""
        return self.agent(agent).params.over(self.config.params.over(ModelParams()))

    def protocol_for(self, agent: str, model_name: str) -> ProtocolName:
        """The agent's own `protocol`, else the first `protocols` pattern matching the model's name,
        else what an embedded model's description says (text for a base model), else native."""
        own = self.agent(agent).protocol
        if own is not None:
            return own
        for pattern, protocol in self.config.protocols.items():
            if fnmatch.fnmatchcase(model_name, pattern):
                return protocol
        return local_protocol(model_name) or "native"

    def template(self, name: str) -> jinja2.Template:
        """A compiled template of the harness (StrictUndefined: a missing variable is an error)."""
        return self._env.get_template(name)

    def render_prompt(self, agent: str, context: Mapping[str, Any]) -> str:
        """The agent's system prompt rendered with `context` (see TEMPLATE_VARIABLES).

        Any failure is a HarnessError naming file and line: a real task's values can break a template
        that passed the load-time trial render, and callers must be able to catch that as a harness fault.
        """
        template_name = self.agent(agent).prompt
        try:
            return self.template(template_name).render(context)
        except Exception as error:
            raise HarnessError(
                f"{self._label(template_name)}{error_line(error)}: {render_problem(error)}"
            ) from None

    def _label(self, file: str) -> str:
        return f"{self.source}/{file}" if self.source else file


def load_harness(path: Path | str, *, world: World | None = None) -> Harness:
    """Read and validate the harness folder `path`; errors name the file and the field."""
    path = Path(path)
    return _build(read_tree(path), source=str(path), world=world)


def _build(files: dict[str, str], *, source: str, world: World | None) -> Harness:
    problems = Problems(source)
    for name in files:
        if bad_name(name):
            problems.add(name, "", bad_name(name))
    if HARNESS_FILE not in files:
        problems.add(HARNESS_FILE, "", "not found: a harness folder needs a harness.yaml")
    problems.raise_if_any()
    raw = checks.load_yaml(files, HARNESS_FILE, problems)
    problems.raise_if_any()
    try:
        config = HarnessConfig.model_validate(raw)
    except ValidationError as error:
        problems.add_validation(HARNESS_FILE, error)
        raise problems.error() from None
    try:
        world = get_world(world if world is not None else config.world, near=source or None)
    except (WorldError, ImportError) as error:
        problems.add(HARNESS_FILE, "world", f"cannot load world {config.world!r}: {error}")
        raise problems.error() from None
    checks.check_graph(config, files, problems)
    tools = checks.load_tools(files, config, world, problems)
    demos = checks.load_demos(files, problems)
    problems.raise_if_any()
    checks.check_agent_references(config, tools, demos, problems)
    harness = Harness(config=config, files=files, source=source, world=world, tools=tools, demos=demos)
    checks.check_templates(harness, files, problems)
    problems.raise_if_any()
    return harness
