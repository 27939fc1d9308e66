"""How a conversation becomes an embedded model's prompt, and how its written tool calls come back.

Two prompt formats (a model's description names one):

- `raw`: a base model continues text, so the prompt is the message contents joined by newlines,
  no role markers added; the caller's text protocol carries all the structure.
- `chat`: the messages and the tool schemas rendered by the chat template the GGUF carries, the
  way Hugging Face's `apply_chat_template` renders them (sandboxed jinja2, `tojson` without HTML
  escaping, tool-call arguments as objects), ending with the assistant's opening.

Either way the prompt comes in segments that the engine evaluates one after another and reuses
across calls: the first is the head every call of an agent shares (its system message, and for a
chat model the tool schemas the template puts beside it); a chat prompt is then cut at each
message, so a growing conversation only pays for its new messages.

A chat model writes tool calls as text; `parse_tool_calls` reads the `hermes` format
(`<tool_call>{"name": …, "arguments": {…}}</tool_call>`, Qwen2.5's) back into calls, so the
provider can answer with OpenAI-style `tool_calls` as a native chat model would.
"""

from __future__ import annotations

import ast
import contextlib
import itertools
import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

# -- prompts ---------------------------------------------------------------------------------------


def _text(content: Any) -> str | None:
    if isinstance(content, list):  # OpenAI-style content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content


def prompt_of(messages: list[dict[str, Any]]) -> str:
    """The text a base model completes: the contents joined by newlines, no role markers added."""
    return "\n".join(t for m in messages if (t := _text(m.get("content"))) is not None)


def raw_segments(messages: list[dict[str, Any]]) -> list[str]:
    """A raw prompt (`prompt_of`) cut after its first message and after each system message that
    follows it: the agent's prompt (shared by every task) and its retrieved examples (shared by
    every call of an episode) are each evaluated once, then the conversation."""
    parts = [(m.get("role"), t) for m in messages if (t := _text(m.get("content"))) is not None]
    lead = 1 if len(parts) > 1 else 0
    while lead < len(parts) - 1 and parts[lead][0] == "system":
        lead += 1
    return [*(text + "\n" for _, text in parts[:lead]), "\n".join(text for _, text in parts[lead:])]


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None, **kwargs: Any) -> str:
    # jinja2's own `tojson` escapes <, >, & and ' for HTML, which a chat model never saw in training.
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, **kwargs)


def _raise(message: str) -> None:
    raise ValueError(f"the chat template refused the conversation: {message}")


def compile_template(source: str) -> Callable[..., str]:
    """A chat template (jinja2 source) as a function of (messages=…, tools=…, add_generation_prompt=…)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(source).render


def chat_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as chat templates expect them: text content, and tool-call arguments as objects
    (OpenAI sends them as JSON text; a template writes them with `tojson`)."""
    shaped = []
    for message in messages:
        message = dict(message)
        content = _text(message.get("content"))
        message["content"] = "" if content is None else content
        if message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                function = dict(call.get("function") or {})
                arguments = function.get("arguments")
                if isinstance(arguments, str):
                    # Unreadable arguments are written as they came: the model sees its own slip.
                    with contextlib.suppress(json.JSONDecodeError):
                        function["arguments"] = json.loads(arguments)
                calls.append({**call, "function": function})
            message["tool_calls"] = calls
        shaped.append(message)
    return shaped


def render_chat(
    template: Callable[..., str],
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    *,
    add_generation_prompt: bool = True,
) -> str:
    """The prompt `template` makes of the conversation; ValueError if the template refuses it."""
    from jinja2 import TemplateError

    try:
        return template(
            messages=chat_messages(messages),
            tools=tools or None,
            add_generation_prompt=add_generation_prompt,
            bos_token="",
            eos_token="",
        )
    except TemplateError as exc:
        raise ValueError(f"the chat template failed on the conversation: {exc}") from exc


def chat_segments(
    template: Callable[..., str], messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> list[str]:
    """A chat prompt cut at message boundaries: joined, the segments are the whole prompt, and
    each cut is where the conversation's first k messages, rendered on their own, end. The first
    segment is the system message with the tool schemas beside it, the last the assistant's
    opening alone; a cut the template does not allow (it groups consecutive tool results into one
    turn, say) is skipped. A growing conversation keeps its earlier segments, so the engine can
    reuse what it evaluated for them: the newest message, cut from the opening, is read once,
    not again by the next call."""
    whole = render_chat(template, messages, tools)
    segments, position = [], 0
    for k in range(1, len(messages) + 1):
        head = render_chat(template, messages[:k], tools, add_generation_prompt=False)
        if position < len(head) < len(whole) and whole.startswith(head):
            segments.append(head[position:])
            position = len(head)
    segments.append(whole[position:])
    return segments


def prompt_segments(
    fmt: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    template: Callable[..., str] | None,
) -> list[str]:
    """The prompt in the model's format (`raw` or `chat`), as the segments the engine evaluates
    one after another; the last one is evaluated with the generation, and all before it can be
    reused by the next call that starts with them.

    A raw prompt is cut as `raw_segments` says: a prompt and a conversation are two segments, as
    the engine has always cut gemma's prompts, so its answers do not change.
    """
    if fmt == "raw":
        return raw_segments(messages)
    if template is None:
        raise ValueError("a chat-format model needs its chat template")
    return chat_segments(template, messages, tools)


# -- tool calls written as text ------------------------------------------------------------------

# How a hermes answer that must be a call begins: the model then only chooses the tool and its
# arguments. Free, unlike a grammar (Qwen 1.5B, the triage agent's first turns: 4/17 calls of an
# offered tool when free, 14/17 opened so).
HERMES_CALL_OPENING = '<tool_call>\n{"name": "'

_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.S)
_FENCE = re.compile(r"\A```[\w-]*[ \t]*\n?(.*?)\n?[ \t]*```\Z", re.S)
_decoder = json.JSONDecoder()
_LITERAL_LIMIT = 20_000  # characters: a tool call is far shorter, and the Python parser stays cheap
_PROSE_STARTS = (
    64  # braces tried as the start of a call inside prose: a call comes early, JSON-heavy text is cut short
)
_TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
_EMPTY_FENCE = re.compile(r"```[\w-]*\s*```")


@dataclass(frozen=True)
class TextToolCall:
    """A tool call read from a model's text; `arguments` is JSON text, as OpenAI sends it."""

    name: str
    arguments: str


def parse_tool_calls(text: str, tool_names: Collection[str]) -> tuple[str | None, list[TextToolCall]]:
    """(content, calls) of a chat model's answer written in the `hermes` format, or near it.

    - `<tool_call>{"name": …, "arguments": {…}}</tool_call>` blocks, any number, the last one
      maybe unclosed (cut at max_tokens or at the stop sequence): each readable block is a call,
      whatever its name (an unknown tool is the runtime's to report); the text around them is the
      content (a thought).
    - Without blocks, an answer that is nothing but such objects (bare, in a ```json fence, or a
      list of them) is read as calls: the leading objects that name one of `tool_names`, or that
      have the shape of a call (a tool-like name and `arguments`) whatever the name, so a call of a
      tool the agent is not offered is answered as unknown and the model can correct itself. JSON
      after them (a result the model invented for its own call) is dropped.
    - A call-shaped object inside prose ("Let me check. ```json {…}```", a call and then a
      sentence, doubled braces `{{…}}}}`) is a call too, and the prose its content.
    - Anything else, including a block whose JSON cannot be read and JSON that is not call-shaped
      (a reply that happens to be JSON), stays text: never an error.

    Small slips are forgiven: a missing closing brace or two, text after the object, single
    quotes (a Python dict), `parameters` for `arguments`, arguments given as JSON text, and the
    OpenAI shape `{"type": "function", "function": {…}}`.
    """
    if "<tool_call>" in text:
        calls: list[TextToolCall] = []
        kept: list[str] = []
        position = 0
        for block in _BLOCK.finditer(text):
            kept.append(text[position : block.start()])
            call = _call(_load_object(block.group(1)))
            if call is None:
                kept.append(block.group(0))
            else:
                calls.append(call)
            position = block.end()
        kept.append(text[position:])
        if calls:
            return "".join(kept).strip() or None, calls
        return text, []
    body = _unfence(text.strip())
    if values := _values(body):
        objects = [item for value in values for item in (value if isinstance(value, list) else [value])]
        calls = list(
            itertools.takewhile(
                lambda call: call is not None, (_offered_call(obj, tool_names) for obj in objects)
            )
        )
        if calls:  # JSON after the calls is the result the model imagined for them: the tool's own comes next
            return None, calls
    content, calls = _calls_in_prose(text)
    if calls:
        return content, calls
    single = _offered_call(_load_object(body), tool_names)  # one object with a slip (a missing brace)
    return (None, [single]) if single is not None else (text, [])


def _offered_call(obj: Any, tool_names: Collection[str]) -> TextToolCall | None:
    """A call, if `obj` names an offered tool or has the shape of a call whatever its name."""
    call = _call(obj)
    if call is None or (call.name not in tool_names and not _call_shaped(obj)):
        return None
    return call


def _call_shaped(obj: Any) -> bool:
    """{"name": <a tool-like identifier>, "arguments" (or "parameters"): {…}}: a call, not a reply."""
    if isinstance(obj, dict) and isinstance(obj.get("function"), dict) and "name" not in obj:
        obj = obj["function"]
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return False
    arguments = obj.get("arguments", obj.get("parameters"))
    return bool(_TOOL_NAME.fullmatch(obj["name"].strip())) and isinstance(arguments, dict | str)


def _calls_in_prose(text: str) -> tuple[str | None, list[TextToolCall]]:
    """The call-shaped objects written inside prose, and the prose around them as the content."""
    if len(text) > _LITERAL_LIMIT:
        return text, []
    calls: list[TextToolCall] = []
    kept: list[str] = []
    position = tried = 0
    while (start := text.find("{", position)) != -1 and tried < _PROSE_STARTS:
        tried += 1
        try:
            value, end = _decoder.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError):
            kept.append(text[position : start + 1])
            position = start + 1
            continue
        if not _call_shaped(value):
            kept.append(text[position:end])
            position = end
            continue
        kept.append(text[position:start])
        calls.append(_call(value))  # type: ignore[arg-type]  # call-shaped, so a call
        position = end
    if not calls:
        return text, []
    kept.append(text[position:])
    prose = _EMPTY_FENCE.sub("", "".join(kept)).strip(" \n{}`")
    return prose or None, calls


def _unfence(text: str) -> str:
    fenced = _FENCE.match(text)
    return fenced.group(1).strip() if fenced else text


def _load_object(text: str) -> Any:
    """The JSON object in `text`, forgiving the slips listed in `parse_tool_calls`; None if none."""
    text = _unfence(text.strip())
    if not text.startswith("{"):
        return None
    if text.startswith("{{"):  # doubled braces, as a template escapes them: the call is inside
        text = text[1:]
    for attempt in (text, text + "}", text + "}}"):
        try:
            return _decoder.raw_decode(attempt)[0]  # raw_decode: text after the object is ignored
        except (json.JSONDecodeError, RecursionError):  # RecursionError: thousands of nested brackets
            pass
    if len(text) > _LITERAL_LIMIT:
        return None
    try:
        value = ast.literal_eval(text)  # {'name': 'x', 'arguments': {...}}: literals only, safe
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _values(text: str) -> list[Any] | None:
    """The JSON values that make up all of `text` (whitespace between them); None if anything else."""
    values, position = [], 0
    while position < len(text):
        if text[position].isspace():
            position += 1
            continue
        try:
            value, position = _decoder.raw_decode(text, position)
        except (json.JSONDecodeError, RecursionError):
            return None
        values.append(value)
    return values or None


def _call(obj: Any) -> TextToolCall | None:
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict) and "name" not in obj:
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    arguments = obj.get("arguments", obj.get("parameters"))
    if arguments is None:
        return TextToolCall(name.strip(), "{}")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return TextToolCall(name.strip(), arguments)  # the runtime reports the unreadable arguments
    return TextToolCall(name.strip(), json.dumps(arguments, ensure_ascii=False))
