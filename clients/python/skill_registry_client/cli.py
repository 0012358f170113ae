"""`skillreg`: pull skills into a folder with a lockfile, install exactly the lock, publish edited
folders, check folders before publishing. The registry is `SKILL_REGISTRY_URL` with the token
`SKILL_REGISTRY_TOKEN` (or --url / --token)."""

from __future__ import annotations

import argparse
import base64
import os
import sys
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from skill_registry_client.attestation import (
    SignatureRefused,
    Verified,
    envelope_verify,
    files_check,
    private_key_read,
    publisher_envelope,
)
from skill_registry_client.errors import ContentMismatch, NotFound, RegistryError, VersionConflict
from skill_registry_client.folders import (
    LOCK_NAME,
    SKILL_MD,
    Issue,
    Lockfile,
    SkillBundle,
    bundle_from_folder,
    bundle_from_zip,
    lock_differences,
    requires_entries,
    skill_folders,
    validate_folder,
    write_folder,
)
from skill_registry_client.releases import KeySet, attestation_get
from skill_registry_client.transport import Transport, skill_path

PAGE = 500  # the API's largest page


def _transport(args: argparse.Namespace) -> Transport:
    if not args.url or not args.token:
        raise RegistryError("Set SKILL_REGISTRY_URL and SKILL_REGISTRY_TOKEN (or pass --url and --token).")
    return Transport(args.url, args.token, timeout=args.timeout)


def _every_skill(transport: Transport, label: str | None) -> list[str]:
    """The names agents get: effective, enabled skills (with `label`, those carrying it)."""
    names: list[str] = []
    offset = 0
    while True:
        page = transport.request("GET", "skills", params={"label": label, "limit": PAGE, "offset": offset}).json()
        names += [row["name"] for row in page["results"] if row["effective"] and row["enabled"]]
        offset += len(page["results"])
        if not page.get("next") or not page["results"]:
            return sorted(set(names))


def _download(transport: Transport, name: str, *, version: int, source: str | None) -> SkillBundle:
    answer = transport.request("GET", skill_path(name, "bundle.zip"), params={"version": version, "source": source})
    try:
        return bundle_from_zip(name, answer.body, version=version, source=source)
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError) as error:
        raise SignatureRefused(f"{name}: the download of version {version} is damaged ({error}).", skill=name) from None


def _verified(keys: KeySet, envelope: dict, bundle: SkillBundle, *, where: str = "") -> Verified:
    """The statement vouching for exactly `bundle`'s files, or SignatureRefused naming the key or file."""
    verified = envelope_verify(envelope, keys.trusted(), skill=bundle.name)
    files = {f.path: f.sha256 for f in bundle.files}
    files_check(verified, skill=bundle.name, version=bundle.version, files=files, where=where or f"{bundle.name}/")
    return verified


def _skillset_members(transport: Transport, skillset: str, label: str | None) -> dict:
    """The set as the registry serves it at `label` (production by default): its version and
    members' numbers, read in one answer so they are one version's, never a mix during a move."""
    body = {"query": "", "skillset": skillset, "label": label, "max_skills": 0}
    served = transport.request("POST", "resolve", json_body=body).json()["skillset"]
    if served["missing"]:
        raise RegistryError(
            f"skillset {served['name']} version {served['version']}: members missing or disabled in the registry: "
            f"{', '.join(served['missing'])}; nothing pulled."
        )
    return served


def _pull_targets(transport: Transport, names: list[str], args: argparse.Namespace) -> list[_Target]:
    """What a pull writes: every member of --skillset at the set's number; otherwise each named
    skill (every skill with --all) at --label and, unless --no-deps, the skills they require."""
    if args.skillset:
        for flag, given in (("skill names", names), ("--all", args.all), ("--frozen", args.frozen)):
            if given:
                raise RegistryError(f"--skillset pulls exactly the set's members: no {flag} with it.")
        served = _skillset_members(transport, args.skillset, args.label)
        print(f"skillset {served['name']}: version {served['version']} at {served['label']}")
        at = {"name": served["name"], "version": served["version"], "label": served["label"]}
        members = served["members"].items()
        return [_served(transport, name, {"version": number}, skillset=at) for name, number in members]
    if args.all and names:
        raise RegistryError("Give skill names or --all, not both.")
    if not args.all and not names:
        raise RegistryError("Name the skills to pull, or pass --all (or --skillset).")
    if args.all:
        names = _every_skill(transport, args.label)
    return _targets(transport, names, label=args.label, with_required=not args.no_deps)


def pull(args: argparse.Namespace) -> int:
    *names, target = args.names_and_dir
    directory = Path(target)
    transport = _transport(args)
    if args.frozen and not args.skillset:
        if args.all:
            raise RegistryError("--frozen installs exactly what skills.lock says: no --all or --label with it.")
        return _pull_frozen(transport, directory, names, args)
    targets = _pull_targets(transport, names, args)
    directory.mkdir(parents=True, exist_ok=True)
    lock = Lockfile.read(directory)
    if not args.force:
        edited = [
            t.name for t in targets if _has_local_changes(skill_folder(directory, t.name), lock.skills.get(t.name))
        ]
        if edited:
            raise RegistryError(
                f"{', '.join(edited)}: changed in {directory} since the last pull (or not pulled by skillreg); "
                "push the changes first, or pass --force to replace them."
            )
    pulled = 0
    keys = KeySet(transport, lock)
    try:
        for target in targets:
            name = target.name
            bundle = _download(transport, name, version=target.version, source=target.source)
            envelope = attestation_get(transport, name, version=target.version, source=target.source)
            verified = _verified(keys, envelope, bundle)
            if bundle.fingerprint != target.fingerprint:
                raise ContentMismatch(
                    f"{name}: the zip of version {target.version} does not match its fingerprint.", skill=name
                )
            write_folder(bundle, skill_folder(directory, name))
            entry = {**bundle.lock_entry(), "label": args.label, "attestation": envelope}
            lock.skills[name] = {**entry, **target.why_locked()}
            pulled += 1
            why = f", {target.why}" if target.why else ""
            print(f"{name}: version {bundle.version} ({len(bundle.files)} files, signed by {verified.keyid}{why})")
    finally:
        if pulled:
            lock.write()  # what was written so far is recorded, even when a later skill fails
    print(f"{len(targets)} skills in {directory}, {LOCK_NAME} written")
    return 0


@dataclass(frozen=True)
class _Target:
    """A skill a pull writes, at the version the registry serves it."""

    name: str
    version: int
    source: str | None
    fingerprint: str
    required_by: str | None = None  # the skill whose `metadata.requires` brought it in
    why: str = ""
    skillset: dict | None = None  # {name, version, label} of the set it was pulled as a member of

    def why_locked(self) -> dict:
        """What skills.lock records of why this skill is there, beside its version."""
        return {
            **({"required_by": self.required_by} if self.required_by else {}),
            **({"skillset": self.skillset} if self.skillset else {}),
        }


def _served(transport: Transport, name: str, params: dict, *, skillset: dict | None = None) -> _Target:
    detail = transport.request("GET", skill_path(name), params=params).json()
    return _Target(name, detail["version"], detail["source"], detail["fingerprint"], skillset=skillset)


def _targets(transport: Transport, names: list[str], *, label: str | None, with_required: bool) -> list[_Target]:
    """The named skills and, unless `with_required` is off, the skills they require (directly or
    through others) at the versions the registry resolves for `label`, each once. A required
    skill the registry does not serve there is named on stderr and left out."""
    targets = {name: _served(transport, name, {"label": label}) for name in names}
    if not with_required:
        return list(targets.values())
    for name in names:
        closure = transport.request("GET", skill_path(name, "dependencies"), params={"label": label}).json()
        for needed in closure["skills"]:
            if needed["missing"]:
                print(
                    f"skillreg: warning: {needed['name']} ({needed['why']}) is not served; not pulled", file=sys.stderr
                )
                continue
            targets.setdefault(
                needed["name"],
                _Target(
                    needed["name"],
                    needed["version"],
                    needed["source"],
                    needed["fingerprint"],
                    required_by=needed["required_by"],
                    why=needed["why"],
                ),
            )
    return list(targets.values())


def skill_folder(directory: Path, name: str) -> Path:
    """DIR/NAME for a skill name from the registry or skills.lock, refused unless it is one plain
    folder name: the folder is replaced wholesale, so `../x` must never reach the file system."""
    if not name or name in (".", "..") or any(char in name for char in "/\\\0"):
        raise RegistryError(f"{name!r} is not a skill name that can be a folder name.")
    return directory / name


def _has_local_changes(folder: Path, locked: dict | None) -> bool:
    if not folder.exists() and not folder.is_symlink():
        return False
    if locked is None or not (folder / SKILL_MD).is_file():
        return True
    try:
        return bundle_from_folder(folder).fingerprint != locked.get("fingerprint")
    except RegistryError:
        return True  # unreadable as a skill: not something to delete unasked


def _pull_frozen(transport: Transport, directory: Path, names: list[str], args: argparse.Namespace) -> int:
    if args.label:
        raise RegistryError("--frozen installs exactly what skills.lock says: no --all or --label with it.")
    lock = Lockfile.read(directory, required=True)
    for name in names:
        if name not in lock.skills:
            raise ContentMismatch(f"{name}: not in {lock.path}.", skill=name)
    chosen = _with_locked_requirements(lock, names) if names else sorted(lock.skills)
    # Everything is checked before anything is written: a mismatch leaves the folder as it was.
    bundles = []
    keys = KeySet(transport, lock)  # not written back: --frozen changes nothing but the folders
    for name in chosen:
        locked = lock.skills[name]
        bundle = _download(transport, name, version=locked["version"], source=locked.get("source"))
        _verified(
            keys, attestation_get(transport, name, version=locked["version"], source=locked.get("source")), bundle
        )
        problems = lock_differences(name, locked, bundle)
        if problems:
            raise ContentMismatch(
                f"{name} (version {locked['version']}): the registry's content differs from {LOCK_NAME}:\n  "
                + "\n  ".join(problems),
                skill=name,
            )
        bundles.append(bundle)
    for bundle in bundles:
        write_folder(bundle, skill_folder(directory, bundle.name))
        print(f"{bundle.name}: version {bundle.version} (matches {LOCK_NAME})")
    return 0


def _with_locked_requirements(lock: Lockfile, names: list[str]) -> list[str]:
    """`names` and the skills the lock records as required by them, directly or through others."""
    chosen = list(names)
    for name in chosen:  # grows while it is read: each skill brings the ones it required
        chosen += [
            other
            for other, locked in sorted(lock.skills.items())
            if locked.get("required_by") == name and other not in chosen
        ]
    return chosen


def _publish_body(bundle: SkillBundle, *, base_version: int, message: str) -> dict:
    try:
        skill_md = bundle.skill_md.decode("utf-8")
    except UnicodeDecodeError:
        raise RegistryError(f"{bundle.name}/{SKILL_MD} is not valid UTF-8.") from None
    files: list[dict[str, object]] = []
    for f in bundle.files:
        if f.path == SKILL_MD:
            continue
        if f.link is not None:
            files.append({"path": f.path, "link": f.link})
        else:
            content = base64.b64encode(f.content).decode("ascii")
            files.append({"path": f.path, "content_base64": content, "executable": f.executable})
    return {"skill_md": skill_md, "files": files, "base_version": base_version, "message": message}


def push(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    transport = _transport(args)
    lock = Lockfile.read(directory)
    signing_key = private_key_read(args.sign) if args.sign else None
    keys = KeySet(transport, lock)
    failed = 0
    for folder in skill_folders(directory):
        name = folder.name
        bundle = bundle_from_folder(folder)
        locked = lock.skills.get(name)
        if locked is not None and locked.get("fingerprint") == bundle.fingerprint:
            print(f"{name}: unchanged (version {locked['version']})")
            continue
        # An edit of a bundled skill becomes a user skill of that name, new on the registry: 0 says
        # "nobody has made one yet", so someone else's override is a conflict, not overwritten.
        base = locked["version"] if locked is not None and locked.get("source") != "bundled" else 0
        body = _publish_body(bundle, base_version=base, message=args.message)
        if signing_key is not None:
            body["signature"] = publisher_envelope(
                signing_key, skill=name, files={f.path: f.sha256 for f in bundle.files}
            )
        try:
            result = transport.request("POST", skill_path(name, "versions"), json_body=body).json()
        except VersionConflict as error:
            failed += 1
            print(
                f"{name}: conflict: the registry has version {error.latest_version}, your edit is of version {base}; "
                f"pull it, redo the edit, push again.",
                file=sys.stderr,
            )
            continue
        except RegistryError as error:
            failed += 1
            print(f"{name}: not published: {error}", file=sys.stderr)
            continue
        published = SkillBundle(name=name, files=bundle.files, version=result["version"], source=result["source"])
        envelope = attestation_get(transport, name, version=result["version"], source=result["source"])
        _verified(keys, envelope, published)  # what the registry signed is what was sent
        lock.skills[name] = {**published.lock_entry(), "label": (locked or {}).get("label"), "attestation": envelope}
        lock.write()
        what = "published version" if result["created"] else "identical to version"
        signed = " (signed)" if signing_key is not None else ""
        print(f"{name}: {what} {result['version']}{signed}")
    return 1 if failed else 0


def verify(args: argparse.Namespace) -> int:
    """Check every skill folder skills.lock records against the attestation stored with it and
    the keys it pins, offline: exit 1 naming each file that differs from what was signed."""
    directory = Path(args.dir)
    lock = Lockfile.read(directory, required=True)
    if not lock.keys:
        raise RegistryError(f"{lock.path} pins no registry keys: pull with this client first.")
    failed = 0
    for name in sorted(lock.skills):
        locked = lock.skills[name]
        try:
            envelope = locked.get("attestation")
            if not envelope:
                raise SignatureRefused(f"{name}: {LOCK_NAME} holds no attestation for it; pull it again.", skill=name)
            folder = skill_folder(directory, name)
            if not folder.is_dir():
                raise SignatureRefused(f"{folder}: missing.", skill=name)
            found = bundle_from_folder(folder)
            bundle = SkillBundle(name=name, files=found.files, version=locked.get("version"))
            verified = envelope_verify(envelope, lock.keys, skill=name)
            files_check(
                verified,
                skill=name,
                version=bundle.version,
                files={f.path: f.sha256 for f in bundle.files},
                where=f"{folder}/",
            )
        except RegistryError as error:
            failed += 1
            print(f"skillreg: error: {error}", file=sys.stderr)
            continue
        print(f"{name}: version {locked.get('version')} verified ({len(bundle.files)} files, key {verified.keyid})")
    return 1 if failed else 0


def validate(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    if not directory.is_dir():
        what = "is not a folder" if directory.exists() else "does not exist"
        raise RegistryError(f"{directory} {what}: give a skill folder, or a folder of skill folders.")
    folders = [directory] if (directory / SKILL_MD).exists() else skill_folders(directory)
    if not folders:
        raise RegistryError(f"{directory} has no {SKILL_MD} and no skill folders.")
    transport = _transport(args) if args.url and args.token else None
    errors = warnings = 0
    for folder in folders:
        for issue in validate_folder(folder) + _required_skills_missing(transport, folder):
            print(issue)
            errors += issue.level == "error"
            warnings += issue.level == "warning"
    print(f"{len(folders)} skills checked: {errors} errors, {warnings} warnings")
    return 1 if errors else 0


def _required_skills_missing(transport: Transport | None, folder: Path) -> list[Issue]:
    """A warning for each `skill:` requirement the registry has no skill for (with a registry
    configured; a skill may be pushed before the ones it requires)."""
    if transport is None or not (folder / SKILL_MD).is_file():
        return []
    issues = []
    for line, entry in requires_entries((folder / SKILL_MD).read_text(encoding="utf-8", errors="replace").splitlines()):
        kind, _, rest = entry.partition(":")
        if kind.strip().lower() != "skill" or not rest.strip():
            continue
        name = rest.split("@")[0].strip()
        try:
            transport.request("GET", skill_path(name))
        except NotFound:
            message = f"`{entry}`: the registry has no skill named '{name}' (yet); agents go without it until it has."
            issues.append(Issue(folder / SKILL_MD, line, "warning", message))
    return issues


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="skillreg", description=__doc__)
    main.add_argument("--url", default=os.environ.get("SKILL_REGISTRY_URL"), help="default: $SKILL_REGISTRY_URL")
    main.add_argument("--token", default=os.environ.get("SKILL_REGISTRY_TOKEN"), help="default: $SKILL_REGISTRY_TOKEN")
    main.add_argument("--timeout", type=float, default=30.0, help="seconds per request (default 30)")
    commands = main.add_subparsers(dest="command", required=True)

    p = commands.add_parser("pull", help="write skill folders and DIR/skills.lock")
    p.add_argument("names_and_dir", nargs="+", metavar="NAME… DIR", help="skills to pull, then the folder")
    p.add_argument("--all", action="store_true", help="every enabled skill (with --label: those carrying it)")
    p.add_argument("--label", help="the version this label points to (default: each skill's served version)")
    p.add_argument(
        "--skillset",
        metavar="SET",
        help="every member of this skillset, at the numbers of the set's version at --label (default production)",
    )
    p.add_argument("--frozen", action="store_true", help="install exactly DIR/skills.lock; fail if content differs")
    p.add_argument("--force", action="store_true", help="replace folders changed since the last pull")
    p.add_argument(
        "--no-deps", action="store_true", help="only the named skills, not the skills they require (metadata.requires)"
    )
    p.set_defaults(run=pull)

    p = commands.add_parser("push", help="publish changed folders, based on the versions in DIR/skills.lock")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("-m", "--message", default="Published with skillreg push", help="the version's message")
    p.add_argument(
        "--sign", metavar="KEY", help="sign each release with this Ed25519 private key (OpenSSH or PEM, unencrypted)"
    )
    p.set_defaults(run=push)

    p = commands.add_parser("verify", help="check DIR's skill folders against their signed attestations, offline")
    p.add_argument("dir", metavar="DIR")
    p.set_defaults(run=verify)

    p = commands.add_parser("validate", help="check SKILL.md of a skill folder, or of each folder in DIR")
    p.add_argument("dir", metavar="DIR")
    p.set_defaults(run=validate)
    return main


def main(argv: list[str] | None = None) -> int:
    cli = parser()
    args, rest = cli.parse_known_args(argv)
    # argparse ends a `NAME… DIR` list at the first option, so in `pull a b --label production DIR`
    # the folder comes back unparsed: it, and any names after the options, belong to the list.
    if args.command == "pull":
        args.names_and_dir += [word for word in rest if not word.startswith("-")]
        rest = [word for word in rest if word.startswith("-")]
    if rest:
        cli.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        return args.run(args)
    except RegistryError as error:
        print(f"skillreg: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
