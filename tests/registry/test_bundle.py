"""Skill folders and zips (registry/skillformat/bundle.py). No database, no Django."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import struct
import unicodedata
import warnings
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.errors import BundleTooLarge, InvalidBundle
from registry.skillformat.bundle import (
    DEFAULT_LIMITS,
    SKIPPED_NAMES,
    WINDOWS_DEVICE_NAMES,
    Bundle,
    BundleFile,
    Limits,
    bundle_from_parts,
    check_path,
    find_skill_folders,
    read_folder,
    read_picked_folder,
    read_zip,
    write_folder,
    write_zip,
)

PROPERTY = settings(
    deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)

SKILL_MD = b"---\nname: demo\ndescription: A demo.\n---\n# Demo\n"


def make_folder(root: Path, files: dict[str, bytes], *, executable: tuple[str, ...] = ()) -> Path:
    for relative, content in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        target.chmod(0o755 if relative in executable else 0o644)
    return root


def make_zip(entries: list[tuple[str, bytes]] | list[tuple[str, bytes, int]], **zip_kwargs) -> bytes:
    """A zip with exactly these entries; a third item is the Unix mode for external_attr."""
    buffer = io.BytesIO()
    with (
        warnings.catch_warnings(),  # zipfile warns about the duplicate names some tests need
        zipfile.ZipFile(buffer, "w", compression=zip_kwargs.pop("compression", zipfile.ZIP_DEFLATED)) as archive,
    ):
        warnings.simplefilter("ignore")
        for entry in entries:
            name, content = entry[0], entry[1]
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = archive.compression
            if len(entry) == 3:
                info.create_system = 3
                info.external_attr = entry[2] << 16
            archive.writestr(info, content)
    return buffer.getvalue()


def sample_bundle() -> Bundle:
    return bundle_from_parts(
        SKILL_MD,
        [
            ("scripts/run", b"#!/bin/sh\necho hi\n", True),
            ("references/guide.md", "Größe 🦞\n".encode(), False),
            (".meta/.gitkeep", b"", False),
            ("assets/logo.bin", bytes(range(256)), False),
        ],
    )


# --- the data model ----------------------------------------------------------------------


def test_files_are_sorted_by_path_and_skill_md_is_kept_apart():
    bundle = sample_bundle()

    assert [f.path for f in bundle.files] == [".meta/.gitkeep", "assets/logo.bin", "references/guide.md", "scripts/run"]
    assert bundle.skill_md == SKILL_MD
    assert bundle.file("scripts/run").executable is True
    assert bundle.file_count == 5
    assert bundle.total_bytes == len(SKILL_MD) + sum(len(f.content) for f in bundle.files)


def test_fingerprint_is_sha256_over_sorted_path_colon_sha256_lines_including_skill_md():
    bundle = sample_bundle()
    entries = [("SKILL.md", SKILL_MD)] + [(f.path, f.content) for f in bundle.files]
    lines = sorted(f"{path}:{hashlib.sha256(content).hexdigest()}" for path, content in entries)

    assert bundle.fingerprint == hashlib.sha256("\n".join(lines).encode()).hexdigest()
    assert bundle.file("scripts/run").sha256 == hashlib.sha256(b"#!/bin/sh\necho hi\n").hexdigest()


def test_fingerprint_changes_with_content_and_paths_but_not_input_order():
    parts = [("a.txt", b"a", False), ("b.txt", b"b", False)]
    base = bundle_from_parts(SKILL_MD, parts)

    assert bundle_from_parts(SKILL_MD, list(reversed(parts))).fingerprint == base.fingerprint
    assert bundle_from_parts(SKILL_MD, [("a.txt", b"A", False), parts[1]]).fingerprint != base.fingerprint
    assert bundle_from_parts(SKILL_MD, [("c.txt", b"a", False), parts[1]]).fingerprint != base.fingerprint
    assert bundle_from_parts(SKILL_MD + b"\n", parts).fingerprint != base.fingerprint


def test_default_limits_match_the_spec():
    assert DEFAULT_LIMITS == Limits(
        skill_md_bytes=256 * 1024, file_bytes=10 * 1024 * 1024, bundle_bytes=50 * 1024 * 1024, bundle_files=500
    )


# --- paths -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../evil", "'..'"),
        ("a/../../evil", "'..'"),
        ("./a", "'.'"),
        ("/etc/passwd", "absolute"),
        ("C:/Windows/evil", "drive letter"),
        ("c:evil", "drive letter"),
        ("a\\..\\evil", "backslash"),
        ("a\x00b", "NUL"),
        ("a\nb", "control character"),
        ("a//b", "empty folder name"),
        ("a/", "empty folder name"),
        ("", "empty path"),
        ("x" * 256, "longer than 255 bytes"),
        ("a/" * 600 + "b", "longer than 1024"),
        ("bad-\udc80", "UTF-8"),
        ("x.md ", "ends with a space"),
        ("y.md.", "ends with a dot"),
        ("d./x.md", "('d.') ends with a dot"),
        ("docs /x.md", "('docs ') ends with a space"),
        ("con", "reserved device name 'con'"),
        ("NUL.md", "reserved device name 'NUL'"),
        ("a/Com1.tar.gz", "reserved device name 'Com1'"),
        ("lpt1/notes.md", "reserved device name 'lpt1'"),
        ("aux .txt", "reserved device name 'aux'"),
        ("COM\u00b9", "reserved device name"),
        ("invoice\u202egpj.sh", "bidirectional control U+202E"),
        ("a\u2066b/c.md", "bidirectional control U+2066"),
        ("weird:name", "contains ':', which Windows does not allow"),
        ("docs/<draft>.md", "('<draft>.md') contains '<'"),
        ("what?.md", "contains '?'"),
        ('a"b', "contains '\"'"),
        ("a|b", "contains '|'"),
        ("*.txt", "contains '*'"),
    ],
)
def test_unsafe_paths_are_refused_with_a_message_naming_them(path, reason):
    with pytest.raises(InvalidBundle) as caught:
        bundle_from_parts(SKILL_MD, [(path, b"x", False)])

    assert reason in caught.value.detail
    if path and len(path) < 80:
        assert repr(path) in caught.value.detail


def test_safe_paths_pass():
    for path in ["a", "a/b/c.md", ".meta/x", "Größe/🦞.txt", "a b/c", "weird;name", "console.md", "com10", "x.md.bak"]:
        assert check_path(path) == path


def test_duplicate_paths_are_refused():
    with pytest.raises(InvalidBundle, match="more than once"):
        bundle_from_parts(SKILL_MD, [("a.md", b"1", False), ("a.md", b"2", False)])


def test_skill_md_given_as_a_file_too_is_refused():
    with pytest.raises(InvalidBundle, match="twice"):
        bundle_from_parts(SKILL_MD, [("SKILL.md", b"x", False)])


def test_a_path_that_is_both_file_and_folder_is_refused():
    with pytest.raises(InvalidBundle, match="is a file"):
        bundle_from_parts(SKILL_MD, [("docs", b"1", False), ("docs/a.md", b"2", False)])


def test_bundle_from_parts_drops_tooling_debris():
    bundle = bundle_from_parts(
        SKILL_MD,
        [
            (".git/config", b"x", False),
            ("a/__pycache__/m.pyc", b"x", False),
            ("__MACOSX/._SKILL.md", b"x", False),
            ("a/.DS_Store", b"x", False),
            (".meta/keep", b"", False),
        ],
    )

    assert [f.path for f in bundle.files] == [".meta/keep"]


# --- limits ------------------------------------------------------------------------------


def test_a_file_over_the_file_limit_is_413():
    with pytest.raises(BundleTooLarge) as caught:
        bundle_from_parts(SKILL_MD, [("big.bin", b"x" * 101, False)], limits=Limits(file_bytes=100))

    assert caught.value.status == 413
    assert "big.bin" in caught.value.detail


def test_skill_md_over_its_limit_is_413():
    with pytest.raises(BundleTooLarge, match="SKILL.md"):
        bundle_from_parts(b"x" * 11, [], limits=Limits(skill_md_bytes=10))


def test_a_bundle_over_the_total_limit_is_413():
    parts = [(f"f{n}", b"x" * 60, False) for n in range(3)]

    with pytest.raises(BundleTooLarge, match="in total"):
        bundle_from_parts(SKILL_MD, parts, limits=Limits(bundle_bytes=len(SKILL_MD) + 150))


def test_too_many_files_is_413_and_skill_md_counts():
    parts = [(f"f{n}", b"", False) for n in range(3)]

    assert bundle_from_parts(SKILL_MD, parts, limits=Limits(bundle_files=4)).file_count == 4
    with pytest.raises(BundleTooLarge, match="more than 3 files"):
        bundle_from_parts(SKILL_MD, parts, limits=Limits(bundle_files=3))


# --- folders -----------------------------------------------------------------------------


def test_read_folder_reads_every_file_with_exec_bits_and_keeps_hidden_and_empty_files(tmp_path):
    make_folder(
        tmp_path,
        {
            "SKILL.md": SKILL_MD,
            "scripts/run": b"#!/bin/sh\n",
            "scripts/lib/helper.sh": b"echo\n",
            ".meta/.gitkeep": b"",
            "references/a.md": b"A",
        },
        executable=("scripts/run",),
    )

    bundle = read_folder(tmp_path)

    assert bundle.skill_md == SKILL_MD
    assert [(f.path, f.executable) for f in bundle.files] == [
        (".meta/.gitkeep", False),
        ("references/a.md", False),
        ("scripts/lib/helper.sh", False),
        ("scripts/run", True),
    ]


def test_read_folder_skips_git_pycache_and_ds_store(tmp_path):
    make_folder(
        tmp_path,
        {
            "SKILL.md": SKILL_MD,
            ".git/HEAD": b"ref",
            "scripts/__pycache__/x.cpython-311.pyc": b"\x00",
            ".DS_Store": b"\x00",
            "scripts/.DS_Store": b"\x00",
            "scripts/x.py": b"print()",
        },
    )

    assert [f.path for f in read_folder(tmp_path).files] == ["scripts/x.py"]


def test_read_folder_without_skill_md_is_invalid(tmp_path):
    make_folder(tmp_path, {"README.md": b"x"})

    with pytest.raises(InvalidBundle, match="no SKILL.md"):
        read_folder(tmp_path)


def test_read_folder_of_a_missing_path_is_invalid(tmp_path):
    with pytest.raises(InvalidBundle, match="not a folder"):
        read_folder(tmp_path / "nope")


def test_a_symlinked_file_is_refused_not_followed(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"TOKEN")
    skill = make_folder(tmp_path / "skill", {"SKILL.md": SKILL_MD})
    (skill / "notes.md").symlink_to(secret)

    with pytest.raises(InvalidBundle) as caught:
        read_folder(skill)

    assert "notes.md" in caught.value.detail and "symbolic link" in caught.value.detail


def test_a_symlinked_folder_is_refused(tmp_path):
    outside = make_folder(tmp_path / "outside", {"x.md": b"x"})
    skill = make_folder(tmp_path / "skill", {"SKILL.md": SKILL_MD})
    (skill / "refs").symlink_to(outside, target_is_directory=True)

    with pytest.raises(InvalidBundle, match="refs"):
        read_folder(skill)


def test_a_symlinked_skill_md_is_refused(tmp_path):
    real = tmp_path / "real.md"
    real.write_bytes(SKILL_MD)
    (tmp_path / "skill").mkdir()
    (tmp_path / "skill" / "SKILL.md").symlink_to(real)

    with pytest.raises(InvalidBundle, match="SKILL.md is a symbolic link"):
        read_folder(tmp_path / "skill")


def test_a_hard_link_is_refused(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"TOKEN")
    skill = make_folder(tmp_path / "skill", {"SKILL.md": SKILL_MD})
    os.link(secret, skill / "notes.md")

    with pytest.raises(InvalidBundle, match="notes.md is a hard link"):
        read_folder(skill)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="os.mkfifo is not available on this platform")
def test_a_fifo_is_refused_without_blocking(tmp_path):
    make_folder(tmp_path, {"SKILL.md": SKILL_MD})
    os.mkfifo(tmp_path / "pipe")

    with pytest.raises(InvalidBundle, match="pipe is not a regular file"):
        read_folder(tmp_path)


def test_folder_limits_are_checked(tmp_path):
    make_folder(tmp_path, {"SKILL.md": SKILL_MD, "big.bin": b"x" * 2000})

    with pytest.raises(BundleTooLarge, match="big.bin"):
        read_folder(tmp_path, limits=Limits(file_bytes=1000))


def test_write_folder_writes_files_with_exact_bytes_and_modes(tmp_path):
    bundle = sample_bundle()
    old_umask = os.umask(0o077)  # modes must not depend on the umask
    try:
        write_folder(bundle, tmp_path / "out")
    finally:
        os.umask(old_umask)

    out = tmp_path / "out"
    assert (out / "SKILL.md").read_bytes() == SKILL_MD
    assert stat.S_IMODE((out / "SKILL.md").stat().st_mode) == 0o644
    for item in bundle.files:
        written = out / item.path
        assert written.read_bytes() == item.content
        assert stat.S_IMODE(written.stat().st_mode) == (0o755 if item.executable else 0o644)
    assert read_folder(out) == bundle


def test_write_folder_into_an_empty_existing_folder(tmp_path):
    (tmp_path / "out").mkdir()

    write_folder(sample_bundle(), tmp_path / "out")

    assert (tmp_path / "out" / "SKILL.md").exists()


def test_write_folder_refuses_a_non_empty_destination(tmp_path):
    make_folder(tmp_path / "out", {"keep.txt": b"mine"})

    with pytest.raises(FileExistsError):
        write_folder(sample_bundle(), tmp_path / "out")

    assert [p.name for p in (tmp_path / "out").iterdir()] == ["keep.txt"]


def test_write_folder_checks_paths_before_writing_anything(tmp_path):
    forged = Bundle(skill_md=SKILL_MD, files=(BundleFile("ok.md", b"x"), BundleFile("../escape.md", b"x")))

    with pytest.raises(InvalidBundle, match="escape"):
        write_folder(forged, tmp_path / "out")

    assert list(tmp_path.iterdir()) == []


# --- zips --------------------------------------------------------------------------------


def test_write_zip_then_read_zip_round_trips_bytes_and_exec_bits():
    bundle = sample_bundle()

    assert read_zip(write_zip(bundle)) == bundle
    assert read_zip(write_zip(bundle, prefix="demo")) == bundle


def test_write_zip_is_deterministic_with_fixed_timestamps_and_unix_modes():
    bundle = sample_bundle()
    shuffled = Bundle(skill_md=bundle.skill_md, files=tuple(reversed(bundle.files)))

    data = write_zip(bundle, prefix="demo/")

    assert data == write_zip(shuffled, prefix="demo")
    infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    assert [i.filename for i in infos][:2] == ["demo/SKILL.md", "demo/.meta/.gitkeep"]
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
    modes = {i.filename: i.external_attr >> 16 for i in infos}
    assert modes["demo/scripts/run"] == stat.S_IFREG | 0o755
    assert modes["demo/references/guide.md"] == stat.S_IFREG | 0o644


def test_read_zip_accepts_a_single_top_folder_and_ignores_folder_entries_and_macos_debris():
    data = make_zip(
        [
            ("my-skill/", b""),
            ("my-skill/SKILL.md", SKILL_MD),
            ("my-skill/scripts/run", b"#!/bin/sh\n", stat.S_IFREG | 0o755),
            ("__MACOSX/my-skill/._SKILL.md", b"\x00\x05"),
            ("my-skill/.DS_Store", b"\x00"),
        ]
    )

    bundle = read_zip(data)

    assert bundle.skill_md == SKILL_MD
    assert [(f.path, f.executable) for f in bundle.files] == [("scripts/run", True)]


def test_read_zip_reads_from_a_file_object_and_a_non_seekable_stream():
    data = write_zip(sample_bundle())

    class OneWay(io.RawIOBase):
        def __init__(self) -> None:
            self.inner = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def readinto(self, buffer) -> int:
            chunk = self.inner.read(len(buffer))
            buffer[: len(chunk)] = chunk
            return len(chunk)

    assert read_zip(io.BytesIO(data)) == sample_bundle()
    assert read_zip(io.BufferedReader(OneWay())) == sample_bundle()


def test_zip_entries_without_unix_modes_are_plain_files():
    bundle = read_zip(make_zip([("SKILL.md", SKILL_MD), ("a.txt", b"a")]))

    assert bundle.files == (BundleFile("a.txt", b"a", False),)


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([("SKILL.md", SKILL_MD), ("../evil.sh", b"x")], "'../evil.sh'"),
        ([("SKILL.md", SKILL_MD), ("/etc/cron.d/x", b"x")], "absolute"),
        ([("SKILL.md", SKILL_MD), ("C:/x", b"x")], "drive letter"),
        ([("SKILL.md", SKILL_MD), ("a\\..\\..\\x", b"x")], "backslash"),
        ([("SKILL.md", SKILL_MD), ("../up/", b"")], "'..'"),
        ([("SKILL.md", SKILL_MD), ("__MACOSX/../../x", b"")], "'..'"),
        ([("SKILL.md", SKILL_MD), ("a.md", b"1"), ("a.md", b"2")], "more than once"),
        ([("SKILL.md", SKILL_MD), ("link", b"/etc/passwd", stat.S_IFLNK | 0o777)], "link is a symbolic link"),
        ([("SKILL.md", SKILL_MD), ("dev", b"", stat.S_IFCHR | 0o644)], "not a regular file"),
        ([("README.md", b"x")], "no SKILL.md"),
        ([("a/SKILL.md", SKILL_MD), ("b/SKILL.md", SKILL_MD)], "several skills"),
        ([("a/SKILL.md", SKILL_MD), ("README.md", b"x")], "no SKILL.md"),
        ([("a/b/SKILL.md", SKILL_MD)], "no SKILL.md"),
    ],
)
def test_unsafe_or_malformed_zips_are_refused(entries, message):
    with pytest.raises(InvalidBundle) as caught:
        read_zip(make_zip(entries))

    assert message in caught.value.detail


def test_a_nul_in_a_zip_name_is_refused_not_truncated():
    data = make_zip([("SKILL.md", SKILL_MD), ("evil.sh#.txt", b"x")]).replace(b"evil.sh#.txt", b"evil.sh\x00.txt")

    with pytest.raises(InvalidBundle, match="NUL"):
        read_zip(data)


def test_an_encrypted_entry_is_refused():
    data = bytearray(make_zip([("SKILL.md", SKILL_MD), ("secret.txt", b"x")]))
    # Set the "encrypted" flag bit in the central directory record of secret.txt.
    central = data.rfind(b"PK\x01\x02")
    (flags,) = struct.unpack_from("<H", data, central + 8)
    struct.pack_into("<H", data, central + 8, flags | 0x1)

    with pytest.raises(InvalidBundle, match="secret.txt is encrypted"):
        read_zip(bytes(data))


def test_declared_sizes_over_the_limits_are_refused_before_decompressing():
    bomb = make_zip([("SKILL.md", SKILL_MD), ("zeros.bin", bytes(5 * 1024 * 1024))])
    assert len(bomb) < 20_000  # 5 MB of zeros deflates to a few KB

    with pytest.raises(BundleTooLarge, match="zeros.bin"):
        read_zip(bomb, limits=Limits(file_bytes=1024 * 1024))
    with pytest.raises(BundleTooLarge, match="in total"):
        read_zip(bomb, limits=Limits(bundle_bytes=1024 * 1024))


def _forge_sizes(data: bytes, name: bytes, size: int) -> bytes:
    """Rewrite the uncompressed size of `name` in its local header and central record."""
    forged = bytearray(data)
    # (signature, offset of the uncompressed size, of the name length, of the name)
    for signature, size_at, name_length_at, name_at in ((b"PK\x03\x04", 22, 26, 30), (b"PK\x01\x02", 24, 28, 46)):
        position = forged.find(signature)
        while position >= 0:
            (name_length,) = struct.unpack_from("<H", forged, position + name_length_at)
            if forged[position + name_at : position + name_at + name_length] == name:
                struct.pack_into("<I", forged, position + size_at, size)
            position = forged.find(signature, position + 4)
    return bytes(forged)


def test_a_zip_that_lies_about_its_sizes_is_read_with_a_cap():
    honest = make_zip([("SKILL.md", SKILL_MD), ("zeros.bin", bytes(5 * 1024 * 1024))])
    lying = _forge_sizes(honest, b"zeros.bin", 100)
    assert zipfile.ZipFile(io.BytesIO(lying)).getinfo("zeros.bin").file_size == 100

    with pytest.raises((InvalidBundle, BundleTooLarge)):
        read_zip(lying, limits=Limits(file_bytes=1024 * 1024))


def test_an_archive_with_far_too_many_entries_is_refused_before_it_is_indexed():
    data = make_zip([("SKILL.md", SKILL_MD)] + [(f"f{n}", b"") for n in range(200)], compression=zipfile.ZIP_STORED)

    with pytest.raises(BundleTooLarge, match="too many entries"):
        read_zip(data, limits=Limits(bundle_files=20))


def test_zip_file_count_limit_counts_skill_md():
    data = make_zip([("SKILL.md", SKILL_MD), ("a", b""), ("b", b"")])

    assert read_zip(data, limits=Limits(bundle_files=3)).file_count == 3
    with pytest.raises(BundleTooLarge):
        read_zip(data, limits=Limits(bundle_files=2))


@pytest.mark.parametrize("data", [b"", b"not a zip", b"PK\x03\x04" + b"\x00" * 100, bytes(range(256)) * 10])
def test_data_that_is_not_a_zip_is_invalid(data):
    with pytest.raises(InvalidBundle):
        read_zip(data)


def test_an_oversized_archive_is_refused_unread():
    # The archive may be up to twice the bundle limit plus 1 MB (debris, headers); not more.
    limits = Limits(bundle_bytes=1000, file_bytes=1000, skill_md_bytes=1000)

    with pytest.raises(BundleTooLarge, match="zip archive"):
        read_zip(b"\x00" * (2 * 1000 + 1024 * 1024 + 1), limits=limits)
    with pytest.raises(BundleTooLarge, match="zip archive"):
        read_zip(io.BytesIO(b"\x00" * (2 * 1000 + 1024 * 1024 + 1)), limits=limits)


@PROPERTY
@given(st.binary(max_size=3000))
def test_any_bytes_read_as_a_zip_give_a_bundle_or_a_domain_error(data):
    try:
        read_zip(data)
    except (InvalidBundle, BundleTooLarge):
        pass


@PROPERTY
@given(st.data())
def test_a_damaged_zip_gives_a_bundle_or_a_domain_error(data):
    original = bytearray(write_zip(sample_bundle(), prefix="demo"))
    for _ in range(data.draw(st.integers(1, 8))):
        position = data.draw(st.integers(0, len(original) - 1))
        original[position] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(len(original) // 2, len(original)))
    try:
        read_zip(bytes(original[:cut]))
    except (InvalidBundle, BundleTooLarge):
        pass


safe_names = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12).filter(
    lambda s: (
        "/" not in s
        and "\\" not in s
        and s not in {".", "..", "SKILL.md", *SKIPPED_NAMES}
        and not any(char in '<>:"|?*' for char in s)
        and not s.endswith((".", " "))
        and not any("\u202a" <= char <= "\u202e" or "\u2066" <= char <= "\u2069" for char in s)
        and s.split(".")[0].rstrip(" ").upper() not in WINDOWS_DEVICE_NAMES
    )
)


def _distinct_on_every_file_system(files: dict) -> bool:
    """No two files or folders differ only by case or Unicode normalisation: the bundle refuses
    those (one name on macOS and Windows)."""
    names = {"/".join(path.split("/")[:depth]) for path in files for depth in range(1, path.count("/") + 2)}
    return len({unicodedata.normalize("NFC", name).casefold() for name in names}) == len(names)


@PROPERTY
@given(
    st.dictionaries(
        st.lists(safe_names, min_size=1, max_size=3).map("/".join),
        st.tuples(st.binary(max_size=64), st.booleans()),
        max_size=8,
    ).filter(_distinct_on_every_file_system)
)
def test_any_safe_bundle_round_trips_through_zip_and_folder(tmp_path_factory, files):
    paths = sorted(files)
    # A file cannot also be a folder: drop paths that are a prefix folder of another one.
    paths = [p for p in paths if p != "SKILL.md" and not any(o.startswith(p + "/") for o in paths)]
    bundle = bundle_from_parts(SKILL_MD, [(p, files[p][0], files[p][1]) for p in paths])

    assert read_zip(write_zip(bundle)) == bundle
    out = tmp_path_factory.mktemp("out") / "skill"
    write_folder(bundle, out)
    assert read_folder(out) == bundle


# --- finding skill folders ---------------------------------------------------------------


def test_find_skill_folders_finds_nested_skills_without_descending_into_them(tmp_path):
    make_folder(
        tmp_path,
        {
            "a/SKILL.md": SKILL_MD,
            "a/examples/inner/SKILL.md": SKILL_MD,  # part of skill "a", not a skill of its own
            "group/b/SKILL.md": SKILL_MD,
            "group/c/SKILL.md": SKILL_MD,
            ".agents/skills/d/SKILL.md": SKILL_MD,  # hidden folders are searched
            ".git/e/SKILL.md": SKILL_MD,
            "node_modules/pkg/SKILL.md": SKILL_MD,
            "empty/README.md": b"",
        },
    )
    (tmp_path / "loop").symlink_to(tmp_path, target_is_directory=True)

    found = find_skill_folders(tmp_path)

    assert found == sorted([tmp_path / "a", tmp_path / "group/b", tmp_path / "group/c", tmp_path / ".agents/skills/d"])


def test_find_skill_folders_returns_the_root_when_it_is_a_skill(tmp_path):
    make_folder(tmp_path, {"SKILL.md": SKILL_MD, "sub/SKILL.md": SKILL_MD})

    assert find_skill_folders(tmp_path) == [tmp_path]


def test_find_skill_folders_of_a_missing_root_is_empty(tmp_path):
    assert find_skill_folders(tmp_path / "nope") == []


# --- a folder picked in a browser ----------------------------------------------------------


class _Upload(io.BytesIO):
    """An uploaded file: read with a cap, like Django's UploadedFile."""


def _picked(files: dict[str, bytes]) -> list[tuple[str, io.BytesIO]]:
    return [(path, _Upload(content)) for path, content in files.items()]


def test_a_picked_folder_drops_its_own_name_and_debris_and_scripts_are_executable():
    bundle = read_picked_folder(
        _picked(
            {
                "demo/SKILL.md": SKILL_MD,
                "demo/scripts/run.sh": b"echo\n",
                "demo/references/a.md": b"# A\n",
                "demo/.git/HEAD": b"ref\n",
                "demo/scripts/__pycache__/x.pyc": b"\0",
            }
        )
    )

    assert bundle.skill_md == SKILL_MD
    assert [(f.path, f.executable) for f in bundle.files] == [("references/a.md", False), ("scripts/run.sh", True)]


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"demo/SKILL.md": SKILL_MD, "other/x.md": b"x"}, "not all in one picked folder"),
        ({"SKILL.md": SKILL_MD}, "not all in one picked folder"),
        ({"demo/notes.md": b"x"}, "There is no SKILL.md at the top of the folder 'demo'"),
        ({"demo/SKILL.md": SKILL_MD, "demo/../../etc/passwd": b"x"}, "'..'"),
        ({"demo/SKILL.md": SKILL_MD, "demo/Read.md": b"x", "demo/read.md": b"y"}, "upper- and lowercase"),
    ],
)
def test_a_picked_folder_is_checked_like_any_bundle(files, message):
    with pytest.raises(InvalidBundle, match=message.replace("(", r"\(")):
        read_picked_folder(_picked(files))


def test_a_picked_folder_reads_each_file_with_a_cap_and_names_the_limit():
    with pytest.raises(BundleTooLarge, match="SKILL_FILE_MAX_BYTES"):
        read_picked_folder(
            _picked({"demo/SKILL.md": SKILL_MD, "demo/big.bin": b"x" * 101}), limits=Limits(file_bytes=100)
        )
    with pytest.raises(BundleTooLarge, match="SKILL_BUNDLE_MAX_FILES"):
        read_picked_folder(
            _picked({"demo/SKILL.md": SKILL_MD, "demo/a": b"", "demo/b": b""}), limits=Limits(bundle_files=2)
        )
