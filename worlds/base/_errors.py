"""The one error root and the exit codes: every layer raises an `AtollError`, the CLI shows it.

Here, in the bottom layer, so that evals, the optimizer and the service need not import the world
engine's errors to share a base, and so that the exit codes the CLI uses are defined once.
"""

from __future__ import annotations

# Exit codes of the command line: a usage or configuration error a person fixes, or a run that broke
# on the way (a model down, a paused optimization). 1 is not an error: a gate's regression verdict.
USAGE_ERROR = 2
RUN_FAILED = 3


class AtollError(Exception):
    """Base of every error a person must act on, from any layer; the CLI prints it as one line and exits
    with its `exit_code`."""

    exit_code: int = USAGE_ERROR
