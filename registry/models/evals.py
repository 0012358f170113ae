"""Eval suites (revisioned), runs of a suite against a version, and one result per case."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from registry.models.skills import Skill, SkillVersion


class EvalSuite(models.Model):
    """A skill's eval cases (not a version's: every version runs the same cases). The cases
    themselves live in revisions; `revision` is the newest one's number."""

    skill = models.OneToOneField(Skill, on_delete=models.CASCADE, related_name="eval_suite")
    revision = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"evals of {self.skill.name} (revision {self.revision})"


class EvalSuiteRevision(models.Model):
    """One saved state of a suite, kept: a run names the revision it ran, so its results stay
    readable after the suite changes.

    A revision is accepted or proposed (registry/services/suite_reviews.py): a label policy's
    eval gate counts runs only on an accepted one, so whoever may not move a protected label
    may not rewrite the evidence for it either."""

    suite = models.ForeignKey(EvalSuite, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    cases = models.JSONField(default=list)  # the validated cases, as `{"cases": [...]}` holds them
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    accepted_at = models.DateTimeField(null=True, blank=True)  # null: a proposal
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["suite", "-number"]
        constraints = [models.UniqueConstraint(fields=["suite", "number"], name="eval_revision_unique_number")]

    def __str__(self) -> str:
        return f"{self.suite_id} revision {self.number}"

    @property
    def accepted(self) -> bool:
        return self.accepted_at is not None


class EvalRunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


EVAL_RUN_FINISHED = (EvalRunStatus.SUCCEEDED, EvalRunStatus.FAILED, EvalRunStatus.CANCELLED)


class EvalRun(models.Model):
    """One run of a suite revision against one version of its skill with one model. Each case x
    repeat (x with and without the skill, for a baseline) is an EvalCaseResult and one agent turn."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="eval_runs")
    version = models.ForeignKey(SkillVersion, on_delete=models.CASCADE, related_name="eval_runs")
    label = models.CharField(max_length=36, blank=True)  # the label the version was chosen by, if any
    model = models.CharField(max_length=200)
    repeat = models.PositiveIntegerField(default=1)
    baseline = models.BooleanField(default=False)
    suite_revision = models.ForeignKey(EvalSuiteRevision, on_delete=models.PROTECT, related_name="runs")
    status = models.CharField(max_length=16, choices=EvalRunStatus.choices, default=EvalRunStatus.QUEUED)
    error = models.TextField(blank=True)
    # Figures of the graded results, written when the run ends (registry/services/evals.py).
    summary = models.JSONField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["skill", "-created_at"], name="eval_run_skill_newest")]

    def __str__(self) -> str:
        return f"eval run {self.id} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in EVAL_RUN_FINISHED

    @property
    def turns(self) -> int:
        """The agent turns the run costs: each case of its suite revision once per repeat, twice
        with a baseline."""
        return eval_run_turns(cases=len(self.suite_revision.cases), repeat=self.repeat, baseline=self.baseline)


def eval_run_turns(*, cases: int, repeat: int, baseline: bool) -> int:
    """What a run of `cases` cases costs in agent turns, before it starts."""
    return cases * repeat * (2 if baseline else 1)


class EvalCaseResult(models.Model):
    """One case x repeat of a run: its turn, once dispatched, and its grade once the turn ended.
    `graded_at` set is what "done" means; it is set by one conditional update, so a result is
    never counted twice however many workers grade the run."""

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    case_id = models.CharField(max_length=64)
    kind = models.CharField(max_length=8)  # trigger | task
    repeat = models.PositiveIntegerField()  # 1..run.repeat
    baseline = models.BooleanField(default=False)  # run with the skill unavailable
    position = models.PositiveIntegerField()  # dispatch order
    turn = models.ForeignKey(
        "agents.AgentTurn", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    passed = models.BooleanField(null=True, blank=True)
    triggered = models.BooleanField(null=True, blank=True)  # trigger cases: the skill was activated unforced
    checks = models.JSONField(default=list)  # [{"check", "passed", "detail"}]
    error = models.TextField(blank=True)  # why the case could not be graded (e.g. no judge model)
    tokens = models.PositiveIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    graded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "case_id", "repeat", "baseline"], name="eval_result_unique_case_repeat"
            )
        ]
        indexes = [models.Index(fields=["turn"], name="eval_result_turn")]

    def __str__(self) -> str:
        return f"{self.run_id} {self.case_id}#{self.repeat}{' baseline' if self.baseline else ''}"
