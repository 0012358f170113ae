"""Symbolic links inside a skill (registry/skillformat/bundle.py): kept as links when they stay inside the
folder, refused with their path when they leave it, loop, dangle or name a folder. No database."""

from __future__ import annotations

import hashlib
import os
import stat
import zipfile
from io import BytesIO
from pathlib import Path

import pytest

from registry.errors import BundleTooLarge, InvalidBundle
from registry.skillformat.bundle import (
    Bundle,
    BundleFile,
    Limits,
    bundle_from_parts,
    read_folder,
    read_zip,
    write_folder,
    write_zip,
)
from tests.registry.test_bundle import SKILL_MD, make_folder, make_zip

AGENTS = b"# Agents\nRun the tests before you commit.\n"
SCRIPT = b"#!/bin/sh\necho hi\n"
LINK = stat.S_IFLNK | 0o777


def linked_skill(root: Path) -> Path:
    """A skill shaped like the real ones: CLAUDE.md -> AGENTS.md, a nested link up one folder,
    a chain, and a link to an executable script."""
    make_folder(
        root,
        {"SKILL.md": SKILL_MD, "AGENTS.md": AGENTS, "scripts/run.sh": SCRIPT, "docs/guide.md": b"guide"},
        executable=("scripts/run.sh",),
    )
    (root / "CLAUDE.md").symlink_to("AGENTS.md")
    (root / "docs" / "agents.md").symlink_to("../AGENTS.md")
    (root / "GEMINI.md").symlink_to("./CLAUDE.md")  # a chain: GEMINI -> CLAUDE -> AGENTS
    (root / "run").symlink_to("scripts/run.sh")
    return root


def test_links_that_stay_inside_are_kept_as_links_with_their_targets_bytes(tmp_path):
    bundle = read_folder(linked_skill(tmp_path / "skill"))

    links = {f.path: f.link for f in bundle.files if f.link is not None}
    assert links == {
        "CLAUDE.md": "AGENTS.md",
        "docs/agents.md": "../AGENTS.md",
        "GEMINI.md": "./CLAUDE.md",
        "run": "scripts/run.sh",
    }
    # Readers that only want bytes see the target's content and mode.
    assert bundle.file("CLAUDE.md").content == AGENTS
    assert bundle.file("GEMINI.md").content == AGENTS
    assert bundle.file("docs/agents.md").sha256 == hashlib.sha256(AGENTS).hexdigest()
    assert bundle.file("run").content == SCRIPT and bundle.file("run").executable
    # A link takes no storage of its own.
    assert bundle.total_bytes == len(SKILL_MD) + len(AGENTS) + len(SCRIPT) + len(b"guide")


def test_a_folder_with_links_round_trips_as_links(tmp_path):
    bundle = read_folder(linked_skill(tmp_path / "skill"))

    write_folder(bundle, tmp_path / "out")

    out = tmp_path / "out"
    assert os.readlink(out / "CLAUDE.md") == "AGENTS.md"
    assert os.readlink(out / "docs" / "agents.md") == "../AGENTS.md"
    assert os.readlink(out / "GEMINI.md") == "./CLAUDE.md"
    assert (out / "GEMINI.md").read_bytes() == AGENTS  # the kernel resolves it as we did
    assert not (out / "AGENTS.md").is_symlink()
    assert read_folder(out) == bundle


def test_a_zip_carries_links_with_the_link_mode_and_reads_back(tmp_path):
    bundle = read_folder(linked_skill(tmp_path / "skill"))

    data = write_zip(bundle, prefix="skill")

    with zipfile.ZipFile(BytesIO(data)) as archive:
        info = archive.getinfo("skill/CLAUDE.md")
        assert stat.S_ISLNK(info.external_attr >> 16)
        assert archive.read(info) == b"AGENTS.md"  # Info-ZIP's convention: the data is the target
        assert stat.S_ISREG(archive.getinfo("skill/AGENTS.md").external_attr >> 16)
    assert read_zip(data) == bundle


def test_a_zip_made_by_zip_dash_y_is_read_with_its_links():
    data = make_zip([("SKILL.md", SKILL_MD), ("AGENTS.md", AGENTS), ("CLAUDE.md", b"AGENTS.md", LINK)])

    bundle = read_zip(data)

    assert bundle.file("CLAUDE.md") == BundleFile("CLAUDE.md", AGENTS, False, link="AGENTS.md")


def test_the_fingerprint_tells_a_link_from_a_copy_and_is_unchanged_without_links():
    copy = bundle_from_parts(SKILL_MD, [("AGENTS.md", AGENTS, False), ("CLAUDE.md", AGENTS, False)])
    linked = bundle_from_parts(SKILL_MD, [("AGENTS.md", AGENTS, False)], links=[("CLAUDE.md", "AGENTS.md")])
    other_target = bundle_from_parts(
        SKILL_MD, [("AGENTS.md", AGENTS, False), ("B.md", AGENTS, False)], links=[("CLAUDE.md", "B.md")]
    )

    assert linked.fingerprint != copy.fingerprint
    assert linked.fingerprint != other_target.fingerprint
    # SPEC §3's formula, computed here by hand, for a bundle with no links.
    lines = sorted(
        f"{path}:{hashlib.sha256(content).hexdigest()}"
        for path, content in [("SKILL.md", SKILL_MD), ("AGENTS.md", AGENTS), ("CLAUDE.md", AGENTS)]
    )
    assert copy.fingerprint == hashlib.sha256("\n".join(lines).encode()).hexdigest()


@pytest.mark.parametrize(
    ("links", "named", "why"),
    [
        ({"CLAUDE.md": "/etc/passwd"}, "CLAUDE.md", "absolute target"),
        ({"CLAUDE.md": "../secret.txt"}, "CLAUDE.md", "leads outside the skill folder"),
        ({"docs/x.md": "../../secret.txt"}, "docs/x.md", "leads outside the skill folder"),
        ({"docs/x.md": "../docs/../../secret.txt"}, "docs/x.md", "leads outside the skill folder"),
        # A chain whose every link looks local but which ends outside.
        ({"a.md": "docs/b.md", "docs/b.md": "../../secret.txt"}, "a.md", "through a.md -> docs/b.md"),
        ({"a.md": "b.md", "b.md": "a.md"}, "a.md", "loops (a.md -> b.md -> a.md)"),
        ({"a.md": "a.md"}, "a.md", "loops"),
        ({"a.md": "./docs/../a.md"}, "a.md", "loops"),
        ({"a.md": "missing.md"}, "a.md", "not a file in the skill"),
        ({"a.md": "docs"}, "a.md", "link to the folder 'docs'"),
        ({"a.md": "."}, "a.md", "link to the folder '.'"),
        ({"a.md": "AGENTS.md/x"}, "a.md", "'AGENTS.md' is not a folder"),
        ({"a.md": "nowhere/../AGENTS.md"}, "a.md", "'nowhere' is not a folder"),
        ({"a.md": "AGENTS.md/"}, "a.md", "is a file, not a folder"),
        ({"a.md": "C:/x"}, "a.md", "absolute target"),
        ({"a.md": "x\\y"}, "a.md", "backslash"),
        ({"SKILL.md": "AGENTS.md"}, "SKILL.md", "must be a regular file"),
    ],
)
def test_links_that_leave_loop_dangle_or_name_folders_are_refused_by_every_reader(tmp_path, links, named, why):
    (tmp_path / "secret.txt").write_bytes(b"TOKEN")
    skill = make_folder(tmp_path / "skill", {"AGENTS.md": AGENTS, "docs/guide.md": b"guide"})
    if "SKILL.md" not in links:
        (skill / "SKILL.md").write_bytes(SKILL_MD)
    for path, target in links.items():
        (skill / path).symlink_to(target)
    regular = [("AGENTS.md", AGENTS), ("docs/guide.md", b"guide")]
    if "SKILL.md" not in links:
        regular.append(("SKILL.md", SKILL_MD))
    zipped = make_zip(regular + [(path, target.encode(), LINK) for path, target in links.items()])
    files = [("AGENTS.md", AGENTS, False), ("docs/guide.md", b"guide", False)]

    for read in (
        lambda: read_folder(skill),
        lambda: read_zip(zipped),
        lambda: bundle_from_parts(SKILL_MD, files, links=links.items()),
    ):
        with pytest.raises(InvalidBundle) as caught:
            read()
        assert why in caught.value.detail
        assert caught.value.detail.startswith(named) and caught.value.fields == {"path": named}
        assert "TOKEN" not in caught.value.detail


def test_writers_refuse_a_hand_built_bundle_whose_link_leaves(tmp_path):
    bundle = Bundle(skill_md=SKILL_MD, files=(BundleFile("x.md", b"", link="../../etc/passwd"),))

    with pytest.raises(InvalidBundle, match="leads outside"):
        write_folder(bundle, tmp_path / "out")
    with pytest.raises(InvalidBundle, match="leads outside"):
        write_zip(bundle)
    assert not (tmp_path / "out").exists()


def test_a_zip_link_whose_target_is_not_utf8_is_refused():
    with pytest.raises(InvalidBundle, match="x.md is a symbolic link with a target that is not valid UTF-8"):
        read_zip(make_zip([("SKILL.md", SKILL_MD), ("x.md", b"\xff\xfe", LINK)]))


def test_links_count_toward_the_file_limit(tmp_path):
    with pytest.raises(BundleTooLarge, match="more than 3 files"):
        bundle_from_parts(
            SKILL_MD,
            [("AGENTS.md", AGENTS, False)],
            links=[("a.md", "AGENTS.md"), ("b.md", "AGENTS.md")],
            limits=Limits(bundle_files=3),
        )


def test_a_link_whose_target_holds_a_bidirectional_control_is_refused():
    with pytest.raises(InvalidBundle, match="x.md is a symbolic link with a bidirectional control"):
        bundle_from_parts(SKILL_MD, [("AGENTS.md", AGENTS, False)], links=[("x.md", "AGENTS\u202e.md")])
