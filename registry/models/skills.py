"""Skills, their immutable versions and files, and the content-addressed blobs the files point at."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower


class SkillSource(models.TextChoices):
    BUNDLED = "bundled", "Bundled"
    USER = "user", "User"
    WORKSPACE = "workspace", "Workspace"


# seed 002: bundled < user < workspace; the highest enabled source wins a name.
SOURCE_PRIORITY = {SkillSource.BUNDLED: 1, SkillSource.USER: 2, SkillSource.WORKSPACE: 3}


class Skill(models.Model):
    name = models.CharField(max_length=128)
    source = models.CharField(max_length=16, choices=SkillSource.choices, default=SkillSource.USER)
    enabled = models.BooleanField(default=True)
    # The newest version number; publishing locks this row and increments it, which is what
    # keeps version numbers contiguous under concurrent publishes.
    latest_version = models.PositiveIntegerField(default=0)
    # For folder-backed sources: a hash of the folder's file names, sizes, modes and mtimes at
    # the last sync, so `skills sync` only re-reads folders that changed (seed 002's mtime cache).
    sync_signature = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "source"]
        # Case-insensitive, as the file systems the skill is exported to may be: `UPPER-case` and
        # `upper-case` would be one folder. Stored names are ASCII (services refuse others), so
        # Lower() folds alike on PostgreSQL and SQLite.
        constraints = [models.UniqueConstraint(Lower("name"), "source", name="skill_unique_lower_name_per_source")]

    def __str__(self) -> str:
        return f"{self.name} ({self.source})"

    @property
    def priority(self) -> int:
        return SOURCE_PRIORITY[SkillSource(self.source)]


class Blob(models.Model):
    """File content stored once by its sha256, shared by every version that contains it."""

    sha256 = models.CharField(max_length=64, primary_key=True)
    size = models.PositiveBigIntegerField()
    content = models.BinaryField()

    def __str__(self) -> str:
        return self.sha256

    @classmethod
    def digest(cls, content: bytes) -> str:
        return hashlib.sha256(content).hexdigest()


class SkillVersion(models.Model):
    """An immutable snapshot of a skill: the raw SKILL.md is the source of truth, the rest is derived."""

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    skill_md = models.TextField()
    # The Markdown after the frontmatter, kept at publish so that loading a skill for an agent
    # does not parse its SKILL.md again.
    body = models.TextField(default="")
    fingerprint = models.CharField(max_length=64)
    name = models.CharField(max_length=128)
    description = models.TextField()
    frontmatter = models.JSONField(default=dict)
    tags = models.JSONField(default=list)
    triggers = models.JSONField(default=list)
    tools = models.JSONField(default=list)
    warnings = models.JSONField(default=list)
    description_tokens = models.PositiveIntegerField(default=0)
    body_tokens = models.PositiveIntegerField(default=0)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    message = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["skill", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["skill", "number"], name="version_unique_number_per_skill"),
            models.CheckConstraint(condition=Q(number__gte=1), name="version_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.skill.name} v{self.number}"

    @property
    def skill_md_sha256(self) -> str:
        """The digest of SKILL.md's bytes as served (the fingerprint's SKILL.md line)."""
        return hashlib.sha256(self.skill_md.encode("utf-8")).hexdigest()

    def label_names(self) -> list[str]:
        """The labels pointing at this version, by name."""
        return sorted(self.labels.values_list("name", flat=True))


class SkillFile(models.Model):
    """A file of a version. A symbolic link inside the skill (`CLAUDE.md -> AGENTS.md`) is a row
    with its target text in `link_target` and the blob, size and executable bit of the file it
    resolves to, so readers that want bytes read every row alike and export writes a link."""

    version = models.ForeignKey(SkillVersion, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=1024)
    blob = models.ForeignKey(Blob, on_delete=models.PROTECT, related_name="+")
    size = models.PositiveBigIntegerField()
    executable = models.BooleanField(default=False)
    link_target = models.CharField(max_length=1024, blank=True, default="")

    class Meta:
        ordering = ["path"]
        constraints = [models.UniqueConstraint(fields=["version", "path"], name="file_unique_path_per_version")]

    def __str__(self) -> str:
        return self.path

    @property
    def sha256(self) -> str:
        return self.blob_id

    @property
    def mode(self) -> int:
        return 0o755 if self.executable else 0o644

    @property
    def link(self) -> str | None:
        return self.link_target or None
