"""Model checks: every served skill's eval suite run on two models (what a model change would
break), or, for the drift watch, on AGENT_MODEL against each skill's last accepted run. A check
groups ordinary eval runs; its report is computed from their graded results when they have all
ended, and stored."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from registry.models.evals import EvalRun


class ModelCheckKind(models.TextChoices):
    CHECK = "check"  # current model against a candidate, asked for by someone
    WATCH = "watch"  # AGENT_MODEL against each skill's last accepted run, on beat's schedule


class ModelCheckStatus(models.TextChoices):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # a run of it failed or was cancelled: the report covers the rest


class ModelCheck(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=8, choices=ModelCheckKind.choices, default=ModelCheckKind.CHECK)
    label = models.CharField(max_length=36)
    current_model = models.CharField(max_length=200)
    candidate_model = models.CharField(max_length=200, blank=True)  # empty for a watch
    repeat = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=16, choices=ModelCheckStatus.choices, default=ModelCheckStatus.RUNNING)
    # The skills served at the label when it started: [{"name", "version", "cases"}], those without
    # cases included (they are "no evidence", never perfect).
    skills = models.JSONField(default=list)
    report = models.JSONField(null=True, blank=True)  # stored when every run has ended
    regressed = models.PositiveIntegerField(default=0)  # skills in the report that regressed (drifted)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A watch's drift banner, dismissed: its drifted runs became the accepted ones.
    dismissed_at = models.DateTimeField(null=True, blank=True)
    dismissed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["kind", "-created_at"], name="model_check_kind_newest")]

    def __str__(self) -> str:
        return f"model check {self.id} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status != ModelCheckStatus.RUNNING


class ModelCheckSide(models.TextChoices):
    CURRENT = "current"
    CANDIDATE = "candidate"


class ModelCheckRun(models.Model):
    """One eval run of a check: a skill's suite on one side's model. `accepted`: the run may be a
    later watch's baseline (a watch run that drifted is not, until its banner is dismissed)."""

    model_check = models.ForeignKey(ModelCheck, on_delete=models.CASCADE, related_name="runs")
    run = models.OneToOneField(EvalRun, on_delete=models.CASCADE, related_name="model_check_run")
    side = models.CharField(max_length=16, choices=ModelCheckSide.choices)
    accepted = models.BooleanField(default=True)

    class Meta:
        ordering = ["model_check", "id"]

    def __str__(self) -> str:
        return f"{self.model_check_id} {self.side} {self.run_id}"
