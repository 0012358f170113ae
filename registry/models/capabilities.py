"""What each version can do (its capability manifest), computed once from its files."""

from __future__ import annotations

from django.db import models

from registry.models.skills import SkillVersion


class VersionCapabilities(models.Model):
    """The capability manifest of a version (registry/skillformat/capabilities/), stored at
    publish: versions are immutable, so it is read, not recomputed, by the label gate and the
    diff pages. `analyzer` says which analysis wrote it; an older one is computed again."""

    version = models.OneToOneField(
        SkillVersion, on_delete=models.CASCADE, primary_key=True, related_name="capability_manifest"
    )
    analyzer = models.PositiveSmallIntegerField()
    manifest = models.JSONField()  # {"analyzer", "entries": [{kind, value, file, line, excerpt}], "skipped", ...}
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "version capabilities"

    def __str__(self) -> str:
        return f"capabilities of {self.version_id}"
