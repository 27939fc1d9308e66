"""Operators: proposers that need no LLM, so the optimizer improves harnesses on the local model.

A small model copies its demos more than it follows instructions, so the levers that move it are
which worked examples it sees (fixed or retrieved), which tools it is offered, which guards and
rules keep it on track, and how it samples. Each operator makes one such change from train
evidence, names the change and the evidence in its rationale, and lets the screen and the
acceptance rule decide whether it helped.
"""

from __future__ import annotations

from typing import Any

from ._cost import PromptDiet, TightenObservations, TrimMaxTokens, TrimTurns
from ._demos import AddDemo, CallingDemos, DropDemo, EnableRetrieval, GrowPool, ReorderDemos, TuneRetrieval
from ._graph import MergeAgents, SplitAgent
from ._models import ChooseModel
from ._projection import ProjectResults
from ._settings import RULES, AddRule, DisableGuard, DropRule, EnableGuard, RequireFirstCall, TuneSampling
from ._tools import ExposeTool, ExposeToolWithDemo, HideTool, HideUnusedTools


def default_operators() -> list[Any]:
    """The LLM-free operators; the loop's bandit chooses which to try first."""
    return [
        EnableRetrieval(),
        ExposeToolWithDemo(),
        EnableGuard(),
        RequireFirstCall(),
        AddRule(),
        GrowPool(),
        TuneRetrieval(),
        AddDemo(),
        CallingDemos(),
        ProjectResults(),
        ReorderDemos(),
        DropDemo(),
        ExposeTool(),
        HideTool(),
        HideUnusedTools(),
        DisableGuard(),
        DropRule(),
        SplitAgent(),
        MergeAgents(),
        TuneSampling(),
    ]


def cost_operators() -> list[Any]:
    """The LLM-free operators that make an episode cheaper (tokens, cost, latency), each lowering what
    passing train episodes showed was more than they needed: for `--objective cost|latency|tokens`."""
    # Prompt-side levers first: an episode's tokens are mostly prompt (the system prompt and every tool
    # result re-read at each turn), and a tighter max_tokens can cost turns (a cut-off reply is retried).
    return [ProjectResults(), TightenObservations(), PromptDiet(), TrimTurns(), TrimMaxTokens()]


def model_operators() -> list[Any]:
    """The LLM-free operators that give an agent another of the models the run may use (`--models`)."""
    return [ChooseModel()]


__all__ = [
    "RULES",
    "AddDemo",
    "AddRule",
    "CallingDemos",
    "ChooseModel",
    "DisableGuard",
    "DropDemo",
    "DropRule",
    "EnableGuard",
    "EnableRetrieval",
    "ExposeTool",
    "ExposeToolWithDemo",
    "GrowPool",
    "HideTool",
    "HideUnusedTools",
    "MergeAgents",
    "ProjectResults",
    "PromptDiet",
    "ReorderDemos",
    "RequireFirstCall",
    "SplitAgent",
    "TightenObservations",
    "TrimMaxTokens",
    "TrimTurns",
    "TuneRetrieval",
    "TuneSampling",
    "cost_operators",
    "default_operators",
    "model_operators",
]
