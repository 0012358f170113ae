"""Reading what a version can do (its capability manifest) and what one version adds to another."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.cache import cache

from registry.models import Skill, SkillVersion, VersionCapabilities
from registry.readmodel.results import cache_namespace
from registry.selectors.versions import version_bundle
from registry.skillformat.capabilities import (
    ANALYZER_VERSION,
    CapabilityDiff,
    Manifest,
    bundle_capabilities,
    capabilities_diff,
)

_DAY = 24 * 3600


def version_capabilities(version: SkillVersion) -> Manifest:
    """The version's manifest: the row publishing stored, or (a version published before the
    analysis existed, or by an older analyzer) computed from its files and kept in the shared
    cache for a day. Never executes anything; bounded in time by the analysis itself."""
    stored = VersionCapabilities.objects.filter(version=version, analyzer=ANALYZER_VERSION).first()
    if stored is not None:
        return Manifest.from_dict(stored.manifest)
    key = f"capabilities:{ANALYZER_VERSION}:{cache_namespace()}:{version.pk}"
    cached = cache.get(key)
    if cached is not None:
        return Manifest.from_dict(cached)
    manifest = bundle_capabilities(version_bundle(version))
    cache.set(key, manifest.as_dict(), _DAY)
    return manifest


def version_capabilities_diff(*, old: SkillVersion | None, new: SkillVersion) -> CapabilityDiff:
    """What `new` can do that `old` could not (`added`) and the reverse (`removed`); against
    nothing (`old` None) everything `new` does is added."""
    return capabilities_diff(old=version_capabilities(old) if old is not None else None, new=version_capabilities(new))


@dataclass(frozen=True)
class LabelCapabilityChange:
    """What moving `label` to `target` changes in what its readers' version can do."""

    label: str
    served: SkillVersion | None  # what the label serves now (None: the skill lacks the label)
    target: SkillVersion
    diff: CapabilityDiff


def label_capability_change(*, skill: Skill, label: str, target: SkillVersion) -> LabelCapabilityChange:
    found = skill.labels.select_related("version").filter(name=label).first()
    served = found.version if found is not None else None
    diff = CapabilityDiff() if served == target else version_capabilities_diff(old=served, new=target)
    return LabelCapabilityChange(label=label, served=served, target=target, diff=diff)
