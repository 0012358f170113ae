"""Reading what a version can do (its capability manifest) and what one version adds to another."""

from __future__ import annotations

from collections.abc import Iterable
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
    return versions_capabilities([version])[version.pk]


def versions_capabilities(versions: Iterable[SkillVersion]) -> dict[int, Manifest]:
    """`version_capabilities` of each version, by version id: the stored rows in one query."""
    versions = list(versions)
    stored = VersionCapabilities.objects.filter(version__in=versions, analyzer=ANALYZER_VERSION)
    manifests = {row.version_id: Manifest.from_dict(row.manifest) for row in stored}
    for version in versions:
        if version.pk not in manifests:
            manifests[version.pk] = _computed_capabilities(version)
    return manifests


def _computed_capabilities(version: SkillVersion) -> Manifest:
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


def label_capability_changes(
    *, skill: Skill, label: str, targets: Iterable[SkillVersion]
) -> dict[int, LabelCapabilityChange]:
    """What moving `label` to each of `targets` changes, by target version id: the label and
    every manifest read once, whatever the number of targets."""
    targets = list(targets)
    found = skill.labels.select_related("version").filter(name=label).first()
    served = found.version if found is not None else None
    manifests = versions_capabilities(targets + ([served] if served is not None else []))
    return {
        target.pk: LabelCapabilityChange(
            label=label,
            served=served,
            target=target,
            diff=CapabilityDiff()
            if served == target
            else capabilities_diff(old=manifests[served.pk] if served is not None else None, new=manifests[target.pk]),
        )
        for target in targets
    }
