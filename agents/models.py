"""Turns and their traces. A turn is queued by the web process and run by a Celery worker."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class Conversation(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="conversations"
    )
    title = models.CharField(max_length=200, blank=True)
    # Compacted history of older turns (seed 000 fix 6: compaction keeps <mandatory-skill> verbatim).
    summary = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.title or str(self.id)


class TurnStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINISHED_STATUSES = (TurnStatus.SUCCEEDED, TurnStatus.FAILED, TurnStatus.CANCELLED)


class TurnOrigin(models.TextChoices):
    """Where a turn was sent from: the console's playground, `POST /agent/turns`, or an eval run."""

    PLAYGROUND = "playground", "playground"
    API = "api", "API"
    EVAL = "eval", "eval"


class FailureCause(models.TextChoices):
    """Why a turn did not succeed, one cause a turn (agents/turns/causes.py decides which)."""

    ABORTED = "aborted", "aborted"
    TOOL_ERROR = "tool_error", "tool errors"
    MODEL_ERROR = "model_error", "model errors"
    BUDGET_EXCEEDED = "budget_exceeded", "budget exceeded"
    CANCELLED = "cancelled", "cancelled"
    OTHER = "other", "other errors"


class AgentTurn(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.CASCADE, related_name="turns"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="agent_turns"
    )
    message = models.TextField()
    model = models.CharField(max_length=200)
    origin = models.CharField(max_length=16, choices=TurnOrigin.choices, default=TurnOrigin.API)
    forced_skill = models.CharField(max_length=128, blank=True)
    # What the turn's skills are resolved at: a label (blank: production, else latest) and
    # {skill name: version number} pins that override it for those skills.
    label = models.CharField(max_length=36, blank=True)
    skill_versions = models.JSONField(default=dict, blank=True)
    script = models.JSONField(null=True, blank=True)
    max_input_tokens = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=TurnStatus.choices, default=TurnStatus.QUEUED, db_index=True)
    cancel_requested = models.BooleanField(default=False)
    answer = models.TextField(blank=True)
    error = models.TextField(blank=True)
    # Set when the turn ends failed or cancelled: its cause and what it names (the abort's
    # reason, the budget, the tool), so the turn list counts causes without reading traces.
    failure_cause = models.CharField(max_length=24, choices=FailureCause.choices, blank=True)
    failure_detail = models.CharField(max_length=200, blank=True)
    steps = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    attempts = models.PositiveIntegerField(default=0)  # claims so far; the running attempt's fencing token
    takeovers = models.PositiveIntegerField(default=0)  # times the reaper requeued it after its worker died
    # Running: the worker's lease, renewed while it lives; once it lapses the reaper requeues
    # the turn. Queued: when the reaper sends its message again in case the first one was lost
    # (see agents/turns/services.py, agent_turns_reap).
    # Not indexed: renewals then update the row in place (PostgreSQL HOT), and the reaper's
    # query is narrowed by the status index first.
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    feedback_rating = models.SmallIntegerField(null=True, blank=True)
    feedback_comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)  # indexed: see Meta
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        # The turn list (agents/turns/selectors.py): newest first, narrowed by days, status, author (an
        # author sees their own) or model; each index hands out its rows in list order, so a page
        # stops after its limit. The first also carries what the list's counts group by, so the
        # counts of a range of days are an index-only scan on PostgreSQL (elsewhere a plain index).
        indexes = [
            models.Index(
                fields=["-created_at"],
                include=["status", "origin", "feedback_rating", "failure_cause", "failure_detail", "user", "model"],
                name="turn_newest",
            ),
            models.Index(fields=["status", "-created_at"], name="turn_status_newest"),
            models.Index(fields=["user", "-created_at"], name="turn_user_newest"),
            models.Index(fields=["model", "-created_at"], name="turn_model_newest"),
        ]

    def __str__(self) -> str:
        return f"turn {self.id} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_STATUSES

    @property
    def duration_ms(self) -> int | None:
        """From the first claim to the end: the time a worker spent, not the time in the queue."""
        if self.started_at is None or self.finished_at is None:
            return None
        return int((self.finished_at - self.started_at).total_seconds() * 1000)


class PromptText(models.Model):
    """A system prompt's text, stored once however many model calls sent it (content-addressed):
    each `llm_call` event of a 20-step turn sends the same ~20 KB prompt, and the turns of a
    conversation with the same skills send it again."""

    sha256 = models.CharField(max_length=64, primary_key=True)  # of the text's UTF-8 bytes
    text = models.TextField()

    def __str__(self) -> str:
        return self.sha256[:12]


class TraceEvent(models.Model):
    turn = models.ForeignKey(AgentTurn, on_delete=models.CASCADE, related_name="trace_events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=32)
    at = models.DateTimeField()
    data = models.JSONField(default=dict)
    # The event's `system_prompt`, kept out of `data` (agents/turns/selectors.py puts it back); events
    # written before prompts were shared hold it in `data`. Not indexed: prompts are looked up by
    # their key, never events by their prompt, and an index would cost every event's insert.
    prompt = models.ForeignKey(
        PromptText, null=True, blank=True, on_delete=models.PROTECT, db_index=False, related_name="+"
    )

    class Meta:
        ordering = ["turn", "seq"]
        constraints = [models.UniqueConstraint(fields=["turn", "seq"], name="trace_unique_seq_per_turn")]

    def __str__(self) -> str:
        return f"{self.turn_id}#{self.seq} {self.type}"


class TurnCheckpoint(models.Model):
    """What a turn had done when it last reached a checkpoint (agents/runtime/replay.py): a
    worker that takes the turn over resumes from these instead of starting again.

    The record is JSON kept as text: a tool's output may hold a NUL character, which
    PostgreSQL's jsonb refuses and its text type accepts once escaped by json.dumps."""

    turn = models.ForeignKey(AgentTurn, on_delete=models.CASCADE, related_name="checkpoints")
    index = models.PositiveIntegerField()
    record = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["turn", "index"]
        constraints = [models.UniqueConstraint(fields=["turn", "index"], name="checkpoint_unique_index_per_turn")]

    def __str__(self) -> str:
        return f"{self.turn_id} checkpoint {self.index}"
