"""An episode for a person: the conversation, each tool call with its result, errors, and the world diff;
and the system messages its agents were sent."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.rule import Rule
from rich.text import Text

from atoll.harnesses import Episode, Event, PromptKind, PromptPart
from atoll.views.world_diff import render_diff, render_value

_STOP_STYLES = {
    "reply": "green",
    "stop_tool": "green",
    "user_done": "green",
    "model_error": "red",
    "world_bug": "red",
}
_INLINE_CHARS = 160  # a result this short (as JSON) stays on the call's line
_PROMPT_TITLES: dict[PromptKind, str] = {
    "system": "system prompt",
    "demos": "retrieved demos (a system message of their own, after the prompt)",
}


def render_episode(episode: Episode, *, show_results: bool = True) -> RenderableType:
    """A rich renderable: header, transcript (sub-agents indented under their caller), diff, and error."""
    parts: list[RenderableType] = [_header(episode), Rule(style="dim")]
    depth = 0
    for event in episode.events:
        if event.kind == "return":
            depth = max(depth - 1, 0)
        line = _event_line(event, show_results)
        if line is not None:
            parts.append(Padding(line, (0, 0, 0, 4 * depth)))
        if event.kind == "delegate":
            depth += 1
    parts += [Rule(style="dim"), render_diff(episode.diff)]
    if episode.error:
        parts.append(Text(f"episode errored ({episode.stop_reason}): {episode.error}", style="bold red"))
    return Group(*parts)


def render_prompts(parts: list[PromptPart], prompt_hash: str | None = None) -> RenderableType:
    """The system messages agents were sent, each under a rule naming its agent and what it is; the text
    is never wrapped, so printed with `crop=False` it can be copied or saved exactly."""
    items: list[RenderableType] = []
    for part in parts:
        items.append(Rule(Text(f"{part.agent}: {_PROMPT_TITLES[part.kind]}"), style="dim", align="left"))
        items.append(Text(part.text.rstrip("\n"), no_wrap=True, overflow="ignore"))
    if prompt_hash is not None:
        items.append(Rule(Text(f"prompt sha256 {prompt_hash}"), style="dim", align="left"))
    return Group(*items)


def _header(episode: Episode) -> Text:
    usage = episode.usage
    header = Text()
    header.append(f"{episode.harness}", style="bold")
    header.append(f" @{episode.harness_hash[:10]}  model {episode.model}  ", style="dim")
    header.append(
        f"{episode.world}/{episode.fixture} seed {episode.seed} clock {episode.clock}\n", style="dim"
    )
    prompt = f"prompt {episode.prompt_hash[:12]}" if episode.prompt_hash else "prompt not recorded"
    header.append(f"{prompt}\n", style="dim")
    header.append("stopped: ")
    header.append(episode.stop_reason, style=_STOP_STYLES.get(episode.stop_reason, "yellow"))
    header.append(
        f"   {usage.model_calls} model calls ({usage.cached_calls} cached), {len(episode.calls)} tool calls, "
        f"{usage.prompt_tokens}+{usage.completion_tokens} tokens, ${usage.cost_usd:.4f}, {episode.duration_s:.2f} s",
        style="dim",
    )
    return header


def _event_line(event: Event, show_results: bool) -> RenderableType | None:
    if event.kind == "user":
        return _said("User", event.content, "bold cyan")
    if event.kind == "assistant":
        return _said(f"Agent ({event.agent})", event.content, "bold green")
    if event.kind == "thought":
        return Text(f"({event.agent} thinks) {event.content}", style="dim italic")
    if event.kind == "tool_call":
        arguments = ", ".join(f"{k}={_short(v)}" for k, v in (event.arguments or {}).items())
        return Text(f"→ {event.tool}({arguments})", style="yellow")
    if event.kind == "tool_result":
        return _result(event) if show_results else None
    if event.kind == "delegate":
        return _said(f"⇢ {event.agent} asks {event.tool}", event.content, "bold magenta")
    if event.kind == "return":
        return _said(f"⇠ {event.agent} answers", event.content, "bold magenta")
    if event.kind == "notice":
        return Text(f"(runtime to {event.agent}) {event.content}", style="cyan")
    if event.kind == "error":
        kind = (event.error or {}).get("type", "error")
        message = (event.error or {}).get("message") or event.content
        text = Text(f"! {kind} ({event.agent}): {message}", style="red")
        if kind == "malformed_action" and event.content:
            text.append(f"\n  the model wrote: {event.content[:300]}", style="dim red")
        return text
    return None


def _said(who: str, content: str | None, style: str) -> Text:
    text = Text()
    text.append(f"{who}: ", style=style)
    text.append(content or "")
    return text


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "…"


def _result(event: Event) -> RenderableType:
    if not event.ok:
        error = event.error or {}
        return Text(f"  ✗ {error.get('type', 'error')}: {error.get('message', '')}", style="red")
    text = json.dumps(event.result, ensure_ascii=False, default=str)
    if len(text) <= _INLINE_CHARS:
        return Text(f"  ← {text}", style="dim")
    return Padding(render_value(event.result), (0, 0, 0, 2))
