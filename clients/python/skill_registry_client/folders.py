"""Skill folders on disk and as the registry's zips, the fingerprint the registry computes, the
`skills.lock` file and a local SKILL.md check. Links inside a skill stay links: the registry
stores a link's target text, and a reader of the skill gets the target's bytes."""

from __future__ import annotations

import hashlib
import io
import json
import os
import posixpath
import re
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from skill_registry_client.errors import RegistryError

SKILL_MD = "SKILL.md"
LOCK_NAME = "skills.lock"
LOCK_FORMAT = 1
# Tooling debris the registry drops wherever it appears in a path.
SKIPPED_NAMES = frozenset({".git", "__pycache__", ".DS_Store", "__MACOSX"})
SKILL_MD_MAX_BYTES = 256 * 1024
_LINK_HOPS = 40


@dataclass(frozen=True)
class SkillFile:
    """One file of a skill. For a link, `link` is its target text and `content`/`executable` are
    those of the file it leads to."""

    path: str
    content: bytes
    executable: bool = False
    link: str | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()


@dataclass(frozen=True)
class SkillBundle:
    name: str
    files: tuple[SkillFile, ...]  # SKILL.md first, then by path
    version: int | None = None
    source: str | None = None

    @property
    def fingerprint(self) -> str:
        """The registry's: sha256 of the sorted lines `path:sha256` (a link: `path<TAB>target`)."""
        lines = sorted(f"{f.path}\t{f.link}" if f.link is not None else f"{f.path}:{f.sha256}" for f in self.files)
        return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()

    @property
    def skill_md(self) -> bytes:
        return next(f.content for f in self.files if f.path == SKILL_MD)

    def lock_entry(self) -> dict:
        return {
            "version": self.version,
            "source": self.source,
            "fingerprint": self.fingerprint,
            "files": [
                {"path": f.path, "sha256": f.sha256, "executable": f.executable, **({"link": f.link} if f.link else {})}
                for f in self.files
            ],
        }


def check_path(path: str) -> str:
    parts = path.split("/")
    if (
        not path
        or path.startswith("/")
        or "\\" in path
        or any(ord(char) < 32 for char in path)
        or any(part in ("", ".", "..") for part in parts)
    ):
        raise RegistryError(f"Refusing the unsafe path {path!r} in a skill.")
    return path


def _ordered(files: list[SkillFile]) -> tuple[SkillFile, ...]:
    return tuple(sorted(files, key=lambda f: (f.path != SKILL_MD, f.path)))


def _with_links_resolved(regular: dict[str, SkillFile], links: dict[str, str]) -> list[SkillFile]:
    """Each link gets the bytes and bit of the regular file it leads to, followed by name only."""
    resolved = list(regular.values())
    for path, target in links.items():
        if target.startswith("/") or "\\" in target:
            raise RegistryError(f"{path} is a link to {target!r}; only relative links inside the skill are kept.")
        current = path
        for _ in range(_LINK_HOPS):
            if current not in links:
                break
            joined = posixpath.normpath(posixpath.join(posixpath.dirname(current), links[current]))
            if joined == ".." or joined.startswith("../"):
                raise RegistryError(f"{path} is a link to {target!r}, which leads outside the skill folder.")
            current = joined
        else:
            raise RegistryError(f"{path} is a link that loops.")
        if current not in regular:
            raise RegistryError(f"{path} is a link to {target!r}, which is not a file in the skill.")
        found = regular[current]
        resolved.append(SkillFile(path=path, content=found.content, executable=found.executable, link=target))
    return resolved


def bundle_from_zip(name: str, data: bytes, *, version: int | None = None, source: str | None = None) -> SkillBundle:
    """A skill from the registry's `bundle.zip` (Unix modes in external_attr, links as link
    entries whose data is the target text), SKILL.md at the top or inside one folder."""
    regular: dict[str, SkillFile] = {}
    links: dict[str, str] = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        entries = [info for info in archive.infolist() if not info.is_dir()]
        # The registry's zip holds the skill inside one folder named after it.
        top = {info.filename.split("/", 1)[0] for info in entries}
        prefix = f"{top.pop()}/" if len(top) == 1 and all("/" in info.filename for info in entries) else ""
        for info in entries:
            path = check_path(info.filename.removeprefix(prefix))
            mode = info.external_attr >> 16
            content = archive.read(info)
            if stat.S_ISLNK(mode):
                links[path] = content.decode("utf-8")
            else:
                regular[path] = SkillFile(path=path, content=content, executable=bool(mode & stat.S_IXUSR))
    if SKILL_MD not in regular:
        raise RegistryError(f"The registry's zip of {name!r} has no {SKILL_MD}.")
    return SkillBundle(name=name, files=_ordered(_with_links_resolved(regular, links)), version=version, source=source)


def bundle_from_folder(folder: Path) -> SkillBundle:
    """A skill folder as the registry reads it: links kept as links (never followed out of the
    folder), debris skipped, the owner's execute bit as "executable"."""
    regular: dict[str, SkillFile] = {}
    links: dict[str, str] = {}
    for root, folders, names in os.walk(folder):
        folders[:] = sorted(d for d in folders if d not in SKIPPED_NAMES)
        for entry in sorted([*names, *(d for d in folders if (Path(root) / d).is_symlink())]):
            if entry in SKIPPED_NAMES:
                continue
            full = Path(root) / entry
            path = check_path(full.relative_to(folder).as_posix())
            info = full.lstat()
            if stat.S_ISLNK(info.st_mode):
                links[path] = os.readlink(full)
            elif stat.S_ISREG(info.st_mode):
                executable = bool(info.st_mode & stat.S_IXUSR)
                regular[path] = SkillFile(path=path, content=full.read_bytes(), executable=executable)
            else:
                raise RegistryError(f"{full} is neither a file nor a link; a skill holds only those.")
    if SKILL_MD not in regular:
        raise RegistryError(f"{folder} has no {SKILL_MD} (or it is a link; it must be a regular file).")
    return SkillBundle(name=folder.name, files=_ordered(_with_links_resolved(regular, links)))


def write_folder(bundle: SkillBundle, destination: Path) -> None:
    """Write the skill to `destination` byte for byte (modes 0755/0644, links as links), built
    beside it first and swapped in, so a failure never leaves a half-written skill."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=destination.parent))
    try:
        for f in bundle.files:
            target = staging / check_path(f.path)
            target.parent.mkdir(parents=True, exist_ok=True)
            if f.link is not None:
                os.symlink(f.link, target)
                continue
            target.write_bytes(f.content)
            os.chmod(target, 0o755 if f.executable else 0o644)
        os.chmod(staging, 0o755)
        if destination.is_symlink() or destination.is_file():
            destination.unlink()
        elif destination.exists():
            shutil.rmtree(destination)
        os.replace(staging, destination)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def skill_folders(directory: Path) -> list[Path]:
    """The skill folders directly inside `directory` (each with a SKILL.md), by name."""
    return sorted(p for p in directory.iterdir() if p.is_dir() and not p.is_symlink() and (p / SKILL_MD).is_file())


# --- skills.lock ---------------------------------------------------------------------------------


@dataclass
class Lockfile:
    """`DIR/skills.lock`: per skill its version, source, fingerprint, every file's sha256 and the
    registry's signed attestation; and the registry's signing keys, pinned on first use
    (skill_registry_client/attestation.py). Written with sorted keys, so the same skills give the
    same bytes."""

    path: Path
    skills: dict[str, dict] = field(default_factory=dict)
    keys: dict[str, dict] = field(default_factory=dict)

    @classmethod
    def read(cls, directory: Path, *, required: bool = False) -> Lockfile:
        path = directory / LOCK_NAME
        if not path.exists():
            if required:
                raise RegistryError(f"{path} does not exist: run `skillreg pull` without --frozen first.")
            return cls(path=path)
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            if stored.get("lockfile_version") != LOCK_FORMAT or not isinstance(stored.get("skills"), dict):
                raise ValueError("unknown format")
        except ValueError as error:
            raise RegistryError(f"{path} is not a skills.lock this client can read ({error}).") from None
        keys = stored.get("keys") or {}
        if not isinstance(keys, dict):
            raise RegistryError(f"{path}: `keys` must map key ids to keys.")
        return cls(path=path, skills=stored["skills"], keys=keys)

    def write(self) -> None:
        stored: dict = {"lockfile_version": LOCK_FORMAT, "skills": self.skills}
        if self.keys:
            stored["keys"] = self.keys
        text = json.dumps(stored, indent=2, sort_keys=True) + "\n"
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".skills.lock.")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, self.path)


def lock_differences(name: str, locked: dict, bundle: SkillBundle) -> list[str]:
    """What differs between the lock's record of a skill and `bundle`, one line per difference."""
    problems = []
    want = {f["path"]: f for f in locked.get("files", [])}
    have = {f.path: f for f in bundle.files}
    for path in sorted(want.keys() | have.keys()):
        if path not in have:
            problems.append(f"{path}: in {LOCK_NAME}, not in the registry")
        elif path not in want:
            problems.append(f"{path}: in the registry, not in {LOCK_NAME}")
        elif want[path]["sha256"] != have[path].sha256:
            problems.append(f"{path}: sha256 {have[path].sha256}, {LOCK_NAME} has {want[path]['sha256']}")
        elif bool(want[path].get("executable")) != have[path].executable or want[path].get("link") != have[path].link:
            problems.append(f"{path}: mode or link differs from {LOCK_NAME}")
    if not problems and locked.get("fingerprint") != bundle.fingerprint:
        problems.append(f"fingerprint {bundle.fingerprint}, {LOCK_NAME} has {locked.get('fingerprint')}")
    return problems


# --- local SKILL.md check ------------------------------------------------------------------------

_KEY = re.compile(r"^([A-Za-z0-9_-]+)\s*:(.*)$")
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Issue:
    path: Path
    line: int
    level: str  # "error" or "warning"
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.level}: {self.message}"


def _frontmatter(lines: list[str]) -> tuple[dict[str, tuple[int, str]], int] | None:
    """Top-level keys of the YAML frontmatter -> (line, value with block scalars joined), and the
    closing line; None without frontmatter. Deliberately small: the registry's parser is the
    judge, this catches what would make it refuse the skill."""
    if not lines or lines[0].strip() != "---":
        return None
    keys: dict[str, tuple[int, str]] = {}
    current = None
    for number, line in enumerate(lines[1:], start=2):
        if line.strip() in ("---", "..."):
            if current:
                keys[current[0]] = (current[1], " ".join(current[2]).strip())
            return keys, number
        match = _KEY.match(line)
        if match:
            if current:
                keys[current[0]] = (current[1], " ".join(current[2]).strip())
            value = match.group(2).strip()
            if value[:1] in ("|", ">"):
                value = ""
            elif len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            current = (match.group(1), number, [value])
        elif current and (line.startswith((" ", "\t")) or not line.strip()):
            current[2].append(line.strip())
    return None


def validate_folder(folder: Path) -> list[Issue]:
    """Errors the registry would refuse the skill for (no SKILL.md, not UTF-8, no frontmatter,
    an empty name or description, over the size limit) and warnings worth fixing."""
    skill_md = folder / SKILL_MD
    if not skill_md.is_file() or skill_md.is_symlink():
        return [Issue(skill_md, 1, "error", f"{SKILL_MD} is missing (or not a regular file).")]
    raw = skill_md.read_bytes()
    issues = []
    if len(raw) > SKILL_MD_MAX_BYTES:
        issues.append(Issue(skill_md, 1, "error", f"{len(raw):,} bytes, over the {SKILL_MD_MAX_BYTES:,} byte limit."))
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        return [*issues, Issue(skill_md, line, "error", "not valid UTF-8.")]
    parsed = _frontmatter(text.splitlines())
    if parsed is None:
        return [*issues, Issue(skill_md, 1, "error", "no YAML frontmatter (a '---' line, the keys, a '---' line).")]
    keys, closing = parsed
    for required in ("name", "description"):
        line, value = keys.get(required, (closing, ""))
        if not value:
            issues.append(Issue(skill_md, line, "error", f"`{required}` is missing or empty."))
    line, name = keys.get("name", (closing, ""))
    if name and name != folder.name:
        issues.append(Issue(skill_md, line, "warning", f"name {name!r} differs from the folder name {folder.name!r}."))
    if name and not _NAME.match(name):
        issues.append(Issue(skill_md, line, "warning", f"name {name!r} is not lowercase letters, digits and hyphens."))
    line, description = keys.get("description", (closing, ""))
    if len(description) > 1024:
        issues.append(Issue(skill_md, line, "warning", "description is over 1,024 characters."))
    return issues + [Issue(skill_md, line, "error", message) for line, message in requires_problems(text.splitlines())]


# `metadata.requires` entries (the registry's registry/skillformat/requires.py is the judge; this is
# its grammar, so that a malformed entry is caught before a push).
_REQUIRES_LINE = re.compile(r"""^\s+["']?requires["']?\s*:\s*(.*)$""")
_REQUIRES_ENTRY = re.compile(
    r"^(?:skill:\s*[A-Za-z0-9][A-Za-z0-9_.-]{0,127}(?:\s*@\s*(?:[0-9]{1,9}|[a-z0-9_.-]{1,36}))?"
    r"|tool:\s*[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}(?:\([^()]{0,200}\))?"
    r"|mcp:\s*[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})$",
    re.IGNORECASE,
)


def requires_entries(lines: list[str]) -> list[tuple[int, str]]:
    """`metadata.requires` entries with their line: (line, entry), read from the `requires:` line
    under `metadata:` and the indented lines that continue its value."""
    entries: list[tuple[int, str]] = []
    in_metadata = False
    indent = -1  # of the `requires:` line while its value is read: deeper lines continue it
    for number, line in enumerate(lines[1:], start=2):
        if line.strip() in ("---", "..."):
            break
        if line.strip() and not line[:1].isspace():
            in_metadata, indent = line.split(":", 1)[0].strip() == "metadata", -1
            continue
        depth = len(line) - len(line.lstrip())
        found = _REQUIRES_LINE.match(line) if in_metadata else None
        if found:
            indent, line = depth, found.group(1)
        elif indent < 0 or depth <= indent:
            indent = -1
            continue
        for part in line.strip().strip("[]").split(","):
            entry = " ".join(part.split()).strip("\"'").strip()
            if entry:
                entries.append((number, entry))
    return entries


def requires_problems(lines: list[str]) -> list[tuple[int, str]]:
    """(line, message) for each malformed `metadata.requires` entry."""
    return [
        (
            line,
            f"`metadata.requires`: `{entry[:80]}` is not `skill:NAME[@LABEL|@VERSION]`, `tool:NAME` or `mcp:SERVER`.",
        )
        for line, entry in requires_entries(lines)
        if not _REQUIRES_ENTRY.match(entry) or entry.lower().rstrip().endswith("@0")
    ]
