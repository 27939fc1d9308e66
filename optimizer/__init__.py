"""The optimizer: propose harness variants, test them against the incumbent, keep only real wins.

The public surface is exactly what `__all__` lists.
"""

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
    "Comparison",
    "Decision",
    "GateRule",
    "GateVerdict",
    "PairedScores",
    "bootstrap_lower_bound",
    "compare",
    "decide",
    "gate",
    "sign_test_greater",
]
