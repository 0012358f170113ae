"""What a turn has done so far, kept in one place for its trace, its checkpoints and its result.

While a resumed turn replays the units an earlier attempt recorded (agents/runtime/replay.py), the
journal keeps quiet — those events are stored already — and its clock stands where the recorded
attempt's was, so the same budget checks pass or fail as they did then.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from agents.runtime.replay import Record, Replay
from agents.runtime.tools import ToolContext
from agents.runtime.types import (
    RequiredSkill,
    SkillActivation,
    SkillDocument,
    TraceSink,
    Trigger,
    TurnResult,
    TurnStatus,
)

# How much of a model's reply and a tool's result a trace event keeps.
TRACE_CONTENT_CHARS = 500
TRACE_RESULT_CHARS = 2_000

# checkpoint(index, record): persist `record` as the turn's checkpoint number `index`, together
# with the trace events emitted since the previous one (see agents/runtime/replay.py). A record
# of a tool that ran must be durable once `settle` returns, which the loop calls before the next
# tool runs; the other records may wait for the next tool's.
Checkpoint = Callable[[int, Record], None]


class TurnJournal:
    def __init__(
        self,
        *,
        trace: TraceSink,
        checkpoint: Checkpoint | None,
        resume: Sequence[Record],
        tool_context: ToolContext,
        max_seconds: float | None,
    ) -> None:
        self.trace = trace
        self.checkpoint = checkpoint
        self.replay = Replay(resume)
        self.result = TurnResult(status="failed")
        self.tool_context = tool_context
        self.max_seconds = max_seconds
        self.checkpoints = 0
        self.started = 0.0
        self._start_clock(0.0)

    def emit(self, type: str, data: dict[str, Any]) -> None:
        if not self.replay.active:  # a replayed unit's events are stored already
            self.trace.emit(type, data)

    def elapsed(self) -> float:
        return self.replay.clock if self.replay.active else time.monotonic() - self.started

    def activate(self, document: SkillDocument, trigger: Trigger) -> None:
        self.activate_version(SkillActivation(document.name, document.version, trigger, document.source))

    def require(self, item: RequiredSkill) -> None:
        """A skill loaded because one loaded in the turn requires it, and the trace says why."""
        self.emit(
            "skill_required",
            {
                "skill": item.document.name,
                "version": item.document.version,
                "required_by": item.required_by,
                "why": item.why,
            },
        )
        self.activate(item.document, "required")

    def activate_version(self, activation: SkillActivation) -> None:
        # One activation per skill and trigger per turn: analytics count loads, not re-reads.
        if activation in self.result.activations:
            return
        self.result.activations.append(activation)
        self.emit(
            "skill_activated", {"skill": activation.name, "version": activation.version, "trigger": activation.trigger}
        )

    def record(self, record: Record) -> None:
        """Checkpoint one completed unit, or, while replaying, check it against the recorded one."""
        index = self.checkpoints
        self.checkpoints += 1
        if not self.replay.active:
            self._save(index, record)
            return
        if not self.replay.consume(record):
            self._start_clock(self.replay.clock)
            self.emit(
                "warning",
                {
                    "message": "the recorded steps of the earlier attempt no longer match (a skill or rule "
                    "changed meanwhile); the turn runs on live from here"
                },
            )
            self._save(index, record)
        elif not self.replay.active:
            self._start_clock(self.replay.clock)
            self.emit(
                "resumed",
                {
                    "step": record.get("step", 0),
                    "replayed_model_calls": self.replay.model_calls,
                    "replayed_tool_calls": self.replay.tool_calls,
                    "elapsed_seconds": round(self.replay.clock, 3),
                },
            )

    def finish(self, status: TurnStatus, *, answer: str = "", error: str | None = None) -> TurnResult:
        self.result.status = status
        self.result.answer = answer
        self.result.error = error
        return self.result

    def _start_clock(self, elapsed: float) -> None:
        """The turn's clock reads `elapsed` now; a resumed turn goes on from its earlier attempts' time."""
        self.started = time.monotonic() - elapsed
        # Tools that wait (run_skill) stop at the turn's deadline, not only at their own limit.
        self.tool_context.deadline = None if self.max_seconds is None else self.started + self.max_seconds

    def _save(self, index: int, record: Record) -> None:
        if self.checkpoint is not None:
            self.checkpoint(index, {**record, "elapsed": round(self.elapsed(), 3)})
