"""The shapes of a harness's files, as pydantic models. The format in one place:

```
harness.yaml      name, world, suite (its eval suite's folder, relative to the harness; default:
                  evals/<world> in the nearest folder above), model (default model string), params (temperature, max_tokens, top_p,
                  stop, seed, timeout_s), protocols (model-name pattern -> native | text, first match
                  wins; unmatched: an embedded model's own, else native), limits (turns, tool_calls, tokens,
                  observation_chars), entry (the agent the user talks to) and agents:
                    <agent>: prompt (a template path), description (what callers read), protocol
                    (native | text; overrides `protocols`), model, params, delegates (agents it may
                    hand requests to; no cycles), demos (names in demos/, in the order shown),
                    demo_pool and retrieve_demos (see below), skills (names in skills/), skill_tool
                    (offer load_skill), stop_tools, rules and guards (see below)
tools.yaml        <agent>: a list of world tool names, or a mapping
                    <tool>: {description: ..., parameters: {<parameter>: description},
                             requires: [<tool>, ...], fields: [<path>, ...]}
                  The model reads the override; the world's tool still runs and validates.
                  `requires` names tools of the same agent; it acts only with guards.preconditions.
                  `fields` projects the result the agent reads (see below).
prompts/*.md.j2   jinja2 in a sandbox (no Python internals, no mutating values: the proposer writes
                  these from model text), StrictUndefined, `{% include "skills/x.md" %}` works.
                  Loading renders each prompt once with a stand-in task; any error there fails the
                  load. Variables: agent, harness, documents (the world's, e.g. documents.policy),
                  task (the task context), skills (the agent's, by name), tools and demos (rendered
                  for the protocol), protocol ("native" | "text"), now (the instance clock).
skills/*.md       documents an agent's prompt includes, or loads with the load_skill tool.
demos/*.yaml      title, steps: [{user: ...}, {call: tool, args: {...}, result: ... | error: {...}},
                  {reply: ...}]: a worked example, shown in the agent's protocol.
```

Settings that help small models (all off by default; off, prompts and behaviour are unchanged):

```
agents:
  front:
    demos: [greeting]                    # always shown, first
    demo_pool: [refund, track, cancel]   # retrieval picks from these
    retrieve_demos: 2                    # k: per episode, the k pool demos most like the request
    rules:                               # appended to the system prompt under "Rules:"
      - Look the order up before you answer.
    guards: {repeat_notice: true, reply_nudge: true, preconditions: true, look_first: true,
             grounded_args: true}
    tool_choice: first                   # auto (default) | first | required
```

- Retrieval ranks the pool (less any name already in `demos`) by BM25 over each demo's title,
  user turns and called tool names, against the message that opens the agent's run (the user's
  first message; for a sub-agent, the first request delegated to it), ties broken by name. The
  `demos` variable shows the fixed demos; the k retrieved follow the whole prompt as a message of
  their own, the most similar last (a base model copies the last example), so the prompt stays
  the same for every task and a local model reads it once. k may not exceed the pool less the fixed demos.
- `rules` are one-line texts; each becomes a `- ` line under a `Rules:` heading at the end of the
  rendered system prompt, so a rule is added or removed without touching a template.
- `guards.repeat_notice`: a call identical (tool and arguments) to one the same agent made
  successfully since the world last changed, or to one that failed with no success since, does
  not run again; the agent is told to use the earlier result (shown again in the error's
  `details`) or reply (error type `repeat_call`).
- `guards.reply_nudge`: before the episode's last model turn (limits.turns), and after an answer
  that is neither an action nor a reply, the agent is told to reply now with what it found.
- `guards.preconditions`: a tool with `requires` in tools.yaml is refused (error type
  `precondition_refused`, no world call) until one of the required tools has succeeded earlier
  in the episode; the observation names them.
- `guards.look_first`: the first reply an agent with tools makes before calling any of them is held
  back, once, and the agent is told to check the facts with a tool first (a `notice` event keeps
  the reply); never on the last turn, where holding it back would leave no reply at all.
- `guards.grounded_args`: a call is refused (error type `ungrounded_argument`, no world call) when a
  text argument quotes a run of three or more digits (a PIN, an id, a ZIP) that nobody told the agent:
  not the user, not the request handed to it, not a tool result, not its task context. A small model
  makes such values up, or copies them from a demo (see `harnesses/_grounding.py`).

- `tool_choice` (native protocol; the text protocol's reply is itself an action): `first` makes the
  agent's answers tool calls until one of its calls succeeds (a small model that narrates "I'll
  cancel it for you" instead of calling), then lets it choose; `required` makes every answer a call
  (for an agent whose run ends with a stop tool). An API model gets the provider's
  `tool_choice: required`; an embedded model's answer is opened with its call prefix
  (`<tool_call>\n{"name": "`), which costs nothing.

`Episode.patterns` counts the failures these settings address (see `harnesses._episode`).

Result projection, per agent and tool in tools.yaml (off by default: the whole result is shown):

```
desk:
  get_order:
    fields: [id, status, items.sku, customer.name]
```

- The observation the agent reads of a successful call keeps only the listed fields: a name is a
  key of the result, a dotted path reaches into a nested mapping, and through a list (the result
  itself, or a field) into each of its elements. Listed fields a result lacks are left out; a path
  that meets a plain value (a null, a text) before its end keeps that value. Key order is the
  world's. The projection comes before the cut to limits.observation_chars.
- Only what the agent reads changes: the world's result, `Episode.calls`, the `tool_result` event,
  the diff and every grader see the whole result. Errors are shown whole, and a `repeat_call`
  notice shows the projected result the agent saw.
- A path is dot-separated non-empty names without spaces; the list is non-empty, with no duplicate
  and no path under another one listed (`items` already shows all of `items.sku`).

Every model forbids unknown keys, so a typo in a file fails at load time naming the field
instead of being silently ignored by the runtime. Every file is a regular UTF-8 text file: a
symbolic link is refused at load, since an accepted variant rewrites the files (the link would
become a copy, or a write through it would change a file outside the folder).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from .models import LOCAL_DEFAULT_MODEL, ModelParams

ProtocolName = Literal["native", "text"]
ToolChoice = Literal["auto", "first", "required"]

# Tool names the runtime adds itself; a world tool exposed under one of these would be shadowed.
REPLY_TOOL = "reply"
SKILL_TOOL = "load_skill"
DELEGATE_PREFIX = "delegate_to_"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ParamsOverride(_Strict):
    """Sampling parameters to set; unset ones keep the value from the level above."""

    temperature: float | None = None
    max_tokens: int | None = Field(None, ge=1)
    top_p: float | None = None
    stop: list[str] | None = None
    seed: int | None = None
    timeout_s: float | None = Field(None, gt=0)

    def over(self, base: ModelParams) -> ModelParams:
        # `null` in YAML means "not set here", never "no timeout" or "no temperature".
        return ModelParams.model_validate({**base.model_dump(), **self.model_dump(exclude_none=True)})


class Limits(_Strict):
    """When an episode is cut off; counted over the whole episode, every agent together."""

    turns: int = Field(12, ge=1, description="Model calls.")
    tool_calls: int = Field(16, ge=0, description="World tool calls, delegations and skill loads.")
    tokens: int | None = Field(None, ge=1, description="Prompt plus completion tokens; None: no limit.")
    observation_chars: int = Field(
        1500,
        ge=100,
        description="A longer tool result is cut to this many characters before the model sees it.",
    )


def _one_line(rule: str) -> str:
    # Each rule is one `- ` line of the prompt; a blank or multi-line rule would break that list.
    rule = rule.strip()
    if not rule or "\n" in rule:
        raise ValueError("a rule is one non-empty line of text")
    return rule


Rule = Annotated[str, AfterValidator(_one_line)]


def _field_path(path: str) -> str:
    # `items.sku`: names joined by dots; a blank part or whitespace would never match a result key.
    if any(not part or any(c.isspace() for c in part) for part in path.split(".")):
        raise ValueError(f"{path!r} is not a field path: give names joined by dots, like `id` or `items.sku`")
    return path


FieldPath = Annotated[str, AfterValidator(_field_path)]


class Guards(_Strict):
    """Runtime checks an agent may have turned on; each helps a small model finish its task."""

    repeat_notice: bool = Field(False, description="Do not rerun an identical successful call; say so.")
    reply_nudge: bool = Field(False, description="Tell the agent to reply before its last turn runs out.")
    preconditions: bool = Field(False, description="Refuse a tool until a tool it `requires` succeeded.")
    look_first: bool = Field(False, description="Hold back a reply made before any tool call, once; say so.")
    grounded_args: bool = Field(
        False, description="Refuse a call quoting digits (a PIN, an id) nobody told the agent; say so."
    )


class AgentConfig(_Strict):
    """One agent of the graph. Which world tools it sees is in tools.yaml, under its name."""

    description: str = Field("", description="What a calling agent reads about it in the delegation tool.")
    prompt: str = Field(description="Its system prompt: a jinja2 template, relative to the harness folder.")
    protocol: ProtocolName | None = Field(None, description="None: chosen by model, see `protocols`.")
    model: str | None = None
    params: ParamsOverride = Field(default_factory=ParamsOverride)
    delegates: list[str] = Field(default_factory=list, description="Agents it may hand a request to.")
    demos: list[str] = Field(default_factory=list, description="Names in demos/, in the order shown.")
    skills: list[str] = Field(default_factory=list, description="Names in skills/ its prompt may use.")
    skill_tool: bool = Field(False, description="Offer a load_skill tool for its skills.")
    stop_tools: list[str] = Field(default_factory=list, description="Tools whose success ends its run.")
    demo_pool: list[str] = Field(default_factory=list, description="Names in demos/ retrieval picks from.")
    retrieve_demos: int = Field(
        0, ge=0, description="Show the k pool demos most similar to the opening request; 0: off."
    )
    rules: list[Rule] = Field(default_factory=list, description="One-line rules appended to the prompt.")
    guards: Guards = Field(default_factory=Guards)
    tool_choice: ToolChoice = Field(
        "auto",
        description="auto: the model chooses; first: its answers must be tool calls until one succeeds; "
        "required: always (native protocol only).",
    )


class HarnessConfig(_Strict):
    """harness.yaml."""

    name: str
    description: str = ""
    world: str
    suite: str | None = Field(
        None, description="The eval suite's folder, relative to this one; default: evals/<world> above it."
    )
    model: str = LOCAL_DEFAULT_MODEL
    params: ParamsOverride = Field(default_factory=ParamsOverride)
    # Which protocol an agent without its own `protocol` speaks: the first pattern (fnmatch) that
    # matches the model's name wins. Base models need the text protocol, chat models do best native.
    protocols: dict[str, ProtocolName] = Field(default_factory=dict)
    limits: Limits = Field(default_factory=Limits)
    entry: str
    agents: dict[str, AgentConfig]


class ToolOverride(_Strict):
    """What one agent is told about a world tool, replacing the world's own wording."""

    description: str | None = None
    parameters: dict[str, str] = Field(default_factory=dict, description="Parameter name -> description.")
    requires: list[str] = Field(
        default_factory=list, description="With guards.preconditions: one of these must succeed first."
    )
    fields: list[FieldPath] | None = Field(
        None,
        description="The result fields the agent reads (dotted paths); None: all. The world returns all.",
    )

    @field_validator("fields")
    @classmethod
    def _distinct_paths(cls, fields: list[str] | None) -> list[str] | None:
        if fields == []:
            raise ValueError(
                "an empty list would hide the whole result; leave `fields` out to show all of it"
            )
        for i, path in enumerate(fields or []):
            for other in (fields or [])[:i]:
                if path == other:
                    raise ValueError(f"{path!r} is listed twice")
                shorter, longer = sorted((path, other), key=len)
                if longer.startswith(shorter + "."):
                    raise ValueError(f"{longer!r} is inside {shorter!r}, which already shows all of it")
        return fields


class DemoStep(_Strict):
    """One step of a worked example: exactly one of `user`, `call` or `reply`."""

    user: str | None = None
    call: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    error: dict[str, Any] | None = None
    reply: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> DemoStep:
        kinds = [k for k in ("user", "call", "reply") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(
                f"a step has exactly one of user, call or reply (this one has {kinds or 'none'})"
            )
        if self.call is None and (self.args or self.result is not None or self.error is not None):
            raise ValueError("args, result and error belong to a `call` step")
        return self


class Demo(_Strict):
    """demos/<name>.yaml: a user message and the ideal tool calls, observations and replies."""

    title: str = ""
    steps: list[DemoStep] = Field(min_length=2)

    @model_validator(mode="after")
    def _starts_with_user(self) -> Demo:
        if self.steps[0].user is None:
            raise ValueError("a demo starts with a `user` step")
        return self
