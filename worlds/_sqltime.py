"""Point SQLite's date functions at an instance clock.

SQLite reads "now" from the operating system, and a connection cannot change that. An
application-defined function takes precedence over a built-in of the same name, so each
connection gets `date`, `time`, `datetime`, `julianday`, `strftime` and `unixepoch`
wrappers that replace the argument 'now' with the instance's time and hand the call to the
built-in on a plain connection that has no wrappers.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from datetime import datetime

from ._clock import TIMESTAMP_FORMAT

DATE_FUNCTIONS = ("date", "time", "datetime", "julianday", "strftime", "unixepoch")

_plain = threading.local()


def _builtin(name: str, args: tuple) -> object:
    connection = getattr(_plain, "connection", None)
    if connection is None:
        connection = _plain.connection = sqlite3.connect(":memory:", check_same_thread=False)
    placeholders = ", ".join("?" * len(args))
    return connection.execute(f"SELECT {name}({placeholders})", args).fetchone()[0]


def install_clock(connection: sqlite3.Connection, now: Callable[[], datetime]) -> None:
    """Make every date function on `connection` read "now" from `now()`."""

    def wrap(name: str) -> Callable[..., object]:
        def function(*args: object) -> object:
            if not args and name != "strftime":
                args = ("now",)
            stamp = None
            fixed = []
            for arg in args:
                if isinstance(arg, str) and arg.lower() == "now":
                    stamp = stamp or now().strftime(TIMESTAMP_FORMAT)
                    arg = stamp
                fixed.append(arg)
            return _builtin(name, tuple(fixed))

        return function

    for name in DATE_FUNCTIONS:
        connection.create_function(name, -1, wrap(name))
