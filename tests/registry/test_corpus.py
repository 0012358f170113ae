"""Every real-world skill in shared/corpus imports, validates and exports byte for byte (SPEC §2).

Folder in -> parse (warnings allowed, no errors) -> folder out and zip out -> zip in: SKILL.md
and every file identical, executable bits identical to the originals on disk, and every
symbolic link a link to the same target. The corpus has no links of its own, so each skill is
also run with links added the way public repositories have them (a chain ending at SKILL.md,
a link up a folder), through the database as well.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from registry.selectors import version_bundle
from registry.services.skills import skill_import_path
from registry.skillformat.bundle import Bundle, find_skill_folders, read_folder, read_zip, write_folder, write_zip
from registry.skillformat.skillmd import parse_skill_md

CORPUS = Path(os.environ.get("SKILL_CORPUS") or Path(__file__).resolve().parents[2].parent / "shared" / "corpus")

if not CORPUS.is_dir():
    pytest.skip(f"the skill corpus is missing: {CORPUS} (set SKILL_CORPUS)", allow_module_level=True)

SKILL_FOLDERS = find_skill_folders(CORPUS)


def on_disk(folder: Path) -> dict[str, tuple[bytes, bool] | tuple[str, str]]:
    """Every file under `folder` as {relative path: (bytes, owner-executable)} and every link as
    {relative path: ("link", target)}, read without registry code, so the comparison does not
    trust the reader it checks."""
    files: dict[str, tuple[bytes, bool] | tuple[str, str]] = {}
    for dirpath, _, filenames in os.walk(folder):
        for filename in filenames:
            full = Path(dirpath) / filename
            mode = full.lstat().st_mode
            relative = full.relative_to(folder).as_posix()
            if stat.S_ISLNK(mode):
                files[relative] = ("link", os.readlink(full))
                continue
            assert stat.S_ISREG(mode), f"{full} is not a regular file"
            files[relative] = (full.read_bytes(), bool(mode & stat.S_IXUSR))
    return files


def as_imported(bundle: Bundle) -> dict[str, tuple[bytes, bool] | tuple[str, str]]:
    # A Bundle has no executable bit for SKILL.md: it is always written 0o644.
    imported: dict[str, tuple[bytes, bool] | tuple[str, str]] = {"SKILL.md": (bundle.skill_md, False)}
    imported.update({f.path: ("link", f.link) if f.link else (f.content, f.executable) for f in bundle.files})
    return imported


def with_links(folder: Path, dest: Path) -> Path:
    """A copy of a corpus skill with the links real repositories have: `X-CLAUDE.md ->
    X-AGENTS.md -> SKILL.md` (a chain; `X-` keeps clear of a skill's own CLAUDE.md) and a link
    from a new sub-folder up to the skill's last file."""
    shutil.copytree(folder, dest, symlinks=True)
    (dest / "X-AGENTS.md").symlink_to("SKILL.md")
    (dest / "X-CLAUDE.md").symlink_to("X-AGENTS.md")
    some_file = sorted(p for p in dest.rglob("*") if p.is_file() and not p.is_symlink())[-1]
    (dest / "x-links").mkdir()
    (dest / "x-links" / "up").symlink_to("../" + some_file.relative_to(dest).as_posix())
    return dest


def test_the_corpus_has_skills():
    assert len(SKILL_FOLDERS) >= 70
    assert {folder.parent.name for folder in SKILL_FOLDERS} == {"anthropics", "clawhub"}


@pytest.mark.parametrize("folder", SKILL_FOLDERS, ids=lambda folder: folder.relative_to(CORPUS).as_posix())
def test_skill_imports_validates_and_exports_byte_identically(folder, tmp_path):
    original = on_disk(folder)

    bundle = read_folder(folder)
    parsed = parse_skill_md(bundle.skill_md, folder_name=folder.name)
    assert parsed.name and parsed.description
    assert all(issue.level == "warning" for issue in parsed.warnings)

    # Nothing dropped or added on import: the bundle is exactly the folder.
    assert as_imported(bundle) == original

    write_folder(bundle, tmp_path / folder.name)
    assert on_disk(tmp_path / folder.name) == original

    from_zip = read_zip(write_zip(bundle, prefix=folder.name))
    assert from_zip == bundle
    assert from_zip.fingerprint == bundle.fingerprint


@pytest.mark.django_db
@pytest.mark.parametrize("folder", SKILL_FOLDERS, ids=lambda folder: folder.relative_to(CORPUS).as_posix())
def test_skill_with_links_round_trips_links_through_the_database(folder, tmp_path):
    linked = with_links(folder, tmp_path / "in" / folder.name)
    original = on_disk(linked)

    bundle = read_folder(linked)
    assert as_imported(bundle) == original
    assert bundle.file("X-CLAUDE.md").link == "X-AGENTS.md"
    assert bundle.file("X-CLAUDE.md").content == bundle.skill_md

    result = skill_import_path(path=linked)
    stored = version_bundle(result.version)
    assert stored == bundle and result.version.fingerprint == bundle.fingerprint

    write_folder(stored, tmp_path / "out")
    assert on_disk(tmp_path / "out") == original
    assert read_zip(write_zip(stored, prefix=folder.name)) == bundle
