"""The statistics every layer reads: paired scores, the acceptance rule, the gate's rule and their power.

They sit in the bottom layer because evals (the suite check reports whether val can accept anything),
the optimizer (it decides) and the CI gate all use the same rules; `optimizer` re-exports them. Imported
apart from `worlds.base` because they need numpy, which the world commands never do.

The public surface is exactly what `__all__` lists.
"""

from ._paired import (
    TIE_TOLERANCE,
    AcceptanceRule,
    Comparison,
    Decision,
    GateRule,
    GateVerdict,
    Outcome,
    PairedScores,
    Tolerance,
    bootstrap_lower_bound,
    compare,
    comparison_figures,
    decide,
    gate,
    sign_test_greater,
)
from ._passes import PASS_TOLERANCE, passes
from ._power import SplitPower, acceptance_power, sign_test_needs
from ._sequential import futility, look_sizes

__all__ = [
    "PASS_TOLERANCE",
    "TIE_TOLERANCE",
    "AcceptanceRule",
    "Comparison",
    "Decision",
    "GateRule",
    "GateVerdict",
    "Outcome",
    "PairedScores",
    "SplitPower",
    "Tolerance",
    "acceptance_power",
    "bootstrap_lower_bound",
    "compare",
    "comparison_figures",
    "decide",
    "futility",
    "gate",
    "look_sizes",
    "passes",
    "sign_test_greater",
    "sign_test_needs",
]
