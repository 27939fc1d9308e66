"""The optimizer: propose harness variants, test them against the incumbent, keep only real wins.

The public surface is exactly what `__all__` lists.
"""

from ._config import (
    OptimizeConfig,
    OptimizerError,
    OptimizeResult,
    OptimizerEvent,
    OptimizerPaused,
    OptimizerStatus,
    StepRecord,
)
from ._loop import commit_message, optimize
from ._operators import AddDemo, DropDemo, ExposeTool, HideTool, ReorderDemos, TuneSampling, default_operators
from ._proposal import FailureReport, Proposal, ProposalContext, Proposer, unified_patch
from .stats import (
    AcceptanceRule,
    Comparison,
    Decision,
    GateRule,
    GateVerdict,
    PairedScores,
    bootstrap_lower_bound,
    compare,
    decide,
    gate,
    sign_test_greater,
)

__all__ = [
    "AcceptanceRule",
    "AddDemo",
    "Comparison",
    "Decision",
    "DropDemo",
    "ExposeTool",
    "FailureReport",
    "GateRule",
    "GateVerdict",
    "HideTool",
    "OptimizeConfig",
    "OptimizeResult",
    "OptimizerError",
    "OptimizerEvent",
    "OptimizerPaused",
    "OptimizerStatus",
    "PairedScores",
    "Proposal",
    "ProposalContext",
    "Proposer",
    "ReorderDemos",
    "StepRecord",
    "TuneSampling",
    "bootstrap_lower_bound",
    "commit_message",
    "compare",
    "decide",
    "default_operators",
    "gate",
    "optimize",
    "sign_test_greater",
    "unified_patch",
]
