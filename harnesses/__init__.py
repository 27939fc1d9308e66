"""Harnesses: the files around a model (prompts, tools, skills, demos, sub-agents) and the loop that runs them.

The public API is exactly what `__all__` lists. The model layer lives in `harnesses.models`.
"""

from ._checks import TEMPLATE_VARIABLES
from ._episode import EPISODE_VERSION, PATTERNS, Episode, Event, EventKind, StopReason
from ._files import HarnessError, content_hash
from ._format import (
    DELEGATE_PREFIX,
    SKILL_TOOL,
    AgentConfig,
    Demo,
    DemoStep,
    Guards,
    HarnessConfig,
    Limits,
    ParamsOverride,
    ToolOverride,
)
from ._harness import Harness, load_harness
from ._new import new_harness
from ._prompt import PromptKind, PromptPart, prompt_hash, render_prompt
from ._runtime import run_episode
from ._step import ConversationError, StepAnswer, UnusableAnswer, next_message
from ._tools import ToolSpec, tool_specs
from ._tools import project as project_fields
from ._try import try_episode
from ._user import ScriptedUser, UserSide

__all__ = [
    "DELEGATE_PREFIX",
    "EPISODE_VERSION",
    "PATTERNS",
    "SKILL_TOOL",
    "TEMPLATE_VARIABLES",
    "AgentConfig",
    "ConversationError",
    "Demo",
    "DemoStep",
    "Episode",
    "Event",
    "EventKind",
    "Guards",
    "Harness",
    "HarnessConfig",
    "HarnessError",
    "Limits",
    "ParamsOverride",
    "PromptKind",
    "PromptPart",
    "ScriptedUser",
    "StepAnswer",
    "StopReason",
    "ToolOverride",
    "ToolSpec",
    "UnusableAnswer",
    "UserSide",
    "content_hash",
    "load_harness",
    "new_harness",
    "next_message",
    "project_fields",
    "prompt_hash",
    "render_prompt",
    "run_episode",
    "tool_specs",
    "try_episode",
]
