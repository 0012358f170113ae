"""Storing a version's capability manifest (what it can do, read from its files)."""

from __future__ import annotations

from registry.models import SkillVersion, VersionCapabilities
from registry.skillformat.bundle import Bundle
from registry.skillformat.capabilities import ANALYZER_VERSION, bundle_capabilities


def version_capabilities_store(*, version: SkillVersion, bundle: Bundle) -> VersionCapabilities:
    """Analyse `bundle` (the version's files) and store its manifest, replacing an older one.

    Called inside the publish transaction: the analysis is bounded in bytes and time
    (registry/skillformat/capabilities.py) and runs nothing, so a hostile bundle costs a
    publish at most that budget, and the label gate then reads one row."""
    manifest = bundle_capabilities(bundle)
    row, _ = VersionCapabilities.objects.update_or_create(
        version=version, defaults={"analyzer": ANALYZER_VERSION, "manifest": manifest.as_dict()}
    )
    return row
