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
    steps = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    attempts = models.PositiveIntegerField(default=0)  # claims so far; the running attempt's fencing token
    takeovers = models.PositiveIntegerField(default=0)  # times the reaper requeued it after its worker died
    # Running: the worker's lease, renewed while it lives; once it lapses the reaper requeues
    # the turn. Queued: when the reaper sends its message again in case the first one was lost
    # (see agents/services.py, agent_turns_reap).
    # Not indexed: renewals then update the row in place (PostgreSQL HOT), and the reaper's
    # query is narrowed by the status index first.
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    feedback_rating = models.SmallIntegerField(null=True, blank=True)
    feedback_comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"turn {self.id} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_STATUSES


class TraceEvent(models.Model):
    turn = models.ForeignKey(AgentTurn, on_delete=models.CASCADE, related_name="trace_events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=32)
    at = models.DateTimeField()
    data = models.JSONField(default=dict)

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
