"""Labels: a skill's named pointers at its versions (with a canary rollout), their history and
who may move them (the label policies)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q

from registry.models.skills import Skill, SkillVersion


class Label(models.Model):
    """A movable pointer (`production`, `staging`, ...) to one version of a skill."""

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="labels")
    name = models.CharField(max_length=36)
    version = models.ForeignKey(SkillVersion, on_delete=models.PROTECT, related_name="labels")
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)
    # A rollout: `weight`% of subjects read `canary_version` while the label stays on `version`.
    # A rollback sets the weight to 0 and keeps the canary, so its comparison stays readable.
    canary_version = models.ForeignKey(
        SkillVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="canary_labels"
    )
    weight = models.PositiveSmallIntegerField(default=0)
    rollout_started_at = models.DateTimeField(null=True, blank=True)
    rollout_started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    rolled_back_at = models.DateTimeField(null=True, blank=True)
    rollback_figures = models.JSONField(null=True, blank=True)  # what the guard measured when it fired

    class Meta:
        ordering = ["skill", "name"]
        constraints = [
            models.UniqueConstraint(fields=["skill", "name"], name="label_unique_name_per_skill"),
            models.CheckConstraint(condition=~Q(name="latest"), name="label_latest_is_implicit"),
            models.CheckConstraint(condition=Q(weight__lte=100), name="label_weight_at_most_100"),
        ]

    @property
    def rollout_active(self) -> bool:
        return self.canary_version_id is not None and self.weight > 0

    def rollout_end(self) -> None:
        """Forget the rollout (the caller saves): an abort, or a move that promotes or replaces it."""
        self.canary_version = None
        self.weight = 0
        self.rollout_started_at = self.rolled_back_at = None
        self.rollout_started_by = None
        self.rollback_figures = None

    @property
    def canary_number(self) -> int | None:
        return self.canary_version.number if self.canary_version is not None else None

    def __str__(self) -> str:
        return f"{self.skill.name}@{self.name}"


class LabelChange(models.TextChoices):
    """What a label history row records. A rollout keeps the label on its stable version
    (`from_version`) and sends `weight` percent of subjects to `to_version`."""

    MOVE = "move"  # the label now points to to_version
    DELETE = "delete"  # the label was removed (to_version is null)
    OVERRIDE = "override"  # an admin moved it although its policy's checks were unmet (`unmet`, `reason`)
    ROLLOUT_START = "rollout_start"
    ROLLOUT_STEP = "rollout_step"  # the canary's weight changed
    PROMOTE = "promote"  # the canary became the label's version
    ABORT = "abort"  # the rollout ended at `weight`; the label stays on from_version
    # The label went back: the guard set the canary's weight to 0 (`weight` 0, `reason` holds the
    # figures), or a move to a version it served within its policy's rollback_window (no weight).
    ROLLBACK = "rollback"
    # The skill's eval suite changed (`suite_revision`; `label` is blank: it concerns every label
    # whose policy asks for eval evidence). Written while some policy has `require_eval`.
    SUITE_CHANGE = "suite_change"  # a new revision, accepted as made: its author may accept suites
    SUITE_PROPOSAL = "suite_proposal"  # a new revision the gate does not count until it is accepted
    SUITE_ACCEPT = "suite_accept"  # a proposed revision accepted


class LabelHistory(models.Model):
    """One change of a label, written once and never edited (registry/services/label_policies.py)."""

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="label_history")
    label = models.CharField(max_length=36)
    kind = models.CharField(max_length=16, choices=LabelChange.choices, default=LabelChange.MOVE)
    from_version = models.PositiveIntegerField(null=True, blank=True)
    to_version = models.PositiveIntegerField(null=True, blank=True)  # null: the label was deleted
    weight = models.PositiveSmallIntegerField(null=True, blank=True)  # rollouts: percent sent to to_version
    reason = models.TextField(blank=True)
    unmet = models.JSONField(null=True, blank=True)  # overrides: the policy checks that were not met
    suite_revision = models.PositiveIntegerField(null=True, blank=True)  # suite changes: the revision
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    via = models.CharField(max_length=120, blank=True)  # console, api token <name>, system
    changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-changed_at", "-id"]
        verbose_name_plural = "label history"

    def __str__(self) -> str:
        return f"{self.skill.name}@{self.label}: {self.from_version} -> {self.to_version}"


class LabelPolicy(models.Model):
    """Who may move a label (of any skill) and on what evidence; `guard` is read by the rollout
    watcher. The shapes are checked by registry/services/label_policies.py."""

    label = models.CharField(max_length=36, unique=True)
    roles = models.JSONField(default=list)  # role names allowed to move the label
    require_eval = models.JSONField(null=True, blank=True)  # {model, min_task_rate, min_trigger_f1, not_worse}
    guard = models.JSONField(null=True, blank=True)  # {min_n, p_worse}
    # The worst scan verdict the label may serve: {"max_verdict": "review"} (registry/models/scans.py).
    require_scan = models.JSONField(null=True, blank=True)
    # Moving the label back to a version it served this recently needs a role, not new evidence.
    rollback_window = models.DurationField(default=timedelta(days=7))
    # "admin": a move to a version that adds a network destination, a command or a credential read
    # (compared with what the label serves) needs an admin's override; "": no such check.
    new_capabilities = models.CharField(max_length=16, blank=True, default="")
    # A move to a version needs its publisher's signature (registry/services/attestations.py).
    require_publisher_signature = models.BooleanField(default=False)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["label"]
        verbose_name_plural = "label policies"

    def __str__(self) -> str:
        return f"policy of {self.label}"
