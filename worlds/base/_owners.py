"""Which process owns a row: what lets a reader tell a run that is running from one whose process died.

Runs, optimizations, jobs and the service's record journals each record the process that runs them (an
`owner` column). A row left `running` by a process killed without a word (kill -9, a power cut) reads as
`interrupted` once that process is gone, whichever table it is in.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any


def live_status(row: dict[str, Any]) -> str:
    """A run row's status as a reader should see it: `running` whose process died without saying so
    (kill -9, a power cut) is `interrupted`. Shared by every table that records an `owner`."""
    if row["status"] == "running" and owner_alive(row.get("owner")) is False:
        return "interrupted"
    return row["status"]


def process_owner() -> str:
    """This process, as an `owner` column records it: host, pid and the pid's start token."""
    pid = os.getpid()
    return json.dumps({"host": socket.gethostname(), "pid": pid, "token": _process_token(pid)})


def _process_token(pid: int) -> str | None:
    """The boot id and start time of a live process (Linux), so a pid reused by another process, or after
    a reboot, is not taken for the one that ran a run; None where /proc has none (gone, a zombie, macOS)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else f"{boot}:{fields[19]}"


def owner_alive(owner: str | None) -> bool | None:
    """Whether the process that started or resumed a run still exists; None when this machine cannot tell
    (a run from before owners were kept, one started on another host)."""
    if not owner:
        return None
    recorded = json.loads(owner)
    if recorded["host"] != socket.gethostname():
        return None
    if recorded["token"] is not None:
        return _process_token(recorded["pid"]) == recorded["token"]
    if os.name != "posix":  # os.kill(pid, 0) would terminate the process on Windows
        return None
    try:
        os.kill(recorded["pid"], 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
