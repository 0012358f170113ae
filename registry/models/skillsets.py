"""Skillsets: named sets of member skills released as one. Like a skill, a set has immutable
numbered versions (each a map member name -> skill version number) and labels that move, roll
out and roll back together with the members' labels of the same name."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower

from registry.models.labels import LabelChange
from registry.models.skills import SkillVersion


class Skillset(models.Model):
    name = models.CharField(max_length=128)
    description = models.TextField(blank=True)
    # The newest version number; publishing locks this row and increments it (as Skill does).
    latest_version = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        # Case-insensitive like skill names: a set and a skill share one namespace.
        constraints = [models.UniqueConstraint(Lower("name"), name="skillset_unique_lower_name")]

    def __str__(self) -> str:
        return self.name


class SkillsetVersion(models.Model):
    """An immutable map of member skill -> version number, taken at publish."""

    skillset = models.ForeignKey(Skillset, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    note = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["skillset", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["skillset", "number"], name="skillset_version_unique_number"),
            models.CheckConstraint(condition=Q(number__gte=1), name="skillset_version_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.skillset.name} v{self.number}"


class SkillsetMember(models.Model):
    """One member of a set version. The name and number are kept beside the foreign key, so a
    member skill deleted later is shown missing (skill_version null), not lost."""

    version = models.ForeignKey(SkillsetVersion, on_delete=models.CASCADE, related_name="members")
    skill_name = models.CharField(max_length=128)
    skill_version_number = models.PositiveIntegerField()
    skill_version = models.ForeignKey(
        SkillVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="skillset_members"
    )

    class Meta:
        ordering = ["version", "skill_name"]
        constraints = [
            models.UniqueConstraint(fields=["version", "skill_name"], name="skillset_member_unique_name"),
        ]

    @property
    def missing(self) -> bool:
        return self.skill_version_id is None

    def __str__(self) -> str:
        return f"{self.skill_name}@{self.skill_version_number}"


class SkillsetLabel(models.Model):
    """A set's movable pointer at one of its versions, with a weighted sticky rollout like a
    skill Label: `weight`% of subjects read `canary_version` (every member's canary) at once."""

    skillset = models.ForeignKey(Skillset, on_delete=models.CASCADE, related_name="labels")
    name = models.CharField(max_length=36)
    version = models.ForeignKey(SkillsetVersion, on_delete=models.PROTECT, related_name="labels")
    canary_version = models.ForeignKey(
        SkillsetVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="canary_labels"
    )
    weight = models.PositiveSmallIntegerField(default=0)
    rollout_started_at = models.DateTimeField(null=True, blank=True)
    rollout_started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["skillset", "name"]
        constraints = [
            models.UniqueConstraint(fields=["skillset", "name"], name="skillset_label_unique_name"),
            models.CheckConstraint(condition=~Q(name="latest"), name="skillset_label_latest_is_implicit"),
            models.CheckConstraint(condition=Q(weight__lte=100), name="skillset_label_weight_at_most_100"),
        ]

    @property
    def rollout_active(self) -> bool:
        return self.canary_version_id is not None and self.weight > 0

    def rollout_end(self) -> None:
        """Forget the rollout (the caller saves)."""
        self.canary_version = None
        self.weight = 0
        self.rollout_started_at = None
        self.rollout_started_by = None

    def __str__(self) -> str:
        return f"{self.skillset.name}@{self.name}"


class SkillsetLabelHistory(models.Model):
    """One change of a set label, written once; a rollback moves back to `from_version` of the
    newest move. Kinds are the skill label's (LabelChange)."""

    skillset = models.ForeignKey(Skillset, on_delete=models.CASCADE, related_name="label_history")
    label = models.CharField(max_length=36)
    kind = models.CharField(max_length=16, choices=LabelChange.choices, default=LabelChange.MOVE)
    from_version = models.PositiveIntegerField(null=True, blank=True)
    to_version = models.PositiveIntegerField(null=True, blank=True)  # null: the label was deleted
    weight = models.PositiveSmallIntegerField(null=True, blank=True)
    reason = models.TextField(blank=True)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    via = models.CharField(max_length=120, blank=True)
    changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-changed_at", "-id"]
        verbose_name_plural = "skillset label history"

    def __str__(self) -> str:
        return f"{self.skillset.name}@{self.label}: {self.from_version} -> {self.to_version}"
