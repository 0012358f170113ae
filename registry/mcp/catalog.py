"""What the MCP endpoint serves: the effective enabled skills at a label as Skills Extension
entries (`skill://` URIs, verbatim frontmatter, every file with its sha256 and size), one file's
bytes, and a directory's children. Reads only.

"Which version" is the read model's answer (`registry/selectors/resolve.py`): the entries are the
resolve snapshot's skills, so `/mcp`, `POST /resolve` and the REST reads agree on what a label
serves. During a label's rollout a catalogue is the subject's: the skills its bucket puts on the
canary are read at the canary (`registry/readmodel/rollouts.py`), as the REST reads serve them.
With `?skillset=` it is exactly the set's members at its version's numbers, as resolve serves them.
Digests and sizes are those of the exact bytes `resources/read` returns: the stored blob
of each file (a link's target, as the REST file endpoint serves it) and SKILL.md as UTF-8.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from django.db.models import Q

from registry.models import Blob, SkillFile, SkillVersion
from registry.readmodel.generation import current_generation
from registry.readmodel.memo import GenerationMemo
from registry.readmodel.requirements import Entitlements, LeftOut, SnapshotRequirements
from registry.readmodel.rollouts import canary_names, subject_pins
from registry.readmodel.skillsets import skillset_served, skillset_snapshot
from registry.readmodel.snapshot import Snapshot
from registry.selectors.attestations import KEYS_PATH
from registry.selectors.resolve import cache_namespace, registry_snapshot
from registry.selectors.scans import scan_brief, scans_latest_served
from registry.selectors.skills import EffectiveSkill

SCHEME = "skill://"
SKILL_MD = "SKILL.md"
DIRECTORY_TYPE = "inode/directory"
# Our own `_meta` keys, under this registry's reverse-domain prefix (the protocol reserves the
# unprefixed names and `io.modelcontextprotocol/` for itself).
META_PREFIX = "io.skill-registry/"
VERSION_META = f"{META_PREFIX}version"
CANARY_META = f"{META_PREFIX}canary"
# Where the served version's signed release statement is (the REST API, with a read token) and
# the keys that verify it (anyone): registry/api/attestations.py.
ATTESTATION_META = f"{META_PREFIX}attestation"
SCAN_META = f"{META_PREFIX}scan"  # the served version's scan verdict (selectors/scans.py)
# The tools and MCP servers a host has (lists of names), in a request's `_meta` or the Skills
# extension's entry of the client's capabilities; and, in a listing's `_meta`, the skills they left out.
TOOLS_META = f"{META_PREFIX}tools"
MCP_SERVERS_META = f"{META_PREFIX}mcp_servers"
LEFT_OUT_META = f"{META_PREFIX}left_out"

# The stable Skills Extension's per-skill limits: every conforming host loads a skill within
# them, and a server should not serve one beyond them. Such a skill is left out of `skills/list`
# and `skills/get` names the limit it passes; its files stay readable as plain resources.
MAX_RESOURCES = 512
MAX_TOTAL_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class SkillFileEntry:
    path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class SkillEntry:
    """One served skill: its name, the version a label serves, frontmatter and files (SKILL.md first)."""

    skill_id: int
    name: str
    version: int
    description: str
    frontmatter: dict[str, Any]
    files: tuple[SkillFileEntry, ...]

    @property
    def uri(self) -> str:
        return file_uri(self.name, SKILL_MD)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def over_limits(self) -> str | None:
        """Why hosts may refuse this skill (the extension's limits), or None when it is within them."""
        if len(self.files) > MAX_RESOURCES:
            return f"it has {len(self.files):,} files; the Skills Extension allows at most {MAX_RESOURCES}"
        if self.total_bytes > MAX_TOTAL_BYTES:
            return (
                f"its files total {self.total_bytes:,} bytes; the Skills Extension allows at most "
                f"{MAX_TOTAL_BYTES:,} (16 MiB)"
            )
        return None

    def as_wire(self, *, canary: bool, scan: dict[str, Any] | None = None) -> dict[str, Any]:
        """The extension's Skill object; its `_meta` says which version is served, whether it
        is the canary of the label's rollout, and the served version's scan verdict."""
        return {
            "uri": self.uri,
            "_meta": served_meta(version=self.version, canary=canary)
            | {
                ATTESTATION_META: {"url": attestation_path(self.name, self.version), "keys": KEYS_PATH},
                SCAN_META: scan or {"verdict": None},
            },
            "frontmatter": self.frontmatter,
            "resources": [
                {"uri": file_uri(self.name, f.path), "digest": f"sha256:{f.sha256}", "size": f.size} for f in self.files
            ],
        }


def served_meta(*, version: int, canary: bool) -> dict[str, Any]:
    """The `_meta` a Skill entry and each file read carry: the version served and whether it is the
    canary of the label's rollout. Keys are reverse-domain prefixed, as `_meta` keys that are not
    the protocol's own must be."""
    return {VERSION_META: version, CANARY_META: canary}


def attestation_path(name: str, version: int) -> str:
    return f"/api/v1/skills/{quote(name, safe='')}/versions/{version}/attestation"


def file_uri(name: str, path: str) -> str:
    # Paths may hold spaces or UTF-8; the name is plain (letters, digits, '-', '_', '.').
    return f"{SCHEME}{name}/{quote(path, safe='/')}" if path else f"{SCHEME}{name}"


def parse_uri(uri: str) -> tuple[str, str] | None:
    """(skill name, path inside the skill; "" for its root) of a `skill://` URI, or None."""
    if not uri.startswith(SCHEME):
        return None
    name, _, path = uri[len(SCHEME) :].partition("/")
    path = unquote(path)
    if not name or path.startswith("/") or path.endswith("/") or "//" in path:
        return None
    if any(part in (".", "..") for part in path.split("/")):
        return None
    return name, path


def _skill_md_file(skill_md: str) -> SkillFileEntry:
    content = skill_md.encode("utf-8")
    return SkillFileEntry(path=SKILL_MD, sha256=hashlib.sha256(content).hexdigest(), size=len(content))


# A published version never changes, so its entry outlives the generation it was read in: after a
# publish or a label move a catalogue reads only the versions it did not hold. Keyed by 0 (no
# generation) and the cache namespace (a restored database reuses version ids).
_VERSION_ENTRIES: GenerationMemo[SkillEntry] = GenerationMemo(maxsize=10_000)


def _entries_for(skills: Sequence[EffectiveSkill]) -> list[SkillEntry]:
    """Entries for these effective skills, each version read once per process."""
    namespace = cache_namespace()
    held: dict[tuple[int, int], SkillEntry] = {}
    missing = []
    for skill in skills:
        entry = _VERSION_ENTRIES.get((0, namespace, skill.skill_id, skill.version, skill.name))
        if entry is None:
            missing.append(skill)
        else:
            held[(skill.skill_id, skill.version)] = entry
    for entry in _entries_read(missing):
        held[(entry.skill_id, entry.version)] = entry
        _VERSION_ENTRIES.put((0, namespace, entry.skill_id, entry.version, entry.name), entry)
    return [held[key] for skill in skills if (key := (skill.skill_id, skill.version)) in held]


def _entries_read(skills: Sequence[EffectiveSkill]) -> list[SkillEntry]:
    """Entries for these effective skills in two queries, whatever their number."""
    if not skills:
        return []
    by_number: dict[int, list[int]] = defaultdict(list)
    for skill in skills:
        by_number[skill.version].append(skill.skill_id)
    wanted = Q()
    for number, skill_ids in by_number.items():
        wanted |= Q(number=number, skill_id__in=skill_ids)
    versions = {
        (row["skill_id"], row["number"]): row
        for row in SkillVersion.objects.filter(wanted).values("id", "skill_id", "number", "skill_md", "frontmatter")
    }
    files: dict[int, list[SkillFileEntry]] = defaultdict(list)
    version_ids = [row["id"] for row in versions.values()]
    rows = SkillFile.objects.filter(version_id__in=version_ids).order_by("version_id", "path")
    for version_id, path, sha256, size in rows.values_list("version_id", "path", "blob_id", "size"):
        files[version_id].append(SkillFileEntry(path=path, sha256=sha256, size=size))
    entries = []
    for skill in skills:
        row = versions.get((skill.skill_id, skill.version))
        if row is None:
            continue  # deleted since the snapshot was read: not served any more
        frontmatter = row["frontmatter"] if isinstance(row["frontmatter"], dict) else {}
        entries.append(
            SkillEntry(
                skill_id=skill.skill_id,
                name=skill.name,
                version=skill.version,
                description=skill.description,
                frontmatter=frontmatter,
                files=(_skill_md_file(row["skill_md"]), *files[row["id"]]),
            )
        )
    return entries


@dataclass(frozen=True)
class SkillCatalog:
    entries: tuple[SkillEntry, ...]  # sorted by name, as pages are cut
    by_name: dict[str, SkillEntry]
    listed: tuple[SkillEntry, ...]  # those within the extension's limits: what `skills/list` lists
    canary: frozenset[str]  # the skills served at their rollout's canary
    scans: dict[str, dict[str, Any]]  # by name: the served version's scan verdict (selectors/scans.py)
    requirements: SnapshotRequirements  # what its skills need (registry/readmodel/requirements.py)

    def is_canary(self, entry: SkillEntry) -> bool:
        return entry.name in self.canary

    def left_out(self, entitlements: Entitlements) -> dict[str, LeftOut]:
        """The skills whose `tool:` or `mcp:` requirements a host with `entitlements` does not meet."""
        return self.requirements.left_out(entitlements)

    def as_wire(self, entry: SkillEntry) -> dict[str, Any]:
        return entry.as_wire(canary=self.is_canary(entry), scan=self.scans.get(entry.name))


# Per label and rollout sides, the newest generation's catalogue: listing, getting or reading a
# skill at 1,000 skills costs no query for the entries until the registry changes.
_CATALOGS: GenerationMemo[SkillCatalog] = GenerationMemo(maxsize=32)


def mcp_skill_catalog(
    *, label: str | None = None, subject: str | None = None, skillset: str | None = None
) -> SkillCatalog:
    """Every effective enabled skill at `label` (each skill's served version without one), the
    canary where the label's rollout puts `subject` on it. With `skillset`, exactly the set's
    members at the numbers of its version at `label` for `subject` (registry/readmodel/skillsets.py;
    NotFound naming the set or the label)."""
    generation = current_generation()
    served = None
    if skillset is not None:
        served = skillset_served(name=skillset, label=label, subject=subject, generation=generation)
        pins = served.members
        side: tuple = (served.name, served.version)
    else:
        pins = subject_pins(label=label, subject=subject, generation=generation)
        side = tuple(sorted(pins.items()))
    # Keyed by the versions read, never the subject: subjects on one side share a catalogue. The
    # namespace changes when the registry's caches are reset (a restored database repeats
    # generation numbers), as resolve results' keys do.
    key = (generation, cache_namespace(), label, served is not None, side)
    found = _CATALOGS.get(key)
    if found is None:
        if served is not None:
            snapshot = skillset_snapshot(served=served, label=label, generation=generation)
            canary = frozenset(skill.name for skill in snapshot.skills) if served.canary else frozenset()
        else:
            snapshot = registry_snapshot(label=label, generation=generation, pins=pins)
            canary = canary_names(label=label, pins=pins, generation=generation)
        found = _catalog_of(snapshot, canary)
        _CATALOGS.put(key, found)
    return found


def _catalog_of(snapshot: Snapshot, canary: frozenset[str]) -> SkillCatalog:
    skills = snapshot.skills
    entries = tuple(sorted(_entries_for(skills), key=lambda entry: entry.name))
    # A recorded scan bumps the generation (services/scans.py), so the verdicts are this generation's.
    scans = scans_latest_served((skill.skill_id, skill.version) for skill in skills)
    return SkillCatalog(
        entries=entries,
        by_name={entry.name: entry for entry in entries},
        listed=tuple(entry for entry in entries if entry.over_limits is None),
        canary=canary,
        scans={skill.name: scan_brief(scans.get((skill.skill_id, skill.version))) for skill in skills},
        requirements=snapshot.requirements,
    )


def mcp_skill_file(*, entry: SkillEntry, path: str) -> bytes | None:
    """The exact bytes of one file of a served skill's entry, or None when it has no such file."""
    if path == SKILL_MD:
        found = SkillVersion.objects.filter(skill_id=entry.skill_id, number=entry.version)
        skill_md = found.values_list("skill_md", flat=True).first()
        return skill_md.encode("utf-8") if skill_md is not None else None
    sha256 = next((f.sha256 for f in entry.files if f.path == path), None)
    if sha256 is None:
        return None
    content = Blob.objects.filter(sha256=sha256).values_list("content", flat=True).first()
    return bytes(content) if content is not None else None


@dataclass(frozen=True)
class DirectoryChild:
    path: str
    is_directory: bool


def mcp_skill_directory(*, entry: SkillEntry, path: str) -> list[DirectoryChild] | None:
    """The direct children of a directory of a served skill's entry ("" is its root), or None
    when it has no such directory."""
    prefix = f"{path}/" if path else ""
    children: dict[str, bool] = {}
    for item in entry.files:
        if not item.path.startswith(prefix):
            continue
        head, slash, _ = item.path[len(prefix) :].partition("/")
        children[prefix + head] = children.get(prefix + head, False) or bool(slash)
    if path and not children:
        return None  # a file, or nothing: only directories that hold files exist in a bundle
    return [DirectoryChild(path=child, is_directory=is_dir) for child, is_dir in sorted(children.items())]
