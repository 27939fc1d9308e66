"""How an agent's conversation becomes a model request, and a model answer becomes actions.

The runtime keeps one protocol-neutral conversation (turns) per agent run; a protocol renders
it for the model and parses what comes back:

- `native`: OpenAI-style `tools` and `tool_calls`, for chat models.
- `text`: for base and small models, which only continue text. The whole prompt is one
  transcript; every step the model takes is one line
  `Action: {"tool": "get_order", "args": {"order_id": "ORD-1001"}}`, answered by the runtime
  with `Observation: {...}`, and the answer is the action `{"tool": "reply", "args":
  {"message": "..."}}`. The prompt ends with `Action:` and generation stops at the newline,
  so the model writes exactly one action per call. Demos are rendered in the same format, so
  a base model can copy them. A reply whose message was cut before it closed (at the token limit,
  often in a loop of one sentence, or at a newline it wrote) is read as the reply it began: what it
  said before it repeated itself, less the unfinished sentence (`cut_reply`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from atoll.worlds import compact_json

from ._format import REPLY_TOOL, Demo, ProtocolName
from ._tools import ToolSpec
from .models import ModelParams, ModelResponse

MALFORMED = "malformed_action"


@dataclass
class UserTurn:
    text: str


@dataclass
class Call:
    """One tool call the model asked for; `error` says why its arguments could not be read."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw: str = ""  # the arguments as the model wrote them (native protocol)
    error: str | None = None


@dataclass
class AssistantTurn:
    """What the model said: a reply (`text` only), tool calls (with optional `text`), or unusable `raw`."""

    text: str | None = None
    calls: list[Call] = field(default_factory=list)
    raw: str | None = None


@dataclass
class ResultTurn:
    call_id: str
    name: str
    content: str


@dataclass
class ErrorTurn:
    """The model's whole answer was unusable; the message tells it how to recover."""

    message: str


@dataclass
class NoticeTurn:
    """A word from the runtime, not an answer to any call (a guard's reminder to reply)."""

    message: str


Turn = UserTurn | AssistantTurn | ResultTurn | ErrorTurn | NoticeTurn


@dataclass
class Parsed:
    """A model answer read by a protocol: tool calls (maybe with a thought), a reply, or an error."""

    calls: list[Call] = field(default_factory=list)
    thought: str | None = None
    reply: str | None = None
    error: str | None = None
    raw: str = ""
    read_as: str | None = None  # how an answer not read as written was read, for the transcript


def error_json(kind: str, message: str) -> str:
    return compact_json({"error": {"type": kind, "message": message}})


def demo_turns(demo: Demo, n: int = 1) -> list[Turn]:
    """Demo number `n` as the conversation it shows, so either protocol renders it like a live one."""
    turns: list[Turn] = []
    for i, step in enumerate(demo.steps):
        if step.user is not None:
            turns.append(UserTurn(step.user))
        elif step.reply is not None:
            turns.append(AssistantTurn(text=step.reply))
        elif step.call is not None:
            call = Call(id=f"demo{n}_{i}", name=step.call, arguments=step.args, raw=_compact(step.args))
            turns.append(AssistantTurn(calls=[call]))
            # Written as the runtime writes a live result, so a demo reads like the real thing.
            content = compact_json({"error": step.error} if step.error is not None else step.result)
            turns.append(ResultTurn(call.id, step.call, content))
    return turns


def choose_tools(params: ModelParams, tool_choice: str, has_tools: bool, called: bool) -> ModelParams:
    """The agent's sampling with its `tool_choice` applied: a call is required (`required`, or `first`
    until one of its calls has succeeded or it delegated, `called`)."""
    if has_tools and (tool_choice == "required" or (tool_choice == "first" and not called)):
        return params.model_copy(update={"tool_choice": "required"})
    return params


def without_null_extras(calls: list[Call], specs: dict[str, ToolSpec]) -> list[Call]:
    """The calls with null-valued arguments the tool does not take dropped: small models fill in the
    optional fields of other tools with null (`"amount": null` on a lookup), which says nothing but
    fails validation. Evaluation and serving both read calls through this."""
    cleaned = []
    for call in calls:
        spec = specs.get(call.name)
        taken = spec.parameters.get("properties", {}) if spec is not None else None
        if taken is None or not call.arguments or call.error is not None:
            cleaned.append(call)
            continue
        kept = {name: value for name, value in call.arguments.items() if value is not None or name in taken}
        if len(kept) == len(call.arguments):
            cleaned.append(call)
            continue
        raw = json.dumps(kept, ensure_ascii=False)
        cleaned.append(Call(id=call.id, name=call.name, arguments=kept, raw=raw))
    return cleaned


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _one_line(text: str) -> str:
    return " ".join(text.split())


class TextProtocol:
    """One JSON action per line, for models that only continue text (see the module docstring)."""

    name: ProtocolName = "text"
    prefix = "Action:"
    observation = "Observation:"
    user = "User:"
    example_header = "Example {n}"
    live_header = "Conversation"
    raw_limit = 300  # characters of an unusable answer echoed back to the model
    how_to_reply = f"with the {REPLY_TOOL} tool"

    def params(self, params: ModelParams) -> ModelParams:
        stop = list(params.stop or [])
        if "\n" not in stop:
            stop.append("\n")
        return params.model_copy(update={"stop": stop})

    def tools(self, specs: list[ToolSpec]) -> list[dict[str, Any]] | None:
        return None

    def render_tools(self, specs: list[ToolSpec]) -> str:
        reply = ToolSpec(
            name=REPLY_TOOL,
            description="Send your answer (to the user, or to the agent that asked you) and end your turn",
            parameters={"properties": {"message": {}}},
            required=("message",),
        )
        rules = (
            f'Each step is one line: {self.prefix} {{"tool": "<name>", "args": {{...}}}}. '
            f"The result comes back as {self.observation} {{...}}. End with the {REPLY_TOOL} tool."
        )
        return "\n".join([rules, *(spec.line() for spec in [*specs, reply])])

    def render_demos(self, demos: list[Demo], first: int = 1) -> str:
        return "\n\n".join(
            f"{self.example_header.format(n=n)}\n{self.transcript(demo_turns(demo))}"
            for n, demo in enumerate(demos, first)
        )

    def transcript(self, turns: list[Turn]) -> str:
        lines = []
        for turn in turns:
            if isinstance(turn, UserTurn):
                lines.append(f"{self.user} {_one_line(turn.text)}")
            elif isinstance(turn, AssistantTurn):
                lines.append(f"{self.prefix} {self._action(turn)}")
            elif isinstance(turn, ResultTurn):
                lines.append(f"{self.observation} {_one_line(turn.content)}")
            elif isinstance(turn, NoticeTurn):
                lines.append(f"{self.observation} {_compact({'notice': _one_line(turn.message)})}")
            else:
                lines.append(f"{self.observation} {error_json(MALFORMED, turn.message)}")
        return "\n".join(lines)

    def _action(self, turn: AssistantTurn) -> str:
        if turn.raw is not None:
            return _one_line(turn.raw)[: self.raw_limit]
        if turn.calls:
            call = turn.calls[0]
            return _compact({"tool": call.name, "args": call.arguments or {}})
        return _compact({"tool": REPLY_TOOL, "args": {"message": _one_line(turn.text or "")}})

    def example_messages(self, demos: list[Demo], first: int = 1) -> list[dict[str, Any]]:
        """Demos sent after the prompt (the retrieved ones: fixed demos are in the prompt) as one text."""
        return [{"role": "system", "content": self.render_demos(demos, first)}] if demos else []

    def messages(
        self, system: str, turns: list[Turn], examples: list[dict[str, Any]] | None = None
    ) -> list[dict[str, Any]]:
        # The local provider joins contents with newlines: the model sees one continuous text.
        live = {"role": "user", "content": f"{self.transcript(turns)}\n{self.prefix}"}
        if not examples:
            return [{"role": "system", "content": f"{system.rstrip()}\n\n{self.live_header}"}, live]
        shown = "\n\n".join(example["content"].rstrip() for example in examples)
        return [
            {"role": "system", "content": f"{system.rstrip()}\n"},
            {"role": "system", "content": f"{shown}\n\n{self.live_header}"},
            live,
        ]

    def parse(self, response: ModelResponse, call_id: str) -> Parsed:
        raw = (response.content or "").strip()
        text = raw.removeprefix(self.prefix).strip()
        shape = f'write one line {self.prefix} {{"tool": "<name>", "args": {{...}}}}'
        start = text.find("{")
        if start < 0:
            return Parsed(error=f"no JSON action found; {shape}", raw=raw)
        try:
            action, _ = json.JSONDecoder().raw_decode(text, start)
        except json.JSONDecodeError as error:
            message = cut_reply(text[start:])
            if message is not None:
                read_as = f"a {REPLY_TOOL} cut before its message closed, read up to its last whole sentence"
                return Parsed(reply=message, raw=raw, read_as=read_as)
            return Parsed(error=f"the action is not valid JSON ({error.msg}); {shape}", raw=raw)
        if not isinstance(action, dict) or not isinstance(action.get("tool"), str):
            return Parsed(error=f'the action needs a "tool" name; {shape}', raw=raw)
        arguments = action.get("args", action.get("arguments", {}))
        if not isinstance(arguments, dict):
            return Parsed(error='"args" must be a JSON object of argument names and values', raw=raw)
        if action["tool"] == REPLY_TOOL:
            message = arguments.get("message")
            if not isinstance(message, str) or not message.strip():
                return Parsed(error=f'{REPLY_TOOL} needs {{"message": "<text>"}}', raw=raw)
            return Parsed(reply=message.strip(), raw=raw)
        return Parsed(
            calls=[Call(id=call_id, name=action["tool"], arguments=arguments, raw=_compact(arguments))],
            raw=raw,
        )


_CUT_REPLY = re.compile(
    rf'\{{\s*"tool"\s*:\s*"{REPLY_TOOL}"\s*,\s*"args"\s*:\s*\{{\s*"message"\s*:\s*"(?P<body>.*)', re.S
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def cut_reply(action: str) -> str | None:
    """The message of a reply action that stops before its JSON closed, without its repeats (see
    `without_repeats`); None when `action` is no such reply or its message is empty."""
    match = _CUT_REPLY.match(action)
    if match is None:
        return None
    body = match["body"]
    try:  # the message closed and only the braces are missing
        message, _ = json.JSONDecoder().raw_decode(f'"{body}')
    except json.JSONDecodeError:
        body = re.sub(r"\\(u[0-9a-fA-F]{0,3})?$", "", body)  # an escape cut in the middle
        try:
            message = json.loads(f'"{body}"')
        except json.JSONDecodeError:
            message = body
    return without_repeats(message) or None


def without_repeats(text: str) -> str:
    """`text` up to the first sentence it says again, and without an unfinished last sentence when a
    whole one comes before it: what a model said before it fell into a loop and was cut."""
    kept: list[str] = []
    seen: set[str] = set()
    for sentence in _SENTENCE_END.split(text.strip()):
        key = " ".join(sentence.split()).casefold()
        if key in seen:
            return " ".join(kept)
        seen.add(key)
        kept.append(sentence)
    if len(kept) > 1 and not kept[-1].rstrip().endswith((".", "!", "?")):
        kept.pop()
    return " ".join(kept)


class NativeProtocol:
    """OpenAI-style tool calling: schemas in `tools`, calls in `tool_calls`, results as `tool` messages."""

    name: ProtocolName = "native"
    how_to_reply = "in a message, without calling a tool"

    def params(self, params: ModelParams) -> ModelParams:
        return params

    def tools(self, specs: list[ToolSpec]) -> list[dict[str, Any]] | None:
        return [spec.schema() for spec in specs] or None

    def render_tools(self, specs: list[ToolSpec]) -> str:
        return "\n".join(spec.line() for spec in specs)

    def render_demos(self, demos: list[Demo], first: int = 1) -> str:
        """What the prompt's `demos` says: the demos themselves are sent as earlier conversations
        (`example_messages`), real tool-call turns and results, the way a chat model was trained to
        read them, not as text lines it might copy into its answer."""
        if not demos:
            return ""
        titles = "; ".join(
            f"{n}. {demo.title}" if demo.title else f"{n}." for n, demo in enumerate(demos, first)
        )
        return f"The conversations before this one are worked examples ({titles})."

    def example_messages(self, demos: list[Demo], first: int = 1) -> list[dict[str, Any]]:
        """The demos as the conversations they show: user messages, tool calls, tool results, replies."""
        return [
            message
            for n, demo in enumerate(demos, first)
            for message in self._turn_messages(demo_turns(demo, n))
        ]

    def messages(
        self, system: str, turns: list[Turn], examples: list[dict[str, Any]] | None = None
    ) -> list[dict[str, Any]]:
        return [{"role": "system", "content": system}, *(examples or []), *self._turn_messages(turns)]

    @staticmethod
    def _turn_messages(turns: list[Turn]) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        for turn in turns:
            if isinstance(turn, UserTurn):
                messages.append({"role": "user", "content": turn.text})
            elif isinstance(turn, AssistantTurn) and turn.calls:
                calls = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw}}
                    for c in turn.calls
                ]
                messages.append({"role": "assistant", "content": turn.text, "tool_calls": calls})
            elif isinstance(turn, AssistantTurn):
                content = turn.text if turn.raw is None else turn.raw
                if content:
                    messages.append({"role": "assistant", "content": content})
            elif isinstance(turn, ResultTurn):
                messages.append({"role": "tool", "tool_call_id": turn.call_id, "content": turn.content})
            else:  # an error or a notice: the runtime speaking
                messages.append({"role": "user", "content": f"(runtime) {turn.message}"})
        return messages

    def parse(self, response: ModelResponse, call_id: str) -> Parsed:
        content = (response.content or "").strip() or None
        if not response.tool_calls:
            if content is None:
                return Parsed(error="the answer was empty: reply to the user or call a tool", raw="")
            return Parsed(reply=content, raw=content)
        calls, seen = [], set()
        for i, tool_call in enumerate(response.tool_calls):
            identifier = tool_call.id if tool_call.id and tool_call.id not in seen else f"{call_id}_{i}"
            seen.add(identifier)
            try:
                arguments = json.loads(tool_call.arguments or "{}")
                error = None if isinstance(arguments, dict) else "the arguments must be a JSON object"
            except json.JSONDecodeError as exc:
                arguments, error = None, f"the arguments are not valid JSON ({exc.msg})"
            calls.append(
                Call(
                    id=identifier,
                    name=tool_call.name,
                    arguments=arguments if error is None else None,
                    raw=tool_call.arguments or "{}",
                    error=error,
                )
            )
        return Parsed(calls=calls, thought=content, raw=content or "")


PROTOCOLS: dict[ProtocolName, TextProtocol | NativeProtocol] = {
    "text": TextProtocol(),
    "native": NativeProtocol(),
}
