"""Run one script of a skill bundle in a subprocess (seed 004 run_skill, SPEC §6.2).

Skill files are untrusted input (SPEC §10), so a run gets: no shell (an argument list only), a
fresh temporary working directory holding a copy of the bundle, a scrubbed environment, a wall
clock timeout that kills the whole process group, CPU and file-size rlimits, and capped output.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO


@dataclass(frozen=True)
class SandboxLimits:
    timeout_seconds: float = 30.0
    output_chars: int = 20_000  # per stream, as shown to the model
    file_size_bytes: int = 32 * 1024 * 1024  # RLIMIT_FSIZE: bounds output files and anything written


DEFAULT_LIMITS = SandboxLimits()


@dataclass(frozen=True)
class BundleFile:
    path: str  # relative POSIX path inside the skill
    content: bytes
    executable: bool


@dataclass(frozen=True)
class ScriptRun:
    exit_code: int | None  # None when killed for the timeout
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class SandboxError(Exception):
    """The script cannot be run at all (bad path, not executable)."""


def safe_relative_path(path: str) -> PurePosixPath:
    """A bundle path that stays inside its folder: relative, no `..`, no empty parts."""
    candidate = PurePosixPath(path)
    if not path or "\x00" in path or candidate.is_absolute() or ".." in candidate.parts or "\\" in path:
        raise SandboxError(f"invalid path {path!r}: use a relative path inside the skill, without '..'")
    return candidate


def run_script(
    files: list[BundleFile], entry: str, args: list[str], *, limits: SandboxLimits = DEFAULT_LIMITS
) -> ScriptRun:
    entry_file = next((f for f in files if f.path == entry), None)
    if entry_file is None:
        raise SandboxError(f"no file {entry!r} in the skill")
    is_python = entry.endswith(".py")
    if not is_python and not entry_file.executable:
        raise SandboxError(f"{entry!r} is not a Python file and is not marked executable")
    with tempfile.TemporaryDirectory(prefix="skill-run-") as workdir:
        root = Path(workdir)
        for bundle_file in files:
            _write_file(root, bundle_file)
        script = root / entry
        # "-s": no user site-packages; the scrubbed environment already drops PYTHON* variables.
        command = [sys.executable, "-s", str(script), *args] if is_python else [str(script), *args]
        return _run(command, cwd=root, limits=limits)


def _write_file(root: Path, bundle_file: BundleFile) -> None:
    target = root / safe_relative_path(bundle_file.path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(bundle_file.content)
    target.chmod(0o700 if bundle_file.executable else 0o600)


def _run(command: list[str], *, cwd: Path, limits: SandboxLimits) -> ScriptRun:
    # Output goes to unnamed temp files, not pipes: a chatty script cannot fill memory, and
    # RLIMIT_FSIZE bounds the files.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=_scrubbed_environment(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,  # its own process group, so a timeout kills the children too
            preexec_fn=lambda: _apply_rlimits(limits),
        )
        timed_out = False
        try:
            exit_code: int | None = process.wait(timeout=limits.timeout_seconds)
        except subprocess.TimeoutExpired:
            timed_out = True
            exit_code = None
            _kill_group(process)
        stdout, stdout_cut = _read_capped(out, limits.output_chars)
        stderr, stderr_cut = _read_capped(err, limits.output_chars)
    return ScriptRun(exit_code, stdout, stderr, timed_out, stdout_cut or stderr_cut)


def _scrubbed_environment() -> dict[str, str]:
    # No secrets from the worker's environment (API keys, DATABASE_URL) reach skill code.
    return {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"}


def _apply_rlimits(limits: SandboxLimits) -> None:
    cpu_seconds = int(limits.timeout_seconds) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_bytes, limits.file_size_bytes))


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # it finished between the timeout and the kill
    process.wait()


def _read_capped(stream: IO[bytes], limit: int) -> tuple[str, bool]:
    stream.seek(0)
    # A character is at most 4 bytes in UTF-8: reading limit*4+4 bytes yields more than `limit`
    # characters whenever there was more output than we show.
    text = stream.read(limit * 4 + 4).decode("utf-8", errors="replace")
    return text[:limit], len(text) > limit
