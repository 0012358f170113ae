"""Every real-world skill in shared/corpus imports, validates and exports byte for byte (SPEC §2).

Folder in -> parse (warnings allowed, no errors) -> folder out and zip out -> zip in: SKILL.md
and every file identical, executable bits identical to the originals on disk.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from registry.bundle import find_skill_folders, read_folder, read_zip, write_folder, write_zip
from registry.skillmd import parse_skill_md

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"

if not CORPUS.is_dir():
    pytest.skip(f"the skill corpus is missing: {CORPUS}", allow_module_level=True)

SKILL_FOLDERS = find_skill_folders(CORPUS)


def on_disk(folder: Path) -> dict[str, tuple[bytes, bool]]:
    """Every file under `folder` as {relative path: (bytes, owner-executable)}, read without
    registry code, so the comparison does not trust the reader it checks."""
    files = {}
    for dirpath, _, filenames in os.walk(folder):
        for filename in filenames:
            full = Path(dirpath) / filename
            mode = full.lstat().st_mode
            assert stat.S_ISREG(mode), f"{full} is not a regular file"
            files[full.relative_to(folder).as_posix()] = (full.read_bytes(), bool(mode & stat.S_IXUSR))
    return files


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

    # Nothing dropped or added on import: the bundle is exactly the folder. (A Bundle has no
    # executable bit for SKILL.md: it is always written 0o644.)
    imported = {"SKILL.md": (bundle.skill_md, False)}
    imported.update({f.path: (f.content, f.executable) for f in bundle.files})
    assert imported == original

    write_folder(bundle, tmp_path / folder.name)
    assert on_disk(tmp_path / folder.name) == original

    from_zip = read_zip(write_zip(bundle, prefix=folder.name))
    assert from_zip == bundle
    assert from_zip.fingerprint == bundle.fingerprint
