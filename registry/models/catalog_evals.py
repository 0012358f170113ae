"""Catalog eval runs: every served skill's trigger cases run as agent turns with the whole catalog
offered, recording which skills the model loaded for each (registry/selectors/catalog_evals.py
reads them as a confusion matrix)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from registry.models.evals import EVAL_RUN_FINISHED, EvalRunStatus


class CatalogEvalRun(models.Model):
    """One run of the catalog at a label with one model. `skills` is the catalog as it was queued:
    each served skill's name, version, description and how many trigger cases it brought, so
    skills without cases are listed ("no evidence") and descriptions read as the model saw them."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    label = models.CharField(max_length=36, blank=True)  # blank: resolve's default (production, else latest)
    model = models.CharField(max_length=200)
    repeat = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=16, choices=EvalRunStatus.choices, default=EvalRunStatus.QUEUED)
    error = models.TextField(blank=True)
    skills = models.JSONField(default=list)  # [{"name", "version", "description", "status", "cases"}]
    # The matrix of the graded results, written when the run ends.
    result = models.JSONField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"catalog eval run {self.id} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in EVAL_RUN_FINISHED


class CatalogEvalCaseResult(models.Model):
    """One trigger case x repeat of a catalog run: its turn once dispatched, and the skills the
    model loaded itself (forced loads aside) once it ended. `graded_at` set is "done", set by
    one conditional update."""

    run = models.ForeignKey(CatalogEvalRun, on_delete=models.CASCADE, related_name="results")
    skill = models.CharField(max_length=64)  # the skill whose trigger case it is
    case_id = models.CharField(max_length=64)
    query = models.TextField()
    script = models.JSONField(null=True, blank=True)  # the case's script, for the scripted model
    repeat = models.PositiveIntegerField()
    position = models.PositiveIntegerField()  # dispatch order
    turn = models.ForeignKey(
        "agents.AgentTurn", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    loaded = models.JSONField(default=list)  # skill names, in the order the model loaded them
    error = models.TextField(blank=True)
    tokens = models.PositiveIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    graded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "skill", "case_id", "repeat"], name="catalog_eval_result_unique_case_repeat"
            )
        ]
        indexes = [models.Index(fields=["turn"], name="catalog_eval_result_turn")]

    def __str__(self) -> str:
        return f"{self.run_id} {self.skill}/{self.case_id}#{self.repeat}"
