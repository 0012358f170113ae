"""`python manage.py skills ...` — the registry from the command line (SPEC §9, seed 002)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from django.core.management import call_command, get_commands, load_command_class
from django.core.management.base import CommandError, CommandParser
from tqdm import tqdm

from registry import selectors
from registry.errors import ApplicationError, NotFound
from registry.management.base import RegistryCommand
from registry.management.table import text_table
from registry.models import SkillSource
from registry.selectors.dependencies import requirements_check
from registry.services.audit import Actor
from registry.services.labels import label_move
from registry.services.scans import versions_rescan
from registry.services.skills import (
    BUNDLED_LABEL,
    ImportReport,
    registry_limits,
    skill_import_path,
    skill_set_enabled,
    skill_suite_import,
    skill_version_publish,
    skills_import_tree,
    skills_sync_bundled,
)
from registry.skillformat.bundle import bundle_from_parts, find_skill_folders, read_folder, read_zip, write_folder
from registry.skillformat.skill_templates import CODE, PROMPT, skill_template
from registry.skillformat.skillmd import read_skill_md

CLI = Actor(via="cli")


class Command(RegistryCommand):
    help = "Manage skills: list, info, validate, import, export, sync, enable, disable, create, label, rescan, eval."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

        listing = sub.add_parser(
            "list",
            help="List effective skills with their newest version, the version served by default "
            "(production, else latest) and their labels (--all: every source, disabled too).",
        )
        listing.add_argument("--all", action="store_true")

        info = sub.add_parser("info", help="Show one skill's metadata, versions and labels.")
        info.add_argument("name")

        validate = sub.add_parser("validate", help="Validate a skill folder, zip or SKILL.md file.")
        validate.add_argument("path", type=Path)

        imp = sub.add_parser("import", help="Import a skill folder, a zip, or a folder of skills.")
        imp.add_argument("path", type=Path)
        imp.add_argument("--source", default=SkillSource.WORKSPACE, choices=SkillSource.values)

        export = sub.add_parser(
            "export", help="Export a skill (or --all) into DEST/NAME/, byte for byte, executable bits included."
        )
        export.add_argument("name", nargs="?")
        export.add_argument("dest", type=Path)
        export.add_argument("--all", action="store_true")
        export.add_argument(
            "--label",
            default=None,
            help="Export the version this label points to (with --all, skills without it are skipped). "
            "Default: production, else the latest version, as the API serves.",
        )

        sub.add_parser("sync", help="Sync the bundled skills/ folder; only changed folders are re-read.")

        for verb in ("enable", "disable"):
            toggle = sub.add_parser(verb, help=f"{verb.capitalize()} a skill.")
            toggle.add_argument("name")
            toggle.add_argument("--source", choices=SkillSource.values)

        create = sub.add_parser("create", help="Create a user skill from a template (seed 002).")
        create.add_argument("name")
        create.add_argument("-d", "--description", default=None, help="What the skill does and when to use it.")
        create.add_argument("--code", action="store_true", help="Add a scripts/skill.py template (a code skill).")

        label = sub.add_parser("label", help="Point LABEL at VERSION of a skill (rollback = move it back).")
        label.add_argument("name")
        label.add_argument("label")
        label.add_argument("version", type=int)
        label.add_argument("--source", choices=SkillSource.values)

        rescan = sub.add_parser(
            "rescan",
            help="Queue security scans of the versions labels serve whose scan is by another scanner version or "
            "rule pack (or missing); the `scans` worker runs them.",
        )
        rescan.add_argument("--all", action="store_true", help="Queue a scan of every version, whatever its scans.")

        # Running evals dispatches agent turns, the agents app's job: its `skills_eval` command
        # owns the arguments (`skills eval --help` shows them) and this forwards them.
        evaluate = sub.add_parser(
            "eval", add_help=False, help="Run a skill's eval suite, wait, print the summary (skills eval --help)."
        )
        evaluate.add_argument("arguments", nargs=argparse.REMAINDER)

    def run_from_argv(self, argv: list[str]) -> None:
        # From the shell, `skills eval ...` is the `skills_eval` command with the rest of the
        # line, so its options (`--version N` among them) and its --help are its own.
        if argv[2:3] == ["eval"]:
            command = load_command_class(get_commands()["skills_eval"], "skills_eval")
            command.run_from_argv([argv[0], "skills eval", *argv[3:]])
            return
        super().run_from_argv(argv)

    def handle(self, *args, action: str, **options) -> None:
        handler = getattr(self, f"handle_{action}")
        try:
            handler(**options)
        except ApplicationError as exc:
            where = f" (line {exc.line})" if exc.line else ""
            raise CommandError(f"{exc.detail}{where}") from exc

    def handle_rescan(self, *, all: bool, **_) -> None:
        scans = versions_rescan(everything=all)
        which = "every version" if all else "versions labels serve with an outdated or missing scan"
        self.stdout.write(f"Queued {len(scans)} scan{'s' if len(scans) != 1 else ''} ({which}).")

    # --- reading -------------------------------------------------------------------------
    def handle_list(self, *, all: bool, **_) -> None:
        # The API's own catalogue, so the columns mean what they mean there.
        rows = [row for row in selectors.skill_catalog(shadowed=all) if all or row.effective]
        if not rows:
            self.stdout.write("No skills. Try `python manage.py skills sync`.")
            return
        table = [("NAME", "SOURCE", "LATEST", "SERVED", "LABELS", "DESCRIPTION")]
        for row in rows:
            flags = [] if row.skill.enabled else ["disabled"]
            if row.shadowed_by:
                flags.append(f"shadowed by {row.shadowed_by}")
            labels = " ".join(f"{name}=v{number}" for name, number in sorted(row.labels.items())) or "-"
            served = row.labels.get("production", row.skill.latest_version)
            description = _one_line(row.version.description, 60) + (f"  [{', '.join(flags)}]" if flags else "")
            table.append(
                (row.skill.name, row.skill.source, f"v{row.skill.latest_version}", f"v{served}", labels, description)
            )
        for line in text_table(table):
            self.stdout.write(line)
        self.stderr.write(
            "LATEST: the newest version. SERVED: the version the API, resolve, the agent and export give "
            "when no label is asked for (production, else latest)."
        )

    def handle_info(self, *, name: str, **_) -> None:
        skill = selectors.skill_get(name=name)
        version = skill.versions.get(number=skill.latest_version)
        labels = {label.name: label.version.number for label in skill.labels.select_related("version")}
        info = {
            "name": skill.name,
            "source": skill.source,
            "enabled": skill.enabled,
            "latest_version": skill.latest_version,
            "labels": labels,
            "description": version.description,
            "tags": version.tags,
            "triggers": version.triggers,
            "tools": version.tools,
            "fingerprint": version.fingerprint,
            "files": [
                f"{f.path} -> {f.link}"
                if f.link
                else f"{f.path} ({f.size} bytes{', executable' if f.executable else ''})"
                for f in version.files.all()
            ],
            "tokens": {"description": version.description_tokens, "body": version.body_tokens},
            "warnings": version.warnings,
        }
        self.stdout.write(json.dumps(info, indent=2, ensure_ascii=False))

    def handle_validate(self, *, path: Path, **_) -> None:
        if path.is_dir():
            bundle = read_folder(path, limits=registry_limits())
            skill_md, folder_name = bundle.skill_md, path.name
        elif path.suffix == ".zip":
            with path.open("rb") as handle:
                skill_md, folder_name = read_zip(handle, limits=registry_limits()).skill_md, None
        elif path.is_file():
            skill_md, folder_name = path.read_bytes(), path.parent.name
        else:
            raise CommandError(f"{path} does not exist.")
        reading, issues = read_skill_md(skill_md, folder_name=folder_name, limits=registry_limits())
        if reading is not None:  # what the registry holds: skills required but not there, cycles
            found = requirements_check(reading)
            issues = sorted([*issues, *found.warnings, *found.cycles], key=lambda issue: issue.line)
        for issue in issues:
            # Import takes such a reading; a publish over the API or in the console asks first.
            accept = " (publishing it needs `accept_lenient`)" if issue.fallback else ""
            self.stdout.write(f"{path}:{issue.line}: {issue.level}: {issue.message}{accept}")
        errors = [issue for issue in issues if issue.level == "error"]
        if errors:
            raise CommandError(f"{len(errors)} error(s).")
        self.stdout.write(self.style.SUCCESS(f"valid ({len(issues)} warning(s))"))

    # --- writing -------------------------------------------------------------------------
    def handle_import(self, *, path: Path, source: str, **_) -> None:
        if not path.exists():
            raise CommandError(f"{path} does not exist.")
        if path.is_file() or (path / "SKILL.md").is_file():
            result = skill_import_path(path=path, source=source, actor=CLI)
            if path.is_dir() and (problem := skill_suite_import(folder=path, skill=result.skill, actor=CLI)):
                raise CommandError(f"{result.skill.name} was imported, but not its eval suite: {problem}")
            self._report(
                ImportReport(published=[result] if result.created else [], unchanged=[] if result.created else [result])
            )
            return
        folders = find_skill_folders(path)
        with tqdm(total=len(folders), unit="skill", disable=None, file=self.stderr) as bar:
            report = skills_import_tree(
                root=path, source=source, actor=CLI, only=folders, progress=lambda folder: bar.update(1)
            )
        self._report(report)

    def handle_sync(self, **_) -> None:
        report = skills_sync_bundled(actor=CLI)
        for name, number in report.labelled:
            self.stdout.write(f"labelled {name} v{number} {BUNDLED_LABEL}")
        if report.label_held:
            self.stdout.write(report.label_held)
        self._report(report, skipped=len(report.skipped))

    def handle_export(self, *, name: str | None, dest: Path, all: bool, label: str | None, **_) -> None:
        """Every skill goes to DEST/NAME/, one or all. Without --label, the version the API
        serves (production, else latest); with --label, a skill that lacks the label is skipped
        with a line, and one that cannot be written does not stop the others."""
        if all and not name:
            skills = [row.skill for row in selectors.skill_catalog() if row.effective]
        elif name and not all:
            skills = [selectors.skill_get(name=name)]
        else:
            raise CommandError("Give either a skill NAME or --all.")
        exported, skipped, failed = 0, 0, 0
        for skill in skills:
            target = dest / skill.name
            try:
                version = selectors.skill_version_for(skill=skill, label=label)
            except NotFound as exc:
                if not all:
                    raise
                skipped += 1
                self.stdout.write(f"skipped {skill.name}: {exc.detail.removeprefix(repr(skill.name) + ' ')}")
                continue
            if target.exists() and any(target.iterdir()):
                failed += 1
                self.stderr.write(
                    self.style.ERROR(f"failed {skill.name}: {target} is not empty; export into a new folder.")
                )
                continue
            write_folder(selectors.version_bundle(version), target)
            exported += 1
            self.stdout.write(f"exported {skill.name} v{version.number} -> {target}")
        if all:
            self.stdout.write(f"{exported} exported, {skipped} skipped, {failed} failed")
        if failed:
            raise CommandError(f"{failed} skill(s) could not be exported.")

    def handle_enable(self, *, name: str, source: str | None, **_) -> None:
        self._toggle(name, source, True)

    def handle_disable(self, *, name: str, source: str | None, **_) -> None:
        self._toggle(name, source, False)

    def _toggle(self, name: str, source: str | None, enabled: bool) -> None:
        candidates = selectors.skills_named(name=name, source=source)
        if not candidates:
            raise CommandError(f"No skill named '{name}'.")
        for skill in candidates:
            skill_set_enabled(skill=skill, enabled=enabled, actor=CLI)
            self.stdout.write(f"{'enabled' if enabled else 'disabled'} {skill.name} ({skill.source})")

    def handle_create(self, *, name: str, description: str | None, code: bool, **_) -> None:
        if selectors.skills_named(name=name, source=SkillSource.USER):
            raise CommandError(f"A user skill named '{name}' already exists; publish a new version instead.")
        template = skill_template(CODE if code else PROMPT, name=name, description=description)
        bundle = bundle_from_parts(template.skill_md.encode(), template.files, limits=registry_limits())
        result = skill_version_publish(
            bundle=bundle, source=SkillSource.USER, message="Created from the template", actor=CLI
        )
        kind = "code skill" if code else "prompt skill"
        self.stdout.write(self.style.SUCCESS(f"created {kind} {result.skill.name} v{result.version.number} (user)"))
        for issue in result.warnings:
            self.stdout.write(f"  line {issue.line}: {issue.message}")

    def handle_label(self, *, name: str, label: str, version: int, source: str | None, **_) -> None:
        skill = selectors.skill_get(name=name, source=source)
        before = selectors.skill_labels(skill).get(label)
        label_move(skill=skill, label=label, version_number=version, actor=CLI)
        moved = f"v{before} -> v{version}" if before is not None else f"-> v{version}"
        self.stdout.write(f"{skill.name} ({skill.source}) {label}: {moved}")

    def handle_eval(self, *, arguments: list[str], **_) -> None:
        call_command("skills_eval", *arguments, stdout=self.stdout, stderr=self.stderr)

    def _report(self, report: ImportReport, skipped: int = 0) -> None:
        for result in report.published:
            self.stdout.write(
                self.style.SUCCESS(f"published {result.skill.name} v{result.version.number}")
                + (f" ({len(result.warnings)} warning(s))" if result.warnings else "")
            )
        for result in report.unchanged:
            self.stdout.write(f"unchanged {result.skill.name} v{result.version.number}")
        for folder, reason in report.failed:
            self.stderr.write(self.style.ERROR(f"failed {folder}: {reason}"))
        summary = f"{len(report.published)} published, {len(report.unchanged)} unchanged, {len(report.failed)} failed"
        if skipped:
            summary += f", {skipped} skipped (not modified since last sync)"
        self.stdout.write(summary)
        if report.failed:
            raise CommandError(f"{len(report.failed)} skill(s) could not be imported.")


def _one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
