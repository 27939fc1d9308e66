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
from ._gate import GateConfig, run_gate
from ._gate_report import append_step_summary, gate_progress, markdown_summary, render_gate, write_junit
from ._gate_result import (
    Baseline,
    GateError,
    GateReport,
    GateSide,
    SuiteChange,
    SuiteRun,
    TaskRow,
    load_baseline,
    save_baseline,
    write_json,
)
from ._git import GitError
from ._history import HistoryEntry, history, render_history
from ._loop import commit_message, optimize
from ._operators import AddDemo, DropDemo, ExposeTool, HideTool, ReorderDemos, TuneSampling, default_operators
from ._proposal import FailureReport, Proposal, ProposalContext, Proposer, unified_patch
from ._render import event_line, render_result, render_status
from ._reports import DiffSide, ReportError, render_comparison, render_flips, render_world_diffs, resolve_side
from ._runreport import render_report, write_html_report
from ._screen import ScreenRecord, ScreenRound
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
    "Baseline",
    "Comparison",
    "Decision",
    "DiffSide",
    "DropDemo",
    "ExposeTool",
    "FailureReport",
    "GateConfig",
    "GateError",
    "GateReport",
    "GateRule",
    "GateSide",
    "GateVerdict",
    "GitError",
    "HideTool",
    "HistoryEntry",
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
    "ReportError",
    "ScreenRecord",
    "ScreenRound",
    "StepRecord",
    "SuiteChange",
    "SuiteRun",
    "TaskRow",
    "TuneSampling",
    "append_step_summary",
    "bootstrap_lower_bound",
    "commit_message",
    "compare",
    "decide",
    "default_operators",
    "event_line",
    "gate",
    "gate_progress",
    "history",
    "load_baseline",
    "markdown_summary",
    "optimize",
    "render_comparison",
    "render_flips",
    "render_gate",
    "render_history",
    "render_report",
    "render_result",
    "render_status",
    "render_world_diffs",
    "resolve_side",
    "run_gate",
    "save_baseline",
    "sign_test_greater",
    "unified_patch",
    "write_html_report",
    "write_json",
    "write_junit",
]
