"""Signed releases: the registry signs every version it publishes, publishers may sign too.

Each version gets an in-toto statement (registry/skillformat/attestation.py) in a DSSE envelope,
signed with the registry's Ed25519 key inside the publish transaction (Ed25519 signs in tens of
microseconds; the canonical zip is built once, as the discovery index would). The statement is
re-issued, and re-signed with the current key, when the version's scan verdict is known
(`record_scan_verdict`) or its publisher signs it.

The private key is a file (SIGNING_KEY_FILE, created 0600 from its first byte when missing); the
database holds every public key with the window it signed in, so keys.json and the checks read
one table whichever process signed. `signing_key_rotate` retires the current key (it still
verifies what it signed) and endorses the new one with it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.local_state import private_file_create
from registry.errors import ApplicationError, Conflict, NotFound
from registry.models import PublisherKey, SigningKey, SkillVersion, VersionAttestation
from registry.selectors.versions import version_bundle
from registry.services.audit import SYSTEM, Actor, audit_record
from registry.skillformat import attestation as dsse
from registry.skillformat.bundle import SKILL_MD, Bundle, write_zip

CHANNELS = ("console", "api", "cli", "import")
KEY_NAME_MAX = 100


class SigningUnavailable(ApplicationError):
    """The registry cannot sign: its key file is unreadable, or holds a key that was rotated out."""

    status = 503
    code = "signing_unavailable"


class InvalidPublisherSignature(ApplicationError):
    code = "invalid_signature"


# --- the registry's key -----------------------------------------------------------------------


def _key_file_create(path) -> None:
    """Write a new private key to `path` unless one is there, all at once: it is written 0600 to
    a file of its own, then linked into place, so a process racing to make the first key either
    wins or reads the winner's whole key, never half of it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    pending = path.with_name(f".{path.name}.{os.getpid()}.new")
    pending.unlink(missing_ok=True)
    private_file_create(pending, dsse.private_key_pem(Ed25519PrivateKey.generate()).decode("ascii"))
    try:
        os.link(pending, path)
    except FileExistsError:
        pass
    finally:
        pending.unlink(missing_ok=True)


def _read_key_file() -> Ed25519PrivateKey:
    path = settings.SIGNING_KEY_FILE
    if not path.exists():
        _key_file_create(path)
    try:
        return dsse.private_key_load(path.read_bytes())
    except (OSError, dsse.AttestationError) as error:
        raise SigningUnavailable(f"SIGNING_KEY_FILE {path}: {error}") from None


def _public(key: Ed25519PrivateKey) -> tuple[str, str]:
    raw = dsse.raw_public_key(key.public_key())
    return dsse.key_id(raw), dsse.b64(raw)


def signing_key_current() -> tuple[Ed25519PrivateKey, SigningKey]:
    """The private key that signs now and its row, registering it when new (a first start, or
    an operator who pointed SIGNING_KEY_FILE at another key: the one before is retired)."""
    key = _read_key_file()
    keyid, public = _public(key)
    row = SigningKey.objects.filter(keyid=keyid).first()
    if row is None:
        with transaction.atomic():
            now = timezone.now()
            SigningKey.objects.select_for_update().filter(valid_until=None).exclude(keyid=keyid).update(valid_until=now)
            row, _ = SigningKey.objects.get_or_create(keyid=keyid, defaults={"public_key": public, "valid_from": now})
    if row.valid_until is not None:
        raise SigningUnavailable(
            f"SIGNING_KEY_FILE holds key {keyid}, which was rotated out at {row.valid_until.isoformat()}; "
            "it no longer signs. Restore the current key or run `manage.py keys rotate`."
        )
    return key, row


def _endorsement_payload(row: SigningKey) -> bytes:
    return dsse.key_endorsement_payload(
        keyid=row.keyid, public_key=row.public_key, valid_from=dsse.iso_time(row.valid_from)
    )


def signing_key_rotate(*, actor: Actor = SYSTEM) -> SigningKey:
    """A new signing key: the current one stops signing (its `valid_until` is now) and endorses
    the new one, so clients that pinned it accept the new key. Old keys stay in keys.json and
    verify what they signed. The new private key replaces SIGNING_KEY_FILE once the rows commit."""
    old_key, old_row = signing_key_current()
    new_key = Ed25519PrivateKey.generate()
    keyid, public = _public(new_key)
    path = settings.SIGNING_KEY_FILE
    pending = path.with_name(f".{path.name}.{keyid[7:15].replace('/', '_')}.new")
    pending.unlink(missing_ok=True)
    private_file_create(pending, dsse.private_key_pem(new_key).decode("ascii"))
    try:
        with transaction.atomic():
            now = timezone.now()
            updated = SigningKey.objects.filter(keyid=old_row.keyid, valid_until=None).update(valid_until=now)
            if not updated:
                raise Conflict("Another rotation retired the current key first; run it again.")
            row = SigningKey(keyid=keyid, public_key=public, valid_from=now, endorsed_by=old_row.keyid)
            row.endorsement = dsse.sign(old_key, _endorsement_payload(row), dsse.KEY_ENDORSEMENT_TYPE)["sig"]
            row.save(force_insert=True)
            audit_record(
                actor=actor,
                action="signing_key.rotate",
                object_type="signing_key",
                object_repr=keyid,
                before={"keyid": old_row.keyid},
                after={"keyid": keyid, "endorsed_by": old_row.keyid},
            )
    except BaseException:
        pending.unlink(missing_ok=True)
        raise
    os.replace(pending, path)
    return row


def signing_key_expire(*, keyid: str, at: datetime | None = None, actor: Actor = SYSTEM) -> SigningKey:
    """Stop trusting a key from `at` (now): clients refuse what it signed, e.g. once it may have
    leaked. The current key cannot expire: rotate first."""
    at = at or timezone.now()
    with transaction.atomic():
        row = SigningKey.objects.select_for_update().filter(keyid=keyid).first()
        if row is None:
            raise NotFound(f"No signing key {keyid}.", fields={"keyid": "not a registry key"})
        if row.valid_until is None:
            raise Conflict(f"{keyid} is the current signing key: rotate it out first (`manage.py keys rotate`).")
        before = row.expires_at
        row.expires_at = at
        row.save(update_fields=["expires_at"])
        audit_record(
            actor=actor,
            action="signing_key.expire",
            object_type="signing_key",
            object_repr=keyid,
            before={"expires_at": before.isoformat() if before else None},
            after={"expires_at": at.isoformat()},
        )
    return row


# --- statements -------------------------------------------------------------------------------


def _file_digests(bundle: Bundle) -> list[tuple[str, str]]:
    return [(SKILL_MD, hashlib.sha256(bundle.skill_md).hexdigest())] + [(f.path, f.sha256) for f in bundle.files]


_iso = dsse.iso_time


def _issue(*, subject: list[dict], predicate: dict[str, Any]) -> dict[str, Any]:
    key, _ = signing_key_current()
    predicate = {**predicate, "issuedAt": _iso(timezone.now())}
    payload = dsse.statement(subject=subject, predicate_type=dsse.RELEASE_PREDICATE, predicate=predicate)
    return dsse.envelope(payload, [dsse.sign(key, payload)])


def channel_of(actor: Actor) -> str:
    """Where a publish came from, by the actor's channel (the API tells skillreg apart itself)."""
    if actor.via == "console":
        return "console"
    if actor.via.startswith("api token"):
        return "api"
    if actor.via == "cli":
        return "cli"
    return "import"


def version_attest(
    *,
    version: SkillVersion,
    bundle: Bundle,
    channel: str,
    actor: Actor = SYSTEM,
    publisher_envelope: dict | None = None,
) -> VersionAttestation:
    """Sign `version`'s release statement (inside the publish transaction). `bundle` is what was
    stored; with `publisher_envelope` the publisher's signature is checked first (a bad one
    refuses the publish)."""
    stored = Bundle(skill_md=version.skill_md.encode("utf-8"), files=bundle.files)
    files = _file_digests(stored)
    archive = hashlib.sha256(write_zip(stored, keep_links=False)).hexdigest()
    publisher_key = None
    if publisher_envelope is not None:
        publisher_key = _publisher_signature_check(
            envelope=publisher_envelope, skill=version.skill.name, files=files, actor=actor
        )
    author = version.author.get_username() if version.author else None
    source = channel if channel in CHANNELS else "import"
    predicate: dict[str, Any] = {
        "skill": version.skill.name,
        "version": version.number,
        "skillSource": version.skill.source,
        "fingerprint": version.fingerprint,
        "publisher": author,
        "publishedAt": _iso(version.created_at),
        "source": source,
        "scan": None,
        "publisherSignature": _publisher_claim(publisher_key),
    }
    subject = dsse.subjects(skill=version.skill.name, files=files, archive_sha256=archive)
    return VersionAttestation.objects.create(
        version=version,
        envelope=_issue(subject=subject, predicate=predicate),
        channel=source,
        publisher_envelope=publisher_envelope,
        publisher_key=publisher_key,
    )


def _publisher_claim(key: PublisherKey | None) -> dict[str, str] | None:
    return None if key is None else {"keyid": key.keyid, "publisher": key.user.get_username()}


def _reissue(attestation: VersionAttestation, **changes: Any) -> VersionAttestation:
    opened = dsse.envelope_open(attestation.envelope)
    predicate = {**opened.statement["predicate"], **changes}
    attestation.envelope = _issue(subject=opened.statement["subject"], predicate=predicate)
    attestation.save(update_fields=["envelope", "publisher_envelope", "publisher_key", "updated_at"])
    return attestation


def _attestation_locked(version: SkillVersion) -> VersionAttestation:
    attestation = VersionAttestation.objects.select_for_update().filter(version=version).first()
    if attestation is None:
        raise NotFound(f"{version.skill.name} v{version.number} has no attestation (published before signing).")
    return attestation


def record_scan_verdict(
    version: SkillVersion, verdict: str, *, scanner: str | None = None
) -> VersionAttestation | None:
    """Re-issue `version`'s statement with its scan verdict (`clean`, `review`, `warn`,
    `malicious`, `error`), signed with the current key; a later scan re-issues it again. A
    version published before signing has no statement to re-issue (None): `keys attest-missing`
    signs it."""
    with transaction.atomic():
        attestation = VersionAttestation.objects.select_for_update().filter(version=version).first()
        if attestation is None:
            return None
        scan = {"verdict": str(verdict), "scanner": scanner, "recordedAt": _iso(timezone.now())}
        return _reissue(attestation, scan=scan)


# --- publishers' keys and signatures ------------------------------------------------------------


def publisher_key_add(*, user: Any, name: str, public_key: str, actor: Actor = SYSTEM) -> PublisherKey:
    """Register an Ed25519 public key (an ssh-ed25519 line, PEM, or raw base64) for `user`."""
    name = (name or "").strip()
    if not name or len(name) > KEY_NAME_MAX:
        raise ApplicationError(f"Name the key (1 to {KEY_NAME_MAX} characters).", fields={"name": "required"})
    try:
        parsed = dsse.parse_public_key(public_key)
    except dsse.AttestationError as error:
        raise ApplicationError(str(error), fields={"public_key": str(error)}) from None
    with transaction.atomic():
        holder = PublisherKey.objects.select_for_update().filter(keyid=parsed.keyid, revoked_at=None).first()
        if holder is not None:
            whose = "yours" if holder.user_id == user.pk else "another user's"
            raise Conflict(
                f"Key {parsed.keyid} is already registered ({whose}, as '{holder.name}').",
                fields={"public_key": "already registered"},
            )
        key = PublisherKey.objects.create(
            user=user, name=name, keyid=parsed.keyid, public_key=dsse.b64(parsed.raw), format=parsed.format
        )
        audit_record(
            actor=actor,
            action="publisher_key.add",
            object_type="publisher_key",
            object_repr=f"{user.get_username()}: {parsed.keyid}",
            after={"name": name, "keyid": parsed.keyid, "format": parsed.format},
        )
    return key


def publisher_key_revoke(*, key: PublisherKey, actor: Actor = SYSTEM) -> PublisherKey:
    """Stop accepting new signatures by `key`; versions it signed keep their record."""
    with transaction.atomic():
        updated = PublisherKey.objects.filter(pk=key.pk, revoked_at=None).update(revoked_at=timezone.now())
        if updated:
            audit_record(
                actor=actor,
                action="publisher_key.revoke",
                object_type="publisher_key",
                object_repr=f"{key.user.get_username()}: {key.keyid}",
            )
    key.refresh_from_db()
    return key


@dataclass(frozen=True)
class _Signed:
    key: PublisherKey
    statement: dict[str, Any]


def _publisher_signature_check(
    *, envelope: Any, skill: str, files: list[tuple[str, str]], actor: Actor
) -> PublisherKey:
    """The publisher key that signed `envelope`, which must be a publisher statement naming
    `skill` and exactly `files`; refusals name the key or the file."""
    user = actor.user_or_none
    if user is None:
        raise InvalidPublisherSignature("Only a user can sign a release; this publish has none.")
    try:
        opened = dsse.envelope_open(envelope)
    except dsse.AttestationError as error:
        raise InvalidPublisherSignature(f"signature: {error}", fields={"signature": str(error)}) from None
    keys = {key.keyid: key for key in PublisherKey.objects.filter(user=user, revoked_at=None).select_related("user")}
    signed = None
    for item in opened.signatures:
        key = keys.get(item["keyid"])
        if key is None:
            continue
        if not dsse.signature_valid(dsse.b64decode(key.public_key, "key"), opened.payload, item["sig"]):
            raise InvalidPublisherSignature(
                f"The signature by key {key.keyid} does not verify over the statement sent.",
                fields={"signature": f"bad signature by {key.keyid}"},
            )
        signed = _Signed(key, opened.statement)
        break
    if signed is None:
        named = ", ".join(item["keyid"] for item in opened.signatures) or "no key"
        raise InvalidPublisherSignature(
            f"The release is signed by {named}, which is not a key {user.get_username()} registered "
            "(register it on the Tokens page of the console).",
            fields={"signature": f"unknown key {named}"},
        )
    if signed.statement.get("predicateType") != dsse.PUBLISHER_PREDICATE:
        raise InvalidPublisherSignature(
            f"The signed statement's predicateType must be {dsse.PUBLISHER_PREDICATE}.",
            fields={"signature": "wrong predicateType"},
        )
    predicate = signed.statement.get("predicate") or {}
    if predicate.get("skill") != skill:
        raise InvalidPublisherSignature(
            f"The signed statement names skill {predicate.get('skill')!r}, not {skill!r}.",
            fields={"signature": "another skill"},
        )
    want = {
        item["name"]: item["digest"]["sha256"] for item in dsse.subjects(skill=skill, files=files, archive_sha256=None)
    }
    have = opened.digests
    for name in sorted(want.keys() | have.keys()):
        if want.get(name) != have.get(name):
            raise InvalidPublisherSignature(
                f"The signed statement does not match the published files at {name}.",
                fields={"signature": f"differs at {name}"},
            )
    return signed.key


def publisher_signature_attach(*, version: SkillVersion, envelope: Any, actor: Actor) -> VersionAttestation:
    """Add the publisher's signature to a version already published (the same content pushed
    again, signed): checked as at publish, then the registry's statement re-issued naming it."""
    with transaction.atomic():
        attestation = _attestation_locked(version)
        files = [
            (name.split("/", 1)[1], digest)
            for name, digest in dsse.envelope_open(attestation.envelope).digests.items()
            if "/" in name
        ]
        key = _publisher_signature_check(envelope=envelope, skill=version.skill.name, files=files, actor=actor)
        attestation.publisher_envelope = envelope
        attestation.publisher_key = key
        audit_record(
            actor=actor,
            action="version.sign",
            object_type="skill",
            object_repr=f"{version.skill.name}@{version.skill.source}",
            after={"version": version.number, "keyid": key.keyid},
        )
        return _reissue(attestation, publisherSignature=_publisher_claim(key))


def versions_attest_missing(*, progress: Any = None) -> int:
    """Sign every version published before the registry signed releases (source `import`: the
    registry vouches for what it stored, not for how it arrived). Each in its own transaction."""
    signed = 0
    for version_id in SkillVersion.objects.filter(attestation__isnull=True).order_by("pk").values_list("pk", flat=True):
        with transaction.atomic():
            version = (
                SkillVersion.objects.select_related("skill", "author")
                .select_for_update(of=("self",))
                .get(pk=version_id)
            )
            if VersionAttestation.objects.filter(version=version).exists():
                continue
            version_attest(version=version, bundle=version_bundle(version), channel="import")
            signed += 1
        if progress:
            progress(version)
    return signed
