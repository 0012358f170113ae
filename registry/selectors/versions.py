"""A skill's versions, labels, files and the diff between two versions (API and console)."""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
from dataclasses import dataclass, field

from django.core.cache import cache

from registry.errors import NotFound
from registry.models import Label, LabelHistory, Skill, SkillFile, SkillVersion
from registry.readmodel.effective import requested_label
from registry.readmodel.results import cache_namespace
from registry.selectors.skills import skill_others, skill_winner
from registry.skillformat.bundle import Bundle, BundleFile, write_zip
from registry.skillformat.skillmd import Issue


def version_bundle(version: SkillVersion) -> Bundle:
    """The exact bundle a version was published from (SKILL.md bytes and files with modes)."""
    files = tuple(
        BundleFile(path=f.path, content=bytes(f.blob.content), executable=f.executable, link=f.link)
        for f in version.files.select_related("blob").order_by("path")
    )
    return Bundle(skill_md=version.skill_md.encode("utf-8"), files=files)


def _username(user) -> str | None:
    return user.get_username() if user is not None else None


def skill_name_holder(*, name: str, source: str) -> SkillVersion | None:
    """The newest version of the skill `name` in `source` (with its skill and author), or None
    when that source has no skill of that name: who a new skill of that name would collide with."""
    skill = Skill.objects.filter(name=name, source=source).first()
    if skill is None:
        return None
    return skill.versions.select_related("skill", "author").filter(number=skill.latest_version).first()


def skill_labels(skill: Skill) -> dict[str, int]:
    """Label name -> version number."""
    return dict(skill.labels.values_list("name", "version__number"))


def label_names_in_use() -> list[str]:
    """Every label some skill carries, `production` first: what a turn can be resolved at."""
    names = set(Label.objects.values_list("name", flat=True).distinct())
    return sorted(names, key=lambda name: (name != "production", name))


def skill_version_numbers(*, name: str) -> list[int]:
    """The version numbers of the skill that wins `name` (for a version picker), or []."""
    winner = skill_winner(Skill.objects.filter(name=name))
    return list(winner.versions.order_by("number").values_list("number", flat=True)) if winner else []


@dataclass(frozen=True)
class VersionRow:
    """One line of a skill's version list."""

    number: int
    fingerprint: str
    message: str
    author: str | None
    created_at: dt.datetime
    labels: list[str]
    warnings: int  # how many validation warnings it has
    description: str


def skill_version_rows(skill: Skill) -> list[VersionRow]:
    """Every version, newest first, with the labels pointing at it (no SKILL.md text loaded)."""
    labels: dict[int, list[str]] = {}
    for label, number in skill.labels.values_list("name", "version__number"):
        labels.setdefault(number, []).append(label)
    return [
        VersionRow(
            number=version.number,
            fingerprint=version.fingerprint,
            message=version.message,
            author=_username(version.author),
            created_at=version.created_at,
            labels=sorted(labels.get(version.number, [])),
            warnings=len(version.warnings or []),
            description=version.description,
        )
        for version in skill_versions(skill)
    ]


def stored_issues(warnings: list | None) -> list[Issue]:
    """A version's stored validation warnings (saved without their level) as Issues."""
    return [
        Issue(level=w.get("level", "warning"), line=w.get("line"), message=w.get("message"), field=w.get("field"))
        for w in warnings or ()
    ]


@dataclass(frozen=True)
class SkillVersionDetail:
    """A skill at one version, with what decides whether agents get it."""

    skill: Skill
    version: SkillVersion
    effective: bool
    shadowed_by: str | None
    others: list[Skill]  # the same name in other sources, highest priority first
    labels: dict[str, int]
    version_labels: list[str]
    warnings: list[Issue]
    files: list[SkillFile]
    tokens: dict[str, int]
    author: str | None


def skill_version_detail(*, skill: Skill, version: SkillVersion) -> SkillVersionDetail:
    labels = skill_labels(skill)
    others = skill_others(skill)
    winner = skill_winner([skill, *others])
    return SkillVersionDetail(
        skill=skill,
        version=version,
        effective=winner == skill,
        shadowed_by=winner.source if winner is not None and winner != skill and skill.enabled else None,
        others=others,
        labels=labels,
        version_labels=sorted(name for name, number in labels.items() if number == version.number),
        warnings=stored_issues(version.warnings),
        files=list(version.files.all()),
        tokens={"description": version.description_tokens, "body": version.body_tokens},
        author=_username(version.author),
    )


@dataclass(frozen=True)
class LabelPointer:
    """Where a label points, and who moved it last."""

    skill: str
    source: str
    label: str
    version: int
    previous_version: int | None
    updated_by: str | None
    updated_at: dt.datetime
    canary_version: int | None = None  # a rollout's: `weight`% of subjects read it
    weight: int = 0
    rollout_started_at: dt.datetime | None = None
    rolled_back_at: dt.datetime | None = None


def label_pointer(label: Label, *, skill: Skill, previous_version: int | None = None) -> LabelPointer:
    return LabelPointer(
        skill=skill.name,
        source=skill.source,
        label=label.name,
        version=label.version.number,
        previous_version=previous_version,
        updated_by=_username(label.updated_by),
        updated_at=label.updated_at,
        canary_version=label.canary_number,
        weight=label.weight,
        rollout_started_at=label.rollout_started_at,
        rolled_back_at=label.rolled_back_at,
    )


@dataclass(frozen=True)
class SkillLabels:
    skill: Skill
    labels: list[LabelPointer]
    history: list[LabelHistory]


def skill_label_state(skill: Skill) -> SkillLabels:
    """A skill's labels and the last 200 moves (the API's label list)."""
    return SkillLabels(
        skill=skill,
        labels=[
            label_pointer(label, skill=skill)
            for label in skill.labels.select_related("version", "canary_version", "updated_by")
        ],
        history=skill_label_history(skill),
    )


def skill_versions(skill: Skill) -> list[SkillVersion]:
    """Every version, newest first, without the SKILL.md text (authors joined)."""
    return list(skill.versions.select_related("author").defer("skill_md", "body", "frontmatter").order_by("-number"))


def skill_label_history(skill: Skill, *, limit: int = 200) -> list[LabelHistory]:
    return list(LabelHistory.objects.filter(skill=skill).select_related("changed_by")[:limit])


def version_files(version: SkillVersion) -> list[SkillFile]:
    return list(version.files.order_by("path"))


@dataclass(frozen=True)
class BundleZip:
    content: bytes
    etag: str


def _zip_digest_key(skill: Skill, version: SkillVersion) -> str:
    return f"bundle-zip-sha:{cache_namespace()}:{version.pk}:{skill.name}"


def bundle_zip_etag(*, skill: Skill, version: SkillVersion) -> str | None:
    """The ETag of the version's zip when it was built before: versions are immutable, so a
    matching If-None-Match is answered without building it again."""
    return cache.get(_zip_digest_key(skill, version))


def bundle_zip(*, skill: Skill, version: SkillVersion) -> BundleZip:
    """The skill folder at `version` as a zip, and its strong ETag (remembered a day)."""
    content = write_zip(version_bundle(version), prefix=skill.name)
    etag = f'"{hashlib.sha256(content).hexdigest()}"'
    cache.set(_zip_digest_key(skill, version), etag, 24 * 3600)
    return BundleZip(content, etag)


def version_file(version: SkillVersion, path: str) -> SkillFile:
    item = version.files.filter(path=path).select_related("blob").first()
    if item is None:
        raise NotFound(f"'{version.name}' v{version.number} has no file '{path}'.")
    return item


DIFF_TEXT_MAX = 256 * 1024


def text_lines(content: bytes) -> list[str] | None:
    """The lines of a text file, or None for binary or oversized content (not diffed)."""
    if len(content) > DIFF_TEXT_MAX or b"\x00" in content:
        return None
    try:
        return content.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def unified_diff(before: str, after: str, *, from_name: str, to_name: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=from_name, tofile=to_name
        )
    )


@dataclass(frozen=True)
class FileChange:
    path: str
    change: str  # added | removed | modified | mode
    size_before: int | None
    size_after: int | None
    executable_before: bool | None
    executable_after: bool | None
    link_before: str | None  # the link's target, when the file was a link
    link_after: str | None
    diff: str | None  # unified diff; None for binary files and mode-only changes


@dataclass(frozen=True)
class VersionDiff:
    old: SkillVersion | None  # None: `new` is compared with nothing (the first version)
    new: SkillVersion
    skill_md_diff: str
    files: list[FileChange] = field(default_factory=list)
    unchanged_files: int = 0


def skill_version_diff(*, old: SkillVersion | None, new: SkillVersion) -> VersionDiff:
    """SKILL.md and bundle-file changes from `old` to `new` (unified diffs, text files only)."""
    skill_md_diff = unified_diff(
        old.skill_md if old else "",
        new.skill_md,
        from_name=f"a/SKILL.md (v{old.number})" if old else "/dev/null",
        to_name=f"b/SKILL.md (v{new.number})",
    )
    old_files = {f.path: f for f in old.files.select_related("blob")} if old else {}
    new_files = {f.path: f for f in new.files.select_related("blob")}
    changes, unchanged = [], 0
    for path in sorted(set(old_files) | set(new_files)):
        a, b = old_files.get(path), new_files.get(path)
        if a and b and (a.blob_id, a.executable, a.link) == (b.blob_id, b.executable, b.link):
            unchanged += 1
            continue
        if a is None or b is None:
            change = "added" if a is None else "removed"
        else:
            change = "modified" if (a.blob_id, a.link) != (b.blob_id, b.link) else "mode"
        diff = None
        if change != "mode":
            lines_a = text_lines(bytes(a.blob.content)) if a else []
            lines_b = text_lines(bytes(b.blob.content)) if b else []
            if lines_a is not None and lines_b is not None:
                from_name, to_name = (f"a/{path}" if a else "/dev/null"), (f"b/{path}" if b else "/dev/null")
                diff = "".join(difflib.unified_diff(lines_a, lines_b, fromfile=from_name, tofile=to_name))
        changes.append(
            FileChange(
                path=path,
                change=change,
                size_before=a.size if a else None,
                size_after=b.size if b else None,
                executable_before=a.executable if a else None,
                executable_after=b.executable if b else None,
                link_before=a.link if a else None,
                link_after=b.link if b else None,
                diff=diff,
            )
        )
    return VersionDiff(old=old, new=new, skill_md_diff=skill_md_diff, files=changes, unchanged_files=unchanged)


@dataclass(frozen=True)
class Audience:
    """Readers of a skill who get the same answer, and what a label move changes for them."""

    who: list[str]  # e.g. ["naming production", "naming no label"]
    before: SkillVersion | None  # what they get now; None: nothing (the skill lacks the label)
    before_is_latest: bool  # they get the newest version as no label answers for them
    canary: SkillVersion | None  # a running rollout's version, read by `weight`% of them
    weight: int
    after: SkillVersion
    diff: VersionDiff | None  # `before` -> `after`; None when they keep what they have

    @property
    def changed(self) -> bool:
        return self.diff is not None or self.canary is not None


def label_move_audiences(*, skill: Skill, label: str, target: SkillVersion) -> list[Audience]:
    """For a move of `label` to `target`: what each audience is served before and after it.
    Readers naming the label get `target`; when the label is the one a read naming none gets
    (`production`), so do those readers, who before it get the label's version if the skill
    has the label, else the latest. Audiences served alike are one entry."""
    found = skill.labels.select_related("version", "canary_version").filter(name=label).first()
    rollout = found if found is not None and found.rollout_active else None
    canary, weight = (rollout.canary_version, rollout.weight) if rollout is not None else (None, 0)
    befores = [([f"naming {label}"], found.version if found else None, False)]
    if label == requested_label(None):
        if found is not None:
            befores[0][0].append("naming no label")
        else:
            befores.append((["naming no label"], skill.versions.get(number=skill.latest_version), True))
    return [
        Audience(
            who=who,
            before=before,
            before_is_latest=is_latest,
            canary=canary,
            weight=weight,
            after=target,
            diff=None if before == target else skill_version_diff(old=before, new=target),
        )
        for who, before, is_latest in befores
    ]
