"""Skill folders and zips in and out, byte for byte (SPEC §2, §10).

Pure Python, no Django. A `Bundle` is the exact bytes of SKILL.md plus every other file with
its executable bit; readers check everything (paths, links, sizes, counts) before returning,
and writers re-check before touching the disk, so a bad upload never leaves half a folder.

Rules shared by every reader:
- Paths are relative POSIX paths: no `..` or `.` parts, no absolute paths, drive letters,
  backslashes, NUL or other control characters, no empty parts, valid UTF-8 (zip entry names
  too, flagged as UTF-8 or not). No two paths, nor folders implied by them, that differ only
  by case or Unicode normalisation: macOS and Windows would make them one. No file or folder
  name that Windows or a terminal shows as something else or cannot store
  (`portable_name_problem`): a trailing dot or space, a reserved device name (`con`, `nul.md`,
  `COM1`), one of `< > : " | ? *`, a bidirectional control.
- Regular files, and relative symbolic links that stay inside the skill (`CLAUDE.md ->
  AGENTS.md`, as real skill repositories have). A link is kept as a link: its target text is
  stored, written back as a link and zipped with the link mode; readers of the bundle see the
  target's bytes. A link that is absolute, leaves the folder (`..` past the top, or a chain of
  links that ends outside), loops, dangles or names a folder is refused with its path. Links
  are resolved by name inside the bundle, never on the disk, so nothing outside is ever read.
  SKILL.md itself must be a regular file. Hardlinks, devices and pipes are refused.
- `.git`, `__pycache__`, `.DS_Store` and `__MACOSX` (as any part of a path) are dropped as
  tooling debris by every reader alike; other hidden files such as `.meta/` are part of real
  skills and kept.
- Empty files are kept; directories are implied by file paths (empty ones are not kept).
- Limits: SKILL.md and each file against their own caps, the bundle (SKILL.md included) by
  total bytes and number of files. Going over raises `BundleTooLarge` (HTTP 413).
- "Executable" means the owner's execute bit (S_IXUSR), the same bit git records.
"""

from __future__ import annotations

import hashlib
import io
import lzma
import os
import re
import shutil
import stat
import struct
import tempfile
import unicodedata
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import BinaryIO

from registry.errors import BundleTooLarge, InvalidBundle

SKILL_MD = "SKILL.md"

# Tooling debris that is never part of a skill, wherever it appears in a path. macOS Finder
# puts resource forks under __MACOSX/ when it zips a folder; every reader drops the same names,
# so a bundle reads the same from a folder, a zip or parts.
SKIPPED_NAMES = frozenset({".git", "__pycache__", ".DS_Store", "__MACOSX"})
# Folders find_skill_folders does not search: debris, plus dependency trees that may ship
# SKILL.md files of their own that nobody meant to import.
_UNSEARCHED_NAMES = SKIPPED_NAMES | {"node_modules", ".venv"}

# SkillFile.path is a CharField(max_length=1024); 255 bytes is the usual file-name limit.
MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255

# The zip epoch: fixed timestamps make write_zip byte-identical for identical bundles.
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
_ZIP_UNIX = 3  # ZipInfo.create_system for Unix: external_attr's high 16 bits are st_mode
# Positions in the list zipfile._EndRecData returns (zipfile._ECD_ENTRIES_TOTAL, _ECD_SIZE).
_END_RECORD_ENTRIES = 4
_END_RECORD_DIRECTORY_BYTES = 5

_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) reorder how
# the characters after them are shown: `invoice\u202egpj.sh` reads as `invoicehs.jpg`.
_BIDI_CONTROL = re.compile("[\u202a-\u202e\u2066-\u2069]")
# Characters Windows refuses in a file or folder name: a skill holding one cannot be installed there.
_WINDOWS_RESERVED = re.compile(r'[<>:"|?*]')
# Names Windows opens as devices in every folder, in any case and with any extension (`nul.md`
# and `Com1.tar.gz` are devices too), after dropping the spaces before the first dot.
WINDOWS_DEVICE_NAMES = frozenset(
    {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"}
    | {f"{port}{digit}" for port in ("COM", "LPT") for digit in "0123456789\u00b9\u00b2\u00b3"}
)


@dataclass(frozen=True)
class Limits:
    skill_md_bytes: int = 256 * 1024
    file_bytes: int = 10 * 1024 * 1024
    bundle_bytes: int = 50 * 1024 * 1024
    bundle_files: int = 500  # SKILL.md included


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class BundleFile:
    """A file of the skill. For a link, `link` is its target text as written (`AGENTS.md`,
    `../shared/x.md`) and `content`/`executable` are those of the regular file it resolves to,
    so every reader that only wants bytes needs no special case."""

    path: str  # relative POSIX path inside the skill folder
    content: bytes
    executable: bool = False
    link: str | None = None

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()

    @property
    def size(self) -> int:
        return len(self.content)

    @property
    def mode(self) -> int:
        return 0o755 if self.executable else 0o644


@dataclass(frozen=True)
class Bundle:
    skill_md: bytes  # exact bytes of SKILL.md
    files: tuple[BundleFile, ...] = ()  # every other file, sorted by path

    @cached_property
    def fingerprint(self) -> str:
        """sha256 hex of the lines `f"{path}:{sha256 hex of content}"`, one per file, SKILL.md
        included, sorted by path (Python string order, i.e. code points), joined with "\\n"
        (no trailing newline) and encoded as UTF-8. A link's line is `f"{path}\\t{target}"`.

        Paths and link targets cannot contain control characters, so the "\\n" join is
        unambiguous and the tab tells a link from a copy of its target (a bundle without links
        has the fingerprint SPEC §3 defines). Executable bits are not part of it (SPEC §3
        defines it over path and content only).
        """
        lines = [(SKILL_MD, f"{SKILL_MD}:{hashlib.sha256(self.skill_md).hexdigest()}")]
        lines += [(f.path, f"{f.path}\t{f.link}" if f.link is not None else f"{f.path}:{f.sha256}") for f in self.files]
        return hashlib.sha256("\n".join(line for _, line in sorted(lines)).encode("utf-8")).hexdigest()

    @property
    def total_bytes(self) -> int:
        return len(self.skill_md) + sum(f.size for f in self.files if f.link is None)

    @property
    def file_count(self) -> int:
        return 1 + len(self.files)

    def file(self, path: str) -> BundleFile | None:
        return next((f for f in self.files if f.path == path), None)


# --- paths -------------------------------------------------------------------------------


def portable_name_problem(name: str) -> str | None:
    """The rule a file, folder or skill name breaks when Windows or a terminal would show or
    store it as another name, or None. Every path part and every skill name is held to it."""
    if bidi := _BIDI_CONTROL.search(name):
        return (
            f"contains the bidirectional control U+{ord(bidi.group()):04X}, which makes a terminal or file list "
            "show the characters after it in another order"
        )
    if reserved := _WINDOWS_RESERVED.search(name):
        return f"contains {reserved.group()!r}, which Windows does not allow in a file or folder name (< > : \" | ? *)"
    if name.endswith((".", " ")):
        end = "a dot" if name.endswith(".") else "a space"
        return f"ends with {end}, which Windows drops (so {name!r} and {name.rstrip('. ')!r} would be one name)"
    device = name.partition(".")[0].rstrip(" ")
    if device.upper() in WINDOWS_DEVICE_NAMES:
        return (
            f"uses the reserved device name {device!r}: Windows opens CON, PRN, AUX, NUL, COM0-9 and LPT0-9 "
            "as devices in every folder, in any case and with any extension"
        )
    return None


def check_path(path: str) -> str:
    """Return `path` if it is a safe relative POSIX path inside a skill folder, else raise."""
    shown = repr(path)
    if not path:
        raise InvalidBundle("A file has an empty path.", fields={"path": "empty"})
    if "\x00" in path:
        raise InvalidBundle(f"The path {shown} contains a NUL character.", fields={"path": path})
    if _CONTROL.search(path):
        raise InvalidBundle(f"The path {shown} contains a control character.", fields={"path": path})
    if "\\" in path:
        raise InvalidBundle(f"The path {shown} contains a backslash; use '/' between folders.", fields={"path": path})
    if path.startswith("/"):
        raise InvalidBundle(
            f"The path {shown} is absolute; paths must be relative to the skill folder.", fields={"path": path}
        )
    if _DRIVE.match(path):
        raise InvalidBundle(
            f"The path {shown} starts with a drive letter; paths must be relative to the skill folder.",
            fields={"path": path},
        )
    if len(path) > MAX_PATH_CHARS:
        raise InvalidBundle(
            f"The path {path[:80]!r}... is longer than {MAX_PATH_CHARS} characters.",
            fields={"path": path[:MAX_PATH_CHARS]},
        )
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidBundle(f"The path {shown} is not valid UTF-8.", fields={"path": path}) from None
    for part in path.split("/"):
        if part in ("", ".", ".."):
            what = "an empty folder name" if part == "" else f"a '{part}' part"
            raise InvalidBundle(
                f"The path {shown} has {what}; paths must stay inside the skill folder.", fields={"path": path}
            )
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            raise InvalidBundle(
                f"The path {shown} has a name longer than {MAX_NAME_BYTES} bytes.", fields={"path": path}
            )
        if problem := portable_name_problem(part):
            where = "" if part == path else f" ({part!r})"
            raise InvalidBundle(f"The path {shown}{where} {problem}. Rename it.", fields={"path": path})
    return path


def check_link_target(path: str, target: str) -> str:
    """Return the link `path`'s target text if it is a plain relative path, else raise.

    Where it leads is judged once the whole bundle is known (`_resolve_links`).
    """
    if path == SKILL_MD:
        raise InvalidBundle(
            f"{SKILL_MD} is a symbolic link; {SKILL_MD} itself must be a regular file (links to other files are kept).",
            fields={"path": path},
        )
    problem = None
    if not target:
        problem = "an empty target"
    elif _CONTROL.search(target):
        problem = "a control character in its target"
    elif _BIDI_CONTROL.search(target):
        problem = f"a bidirectional control in its target ({target!r}), which a terminal shows reordered"
    elif "\\" in target:
        problem = "a backslash in its target; use '/' between folders"
    elif target.startswith("/") or _DRIVE.match(target):
        problem = f"an absolute target ({target!r}); only relative links that stay inside the skill are kept"
    elif len(target) > MAX_PATH_CHARS:
        problem = f"a target longer than {MAX_PATH_CHARS} characters"
    else:
        try:
            target.encode("utf-8")
        except UnicodeEncodeError:
            problem = "a target that is not valid UTF-8"
    if problem:
        raise InvalidBundle(f"{path} is a symbolic link with {problem}.", fields={"path": path})
    return target


# Links followed from one link before giving up: the kernel's own limit (Linux ELOOP is 40).
_MAX_LINK_HOPS = 40


def _resolve_links(regular: dict[str, BundleFile], links: dict[str, str]) -> dict[str, str]:
    """{link path: the regular file it leads to}, following chains, by name only.

    Walks each target one part at a time as the kernel would (a `..` or a name is only looked
    up inside a folder, so `missing/../x` does not resolve), which makes the answer the same
    as the filesystem's once the bundle is written out, without touching any disk.
    """
    folders = {path.rsplit("/", 1)[0] for path in [*regular, *links] if "/" in path}
    folders |= {folder.rsplit("/", i)[0] for folder in list(folders) for i in range(folder.count("/") + 1)}
    resolved: dict[str, str] = {}
    for path in links:
        current, chain = path, [path]
        while current in links:
            target = links[current]
            parts = current.split("/")[:-1]
            for part in target.split("/"):
                if part in ("", "."):
                    continue
                if parts and "/".join(parts) not in folders:
                    raise InvalidBundle(
                        f"{path} is a link to {links[path]!r}, but {'/'.join(parts)!r} is not a folder in the skill.",
                        fields={"path": path},
                    )
                if part == "..":
                    if not parts:
                        via = f" (through {' -> '.join(chain)})" if len(chain) > 1 else ""
                        raise InvalidBundle(
                            f"{path} is a link to {links[path]!r}, which leads outside the skill folder{via}; "
                            "only links that stay inside the skill are kept.",
                            fields={"path": path},
                        )
                    parts.pop()
                else:
                    parts.append(part)
            current = "/".join(parts)
            if target.endswith(("/", "/.")) and current in regular:
                # `notes.md/` names a folder to the kernel: it would not open the file.
                raise InvalidBundle(
                    f"{path} is a link to {links[path]!r}, but {current!r} is a file, not a folder.",
                    fields={"path": path},
                )
            if current in chain or len(chain) > _MAX_LINK_HOPS:
                raise InvalidBundle(
                    f"{path} is a link that loops ({' -> '.join([*chain, current])}).", fields={"path": path}
                )
            chain.append(current)
        if current in regular:
            resolved[path] = current
        elif current in folders or current == "":
            raise InvalidBundle(
                f"{path} is a link to the folder {current or '.'!r}; only links to files are kept "
                "(link each file, or copy the folder).",
                fields={"path": path},
            )
        else:
            raise InvalidBundle(
                f"{path} is a link to {links[path]!r}, which is not a file in the skill.", fields={"path": path}
            )
    return resolved


def _is_skipped(path: str) -> bool:
    return any(part in SKIPPED_NAMES for part in path.split("/"))


def _check_layout(paths: Iterable[str]) -> None:
    """Refuse duplicates, a path that is both a file and a folder (`a` and `a/b`), and names
    that only a case- and normalisation-sensitive file system tells apart."""
    seen: set[str] = set()
    for path in paths:
        if path in seen:
            raise InvalidBundle(f"The path {path!r} appears more than once.", fields={"path": path})
        seen.add(path)
    folders: set[str] = set()
    for path in seen:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent in seen:
                raise InvalidBundle(f"{parent!r} is a file, so {path!r} cannot be inside it.", fields={"path": path})
            folders.add(parent)
    _check_distinct_names(seen | folders)


def _check_distinct_names(paths: Iterable[str]) -> None:
    """Refuse two files or folders whose paths differ only by case (`README.md`, `readme.md`) or
    by Unicode normalisation (`café.md` composed and decomposed): on macOS (and Windows, for
    case) they are one name, so exporting the skill there would overwrite one with the other, and it would
    not read back the same. Folders count (`Docs/a.md` beside `docs/b.md` merge into one).
    A lone path in any normalisation is kept byte for byte; only a pair is refused."""
    first_by_key: dict[str, str] = {}
    for path in sorted(paths):
        composed = unicodedata.normalize("NFC", path)
        key = composed.casefold()
        other = first_by_key.setdefault(key, path)
        if other == path:
            continue
        if unicodedata.normalize("NFC", other) == composed:
            rule = f"only by Unicode normalisation ({ascii(other)} and {ascii(path)}: NFC composes what NFD splits)"
        elif other.casefold() == path.casefold():
            rule = "only by upper- and lowercase"
        else:
            rule = "only by upper- and lowercase and Unicode normalisation"
        raise InvalidBundle(
            f"The paths {other!r} and {path!r} differ {rule}; file systems that ignore case or "
            "normalisation (macOS, Windows) see one name, so one would overwrite the other. Rename one of them.",
            fields={"path": path},
        )


class _Budget:
    """Running totals checked as files are read, so an oversized upload stops early."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.files = 0
        self.bytes = 0

    def cap_for(self, path: str) -> int:
        """How many bytes `path` may still have, given its own limit and what is left overall."""
        own = self.limits.skill_md_bytes if path == SKILL_MD else self.limits.file_bytes
        return min(own, max(self.limits.bundle_bytes - self.bytes, 0))

    def check_declared(self, path: str, size: int) -> None:
        own = self.limits.skill_md_bytes if path == SKILL_MD else self.limits.file_bytes
        if size > own:
            setting = "SKILL_MD_MAX_BYTES" if path == SKILL_MD else "SKILL_FILE_MAX_BYTES"
            raise BundleTooLarge(
                f"{path} is {_human(size)}; the limit for {_what(path)} is {_human(own)} ({setting}).",
                fields={"path": path},
                extra={"limit": own},
            )
        if self.bytes + size > self.limits.bundle_bytes:
            self._too_big_overall(path)

    def add(self, path: str, size: int) -> None:
        self.files += 1
        if self.files > self.limits.bundle_files:
            raise BundleTooLarge(
                f"The skill has more than {self.limits.bundle_files} files (SKILL.md included); the limit "
                "is the server's SKILL_BUNDLE_MAX_FILES.",
                extra={"limit": self.limits.bundle_files},
            )
        self.check_declared(path, size)
        self.bytes += size

    def _too_big_overall(self, path: str) -> None:
        raise BundleTooLarge(
            f"The skill is over {_human(self.limits.bundle_bytes)} in total (reached at {path}); the limit is "
            "the server's SKILL_BUNDLE_MAX_BYTES.",
            fields={"path": path},
            extra={"limit": self.limits.bundle_bytes},
        )


def _what(path: str) -> str:
    return "SKILL.md" if path == SKILL_MD else "a file"


def _human(size: int) -> str:
    for unit, factor in (("MB", 1024 * 1024), ("KB", 1024)):
        if size >= factor:
            return f"{size / factor:.1f} {unit}".replace(".0 ", " ")
    return f"{size} bytes"


def _assemble(skill_md: bytes | None, files: list[BundleFile], *, where: str) -> Bundle:
    """The checked bundle; each link's content and executable bit become its target's."""
    if skill_md is None:
        raise InvalidBundle(f"There is no {SKILL_MD} at the top of {where}.", fields={"path": SKILL_MD})
    _check_layout([SKILL_MD] + [f.path for f in files])
    regular = {f.path: f for f in files if f.link is None}
    regular[SKILL_MD] = BundleFile(path=SKILL_MD, content=skill_md)
    links = {f.path: f.link for f in files if f.link is not None}
    resolved = _resolve_links(regular, links)
    files = [
        replace(f, content=regular[resolved[f.path]].content, executable=regular[resolved[f.path]].executable)
        if f.link is not None
        else f
        for f in files
    ]
    return Bundle(skill_md=skill_md, files=tuple(sorted(files, key=lambda f: f.path)))


# --- building from parts -----------------------------------------------------------------


def bundle_from_parts(
    skill_md: bytes,
    files: Iterable[tuple[str, bytes, bool]],
    *,
    links: Iterable[tuple[str, str]] = (),
    limits: Limits = DEFAULT_LIMITS,
) -> Bundle:
    """A bundle from already-loaded parts (API uploads): same path, link and limit checks as the
    readers. `links` are (path, target text) pairs.

    Debris paths (`.git/...`, `__pycache__/...`, `.DS_Store`) are dropped, as the readers do.
    """
    budget = _Budget(limits)
    budget.add(SKILL_MD, len(skill_md))
    loaded: list[BundleFile] = []
    for path, content, executable in files:
        check_path(path)
        if _is_skipped(path):
            continue
        if path == SKILL_MD:
            raise InvalidBundle(
                f"{SKILL_MD} is given twice: pass it once, as the skill_md part.", fields={"path": path}
            )
        budget.add(path, len(content))
        loaded.append(BundleFile(path=path, content=bytes(content), executable=bool(executable)))
    for path, target in links:
        check_path(path)
        if _is_skipped(path):
            continue
        check_link_target(path, target)
        budget.add(path, len(target.encode("utf-8")))
        loaded.append(BundleFile(path=path, content=b"", link=target))
    return _assemble(bytes(skill_md), loaded, where="the upload")


# --- a folder picked in a browser ---------------------------------------------------------


def read_picked_folder(files: Iterable[tuple[str, BinaryIO]], *, limits: Limits = DEFAULT_LIMITS) -> Bundle:
    """Read a folder picked in a browser (`<input type=file webkitdirectory>`): (relative path,
    file) pairs whose paths all start with the picked folder's name, which is dropped as a zip's
    one top folder is. Each file is read with a cap, as a zip entry is.

    A browser sends no file modes: files under scripts/ are executable (run_skill runs those),
    as a file uploaded in the console starts.
    """
    picked = list(files)
    tops = {path.split("/", 1)[0] for path, _ in picked}
    if len(tops) != 1 or any("/" not in path for path, _ in picked):
        raise InvalidBundle(
            "The files are not all in one picked folder; pick the skill's folder (the one holding SKILL.md).",
            fields={"folder": "one folder"},
        )
    prefix = f"{tops.pop()}/"
    relatives = [(check_path(path[len(prefix) :]), handle) for path, handle in picked]
    kept = [(relative, handle) for relative, handle in relatives if not _is_skipped(relative)]
    _check_layout([relative for relative, _ in kept])
    budget = _Budget(limits)
    skill_md: bytes | None = None
    loaded: list[BundleFile] = []
    for relative, handle in kept:
        content = handle.read(budget.cap_for(relative) + 1)
        budget.add(relative, len(content))
        if relative == SKILL_MD:
            skill_md = content
        else:
            loaded.append(BundleFile(path=relative, content=content, executable=relative.startswith("scripts/")))
    return _assemble(skill_md, loaded, where=f"the folder '{prefix[:-1]}'")


# --- folders -----------------------------------------------------------------------------


def read_folder(path: Path, *, limits: Limits = DEFAULT_LIMITS) -> Bundle:
    """Read a skill folder without following any symlink inside it (a link's target text is
    read with readlink and resolved by name inside the bundle).

    Every folder and file is opened relative to its parent's descriptor with O_NOFOLLOW, so a
    folder swapped for a symlink while we read cannot lead outside the skill (no check-then-use
    race on path names).
    """
    root = Path(path)
    if not root.is_dir():
        raise InvalidBundle(f"{root} is not a folder.", fields={"path": str(root)})
    budget = _Budget(limits)
    skill_md: bytes | None = None
    loaded: list[BundleFile] = []
    pending = [""]  # folders still to read, as "a/b/" relative prefixes
    while pending:
        prefix = pending.pop()
        with _open_folder(root, prefix) as folder_fd, os.scandir(folder_fd) as scan:
            entries = sorted(scan, key=lambda e: e.name)
            for entry in entries:
                relative = check_path(prefix + entry.name)
                if entry.name in SKIPPED_NAMES:
                    continue
                if entry.is_symlink():
                    loaded.append(_read_link(folder_fd, entry.name, relative, budget))
                    continue
                if entry.is_dir(follow_symlinks=False):
                    pending.append(relative + "/")
                    continue
                content, executable = _read_regular_file(folder_fd, entry.name, relative, budget)
                if relative == SKILL_MD:
                    skill_md = content
                else:
                    loaded.append(BundleFile(path=relative, content=content, executable=executable))
    return _assemble(skill_md, loaded, where=f"the folder {root}")


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _read_link(folder_fd: int, name: str, relative: str, budget: _Budget) -> BundleFile:
    try:
        target = os.readlink(name, dir_fd=folder_fd)
    except OSError as exc:
        raise InvalidBundle(f"{relative} cannot be read ({exc.strerror or exc}).", fields={"path": relative}) from None
    check_link_target(relative, target)
    budget.add(relative, len(target.encode("utf-8")))
    return BundleFile(path=relative, content=b"", link=target)


@contextmanager
def _open_folder(root: Path, prefix: str) -> Iterator[int]:
    """A descriptor for `root/prefix`, reached one name at a time without following links."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in prefix.split("/")[:-1]:
            try:
                child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                shown = prefix.rstrip("/")
                raise InvalidBundle(
                    f"{shown} cannot be read as a folder ({exc.strerror or exc}).", fields={"path": shown}
                ) from None
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _read_regular_file(folder_fd: int, name: str, relative: str, budget: _Budget) -> tuple[bytes, bool]:
    # O_NOFOLLOW: a file swapped for a symlink after scandir looked at it is refused, not
    # followed. O_NONBLOCK: a FIFO swapped in cannot block the open (fstat then refuses it).
    flags = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(name, flags, dir_fd=folder_fd)
    except OSError as exc:
        raise InvalidBundle(f"{relative} cannot be read ({exc.strerror or exc}).", fields={"path": relative}) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise InvalidBundle(
                f"{relative} is not a regular file (a device, pipe or socket); skills may only contain regular files.",
                fields={"path": relative},
            )
        if info.st_nlink > 1:
            # A hardlink can point at any file its creator could read (a settings file with
            # secrets); importing it would publish that content, the same risk as a symlink.
            raise InvalidBundle(
                f"{relative} is a hard link (it has {info.st_nlink} names); copy the file instead.",
                fields={"path": relative},
            )
        budget.check_declared(relative, info.st_size)
        # The file may grow between fstat and read: read one byte past the cap to notice.
        content = handle.read(budget.cap_for(relative) + 1)
        budget.add(relative, len(content))
        return content, bool(info.st_mode & stat.S_IXUSR)


def _check_written(bundle: Bundle) -> None:
    """The readers' checks again before writing: a Bundle built by hand is not trusted."""
    _check_layout([SKILL_MD] + [check_path(f.path) for f in bundle.files])
    links = {f.path: check_link_target(f.path, f.link) for f in bundle.files if f.link is not None}
    if links:
        regular = {f.path: f for f in bundle.files if f.link is None}
        regular[SKILL_MD] = BundleFile(path=SKILL_MD, content=bundle.skill_md)
        _resolve_links(regular, links)


def write_folder(bundle: Bundle, dest: Path) -> None:
    """Write the bundle as a folder at `dest` (which must not exist, or be an empty folder).

    Everything is written into a temporary sibling folder that is renamed into place at the
    end, so a failure part-way never leaves a half-written skill at `dest`. Links are written
    as links with their target text (checked again: a Bundle built by hand is not trusted).
    """
    dest = Path(dest)
    _check_written(bundle)
    if dest.is_symlink() or (dest.exists() and (not dest.is_dir() or any(dest.iterdir()))):
        raise FileExistsError(f"{dest} already exists and is not an empty folder.")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        _write_file(staging / SKILL_MD, bundle.skill_md, mode=0o644)
        for item in bundle.files:
            target = staging.joinpath(*item.path.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            if item.link is not None:
                os.symlink(item.link, target)
            else:
                _write_file(target, item.content, mode=item.mode)
        # mkdtemp makes the folder 0o700; a skill folder is an ordinary readable folder.
        staging.chmod(0o755)
        if dest.exists():
            dest.rmdir()  # empty, checked above; os.replace cannot replace a folder on every OS
        os.replace(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _write_file(target: Path, content: bytes, *, mode: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(target, flags, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)
        # fchmod, not the open() mode: the process umask must not change what was imported.
        os.fchmod(handle.fileno(), mode)


def find_skill_folders(root: Path) -> list[Path]:
    """Every folder under `root` (root included) that holds a SKILL.md, sorted.

    A skill folder is not searched further (its sub-folders belong to it), symlinked folders
    are not followed, and debris/dependency folders (.git, node_modules, ...) are not searched.
    A SKILL.md that is a symlink still marks its folder, so read_folder can say what is wrong
    with it rather than the folder being silently passed over.
    """
    found: list[Path] = []
    pending = [Path(root)]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as scan:
                entries = list(scan)
        except OSError:
            continue  # unreadable folders hold no importable skill
        if any(entry.name == SKILL_MD and not entry.is_dir(follow_symlinks=False) for entry in entries):
            found.append(folder)
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and entry.name not in _UNSEARCHED_NAMES:
                pending.append(Path(entry.path))
    return sorted(found)


# --- zips --------------------------------------------------------------------------------

# What zipfile and its decompressors raise on damaged or hostile archives. RuntimeError
# covers "password required"; encrypted entries are normally caught earlier by flag_bits.
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    OSError,
    ValueError,
    NotImplementedError,
    RuntimeError,
    OverflowError,
    struct.error,
)


def read_zip(data: bytes | BinaryIO, *, limits: Limits = DEFAULT_LIMITS) -> Bundle:
    """Read a zipped skill: SKILL.md at the top, or inside one top folder (`my-skill/SKILL.md`).

    Declared sizes are checked before anything is decompressed, and every entry is then read
    with a cap, because declared sizes are attacker-controlled (zip bombs).
    """
    stream = _zip_stream(data, limits=limits)
    try:
        _check_central_directory(stream, limits=limits)
        with zipfile.ZipFile(stream) as archive:
            return _read_archive(archive, limits=limits)
    except (InvalidBundle, BundleTooLarge):
        raise
    except _ZIP_ERRORS as exc:
        raise InvalidBundle(f"The upload is not a readable zip archive ({exc}).") from None


def _zip_stream(data: bytes | BinaryIO, *, limits: Limits) -> BinaryIO:
    # The archive itself may be bigger than its useful content (debris such as .git, headers),
    # but not without bound: twice the bundle limit is generous and keeps memory bounded.
    cap = 2 * limits.bundle_bytes + 1024 * 1024
    if isinstance(data, bytes | bytearray | memoryview):
        size = len(data)
        stream: BinaryIO = io.BytesIO(bytes(data))
    elif data.seekable():
        start = data.tell()
        size = data.seek(0, io.SEEK_END) - start
        data.seek(start)
        stream = data
    else:
        content = data.read(cap + 1)
        size = len(content)
        stream = io.BytesIO(content)
    if size > cap:
        raise BundleTooLarge(f"The zip archive is {_human(size)}; the limit is {_human(cap)}.", extra={"limit": cap})
    return stream


def _check_central_directory(stream: BinaryIO, *, limits: Limits) -> None:
    """Refuse an archive with far more entries than a skill may have, before ZipFile builds a
    ZipInfo for each of them (a few hundred bytes apiece: millions of tiny entries would cost
    gigabytes). Both the declared count and the directory's byte size are checked, as either
    can be forged. zipfile's own end-record reader is private but has been stable for decades.
    """
    end_record = getattr(zipfile, "_EndRecData", None)
    if end_record is None:
        return
    start = stream.tell()
    record = end_record(stream)
    stream.seek(start)
    if not record:
        raise InvalidBundle("The upload is not a zip archive.")
    # Room for debris that is dropped (.git, __MACOSX) and for folder entries.
    max_entries = 4 * limits.bundle_files + 100
    entries, directory_bytes = record[_END_RECORD_ENTRIES], record[_END_RECORD_DIRECTORY_BYTES]
    if entries > max_entries or directory_bytes > max_entries * (46 + MAX_PATH_CHARS + 64):
        raise BundleTooLarge(
            f"The zip archive has too many entries (at most {max_entries} are read); leave out "
            ".git and other generated folders.",
            extra={"limit": limits.bundle_files},
        )


def _read_archive(archive: zipfile.ZipFile, *, limits: Limits) -> Bundle:
    members: list[tuple[str, zipfile.ZipInfo, bool, bool]] = []  # name, info, executable, link
    for info in archive.infolist():
        name = _entry_name(info)
        if name.endswith("/"):
            check_path(name.rstrip("/") or "/")
            continue  # folders are implied by file paths
        check_path(name)
        if _is_skipped(name):
            continue
        mode = info.external_attr >> 16
        file_type = stat.S_IFMT(mode)
        if stat.S_ISDIR(mode):
            continue
        if file_type and not stat.S_ISREG(mode) and not stat.S_ISLNK(mode):
            raise InvalidBundle(
                f"{name} is not a regular file; skills may only contain regular files.", fields={"path": name}
            )
        if info.flag_bits & 0x1:
            raise InvalidBundle(f"{name} is encrypted; upload a zip without a password.", fields={"path": name})
        is_link = stat.S_ISLNK(mode)
        if is_link and info.file_size > 4 * MAX_PATH_CHARS:
            raise InvalidBundle(f"{name} is a symbolic link with an over-long target.", fields={"path": name})
        members.append((name, info, bool(mode & stat.S_IXUSR) and not is_link, is_link))

    prefix = _zip_prefix([name for name, _, _, _ in members])
    _check_layout([name for name, _, _, _ in members])

    # Declared sizes first: refuse an oversized archive before decompressing anything.
    declared = _Budget(limits)
    for name, info, _, _ in members:
        declared.add(name[len(prefix) :], info.file_size)

    budget = _Budget(limits)
    skill_md: bytes | None = None
    loaded: list[BundleFile] = []
    for name, info, executable, is_link in members:
        relative = name[len(prefix) :]
        with archive.open(info) as handle:
            content = handle.read(budget.cap_for(relative) + 1)
        # More data than declared is a zip bomb (add() refuses it against the limits); less is
        # a damaged or forged archive.
        budget.add(relative, len(content))
        if len(content) != info.file_size:
            raise InvalidBundle(
                f"{name} does not match its declared size; the archive is damaged or forged.", fields={"path": name}
            )
        if is_link:
            # Info-ZIP's convention (zip -y): the entry's data is the link's target text.
            try:
                target = content.decode("utf-8")
            except UnicodeDecodeError:
                target = "\udcff"  # any lone surrogate: check_link_target names it as not UTF-8
            loaded.append(BundleFile(path=relative, content=b"", link=check_link_target(relative, target)))
        elif relative == SKILL_MD:
            skill_md = content
        else:
            loaded.append(BundleFile(path=relative, content=content, executable=executable))
    return _assemble(skill_md, loaded, where="the zip archive")


# General purpose flag bit 11: the entry's name (and comment) are UTF-8.
_ZIP_UTF8_FLAG = 0x800


def _entry_name(info: zipfile.ZipInfo) -> str:
    """The entry's name as UTF-8. zipfile decodes a name without the UTF-8 flag as cp437, the
    zip format's historical default, which turns the UTF-8 names that many zip tools write
    without setting the flag into mojibake (`café` read as `cafÃ©`); cp437 maps each byte to one
    character, so encoding back gives the bytes as stored, which must then be valid UTF-8.
    orig_filename keeps what zipfile's ZipInfo silently cuts off at a NUL."""
    name = info.orig_filename
    if info.flag_bits & _ZIP_UTF8_FLAG:
        return name
    raw = name.encode("cp437")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        shown = raw.decode("utf-8", "backslashreplace")
        raise InvalidBundle(
            f"The zip entry name '{shown}' is not valid UTF-8 (the archive's legacy encoding is not "
            "accepted); re-create the zip with a tool that writes UTF-8 names.",
            fields={"path": shown},
        ) from None


def _zip_prefix(names: list[str]) -> str:
    """ "" when SKILL.md is at the top, "folder/" when everything sits in one folder with it."""
    if SKILL_MD in names:
        return ""
    tops = {name.split("/")[0] for name in names}
    nested = sorted(name for name in names if name.count("/") == 1 and name.endswith("/" + SKILL_MD))
    if len(tops) == 1 and len(nested) == 1:
        return nested[0][: -len(SKILL_MD)]
    if len(nested) > 1:
        shown = ", ".join(nested[:5])
        raise InvalidBundle(f"The zip archive holds several skills ({shown}); upload one skill per zip.")
    raise InvalidBundle(
        f"There is no {SKILL_MD} at the top of the zip archive or inside a single top folder.",
        fields={"path": SKILL_MD},
    )


def write_zip(bundle: Bundle, *, prefix: str = "", keep_links: bool = True) -> bytes:
    """The bundle as a zip, deterministic: same bundle, same bytes.

    SKILL.md comes first and the other files follow in path order, all with the zip epoch as
    timestamp and Unix permissions (0o755 / 0o644) in external_attr; a link is an entry with
    the link mode whose data is its target text, as `zip -y` writes it and `unzip` restores it.
    With `keep_links=False` a link is written as the regular file it resolves to (its bytes and
    mode), for readers that refuse link entries. `prefix` puts everything inside a top folder
    (`prefix="my-skill"` gives `my-skill/SKILL.md`).
    """
    prefix = prefix.strip("/")
    if prefix:
        check_path(prefix)
        prefix += "/"
    _check_written(bundle)
    entries = [(SKILL_MD, bundle.skill_md, stat.S_IFREG | 0o644)]
    for f in sorted(bundle.files, key=lambda f: f.path):
        if f.link is not None and keep_links:
            entries.append((f.path, f.link.encode("utf-8"), stat.S_IFLNK | 0o777))
        else:
            entries.append((f.path, f.content, stat.S_IFREG | f.mode))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, content, mode in entries:
            info = zipfile.ZipInfo(prefix + path, date_time=_ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = _ZIP_UNIX
            info.external_attr = mode << 16
            archive.writestr(info, content, compresslevel=6)
    return buffer.getvalue()
