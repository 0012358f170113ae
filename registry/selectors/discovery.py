"""What the Agent Skills discovery index (`/.well-known/agent-skills/`, RFC v0.2.0) publishes.

One label, the operator's `DISCOVERY_LABEL`, is published: the skills that carry it, at the
version it points to, when that is the version in effect there (`skill_effective`: the winning
source, enabled, its SKILL.md not `enabled: false`). A skill the label does not point to is not
published, even though a labelled read would fall back to its latest version: the index is read
without a token, so it shows only what someone promoted. `latest` publishes every effective skill
at its newest version.

Each skill is one artifact whose digest is the sha256 of exactly the bytes served: its SKILL.md
(`type: skill-md`) when that is the whole skill, else a zip with SKILL.md at the root (`type:
archive`). The zip is `write_zip`'s deterministic one, so the same version always has the same
digest; links are written as the files they resolve to, as clients refuse link entries.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cached_property

from django.core.cache import cache
from django.db.models import Count

from registry.models import Label, Skill, SkillVersion
from registry.selectors.resolve import cache_namespace, skill_effective, skill_version_effective
from registry.selectors.skills import EffectiveSkill
from registry.selectors.versions import version_bundle
from registry.skillformat.bundle import SKILL_MD, write_zip

DISCOVERY_SCHEMA = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
SKILL_MD_TYPE = "skill-md"
ARCHIVE_TYPE = "archive"
ARCHIVE_SUFFIX = ".zip"
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


def _published(label: str, names: list[str] | None = None) -> list[EffectiveSkill]:
    """The effective skills at `label` that the label points to (every one for `latest`),
    with publishable names, by name; with `names`, only those."""
    if label == LATEST:
        candidates = Skill.objects.all()
        pointed = None
    else:
        candidates = Skill.objects.filter(labels__name=label)
        pointed = set(Label.objects.filter(name=label).values_list("skill_id", "version__number"))
    if names is not None:
        candidates = candidates.filter(name__in=names)
    found = []
    for name in sorted(set(candidates.values_list("name", flat=True))):
        skill = skill_effective(name=name, label=label)
        if skill is None or not publishable(skill.name):
            continue
        if pointed is None or (skill.skill_id, skill.version) in pointed:
            found.append(skill)
    return found


def _artifact_type(file_count: int) -> str:
    return SKILL_MD_TYPE if file_count == 0 else ARCHIVE_TYPE


def _build(version: SkillVersion, type: str) -> DiscoveryArtifact:
    if type == SKILL_MD_TYPE:
        content = version.skill_md.encode("utf-8")
    else:
        content = write_zip(version_bundle(version), keep_links=False)
    artifact = DiscoveryArtifact(name=version.skill.name, version=version.number, type=type, content=content)
    cache.set(_digest_key(version.pk, version.fingerprint, type), artifact.digest, _DIGEST_CACHE_SECONDS)
    return artifact


def _digest_key(version_id: int, fingerprint: str, type: str) -> str:
    # The fingerprint keeps a key from naming other content when ids repeat (a test database).
    return f"discovery-digest:{cache_namespace()}:{version_id}:{fingerprint}:{type}"


def discovery_index(*, label: str) -> list[DiscoveryEntry]:
    """The index's skills at `label`, by name. An archive's digest is remembered per version,
    so a listing builds only the zips of versions it has not seen."""
    skills = _published(label)
    if not skills:
        return []
    rows = {
        (row["skill_id"], row["number"]): row
        for row in SkillVersion.objects.filter(
            skill_id__in={s.skill_id for s in skills}, number__in={s.version for s in skills}
        )
        .annotate(file_count=Count("files"))
        .values("id", "skill_id", "number", "fingerprint", "file_count")
    }
    wanted = {}
    for skill in skills:
        row = rows[(skill.skill_id, skill.version)]
        type = _artifact_type(row["file_count"])
        wanted[skill.name] = (skill, row, type, _digest_key(row["id"], row["fingerprint"], type))
    known = cache.get_many([key for *_, key in wanted.values()])
    entries = []
    for name, (skill, row, type, key) in wanted.items():
        digest = known.get(key)
        if digest is None:
            version = SkillVersion.objects.select_related("skill").get(pk=row["id"])
            digest = _build(version, type).digest
        entries.append(
            DiscoveryEntry(
                name=name,
                type=type,
                description=skill.description[:DESCRIPTION_MAX_CHARS],
                url=artifact_url(name=name, type=type),
                digest=digest,
                version=skill.version,
            )
        )
    return entries


def discovery_artifact(*, label: str, name: str, type: str) -> DiscoveryArtifact | None:
    """The artifact of `type` the index lists for `name` at `label` (SKILL.md is also served for
    a skill listed as an archive: it is the skill's first file), or None when `name` is not
    published there or is not listed as that type."""
    published = _published(label, names=[name])
    if not published or published[0].name != name:
        return None
    version = skill_version_effective(name=name, label=label)
    if version is None:
        return None
    listed = _artifact_type(version.files.count())
    if type != SKILL_MD_TYPE and type != listed:
        return None
    return _build(version, type)
