"""The parent's side of the scanner process (registry/scanning/engine.py).

One engine per worker process, started on first use and kept: building the scanner costs
seconds, a scan a fraction of one. A scan that outlives its timeout, or an engine that dies,
is killed and reported as an error; the next scan starts a fresh engine.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from registry.scanning.verdicts import verdict_for

# Building the scanner (imports, YARA compilation) is not part of a scan's time budget.
STARTUP_SECONDS = 180.0
ROOT = Path(__file__).resolve().parent.parent.parent


@dataclass(frozen=True)
class ScanOutcome:
    """A scan's result: `verdict` is `error` with `reason` when the scanner could not tell."""

    verdict: str
    reason: str = ""
    findings: list[dict[str, Any]] = field(default_factory=list)
    scanner_version: str = ""
    rulepack_digest: str = ""
    analyzers: list[str] = field(default_factory=list)


class ScanError(Exception):
    pass


def engine_command(*, llm_model: str = "", niceness: int = 0) -> list[str]:
    command = [sys.executable, "-m", "registry.scanning.engine"]
    if niceness:
        command += ["--nice", str(niceness)]
    return [*command, "--llm-model", llm_model] if llm_model else command


class ScanEngine:
    """A running engine process and the lines it has answered."""

    def __init__(self, *, command: list[str], env: dict[str, str] | None = None) -> None:
        self.command = command
        self.env = env
        self.process: subprocess.Popen[str] | None = None
        self.answers: queue.Queue[str | None] = queue.Queue()
        self.stderr: deque[str] = deque(maxlen=40)
        self.hello: dict[str, Any] = {}

    def start(self) -> None:
        self.answers = queue.Queue()
        self.stderr.clear()
        self.process = subprocess.Popen(
            self.command,
            cwd=ROOT,
            env={**os.environ, **(self.env or {})},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        threading.Thread(target=self._read, args=(self.process.stdout, self.answers), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.process.stderr,), daemon=True).start()
        self.hello = json.loads(self._answer(STARTUP_SECONDS, doing="starting"))

    @staticmethod
    def _read(stream: Any, answers: queue.Queue[str | None]) -> None:
        for line in stream:
            answers.put(line)
        answers.put(None)

    def _drain(self, stream: Any) -> None:
        for line in stream:
            self.stderr.append(line.rstrip())

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _answer(self, timeout: float, *, doing: str) -> str:
        try:
            line = self.answers.get(timeout=timeout)
        except queue.Empty:
            self.stop()
            raise ScanError(f"the scanner did not finish {doing} within {timeout:g} seconds") from None
        if line is None:
            assert self.process is not None
            code = self.process.wait()
            tail = " | ".join(item for item in self.stderr if item)[-500:]
            self.stop()
            raise ScanError(
                f"the scanner process exited with status {code} while {doing}" + (f": {tail}" if tail else "")
            )
        return line

    def scan(self, folder: Path, *, timeout: float) -> dict[str, Any]:
        if not self.running:
            self.start()
        assert self.process is not None and self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps({"path": str(folder)}) + "\n")
            self.process.stdin.flush()
        except OSError as exc:
            self.stop()
            raise ScanError(f"the scanner process is gone ({exc})") from exc
        return json.loads(self._answer(timeout, doing="scanning"))

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, 9)
            except ProcessLookupError:
                pass
            self.process.wait(10)
        self.process = None


_engines: dict[tuple[str, ...], ScanEngine] = {}


def scan_folder(
    folder: Path, *, timeout: float, command: list[str] | None = None, env: dict[str, str] | None = None
) -> ScanOutcome:
    """Scan `folder` with this process's engine for `command` (started when needed). Never
    raises for the scan's sake: a crash, a timeout or a folder the scanner cannot read is an
    `error` outcome with the reason."""
    command = command or engine_command()
    engine = _engines.setdefault(tuple(command), ScanEngine(command=command, env=env))
    try:
        answer = engine.scan(folder, timeout=timeout)
    except ScanError as exc:
        return ScanOutcome(verdict="error", reason=str(exc), **_described(engine))
    except ValueError as exc:  # a line that is not JSON: the protocol broke
        engine.stop()
        return ScanOutcome(verdict="error", reason=f"the scanner answered garbage ({exc})", **_described(engine))
    if "error" in answer:
        return ScanOutcome(verdict="error", reason=str(answer["error"]), **_described(engine))
    findings = answer.get("findings", [])
    failed = answer.get("failed") or []
    if failed:
        names = ", ".join(str(item.get("analyzer") or item.get("name") or item) for item in failed)
        return ScanOutcome(
            verdict="error", reason=f"analyzers failed: {names}"[:2000], findings=findings, **_described(engine)
        )
    return ScanOutcome(verdict=verdict_for(f["severity"] for f in findings), findings=findings, **_described(engine))


def _described(engine: ScanEngine) -> dict[str, Any]:
    hello = engine.hello
    return {
        "scanner_version": str(hello.get("scanner_version", "")),
        "rulepack_digest": str(hello.get("rulepack_digest", "")),
        "analyzers": list(hello.get("analyzers", [])),
    }


def engines_stop() -> None:
    for engine in _engines.values():
        engine.stop()
    _engines.clear()
