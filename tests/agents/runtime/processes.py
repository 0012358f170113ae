"""Find host processes by a marker in their command line, to prove a skill run left none behind.

A sandboxed script sees only its own PID namespace, so the pids it could report mean nothing
outside; a unique marker in argv identifies its processes from the host's /proc.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def processes_with(marker: str) -> list[int]:
    """Live (not zombie) host processes whose argv contains `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:  # it ended while we looked
            continue
        if marker.encode() in argv and state != "Z":
            found.append(int(entry.name))
    return found


def wait_until_gone(marker: str, timeout: float = 15.0) -> bool:
    """True when no process carries `marker` (allowing the kernel time to tear them down: on a
    busy machine that can take seconds; a passing run returns as soon as they are gone). The
    marked processes must be meant to live far longer than `timeout`, or ending by themselves
    they would pass for killed.

    False otherwise, after killing the survivors so that a failing test leaves nothing running.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not processes_with(marker):
            return True
        time.sleep(0.05)
    for pid in processes_with(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return False
