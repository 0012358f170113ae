"""Writing skills: publish versions, import folders and zips, sync the bundled folder, enable/disable."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models.functions import Lower

from registry import selectors
from registry.errors import (
    ApplicationError,
    Conflict,
    InvalidBundle,
    InvalidSkill,
    LenientReadingRefused,
    NameTaken,
    RequirementCycle,
    VersionConflict,
)
from registry.models import Blob, Label, LabelHistory, Skill, SkillFile, SkillSource, SkillVersion, WebhookEvent
from registry.selectors.dependencies import REQUIRES_FIELD, requirements_check
from registry.selectors.label_policies import label_policy_get
from registry.selectors.skillsets import skillset_name_taken
from registry.services.attestations import channel_of, publisher_signature_attach, version_attest
from registry.services.audit import SYSTEM, Actor, audit_record
from registry.services.capabilities import version_capabilities_store
from registry.services.evals import eval_suite_replace
from registry.services.generation import registry_changed
from registry.services.labels import label_move
from registry.services.scans import scan_queue
from registry.services.webhooks import webhook_event_emit
from registry.skillformat.bundle import (
    SKILL_MD,
    Bundle,
    Limits,
    bundle_from_parts,
    find_skill_folders,
    portable_name_problem,
    read_folder,
    read_zip,
)
from registry.skillformat.capabilities import bundle_capabilities
from registry.skillformat.evals import EVALS_FOLDER, SUITE_PATH
from registry.skillformat.skill_templates import PROMPT, skill_template
from registry.skillformat.skillmd import Issue, ParsedSkill, read_skill_md
from registry.skillformat.token_count import count_tokens


def registry_limits() -> Limits:
    return Limits(
        skill_md_bytes=settings.SKILL_MD_MAX_BYTES,
        file_bytes=settings.SKILL_FILE_MAX_BYTES,
        bundle_bytes=settings.SKILL_BUNDLE_MAX_BYTES,
        bundle_files=settings.SKILL_BUNDLE_MAX_FILES,
    )


@dataclass(frozen=True)
class PublishResult:
    version: SkillVersion
    created: bool
    warnings: tuple[Issue, ...]

    @property
    def skill(self) -> Skill:
        return self.version.skill


def _validate_source(source: str) -> SkillSource:
    try:
        return SkillSource(source)
    except ValueError:
        choices = ", ".join(SkillSource.values)
        raise InvalidSkill(
            f"Unknown source '{source}'; use one of {choices}.", fields={"source": f"one of {choices}"}
        ) from None


# Spec deviations in a name (uppercase, underscores, over 64 chars) are only warnings, but the
# name is also a database key and an export folder name, so these would break storage or paths.
_STORABLE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


ACCEPT_HINT = (
    "Fix the YAML, or accept this reading explicitly (the console's Publish as read, "
    'or `"accept_lenient": true` in the API).'
)


@dataclass(frozen=True)
class SkillMdCheck:
    """What publishing a SKILL.md would make of it: every error and warning by line, and the
    reading. Errors refuse the publish; warnings are published with the version."""

    reading: ParsedSkill | None  # as it would be stored; None when the text cannot be read
    issues: tuple[Issue, ...]
    # Among the errors, the requirement cycles through this skill: refused as a conflict (409)
    # with the registry's state rather than as bad text, when they are the only errors.
    cycles: tuple[Issue, ...] = ()

    @property
    def errors(self) -> list[Issue]:
        return [issue for issue in self.issues if issue.level == "error"]

    @property
    def parsed(self) -> ParsedSkill | None:
        """The reading when it publishes as is."""
        return None if self.errors else self.reading

    @property
    def needs_acceptance(self) -> bool:
        """Only fallback readings stand in the way: accepting them would publish."""
        errors = self.errors
        return bool(errors) and self.reading is not None and all(issue.fallback for issue in errors)

    def publishable(self) -> ParsedSkill:
        """The reading, or InvalidSkill naming every error (LenientReadingRefused when only
        fallback readings need accepting, with the frontmatter as it would be stored)."""
        if self.parsed is not None:
            return self.parsed
        errors = self.errors
        extra: dict = {"issues": [asdict(issue) for issue in self.issues]}
        if errors and all(issue in self.cycles for issue in errors):
            raise RequirementCycle(
                " ".join(f"Line {issue.line}: {issue.message}" for issue in errors),
                line=errors[0].line,
                fields={REQUIRES_FIELD: errors[0].message},
                extra={**extra, "cycles": [issue.message for issue in errors]},
            )
        error_class = InvalidSkill
        if self.needs_acceptance and self.reading is not None:
            error_class = LenientReadingRefused
            extra["read_as"] = self.reading.frontmatter
        raise error_class(
            " ".join(f"Line {issue.line}: {issue.message}" for issue in errors),
            line=errors[0].line,
            fields={issue.field: issue.message for issue in errors if issue.field},
            extra=extra,
        )


def skill_md_check(
    *,
    skill_md: bytes | str,
    expected_name: str | None = None,
    folder_name: str | None = None,
    accept_lenient: bool = False,
) -> SkillMdCheck:
    """Every check a publish makes of a SKILL.md text, never raising for content: the console's
    live check shows exactly this, and `skill_version_publish` refuses exactly its errors.

    A value read by the fallback (a field that is not valid YAML, read as text) is an error
    unless `accept_lenient`: the author must see and accept what will be stored.
    """
    reading, issues = read_skill_md(skill_md, folder_name=folder_name, limits=registry_limits())
    if not accept_lenient:
        issues = [
            replace(issue, level="error", message=f"{issue.message} {ACCEPT_HINT}")
            if issue.fallback and issue.level == "warning"
            else issue
            for issue in issues
        ]
    if reading is not None:
        name_line = reading.field_lines.get("name", 1)
        if not _STORABLE_NAME.fullmatch(reading.name) or ".." in reading.name:
            issues.append(
                Issue(
                    "error",
                    name_line,
                    f"The name '{reading.name[:80]}' cannot be stored: use at most 128 letters, digits, '-', '_' "
                    "or '.', starting with a letter or digit (the spec asks for lowercase letters, digits and '-').",
                    "name",
                )
            )
        elif problem := portable_name_problem(reading.name):
            # The name is the folder an export or a client installs the skill into.
            issues.append(
                Issue("error", name_line, f"The name '{reading.name}' {problem}; choose another name.", "name")
            )
        if expected_name is not None and reading.name != expected_name:
            issues.append(
                Issue(
                    "error",
                    name_line,
                    f"The SKILL.md is named '{reading.name[:80]}' but is being published to '{expected_name}': "
                    "the name must stay (a new name is a new skill).",
                    "name",
                )
            )
    cycles: tuple[Issue, ...] = ()
    if reading is not None and reading.requires:
        requirements = requirements_check(reading)
        issues += [*requirements.warnings, *requirements.cycles]
        cycles = requirements.cycles
        # Published with the version, like the reading's own warnings.
        warnings = sorted([*reading.warnings, *requirements.warnings], key=lambda issue: issue.line)
        reading = replace(reading, warnings=tuple(warnings))
    return SkillMdCheck(reading=reading, issues=tuple(sorted(issues, key=lambda issue: issue.line)), cycles=cycles)


def skill_version_publish(
    *,
    bundle: Bundle,
    source: str = SkillSource.USER,
    message: str = "",
    base_version: int | None = None,
    expected_name: str | None = None,
    folder_name: str | None = None,
    accept_lenient: bool = False,
    create: bool = False,
    actor: Actor = SYSTEM,
    channel: str | None = None,
    publisher_signature: dict | None = None,
) -> PublishResult:
    """Publish a bundle as the next version of its skill (created on first publish), or with
    `create` as a new skill only: a name its source has already raises NameTaken.

    The SKILL.md must pass `skill_md_check`; `accept_lenient` takes fallback readings as read
    (imports of existing folders, or an author who has seen the reading).
    The skill row is locked for the whole transaction: concurrent publishes to one skill queue
    up behind it, so numbers stay 1..N with no gaps or duplicates. Identical content to the
    newest version creates nothing (`created=False`). A `base_version` that is no longer the
    newest raises VersionConflict, so an edit made on a stale copy is never silently lost.

    Every new version is signed in the same transaction (`version_attest`: `channel` is where
    the publish came from, by default the actor's); `publisher_signature`, a DSSE envelope the
    publisher signed, is checked first and refuses the publish when it does not hold.
    """
    source = _validate_source(source)
    parsed = skill_md_check(
        skill_md=bundle.skill_md, expected_name=expected_name, folder_name=folder_name, accept_lenient=accept_lenient
    ).publishable()
    # Read before the skill row is locked: the analysis is bounded but not free (about 1 s for
    # the largest real bundle), and concurrent publishes of the skill should not wait on it.
    capabilities = bundle_capabilities(bundle)
    with transaction.atomic():
        skill = _locked_skill(name=parsed.name, source=source, actor=actor)
        if create and skill.latest_version:
            raise _name_taken(skill)
        if base_version is not None and base_version != skill.latest_version:
            raise VersionConflict(
                f"'{skill.name}' is at version {skill.latest_version}; your edit was based on version {base_version}.",
                fields={"base_version": f"latest is {skill.latest_version}"},
                extra={"latest_version": skill.latest_version},
            )
        newest = skill.versions.filter(number=skill.latest_version).first()
        if newest is not None and _same_content(newest, bundle):
            if publisher_signature is not None:
                publisher_signature_attach(version=newest, envelope=publisher_signature, actor=actor)
            return PublishResult(version=newest, created=False, warnings=parsed.warnings)

        version = _create_version(
            skill=skill, number=skill.latest_version + 1, parsed=parsed, bundle=bundle, message=message, actor=actor
        )
        version_capabilities_store(version=version, manifest=capabilities)
        version_attest(
            version=version,
            bundle=bundle,
            channel=channel or channel_of(actor),
            actor=actor,
            publisher_envelope=publisher_signature,
        )
        _announce_version(skill=skill, version=version, previous=newest, actor=actor)
        scan_queue(version=version)
    return PublishResult(version=version, created=True, warnings=parsed.warnings)


def _announce_version(*, skill: Skill, version: SkillVersion, previous: SkillVersion | None, actor: Actor) -> None:
    """Make `version` the skill's newest, in the audit log, the read model and the webhooks."""
    skill.latest_version = version.number
    skill.save(update_fields=["latest_version", "updated_at"])
    audit_record(
        actor=actor,
        action="version.publish",
        object_type="skill",
        object_repr=f"{skill.name}@{skill.source}",
        before={"version": previous.number if previous else None},
        after={"version": version.number, "fingerprint": version.fingerprint},
    )
    registry_changed(skill=skill.name)
    webhook_event_emit(
        event=WebhookEvent.SKILL_PUBLISHED,
        actor=actor,
        skill=skill.name,
        version=version.number,
        from_version=previous.number if previous else None,
    )


def _locked_skill(*, name: str, source: str, actor: Actor) -> Skill:
    """The skill a publish writes to, created when new, locked until the transaction ends."""
    skill = Skill.objects.filter(name=name, source=source).first()
    if skill is None:
        _refuse_name_clash(name=name)
        try:
            skill, _ = Skill.objects.get_or_create(
                name=name, source=source, defaults={"created_by": actor.user_or_none}
            )
        except IntegrityError:
            _refuse_name_clash(name=name)  # a twin spelled otherwise was created meanwhile
            raise
    return Skill.objects.select_for_update().get(pk=skill.pk)


def _name_taken(skill: Skill) -> NameTaken:
    holder = selectors.skill_name_holder(name=skill.name, source=skill.source)
    author = holder.author.get_username() if holder and holder.author else "system"
    return NameTaken(
        f"'{skill.name}' exists (v{skill.latest_version} by {author}, source {skill.source}): open it or choose "
        f"another name. A new version of it is published from the version you read (the skill's editor, or "
        f"POST /api/v1/skills/{skill.name}/versions with base_version).",
        fields={"name": f"taken by v{skill.latest_version} by {author}"},
        extra={"name": skill.name, "source": skill.source, "latest_version": skill.latest_version},
    )


def _refuse_name_clash(*, name: str) -> None:
    """Refuse a new skill whose name is a skillset's (one namespace: a consumer asks for either by
    name), or differs only by case from an existing skill's, in any source.

    Within a source the database refuses it too (it would be one folder on a case-insensitive
    file system). Across sources the same name is shadowing (SPEC §3), which matches names
    exactly; requiring one spelling per name makes that match case-insensitive as well, so
    `Report` in the workspace cannot sit beside `report` in user without shadowing it.
    """
    skillset = skillset_name_taken(name=name)
    if skillset is not None:
        raise ApplicationError(
            f"'{name}' is the name of the skillset '{skillset.name}': skills and skillsets share one namespace. "
            "Choose another name for the skill.",
            fields={"name": f"taken by the skillset '{skillset.name}'"},
        )
    other = Skill.objects.alias(lowered=Lower("name")).filter(lowered=name.lower()).exclude(name=name).first()
    if other is None:
        return
    raise Conflict(
        f"The skill '{other.name}' ({other.source}) already exists; skill names are unique regardless "
        f"of case, so '{name}' cannot be added beside it. Publish as '{other.name}' (to add a version "
        "or to shadow it from another source) or choose another name.",
        fields={"name": f"differs only by case from '{other.name}' ({other.source})"},
    )


def _same_content(version: SkillVersion, bundle: Bundle) -> bool:
    """Identical to a stored version: same fingerprint and the same executable bits.

    The fingerprint (SPEC §3) covers paths and contents (and link targets) only, so a chmod
    alone must be compared separately or it would be lost on publish. A link's bit is its
    target's, which the target's own row already compares.
    """
    if version.fingerprint != bundle.fingerprint:
        return False
    stored = set(version.files.filter(executable=True, link_target="").values_list("path", flat=True))
    return stored == {f.path for f in bundle.files if f.executable and f.link is None}


def _create_version(
    *, skill: Skill, number: int, parsed: ParsedSkill, bundle: Bundle, message: str, actor: Actor
) -> SkillVersion:
    version = SkillVersion.objects.create(
        skill=skill,
        number=number,
        skill_md=parsed.raw,
        body=parsed.body,
        fingerprint=bundle.fingerprint,
        name=parsed.name,
        description=parsed.description,
        frontmatter=parsed.frontmatter,
        tags=list(parsed.tags),
        triggers=list(parsed.triggers),
        tools=list(parsed.tools),
        warnings=[{"line": w.line, "message": w.message, "field": w.field} for w in parsed.warnings],
        description_tokens=count_tokens(parsed.description),
        body_tokens=count_tokens(parsed.body),
        author=actor.user_or_none,
        message=message[:500],
    )
    # Content is stored once per sha256; ignore_conflicts makes a concurrent insert of the same
    # blob harmless. A link's row points at its target's blob: its content is the target's (a
    # link to SKILL.md is how that text gets a blob of its own).
    blobs = {f.sha256: f.content for f in bundle.files}
    Blob.objects.bulk_create(
        [Blob(sha256=sha256, size=len(content), content=content) for sha256, content in blobs.items()],
        ignore_conflicts=True,
    )
    SkillFile.objects.bulk_create(
        [
            SkillFile(
                version=version,
                path=f.path,
                blob_id=f.sha256,
                size=len(f.content),
                executable=f.executable,
                link_target=f.link or "",
            )
            for f in bundle.files
        ]
    )
    return version


def skill_version_revise(
    *,
    skill: Skill,
    base_version: int,
    skill_md: str | None = None,
    add_files: Iterable[tuple[str, bytes]] = (),
    remove_paths: Iterable[str] = (),
    executable: dict[str, bool] | None = None,
    message: str = "",
    accept_lenient: bool = False,
    actor: Actor = SYSTEM,
) -> PublishResult:
    """The next version of `skill` as an edit of version `base_version` (the console's editor and
    file actions): a new SKILL.md text and/or files added, replaced, removed or chmod-ed; every
    other file is carried over unchanged. A SKILL.md left as it was keeps its reading, accepted
    when that version was published; a changed one is checked like any publish.

    `base_version` is checked under the publish lock, so an edit of a copy that someone has
    published over meanwhile raises VersionConflict instead of dropping their files or text.
    """
    base = Bundle(b"")
    if base_version:
        base = selectors.version_bundle(selectors.skill_version_for(skill=skill, number=base_version))
    files = {f.path: (f.content, f.executable) for f in base.files}
    for path in remove_paths:
        if files.pop(path, None) is None:
            raise InvalidBundle(f"Version {base_version} has no file '{path}'.", fields={"path": path})
    for path, content in add_files:
        # An upload carries no mode: a replaced file keeps its bit, a new one under scripts/
        # starts executable (run_skill runs those), anything else starts plain.
        files[path] = (content, files.get(path, (b"", path.startswith("scripts/")))[1])
    for path, flag in (executable or {}).items():
        if path not in files:
            raise InvalidBundle(f"Version {base_version} has no file '{path}'.", fields={"path": path})
        files[path] = (files[path][0], flag)
    bundle = bundle_from_parts(
        skill_md.encode("utf-8") if skill_md is not None else base.skill_md,
        [(path, content, flag) for path, (content, flag) in files.items()],
        limits=registry_limits(),
    )
    return skill_version_publish(
        bundle=bundle,
        source=skill.source,
        message=message,
        base_version=base_version,
        expected_name=skill.name,
        accept_lenient=accept_lenient or (bool(base_version) and bundle.skill_md == base.skill_md),
        actor=actor,
    )


def skill_md_publish(
    *,
    skill: Skill | None,
    skill_md: str,
    base_version: int = 0,
    template: str = PROMPT,
    message: str = "",
    accept_lenient: bool = False,
    actor: Actor = SYSTEM,
) -> PublishResult:
    """Publish a SKILL.md text written in an editor: the next version of `skill` as an edit of
    `base_version`, or, with no skill (the New page), a new user skill with `template`'s files
    (NameTaken when a user skill has that name: the New page never adds to someone's skill)."""
    if skill is not None:
        return skill_version_revise(
            skill=skill,
            base_version=base_version,
            skill_md=skill_md,
            message=message,
            accept_lenient=accept_lenient,
            actor=actor,
        )
    files = skill_template(template, name="unused").files
    return skill_version_publish(
        bundle=bundle_from_parts(skill_md.encode("utf-8"), files, limits=registry_limits()),
        source=SkillSource.USER,
        message=message,
        accept_lenient=accept_lenient,
        create=True,
        actor=actor,
    )


def skill_file_delete(
    *, skill: Skill, base_version: int, path: str, message: str = "", actor: Actor = SYSTEM
) -> PublishResult:
    """The next version without the file at `path` (a VersionConflict when `base_version` is not
    the latest, as every revise)."""
    message = message or f"Delete {path}"
    return skill_version_revise(
        skill=skill, base_version=base_version, remove_paths=[path], message=message, actor=actor
    )


def skill_file_set_executable(
    *, skill: Skill, base_version: int, path: str, executable: bool, actor: Actor = SYSTEM
) -> PublishResult:
    message = f"{'Make' if executable else 'Unmark'} {path} executable"
    return skill_version_revise(
        skill=skill, base_version=base_version, executable={path: executable}, message=message, actor=actor
    )


def skill_files_add(
    *,
    skill: Skill,
    base_version: int,
    files: list[tuple[str, bytes]],
    folder: str = "",
    message: str = "",
    actor: Actor = SYSTEM,
) -> PublishResult:
    """The next version with `files` (name, content) added under `folder`, replacing any of the
    same path. SKILL.md is not one of them: it is published through the editor, where its reading
    is checked and shown."""
    if not files:
        raise ApplicationError("Choose one or more files (or a zip of the skill folder) to upload.")
    folder = folder.strip().strip("/")
    added = [(f"{folder}/{name}" if folder else name, content) for name, content in files]
    if any(path == SKILL_MD for path, _ in added):
        raise ApplicationError("Edit SKILL.md in the editor; upload the other files here.")
    message = message or "Upload " + ", ".join(path for path, _ in added)
    return skill_version_revise(skill=skill, base_version=base_version, add_files=added, message=message, actor=actor)


def skill_import_path(
    *, path: Path, source: str = SkillSource.WORKSPACE, message: str = "", actor: Actor = SYSTEM
) -> PublishResult:
    """Import one skill folder or zip file. Everything is read and checked before anything is written.

    Existing folders are taken as read: a field that is not valid YAML is stored as the fallback
    reads it, with a warning naming its line (SPEC §2), not refused.
    """
    if path.is_dir():
        bundle = read_folder(path, limits=registry_limits())
        folder_name = path.name
    else:
        with path.open("rb") as handle:
            bundle = read_zip(handle, limits=registry_limits())
        folder_name = None
    # The skill's evals/ is its eval suite (imported by skills_import_tree), not part of the
    # skill: as skill-creator's packager does, it stays out of the version, so the agent under
    # test never reads the cases' expected answers.
    bundle = replace(bundle, files=tuple(file for file in bundle.files if not file.path.startswith(EVALS_FOLDER)))
    return skill_version_publish(
        bundle=bundle,
        source=source,
        message=message or f"Imported from {path.name}",
        folder_name=folder_name,
        accept_lenient=True,
        actor=actor,
        channel="import",
    )


@dataclass
class ImportReport:
    published: list[PublishResult] = field(default_factory=list)
    unchanged: list[PublishResult] = field(default_factory=list)
    failed: list[tuple[Path, str]] = field(default_factory=list)


def skills_import_tree(
    *,
    root: Path,
    source: str = SkillSource.WORKSPACE,
    actor: Actor = SYSTEM,
    progress: Callable[[Path], None] | None = None,
    only: Iterable[Path] | None = None,
) -> ImportReport:
    """Import every skill folder under `root`; one bad folder is reported, not fatal to the rest."""
    report = ImportReport()
    folders = list(only) if only is not None else find_skill_folders(root)
    for folder in folders:
        try:
            result = skill_import_path(path=folder, source=source, actor=actor)
        except ApplicationError as exc:
            report.failed.append((folder, _describe(exc)))
        else:
            (report.published if result.created else report.unchanged).append(result)
            if problem := skill_suite_import(folder=folder, skill=result.skill, actor=actor):
                report.failed.append((folder, problem))
        if progress:
            progress(folder)
    return report


def skill_suite_import(*, folder: Path, skill: Skill, actor: Actor) -> str | None:
    """Make the folder's evals/evals.json (if it has one) the skill's eval suite; the problem
    with it, if any (the skill itself is imported all the same)."""
    path = folder / SUITE_PATH
    if not path.is_file():
        return None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        return f"{SUITE_PATH}: not JSON ({error})"
    try:
        eval_suite_replace(skill=skill, document=document, actor=actor)
    except ApplicationError as exc:
        return f"{SUITE_PATH}: {_describe(exc)}"
    return None


def _describe(exc: ApplicationError) -> str:
    return f"line {exc.line}: {exc.detail}" if exc.line else exc.detail


def skill_set_enabled(*, skill: Skill, enabled: bool, actor: Actor = SYSTEM) -> Skill:
    with transaction.atomic():
        skill = Skill.objects.select_for_update().get(pk=skill.pk)
        if skill.enabled == enabled:
            return skill
        skill.enabled = enabled
        skill.save(update_fields=["enabled", "updated_at"])
        audit_record(
            actor=actor,
            action="skill.enable" if enabled else "skill.disable",
            object_type="skill",
            object_repr=f"{skill.name}@{skill.source}",
            before={"enabled": not enabled},
            after={"enabled": enabled},
        )
        registry_changed(skill=skill.name)
        webhook_event_emit(
            event=WebhookEvent.SKILL_ENABLED if enabled else WebhookEvent.SKILL_DISABLED,
            actor=actor,
            skill=skill.name,
            version=skill.latest_version,
        )
    return skill


def _folder_signature(folder: Path) -> str:
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for filename in sorted(filenames):
            stat = os.lstat(os.path.join(dirpath, filename))
            relative = os.path.relpath(os.path.join(dirpath, filename), folder)
            digest.update(f"{relative}\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_mode}\n".encode())
    return digest.hexdigest()


def _sync_mark(signature: str, version: int) -> str:
    """The folder as last synced *and* the version that sync left newest: a version published to
    the bundled skill any other way (an old API client, a raw write) no longer matches, so the
    next sync re-reads the folder and restores what it says."""
    return hashlib.sha256(f"{signature}:{version}".encode()).hexdigest()


# The label the bundled skills are served and discovered under (`DISCOVERY_LABEL=production`).
BUNDLED_LABEL = "production"


@dataclass
class SyncReport(ImportReport):
    skipped: list[str] = field(default_factory=list)
    labelled: list[tuple[str, int]] = field(default_factory=list)  # (skill, version) BUNDLED_LABEL now points to
    label_held: str = ""  # why the sync labelled nothing, when it did not (a label policy)


def skills_sync_bundled(
    *, root: Path | None = None, actor: Actor = SYSTEM, progress: Callable[[Path], None] | None = None
) -> SyncReport:
    """Bring the `bundled` source in line with the skills/ folder, re-reading only changed folders."""
    root = root or settings.BUNDLED_SKILLS_DIR
    report = SyncReport()
    known = {s.name: (s.sync_signature, s.latest_version) for s in Skill.objects.filter(source=SkillSource.BUNDLED)}
    changed: list[tuple[Path, str]] = []
    folders = find_skill_folders(root)
    for folder in folders:
        signature = _folder_signature(folder)
        mark, latest = known.get(folder.name, ("", 0))
        if mark == _sync_mark(signature, latest):
            report.skipped.append(folder.name)
            if progress:
                progress(folder)
        else:
            changed.append((folder, signature))
    for folder, signature in changed:
        partial = skills_import_tree(
            root=root, source=SkillSource.BUNDLED, actor=actor, progress=progress, only=[folder]
        )
        for result in partial.published + partial.unchanged:
            Skill.objects.filter(pk=result.skill.pk).update(sync_signature=_sync_mark(signature, result.version.number))
        report.published += partial.published
        report.unchanged += partial.unchanged
        report.failed += partial.failed
    _bundled_label_sync(
        names=[folder.name for folder in folders],
        synced_before={name: latest for name, (_, latest) in known.items()},
        actor=actor,
        report=report,
    )
    return report


def _bundled_label_sync(*, names: list[str], synced_before: dict[str, int], actor: Actor, report: SyncReport) -> None:
    """Put BUNDLED_LABEL on the bundled skills' newest versions, so a fresh registry serves and
    discovers them under it with no further step; it then follows each new version the sync
    publishes, for as long as nobody moved it elsewhere.

    A person's decision stands: a label someone moved off the bundle's version (a rollback) stays
    where it is, and one someone removed is never put back (its history says it existed). A
    label policy on BUNDLED_LABEL is the operator saying who may move it and on what evidence,
    which a sync has neither of: then the sync labels nothing and says so.
    """
    if label_policy_get(label=BUNDLED_LABEL) is not None:
        report.label_held = (
            f"'{BUNDLED_LABEL}' has a label policy, so the sync moved no label: move it on each skill's "
            f"Versions page or with `skills label NAME {BUNDLED_LABEL} VERSION`."
        )
        return
    skills = list(Skill.objects.filter(source=SkillSource.BUNDLED, name__in=names).order_by("name"))
    current = {
        label.skill_id: label.version.number
        for label in Label.objects.filter(skill__in=skills, name=BUNDLED_LABEL).select_related("version")
    }
    had_label = set(
        LabelHistory.objects.filter(skill__in=skills, label=BUNDLED_LABEL).values_list("skill_id", flat=True)
    )
    for skill in skills:
        pointed = current.get(skill.pk)
        first_time = pointed is None and skill.pk not in had_label
        following = pointed is not None and pointed == synced_before.get(skill.name) != skill.latest_version
        if first_time or following:
            label_move(skill=skill, label=BUNDLED_LABEL, version_number=skill.latest_version, actor=actor)
            report.labelled.append((skill.name, skill.latest_version))
