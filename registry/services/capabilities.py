"""Storing a version's capability manifest (what it can do, read from its files)."""

from __future__ import annotations

from registry.models import SkillVersion, VersionCapabilities
from registry.skillformat.capabilities import ANALYZER_VERSION, Manifest


def version_capabilities_store(*, version: SkillVersion, manifest: Manifest) -> VersionCapabilities:
    """Store `manifest` (`bundle_capabilities` of the version's files) as the version's,
    replacing an older one. Publishing computes it before taking the skill's lock: the analysis
    is bounded in bytes and time (registry/skillformat/capabilities/) and runs nothing, so a
    hostile bundle costs a publish at most that budget; the label gate then reads one row."""
    row, _ = VersionCapabilities.objects.update_or_create(
        version=version, defaults={"analyzer": ANALYZER_VERSION, "manifest": manifest.as_dict()}
    )
    return row
