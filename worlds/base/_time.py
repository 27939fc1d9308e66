"""Timestamps and run ids as every table of the runs store writes them.

One format for every stored time (UTC, to the second) so rows of different tables compare as text, and
one shape of id for runs, optimizations and jobs, sortable by when they started.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"


def now_text() -> str:
    """Now, in UTC, as the store writes it (`TIMESTAMP_FORMAT`)."""
    return datetime.now(UTC).strftime(TIMESTAMP_FORMAT)


def new_run_id(kind: str = "eval") -> str:
    """`eval-20260302-091500-a3f9`: sortable by time, unique, short enough to type its tail."""
    return f"{kind}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
