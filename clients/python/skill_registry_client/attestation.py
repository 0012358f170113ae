"""Checking the registry's signed releases: each version's in-toto statement in a DSSE envelope,
signed with an Ed25519 key from `/.well-known/skill-registry/keys.json`.

The keys are pinned in skills.lock the first time a folder is pulled (trust on first use). A key
the lock does not pin is taken only when keys.json shows it endorsed by a pinned key (the registry
signs each new key with the one it replaces), so a rotation needs nothing from the user and a
registry that swapped its keys cannot slip one in. keys.json may narrow a pinned key (a
`valid_until` or `expires` it did not have); it never widens one.

Refusals are `SignatureRefused`, naming the skill and the key or the file.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import struct
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from skill_registry_client.errors import RegistryError

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
RELEASE_PREDICATE = "https://skill-registry.dev/attestation/release/v1"
PUBLISHER_PREDICATE = "https://skill-registry.dev/attestation/publisher/v1"
KEY_ENDORSEMENT_TYPE = "application/vnd.skill-registry.signing-key+json"
KEYS_PATH = "/.well-known/skill-registry/keys.json"


class SignatureRefused(RegistryError):
    """A download, folder or attestation the registry's signature does not vouch for."""

    def __init__(self, detail: str, *, skill: str | None = None) -> None:
        super().__init__(detail)
        self.skill = skill


def pae(payload_type: str, payload: bytes) -> bytes:
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _when(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text.replace("Z", "+00:00"))


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError, TypeError):
        raise SignatureRefused(f"{text[:40]!r} is not base64.") from None


def _verifies(public_key: str, payload: bytes, sig: str, payload_type: str) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(_b64(public_key)).verify(_b64(sig), pae(payload_type, payload))
    except (InvalidSignature, ValueError):
        return False
    return True


# --- the pinned key set ------------------------------------------------------------------------


def _narrowed(pinned: dict, seen: dict) -> dict:
    """A pinned entry with what keys.json says now, where that only takes trust away."""
    entry = dict(pinned)
    for field in ("valid_until", "expires"):
        now, before = _when(seen.get(field)), _when(pinned.get(field))
        if now is not None and (before is None or now < before):
            entry[field] = seen[field]
    return entry


def keys_update(pinned: dict[str, dict], document: dict) -> dict[str, dict]:
    """`pinned` (keyid -> entry) with keys.json's news: narrowed validity of pinned keys, and new
    keys endorsed by a key already trusted (oldest first, so a chain of rotations is followed)."""
    seen = {entry["keyid"]: entry for entry in document.get("keys", []) if isinstance(entry, dict)}
    trusted = {keyid: _narrowed(entry, seen[keyid]) if keyid in seen else entry for keyid, entry in pinned.items()}
    for entry in sorted(seen.values(), key=lambda item: item.get("valid_from") or ""):
        if entry["keyid"] in trusted:
            continue
        endorsement = entry.get("endorsed_by") or {}
        endorser = trusted.get(endorsement.get("keyid", ""))
        if endorser is None:
            continue
        signed = canonical_json(
            {"keyid": entry["keyid"], "public_key": entry["public_key"], "valid_from": entry["valid_from"]}
        )
        if _verifies(endorser["public_key"], signed, endorsement.get("sig", ""), KEY_ENDORSEMENT_TYPE):
            trusted[entry["keyid"]] = {
                field: entry.get(field) for field in ("keyid", "public_key", "valid_from", "valid_until", "expires")
            }
    return trusted


def keys_first_use(document: dict) -> dict[str, dict]:
    """The key set to pin when skills.lock has none yet: every key keys.json lists."""
    fields = ("keyid", "public_key", "valid_from", "valid_until", "expires")
    return {entry["keyid"]: {field: entry.get(field) for field in fields} for entry in document.get("keys", [])}


# --- statements ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verified:
    """An envelope whose signature holds: its statement and the key that signed it."""

    statement: dict
    keyid: str

    @property
    def digests(self) -> dict[str, str]:
        return {item["name"]: item["digest"]["sha256"] for item in self.statement["subject"]}


def envelope_verify(envelope: Any, keys: dict[str, dict], *, skill: str, now: datetime | None = None) -> Verified:
    """The statement in `envelope` when a signature by one of `keys` holds over it, the key had not
    expired and signed within its window; else SignatureRefused naming the key."""
    if not isinstance(envelope, dict) or envelope.get("payloadType") != PAYLOAD_TYPE:
        raise SignatureRefused(f"{skill}: the attestation is not a DSSE envelope of an in-toto statement.", skill=skill)
    payload = _b64(envelope.get("payload", ""))
    try:
        statement = json.loads(payload)
    except ValueError:
        raise SignatureRefused(f"{skill}: the attestation's payload is not JSON.", skill=skill) from None
    now = now or datetime.now(timezone.utc)
    problems = []
    for signature in envelope.get("signatures") or []:
        keyid = signature.get("keyid", "")
        key = keys.get(keyid)
        if key is None:
            problems.append(
                f"signed by unknown key {keyid} (skills.lock pins other keys, and none of them endorsed it; if the "
                "registry's keys were replaced on purpose, remove `keys` from skills.lock to pin its keys again)"
            )
            continue
        if not _verifies(key["public_key"], payload, signature.get("sig", ""), PAYLOAD_TYPE):
            problems.append(f"the signature by key {keyid} does not verify (the attestation was altered)")
            continue
        expires = _when(key.get("expires"))
        if expires is not None and now >= expires:
            problems.append(f"key {keyid} expired at {key['expires']}")
            continue
        issued = _when((statement.get("predicate") or {}).get("issuedAt"))
        start, end = _when(key.get("valid_from")), _when(key.get("valid_until"))
        if issued is None or (start is not None and issued < start) or (end is not None and issued > end):
            problems.append(
                f"key {keyid} was not valid when this was signed ({(statement.get('predicate') or {}).get('issuedAt')})"
            )
            continue
        if statement.get("_type") != STATEMENT_TYPE or statement.get("predicateType") != RELEASE_PREDICATE:
            raise SignatureRefused(f"{skill}: the attestation is not a release statement.", skill=skill)
        return Verified(statement=statement, keyid=keyid)
    raise SignatureRefused(
        f"{skill}: refused: {'; '.join(problems) or 'the attestation has no signatures'}.", skill=skill
    )


def files_check(
    verified: Verified, *, skill: str, version: int | None, files: dict[str, str], where: str, every: bool = True
) -> None:
    """`files` (path -> sha256) must be exactly the statement's files of `skill` (at `version`),
    or with `every=False` some of them (one file read alone); SignatureRefused names the first
    file that is not. `where` prefixes the path shown."""
    predicate = verified.statement.get("predicate") or {}
    if predicate.get("skill") != skill or (version is not None and predicate.get("version") != version):
        raise SignatureRefused(
            f"{skill}: the attestation is of {predicate.get('skill')} v{predicate.get('version')}, not of "
            f"{skill}{f' v{version}' if version is not None else ''}.",
            skill=skill,
        )
    prefix = f"{skill}/"
    signed = {name[len(prefix) :]: digest for name, digest in verified.digests.items() if name.startswith(prefix)}
    for path in sorted(signed.keys() | files.keys() if every else files.keys()):
        if path not in files:
            raise SignatureRefused(
                f"{where}{path}: signed in {skill} v{predicate.get('version')} but missing.", skill=skill
            )
        if path not in signed:
            raise SignatureRefused(f"{where}{path}: not part of the signed release of {skill}.", skill=skill)
        if files[path] != signed[path]:
            raise SignatureRefused(
                f"{where}{path}: sha256 {files[path]} does not match the signed {signed[path]} "
                f"({skill} v{predicate.get('version')}); refusing the bytes.",
                skill=skill,
            )


# --- publishers' signatures ----------------------------------------------------------------------


def _ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def key_id(raw: bytes) -> str:
    blob = _ssh_string(b"ssh-ed25519") + _ssh_string(raw)
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode("ascii").rstrip("=")


def private_key_read(path: str) -> Ed25519PrivateKey:
    """An unencrypted Ed25519 private key: OpenSSH (`~/.ssh/id_ed25519`) or PEM."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        key: object  # any kind of private key until the check below
        if b"OPENSSH PRIVATE KEY" in data:
            key = serialization.load_ssh_private_key(data, password=None)
        else:
            key = serialization.load_pem_private_key(data, password=None)
    except (OSError, ValueError, TypeError) as error:
        raise RegistryError(f"--sign {path}: not an unencrypted Ed25519 private key ({error}).") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise RegistryError(f"--sign {path}: only Ed25519 keys sign releases.")
    return key


def publisher_envelope(key: Ed25519PrivateKey, *, skill: str, files: dict[str, str]) -> dict:
    """The publisher's signed statement of a folder about to be pushed: the same file subjects
    as the registry's statement, so the registry checks it against what it stores."""
    subject = [{"name": f"{skill}/{path}", "digest": {"sha256": digest}} for path, digest in sorted(files.items())]
    payload = canonical_json(
        {
            "_type": STATEMENT_TYPE,
            "subject": subject,
            "predicateType": PUBLISHER_PREDICATE,
            "predicate": {"skill": skill, "signedAt": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")},
        }
    )
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    signature = base64.b64encode(key.sign(pae(PAYLOAD_TYPE, payload))).decode("ascii")
    return {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(payload).decode("ascii"),
        "signatures": [{"keyid": key_id(raw), "sig": signature}],
    }
