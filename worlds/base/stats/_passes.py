"""When a score counts as a pass: one rule for the metrics, the acceptance rule and the gate."""

from __future__ import annotations

PASS_TOLERANCE = 1e-9
"""Scores are floats summed from partial credit, so 0.1 + 0.2 + 0.7 must still count as a pass at 1.0."""


def passes(score: float, threshold: float = 1.0) -> bool:
    """Whether a score counts as a pass: at or above the threshold, within `PASS_TOLERANCE`."""
    return score >= threshold - PASS_TOLERANCE
