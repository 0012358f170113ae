"""What the Agent Skills discovery index (`/.well-known/agent-skills/`, RFC v0.2.0) publishes.

One label, the operator's `DISCOVERY_LABEL`, is published: the skills in effect at it
(`skill_effective`: the winning source, enabled, its SKILL.md not `enabled: false`), which by the
label rule every read path shares (registry/readmodel/effective.py, `label_applied`) are the
skills that carry it, at the version it points to. The index is read without a token, so it shows
only what someone promoted. `latest` publishes every effective skill at its newest version.

Each skill is one artifact whose digest is the sha256 of exactly the bytes served: its SKILL.md
(`type: skill-md`) when that is the whole skill, else a zip with SKILL.md at the root (`type:
archive`). The zip is `write_zip`'s deterministic one, so the same version always has the same
digest; links are written as the files they resolve to, as clients refuse link entries.

`?skillset=NAME` publishes exactly that set's members at the numbers of its version at the same
label (registry/readmodel/skillsets.py), whatever labels the members carry themselves.

A reader may say which tools and MCP servers it has (`Entitlements`): the index then leaves out
the skills whose `tool:` or `mcp:` requirements it does not meet (`discovery_left_out` says which
and why). The artifacts themselves stay readable by name.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import urlencode

from django.core.cache import cache
from django.db.models import Count, F, Q, QuerySet

from registry.models import SkillVersion
from registry.readmodel.requirements import NO_ENTITLEMENTS, Entitlements, LeftOut
from registry.readmodel.rollouts import subject_pins
from registry.readmodel.served import skill_version_of
from registry.readmodel.skillsets import skillset_served, skillset_snapshot
from registry.readmodel.snapshot import Pins, Snapshot
from registry.selectors.resolve import cache_namespace, registry_snapshot, skill_effective, skill_version_effective
from registry.selectors.scans import scan_brief, scans_latest
from registry.selectors.skills import EffectiveSkill
from registry.selectors.versions import version_bundle
from registry.skillformat.bundle import SKILL_MD, write_zip

DISCOVERY_SCHEMA = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
SKILL_MD_TYPE = "skill-md"
ARCHIVE_TYPE = "archive"
ARCHIVE_SUFFIX = ".zip"
ATTESTATION_SUFFIX = ".intoto.json"  # the DSSE envelope of the served version's in-toto statement
# The Agent Skills name rule (1-64 of a-z, 0-9 and single inner hyphens): clients skip an entry
# whose name breaks it, and install a skill into a folder of that name (`publishable`).
PUBLISHABLE_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
PUBLISHABLE_NAME_MAX_CHARS = 64
DESCRIPTION_MAX_CHARS = 1024  # the spec's limit; clients skip an entry with a longer one
LATEST = "latest"  # the implicit label: every skill's newest version
_DIGEST_CACHE_SECONDS = 7 * 24 * 3600  # versions are immutable; the key names the content


@dataclass(frozen=True)
class DiscoveryEntry:
    """One skill of the index, as the RFC's entry (`url` relative to the index)."""

    name: str
    type: str
    description: str
    url: str
    digest: str
    version: int
    scan: dict[str, Any] | None = None  # the served version's scan verdict (selectors/scans.py)

    @property
    def attestation(self) -> str:
        """Where the version's signed release statement is, relative to `index.json`."""
        return attestation_url(name=self.name)


@dataclass(frozen=True)
class DiscoveryArtifact:
    """The bytes a client downloads for one skill."""

    name: str
    version: int
    type: str
    content: bytes

    @cached_property
    def digest(self) -> str:
        return f"sha256:{hashlib.sha256(self.content).hexdigest()}"

    @property
    def content_type(self) -> str:
        return "text/markdown; charset=utf-8" if self.type == SKILL_MD_TYPE else "application/zip"


def publishable(name: str) -> bool:
    return len(name) <= PUBLISHABLE_NAME_MAX_CHARS and PUBLISHABLE_NAME.fullmatch(name) is not None


def artifact_url(*, name: str, type: str) -> str:
    """Where a skill's artifact is, relative to `index.json`."""
    return f"{name}/{SKILL_MD}" if type == SKILL_MD_TYPE else f"{name}{ARCHIVE_SUFFIX}"


def attestation_url(*, name: str) -> str:
    return f"{name}{ATTESTATION_SUFFIX}"


def _published(
    label: str,
    names: list[str] | None = None,
    *,
    pins: Pins | None = None,
    snapshot: Snapshot | None = None,
    entitlements: Entitlements = NO_ENTITLEMENTS,
) -> list[EffectiveSkill]:
    """The effective skills at `label` (those that carry it; every one for `latest`), at the
    version it points to or that its rollout gives the reader (`pins`, from `subject_pins`), with
    publishable names, by name; with `names`, only those. With `snapshot` (a skillset's), its
    skills instead. Listing them all, the skills whose needs `entitlements` do not meet are left
    out."""
    effective: list[EffectiveSkill]
    if snapshot is None and names is None:
        # One snapshot for the whole listing: every entry as of one generation, read once.
        snapshot = registry_snapshot(label=label, pins=pins)
    if snapshot is not None:
        left_out = snapshot.requirements.left_out(entitlements) if names is None else {}
        effective = [
            skill
            for skill in snapshot.skills
            if (names is None or skill.name in names) and skill.name not in left_out
        ]
    else:
        effective = [skill for name in names or () if (skill := skill_effective(name=name, label=label, pins=pins))]
    return sorted((skill for skill in effective if publishable(skill.name)), key=lambda skill: skill.name)


def _artifact_type(file_count: int) -> str:
    return SKILL_MD_TYPE if file_count == 0 else ARCHIVE_TYPE


def _digest_key(version_id: int, fingerprint: str, type: str) -> str:
    # The fingerprint keeps a key from naming other content when ids repeat (a test database).
    return f"discovery-digest:{cache_namespace()}:{version_id}:{fingerprint}:{type}"


def _build(version: SkillVersion, type: str) -> DiscoveryArtifact:
    """The artifact's bytes, its digest remembered (the index lists it without building it)."""
    if type == SKILL_MD_TYPE:
        content = version.skill_md.encode("utf-8")
    else:
        content = write_zip(version_bundle(version), keep_links=False)
    artifact = DiscoveryArtifact(name=version.skill.name, version=version.number, type=type, content=content)
    cache.set(_digest_key(version.pk, version.fingerprint, type), artifact.digest, _DIGEST_CACHE_SECONDS)
    return artifact


def _versions_at(label: str) -> QuerySet[SkillVersion]:
    """The version `label` points to, of every skill that has one (newest for `latest`): the
    versions `_published` skills are at."""
    if label == LATEST:
        return SkillVersion.objects.filter(number=F("skill__latest_version"))
    return SkillVersion.objects.filter(Q(labels__name=label) | Q(canary_labels__name=label)).distinct()


def _skillset_snapshot(*, label: str, skillset: str, subject: str | None) -> Snapshot:
    """Exactly the set's members at the numbers of its version at `label` for `subject`
    (NotFound naming the set, or the label it does not carry)."""
    served = skillset_served(name=skillset, label=label, subject=subject)
    return skillset_snapshot(served=served, label=label)


def _versions_of(skills: list[EffectiveSkill]) -> QuerySet[SkillVersion]:
    """The stored versions of these skills (a skillset's members, whatever labels they carry)."""
    wanted = Q(pk__in=[])
    for skill in skills:
        wanted |= Q(skill_id=skill.skill_id, number=skill.version)
    return SkillVersion.objects.filter(wanted)


def discovery_left_out(
    *, label: str, subject: str | None = None, skillset: str | None = None, entitlements: Entitlements
) -> list[LeftOut]:
    """The publishable skills at `label` (of `skillset`, when given) that `entitlements` leave out
    of the index, by name, each with the requirements it lacks and why."""
    if skillset is not None:
        snapshot = _skillset_snapshot(label=label, skillset=skillset, subject=subject)
    else:
        snapshot = registry_snapshot(label=label, pins=subject_pins(label=label, subject=subject))
    left_out = snapshot.requirements.left_out(entitlements)
    return [left_out[name] for name in sorted(left_out) if publishable(name)]


def discovery_index(
    *,
    label: str,
    subject: str | None = None,
    skillset: str | None = None,
    entitlements: Entitlements = NO_ENTITLEMENTS,
) -> list[DiscoveryEntry]:
    """The index's skills at `label` as `subject` gets them (a label's rollout), by name, without
    those `entitlements` leave out; with `skillset`, exactly that set's members at its version's
    numbers, each `url` carrying the set (and subject) so it serves the bytes of the listed
    digest. Digests are remembered per version, so a listing reads the content only of versions
    it has not seen (in one query, zips' files aside)."""
    if skillset is not None:
        snapshot = _skillset_snapshot(label=label, skillset=skillset, subject=subject)
        skills = _published(label, snapshot=snapshot, entitlements=entitlements)
        versions = _versions_of(skills)
        query = "?" + urlencode({"skillset": snapshot.skillset, **({"subject": subject} if subject else {})})
    else:
        skills = _published(label, pins=subject_pins(label=label, subject=subject), entitlements=entitlements)
        versions = _versions_at(label).filter(skill_id__in=[skill.skill_id for skill in skills])
        query = ""
    if not skills:
        return []
    rows = {
        (row["skill_id"], row["number"]): row
        for row in versions.annotate(file_count=Count("files", distinct=True)).values(
            "id", "skill_id", "number", "fingerprint", "file_count"
        )
    }
    listed = []
    for skill in skills:
        row = rows[(skill.skill_id, skill.version)]
        type = _artifact_type(row["file_count"])
        listed.append((skill, row["id"], type, _digest_key(row["id"], row["fingerprint"], type)))
    digests = cache.get_many([key for *_, key in listed])
    unseen = {version_id: type for _, version_id, type, key in listed if key not in digests}
    for version in SkillVersion.objects.select_related("skill").filter(pk__in=list(unseen)):
        digests[_digest_key(version.pk, version.fingerprint, unseen[version.pk])] = _build(
            version, unseen[version.pk]
        ).digest
    scans = scans_latest(version_id for _, version_id, _, _ in listed)
    return [
        DiscoveryEntry(
            name=skill.name,
            type=type,
            description=skill.description[:DESCRIPTION_MAX_CHARS],
            url=artifact_url(name=skill.name, type=type) + query,
            digest=digests[key],
            version=skill.version,
            scan=scan_brief(scans.get(version_id)),
        )
        for skill, version_id, type, key in listed
    ]


@dataclass(frozen=True)
class DiscoveryTarget:
    """A published artifact before its bytes are built: the version, and its digest when it
    was built before (a request whose If-None-Match matches it needs nothing more)."""

    version: SkillVersion
    type: str
    known_digest: str | None


def discovery_target(
    *, label: str, name: str, type: str, subject: str | None = None, skillset: str | None = None
) -> DiscoveryTarget | None:
    """The artifact of `type` the index lists for `name` at `label` for `subject` (SKILL.md is
    also served for a skill listed as an archive: it is the skill's first file), or None when
    `name` is not published there or is not listed as that type. With `skillset`, `name` must
    be a member, read at the set's number."""
    if skillset is not None:
        snapshot = _skillset_snapshot(label=label, skillset=skillset, subject=subject)
        found = _published(label, names=[name], snapshot=snapshot)
        version = skill_version_of(found[0]) if found else None
    else:
        pins = subject_pins(label=label, subject=subject)
        if not _published(label, names=[name], pins=pins):
            return None
        version = skill_version_effective(name=name, label=label, pins=pins)
    if version is None:
        return None
    if type != SKILL_MD_TYPE and type != _artifact_type(version.files.count()):
        return None
    return DiscoveryTarget(version, type, cache.get(_digest_key(version.pk, version.fingerprint, type)))


def discovery_artifact(target: DiscoveryTarget) -> DiscoveryArtifact:
    return _build(target.version, target.type)
