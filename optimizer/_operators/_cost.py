"""Cost operators: make each episode cheaper, with what passing train episodes used as the floor.

A run with `--objective cost|latency|tokens` keeps a candidate whose quality is non-inferior and
whose tokens, cost or latency per episode are significantly lower. What a passing train episode
used is what the harness must still allow, so each operator lowers one setting toward that, with a
margin, and never below it. Failing episodes are no evidence of need (an agent that loops uses every
turn it is given); they are where a lower cap saves the most. Val and test are never read.

- `TrimMaxTokens`: `params.max_tokens` to the longest completion of passing episodes x1.5.
- `TrimTurns`: `limits.turns` or `limits.tool_calls` to the most passing episodes used, plus a margin.
- `TightenObservations`: `limits.observation_chars` to the longest tool result they read x1.25.
- `PromptDiet`: drop a fixed demo or a loadable skill no passing episode needs, or move a long skill
  out of the prompt behind `load_skill`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from ruamel.yaml.comments import CommentedMap

from atoll.harnesses import DELEGATE_PREFIX, SKILL_TOOL

from .._proposal import Proposal, ProposalContext
from ._common import Edit, Operator, demo_calls

_CUT = 0.9  # a proposal lowers a setting by a tenth at least: a smaller cut is not worth its screen
_TOKEN_MARGIN, _TOKEN_STEP, _MIN_TOKENS = 1.5, 16, 32
_LIMIT_MARGIN, _MIN_EXTRA = 0.25, 2  # extra turns or tool calls: a quarter more, and 2 at least
_CHARS_MARGIN, _CHARS_STEP, _MIN_CHARS = 1.25, 100, 100  # Limits.observation_chars is 100 at least
_LONG_SKILL = 400  # characters (about 100 tokens): a shorter skill saves less than a load_skill call costs


def _lowers(current: int | None, target: int) -> bool:
    """Whether `target` is a cut worth trying from `current` (None: no cap yet)."""
    return current is None or target <= current * _CUT


def _round_up(value: float, step: int) -> int:
    return math.ceil(value / step) * step


def _episodes(n: int) -> str:
    return f"{n} passing episode{'' if n == 1 else 's'}"


def _shown(value: int | None) -> str:
    return "unset" if value is None else str(value)


def _section(settings: CommentedMap, key: str) -> CommentedMap:
    """`settings[key]`, added after the keys that come before it in the format when missing (a
    harness.yaml keeps model, params and limits near the top, an agent its params near its model)."""
    if key not in settings:
        before = (
            "name",
            "description",
            "world",
            "suite",
            "model",
            "params",
            "protocols",
            "prompt",
            "protocol",
        )
        position = max((i + 1 for i, k in enumerate(settings) if k in before), default=0)
        settings.insert(position, key, CommentedMap())
    return settings[key]


def _completions(context: ProposalContext) -> list[dict[str, list[int]]]:
    """Per passing episode, each agent's completion tokens, one entry per model call: the runtime puts
    a call's usage on the first event the call produced."""
    per_episode = []
    for result in context.passing_episodes:
        calls: dict[str, list[int]] = {}
        for event in result.episode.events:
            if event.completion_tokens:
                calls.setdefault(event.agent, []).append(event.completion_tokens)
        per_episode.append(calls)
    return per_episode


class TrimMaxTokens(Operator):
    """Lower `params.max_tokens`, for the harness or one agent, to the longest completion that agent's
    model calls used in passing train episodes x1.5, rounded up to 16 (32 at least). A completion cut
    short costs a retry or the task, so the cap stays above anything a passing episode needed; what it
    trims is the rambling of failing ones."""

    name = "trim_max_tokens"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        completions = _completions(context)
        harness = context.harness
        ran = {agent for calls in completions for agent in calls}
        if not ran:
            return None

        def evidence(agents: Iterable[str]) -> tuple[int, int]:
            """The longest completion of `agents` and in how many passing episodes they ran."""
            names = set(agents)
            seen = [n for calls in completions for a in names for n in calls.get(a, [])]
            runs = sum(bool(names & set(calls)) for calls in completions)
            return max(seen), runs

        options: list[tuple[str | None, int | None, int, int, int]] = []
        inherit = [a for a, cfg in harness.agents.items() if cfg.params.max_tokens is None]
        whole = bool(inherit) and set(inherit) <= ran  # every agent the harness value reaches has evidence
        if whole:
            seen, runs = evidence(inherit)
            options.append((None, harness.config.params.max_tokens, seen, runs, self._target(seen)))
        for agent in sorted(ran & set(harness.agents)):
            if agent in inherit and whole and len(inherit) == 1:
                continue  # the harness value is this agent's alone: the option above does the same
            seen, runs = evidence([agent])
            options.append((agent, harness.params_for(agent).max_tokens, seen, runs, self._target(seen)))
        options = [option for option in options if _lowers(option[1], option[4])]
        if not options:
            return None
        agent, current, seen, runs, target = context.rng.choice(options)
        edit = Edit(context)
        settings = edit.config if agent is None else edit.agent(agent)
        _section(settings, "params")["max_tokens"] = target
        where = f"agent {agent!r}" if agent else f"the harness (agent(s) {', '.join(inherit)})"
        return edit.proposal(
            self.name,
            f"max_tokens {_shown(current)} -> {target} for {where}: the longest completion of its model "
            f"calls in {_episodes(runs)} used {seen} tokens (x{_TOKEN_MARGIN}, rounded up to "
            f"{_TOKEN_STEP}, {_MIN_TOKENS} at least).",
        )

    @staticmethod
    def _target(seen: int) -> int:
        return max(_MIN_TOKENS, _round_up(seen * _TOKEN_MARGIN, _TOKEN_STEP))


class TrimTurns(Operator):
    """Lower `limits.turns` (model calls) or `limits.tool_calls` to the most any passing train episode
    used plus a quarter (2 at least), one of them per proposal. A loop that fails anyway ends sooner; a
    passing episode never meets the cap, nor reply_nudge's "last step" notice, which comes a turn
    before it. Model calls are the episode's usage, which counts a simulated user's calls too, so the
    evidence errs high, never low."""

    name = "trim_turns"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        episodes = [result.episode for result in context.passing_episodes]
        if not episodes:
            return None
        limits = context.harness.config.limits
        used = {
            "turns": (max(e.usage.model_calls for e in episodes), "model calls"),
            # Every call the runtime counts against tool_calls is one tool_call or delegate event.
            "tool_calls": (
                max(sum(ev.kind in ("tool_call", "delegate") for ev in e.events) for e in episodes),
                "tool calls",
            ),
        }
        options = []
        for key, (peak, what) in used.items():
            extra = max(_MIN_EXTRA, math.ceil(peak * _LIMIT_MARGIN))
            current = getattr(limits, key)
            if _lowers(current, peak + extra):
                options.append((key, what, current, peak, extra))
        if not options:
            return None
        key, what, current, peak, extra = context.rng.choice(options)
        edit = Edit(context)
        _section(edit.config, "limits")[key] = peak + extra
        return edit.proposal(
            self.name,
            f"limits.{key} {current} -> {peak + extra}: the most {what} any of {_episodes(len(episodes))} "
            f"made was {peak} (plus a margin of {extra}).",
        )


def _result_text(event: Any) -> str:
    """A tool result as the model read it before truncation (what `ToolResult.for_model` writes)."""
    payload = event.result if event.ok else {"error": event.error or {}}
    return json.dumps(payload, ensure_ascii=False, default=str)


def _skill_text(name: str, text: str) -> str:
    """What load_skill returns for a skill, as the model reads it: truncated like any tool result."""
    return json.dumps({"skill": name, "text": text}, ensure_ascii=False)


class TightenObservations(Operator):
    """Lower `limits.observation_chars` to the longest tool result passing train episodes read x1.25,
    rounded up to 100. Every result a passing episode read counts as needed, since nothing shows which
    part of it the agent used; one that was already cut leaves no headroom. The limit never drops
    below a skill load_skill can return, as that is cut like any result. Lengths are of the whole
    result the event keeps: where tools.yaml projects `fields`, the agent read less, so this errs high."""

    name = "tighten_observations"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        harness = context.harness
        current = harness.config.limits.observation_chars
        lengths = [
            len(_result_text(event))
            for result in context.passing_episodes
            for event in result.episode.events
            if event.kind == "tool_result"
        ]
        if not lengths:
            return None
        peak = min(max(lengths), current)
        skills = [
            len(_skill_text(skill, harness.skills[skill]))
            for cfg in harness.agents.values()
            if cfg.skill_tool
            for skill in cfg.skills
        ]
        target = max(_MIN_CHARS, _round_up(peak * _CHARS_MARGIN, _CHARS_STEP), *skills)
        target = _round_up(target, _CHARS_STEP)
        if not _lowers(current, target):
            return None
        edit = Edit(context)
        _section(edit.config, "limits")["observation_chars"] = target
        floor = f"; every skill load_skill returns fits ({max(skills)} characters at most)" if skills else ""
        return edit.proposal(
            self.name,
            f"limits.observation_chars {current} -> {target}: the longest of the {len(lengths)} tool "
            f"results {_episodes(len(context.passing_episodes))} read had {peak} characters "
            f"(x{_CHARS_MARGIN}, rounded up to {_CHARS_STEP}){floor}.",
        )


def _used(context: ProposalContext) -> dict[str, list[set[str]]]:
    """Per agent, the tools it called in each passing episode it ran in (delegations as the
    delegate_to_ tool a demo shows)."""
    used: dict[str, list[set[str]]] = {}
    for result in context.passing_episodes:
        tools: dict[str, set[str]] = {}
        for event in result.episode.events:
            called = tools.setdefault(event.agent, set())
            if event.kind == "tool_call" and event.tool:
                called.add(event.tool)
            elif event.kind == "delegate" and event.tool:
                called.add(DELEGATE_PREFIX + event.tool)
        for agent, called in tools.items():
            used.setdefault(agent, []).append(called)
    return used


def _loaded(context: ProposalContext, agent: str) -> set[str]:
    """The skills `agent` loaded in passing episodes."""
    return {
        str((event.arguments or {}).get("name"))
        for result in context.passing_episodes
        for event in result.episode.events
        if event.kind == "tool_call" and event.agent == agent and event.tool == SKILL_TOOL
    }


def _mention(skill: str) -> re.Pattern[str]:
    """Any way a template can reach a skill's text."""
    name = re.escape(skill)
    return re.compile(rf"skills\s*\.\s*{name}\b|skills\s*\[\s*['\"]{name}['\"]\s*\]|skills/{name}\.md")


def _placeholder(skill: str) -> re.Pattern[str]:
    """A template expression that only prints the skill: `{{ skills.x }}` or an include of it."""
    name = re.escape(skill)
    expression = rf"\{{\{{-?\s*skills\s*(?:\.\s*{name}|\[\s*['\"]{name}['\"]\s*\])\s*-?\}}\}}"
    include = rf"\{{%-?\s*include\s+['\"]skills/{name}\.md['\"]\s*-?%\}}"
    return re.compile(f"{expression}|{include}")


class PromptDiet(Operator):
    """Send an agent less prompt, one change per proposal, the kind drawn at random among those the
    evidence allows:

    - drop a fixed demo no passing train episode does what it shows: none of the episodes the agent
      ran in called a tool the demo calls (for a demo that calls none: none replied without a tool);
    - drop a skill the agent may load with load_skill that no passing episode loaded nor any of its
      demos loads, and which no template prints;
    - move a long skill its prompt prints behind load_skill: the prompt says to load it when needed,
      and every model call of the agent stops carrying it.

    An agent that ran in no passing episode gives no evidence and keeps its prompt.
    """

    name = "prompt_diet"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        used = _used(context)
        harness = context.harness
        options: dict[str, list[tuple[Any, ...]]] = {}
        for agent, cfg in harness.agents.items():
            runs = used.get(agent)
            if not runs:
                continue
            for demo in cfg.demos:
                calls = demo_calls(harness.demos[demo])
                if not any(calls & run if calls else not run for run in runs):
                    options.setdefault("drop_demo", []).append((agent, demo, calls, len(runs)))
            if cfg.skill_tool:
                for skill in self._unloaded(context, agent):
                    options.setdefault("drop_skill", []).append((agent, skill, len(runs)))
            for skill in cfg.skills:
                moved = self._moved(context, agent, skill)
                if moved is not None:
                    options.setdefault("move_skill", []).append((agent, skill, moved, len(runs)))
        if not options:
            return None
        kind = context.rng.choice(sorted(options))
        option = context.rng.choice(options[kind])
        edit = Edit(context)
        if kind == "drop_demo":
            return self._drop_demo(edit, *option)
        if kind == "drop_skill":
            return self._drop_skill(edit, *option)
        return self._move_skill(edit, *option)

    # -- what the evidence allows -----------------------------------------------------------------

    @staticmethod
    def _unloaded(context: ProposalContext, agent: str) -> list[str]:
        """The agent's skills no passing episode loaded, no demo of it loads and no template prints."""
        harness = context.harness
        cfg = harness.agents[agent]
        demos = [harness.demos[d] for d in dict.fromkeys([*cfg.demos, *cfg.demo_pool])]
        shown = {str(step.args.get("name")) for d in demos for step in d.steps if step.call == SKILL_TOOL}
        loaded = _loaded(context, agent)
        others = {other.prompt for name, other in harness.agents.items() if name != agent}
        templates = [
            text
            for path, text in harness.files().items()
            if not path.startswith("skills/") and (path == cfg.prompt or path not in others)
        ]
        unloaded = []
        for skill in cfg.skills:
            if skill in loaded or skill in shown or any(_mention(skill).search(t) for t in templates):
                continue
            unloaded.append(skill)
        if len(unloaded) == len(cfg.skills) and any(SKILL_TOOL in demo_calls(d) for d in demos):
            return []  # the last skill would take load_skill away, and a demo calls it
        return unloaded

    @staticmethod
    def _moved(context: ProposalContext, agent: str, skill: str) -> str | None:
        """The agent's prompt template with a long skill it prints replaced by a pointer to load_skill;
        None when the skill is short, would be cut as a tool result, or is reached another way."""
        harness = context.harness
        cfg = harness.agents[agent]
        text = harness.skills[skill]
        if len(text) < _LONG_SKILL or len(_skill_text(skill, text)) > harness.config.limits.observation_chars:
            return None
        files = harness.files()
        if any(other.prompt == cfg.prompt for name, other in harness.agents.items() if name != agent):
            return None  # a shared template: the other agent would lose the skill too
        prompts = {other.prompt for other in harness.agents.values()}
        partials = [
            text for path, text in files.items() if path not in prompts and not path.startswith("skills/")
        ]
        if any(_mention(skill).search(text) for text in partials):
            return None  # a partial prints it: the edit could not reach every place
        template = files[cfg.prompt]
        pointer = f"(Read the {skill} skill with {SKILL_TOOL} when the request needs it.)"
        moved = _placeholder(skill).sub(pointer, template)
        if moved == template or _mention(skill).search(moved):
            return None
        return moved

    # -- the edits ------------------------------------------------------------------------------

    def _drop_demo(
        self, edit: Edit, agent: str, demo: str, calls: frozenset[str], runs: int
    ) -> Proposal | None:
        edit.set_list(agent, "demos", [d for d in edit.agent(agent)["demos"] if d != demo])
        edit.drop_unlisted_demo(demo)
        shows = f"calls {', '.join(sorted(calls))}" if calls else "replies without a tool"
        did = "called none of these" if calls else "called a tool"
        return edit.proposal(
            self.name,
            f"Drop demo {demo!r} from the demos of agent {agent!r}: it {shows}, and in each of the "
            f"{_episodes(runs)} it ran in the agent {did}.",
        )

    def _drop_skill(self, edit: Edit, agent: str, skill: str, runs: int) -> Proposal | None:
        settings = edit.agent(agent)
        left = [s for s in settings["skills"] if s != skill]
        if left:
            edit.set_list(agent, "skills", left)
        else:  # no skill left to load: the load_skill tool goes too
            del settings["skills"]
            settings.pop("skill_tool", None)
        listed = any(skill in (cfg.get("skills") or []) for cfg in edit.config["agents"].values())
        if not listed:
            edit.files.pop(f"skills/{skill}.md", None)
        gone = "" if left else f"; {SKILL_TOOL} goes, as no skill is left"
        return edit.proposal(
            self.name,
            f"Drop skill {skill!r} of agent {agent!r}: none of the {_episodes(runs)} it ran in loaded it "
            f"with {SKILL_TOOL}, no demo loads it and no prompt prints it{gone}.",
        )

    def _move_skill(self, edit: Edit, agent: str, skill: str, template: str, runs: int) -> Proposal | None:
        calls = sum(
            1
            for result in edit.context.passing_episodes
            for event in result.episode.events
            if event.agent == agent and (event.prompt_tokens or event.completion_tokens)
        )
        path = edit.context.harness.agents[agent].prompt
        edit.files[path] = template
        edit.agent(agent)["skill_tool"] = True
        size = len(edit.context.harness.skills[skill])
        sent = f"each of the {calls} model calls it made in" if calls else "every model call of"
        return edit.proposal(
            self.name,
            f"Move skill {skill!r} of agent {agent!r} out of its prompt, behind {SKILL_TOOL}: its "
            f"{size} characters went with {sent} {_episodes(runs)}; now the agent reads it when needed.",
        )
