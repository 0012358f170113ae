"""Release attestations as bytes: the in-toto Statement (v1) of a skill version, its DSSE envelope
and the Ed25519 signatures over it, and the public keys that check them.

Pure: no Django. The registry (registry/services/attestations.py) decides what to sign and with
which key; the Python client and tests/verify_attestation.py check the same bytes the same way.

- A statement's subjects are the canonical archive (`<skill>.zip`, the discovery index's zip:
  `write_zip(bundle, keep_links=False)`) and every file, SKILL.md included (`<skill>/<path>`),
  each by its sha256. A folder can be checked file by file; the archive as downloaded.
- DSSE (https://github.com/secure-systems-lab/dsse): the signature is over
  PAE(payloadType, payload) = "DSSEv1" SP len(type) SP type SP len(payload) SP payload.
- A key's id is its OpenSSH fingerprint, `SHA256:` + unpadded base64 of sha256 over the
  ssh-ed25519 wire blob: what `ssh-keygen -lf key.pub` prints for the same key, whether it was
  given as an OpenSSH line, PEM, or raw bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import struct
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
RELEASE_PREDICATE = "https://skill-registry.dev/attestation/release/v1"
PUBLISHER_PREDICATE = "https://skill-registry.dev/attestation/publisher/v1"
# A new registry key's entry in keys.json is signed by the key it replaces (`endorsed_by`), so a
# client that pinned the old key can take the new one without trusting the network.
KEY_ENDORSEMENT_TYPE = "application/vnd.skill-registry.signing-key+json"
ALGORITHM = "ed25519"
SSH_ED25519 = b"ssh-ed25519"
RAW_KEY_BYTES = 32


class AttestationError(ValueError):
    """Bytes that are not a statement, an envelope or a key this module reads."""


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def b64decode(text: Any, what: str) -> bytes:
    if not isinstance(text, str):
        raise AttestationError(f"{what} must be base64 text.")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise AttestationError(f"{what} is not valid base64.") from None


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what a signature actually covers."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def iso_time(moment: datetime) -> str:
    """The one way times are written in statements and keys.json: UTC, `Z`, microseconds kept."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def key_endorsement_payload(*, keyid: str, public_key: str, valid_from: str) -> bytes:
    """What the previous registry key signs of a new key's keys.json entry (its `endorsed_by`)."""
    return canonical_json({"keyid": keyid, "public_key": public_key, "valid_from": valid_from})


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# --- keys ------------------------------------------------------------------------------------


def raw_public_key(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def key_id(raw: bytes) -> str:
    """`SHA256:<base64>`: the OpenSSH fingerprint of the Ed25519 key with these 32 raw bytes."""
    blob = _ssh_string(SSH_ED25519) + _ssh_string(raw)
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode("ascii").rstrip("=")


def public_key_from_raw(raw: bytes) -> Ed25519PublicKey:
    if len(raw) != RAW_KEY_BYTES:
        raise AttestationError(f"An Ed25519 public key is {RAW_KEY_BYTES} bytes, not {len(raw)}.")
    return Ed25519PublicKey.from_public_bytes(raw)


@dataclass(frozen=True)
class ParsedPublicKey:
    raw: bytes
    format: str  # "ssh-ed25519", "pem" or "raw"
    comment: str

    @property
    def keyid(self) -> str:
        return key_id(self.raw)


def parse_public_key(text: str) -> ParsedPublicKey:
    """An Ed25519 public key as a person pastes it: an OpenSSH line (`ssh-ed25519 AAAA… comment`,
    what `~/.ssh/id_ed25519.pub` holds), a PEM `PUBLIC KEY` block, or the 32 raw bytes in base64.
    Anything else (RSA, ECDSA, a private key) raises AttestationError saying what it is."""
    text = (text or "").strip()
    if not text:
        raise AttestationError("Paste a public key: an ssh-ed25519 line or a PEM PUBLIC KEY block.")
    if "PRIVATE KEY" in text:
        raise AttestationError("That is a private key: paste the public one (the .pub file), and keep this secret.")
    if text.startswith("-----BEGIN"):
        try:
            key = serialization.load_pem_public_key(text.encode("ascii", "replace"))
        except ValueError as error:
            raise AttestationError(f"The PEM block is not a public key ({error}).") from None
        if not isinstance(key, Ed25519PublicKey):
            raise AttestationError("Only Ed25519 keys are accepted; this PEM key is another kind.")
        return ParsedPublicKey(raw_public_key(key), "pem", "")
    parts = text.split(None, 2)
    if parts[0].startswith("ssh-") or parts[0].startswith("ecdsa-"):
        if parts[0] != SSH_ED25519.decode():
            raise AttestationError(f"Only ssh-ed25519 keys are accepted, not {parts[0][:40]}.")
        try:
            key = serialization.load_ssh_public_key(" ".join(parts[:2]).encode("ascii", "replace"))
        except (ValueError, IndexError, UnicodeError) as error:
            raise AttestationError(f"The ssh-ed25519 line is not a valid key ({error}).") from None
        if not isinstance(key, Ed25519PublicKey):
            raise AttestationError("Only ssh-ed25519 keys are accepted.")
        return ParsedPublicKey(raw_public_key(key), "ssh-ed25519", parts[2].strip() if len(parts) > 2 else "")
    raw = b64decode(parts[0], "The key")
    return ParsedPublicKey(raw_public_key(public_key_from_raw(raw)), "raw", "")


def private_key_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def private_key_load(data: bytes) -> Ed25519PrivateKey:
    """A PEM (PKCS8) or OpenSSH private Ed25519 key, unencrypted."""
    key: object
    try:
        if b"OPENSSH PRIVATE KEY" in data:
            key = serialization.load_ssh_private_key(data, password=None)
        else:
            key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as error:
        raise AttestationError(f"Not an unencrypted Ed25519 private key ({error}).") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise AttestationError("Only Ed25519 private keys sign attestations.")
    return key


# --- statements and envelopes ----------------------------------------------------------------


def subjects(*, skill: str, files: list[tuple[str, str]], archive_sha256: str | None) -> list[dict[str, Any]]:
    """The statement's subjects: the archive (when given) then each `(path, sha256)` by path."""
    listed = [{"name": f"{skill}.zip", "digest": {"sha256": archive_sha256}}] if archive_sha256 else []
    listed += [{"name": f"{skill}/{path}", "digest": {"sha256": digest}} for path, digest in sorted(files)]
    return listed


def statement(*, subject: list[dict[str, Any]], predicate_type: str, predicate: dict[str, Any]) -> bytes:
    """The statement's bytes (canonical JSON: the same statement always has the same bytes)."""
    return canonical_json(
        {"_type": STATEMENT_TYPE, "subject": subject, "predicateType": predicate_type, "predicate": predicate}
    )


def sign(key: Ed25519PrivateKey, payload: bytes, payload_type: str = PAYLOAD_TYPE) -> dict[str, str]:
    """One DSSE signature object over `payload`."""
    return {"keyid": key_id(raw_public_key(key.public_key())), "sig": b64(key.sign(pae(payload_type, payload)))}


def envelope(payload: bytes, signatures: list[dict[str, str]], payload_type: str = PAYLOAD_TYPE) -> dict[str, Any]:
    return {"payloadType": payload_type, "payload": b64(payload), "signatures": signatures}


def signature_valid(raw_key: bytes, payload: bytes, sig: str, payload_type: str = PAYLOAD_TYPE) -> bool:
    try:
        public_key_from_raw(raw_key).verify(b64decode(sig, "sig"), pae(payload_type, payload))
    except (InvalidSignature, AttestationError):
        return False
    return True


@dataclass(frozen=True)
class OpenedEnvelope:
    payload: bytes
    statement: dict[str, Any]
    signatures: list[dict[str, str]]

    @property
    def digests(self) -> dict[str, str]:
        """Subject name -> sha256 hex."""
        return {item["name"]: item["digest"]["sha256"] for item in self.statement["subject"]}


def envelope_open(document: Any) -> OpenedEnvelope:
    """The envelope's parts, its shape checked (signatures are not: see `signature_valid`)."""
    if not isinstance(document, dict) or document.get("payloadType") != PAYLOAD_TYPE:
        raise AttestationError(f"Not a DSSE envelope of an in-toto statement (payloadType {PAYLOAD_TYPE}).")
    payload = b64decode(document.get("payload"), "payload")
    signatures = document.get("signatures")
    if not isinstance(signatures, list) or not all(
        isinstance(item, dict) and isinstance(item.get("keyid"), str) and isinstance(item.get("sig"), str)
        for item in signatures
    ):
        raise AttestationError("signatures must be a list of {keyid, sig}.")
    try:
        parsed = json.loads(payload)
    except ValueError:
        raise AttestationError("The payload is not JSON.") from None
    if not isinstance(parsed, dict) or parsed.get("_type") != STATEMENT_TYPE:
        raise AttestationError(f"The payload is not an in-toto statement ({STATEMENT_TYPE}).")
    subject = parsed.get("subject")
    if not isinstance(subject, list) or not all(
        isinstance(item, dict)
        and isinstance(item.get("name"), str)
        and isinstance(item.get("digest"), dict)
        and isinstance(item["digest"].get("sha256"), str)
        for item in subject
    ):
        raise AttestationError("The statement's subject must be a list of {name, digest: {sha256}}.")
    return OpenedEnvelope(payload=payload, statement=parsed, signatures=signatures)
