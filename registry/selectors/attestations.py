"""Reading signed releases: the registry's public keys (keys.json), a version's attestation and
who signed it, and a user's publisher keys."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from registry.errors import NotFound
from registry.models import PublisherKey, SigningKey, SkillVersion, VersionAttestation
from registry.skillformat.attestation import iso_time

KEYS_PATH = "/.well-known/skill-registry/keys.json"


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else iso_time(moment)


def signing_keys_document() -> dict[str, Any]:
    """keys.json: every registry key, oldest first, with the window it signed in (`valid_from`
    to `valid_until`, null for the current key), when it stops being trusted (`expires`, null:
    never) and, for a rotated-in key, the previous key's signature over its entry."""
    rows = list(SigningKey.objects.order_by("valid_from"))
    return {
        "keys": [
            {
                "keyid": row.keyid,
                "algorithm": "ed25519",
                "public_key": row.public_key,
                "valid_from": _iso(row.valid_from),
                "valid_until": _iso(row.valid_until),
                "expires": _iso(row.expires_at),
                "endorsed_by": {"keyid": row.endorsed_by, "sig": row.endorsement} if row.endorsed_by else None,
            }
            for row in rows
        ],
        "current": next((row.keyid for row in rows if row.valid_until is None), None),
    }


def version_attestation(*, version: SkillVersion) -> VersionAttestation:
    attestation = VersionAttestation.objects.select_related("publisher_key__user").filter(version=version).first()
    if attestation is None:
        raise NotFound(
            f"{version.skill.name} v{version.number} has no attestation: it was published before the registry "
            "signed releases (an operator signs those with `manage.py keys attest-missing`)."
        )
    return attestation


def statement_of(envelope: dict[str, Any]) -> dict[str, Any]:
    """The in-toto statement inside a DSSE envelope the registry stored (trusted: it wrote it)."""
    return json.loads(base64.b64decode(envelope["payload"]))


@dataclass(frozen=True)
class PublisherSigner:
    """Who signed a version as its publisher: "signed by ann (key SHA256:…)"."""

    username: str
    keyid: str
    key_name: str
    revoked: bool


@dataclass(frozen=True)
class VersionSignatures:
    """What the version page says of a version's signatures."""

    registry_keyid: str | None  # None: published before the registry signed releases
    publisher: PublisherSigner | None
    scan_verdict: str | None


def version_signatures(*, version: SkillVersion) -> VersionSignatures:
    attestation = VersionAttestation.objects.select_related("publisher_key__user").filter(version=version).first()
    if attestation is None:
        return VersionSignatures(registry_keyid=None, publisher=None, scan_verdict=None)
    key = attestation.publisher_key
    signer = None
    if key is not None:
        signer = PublisherSigner(
            username=key.user.get_username(), keyid=key.keyid, key_name=key.name, revoked=key.revoked_at is not None
        )
    scan = statement_of(attestation.envelope)["predicate"].get("scan") or {}
    return VersionSignatures(
        registry_keyid=attestation.envelope["signatures"][0]["keyid"],
        publisher=signer,
        scan_verdict=scan.get("verdict"),
    )


def versions_publisher_signed(*, version_ids: Iterable[int]) -> set[int]:
    """Which of these versions a publisher signed, in one query."""
    signed = VersionAttestation.objects.filter(version_id__in=list(version_ids), publisher_key__isnull=False)
    return set(signed.values_list("version_id", flat=True))


def publisher_keys_for_user(*, user: Any) -> list[PublisherKey]:
    return list(PublisherKey.objects.filter(user=user).order_by("revoked_at", "-created_at"))


def publisher_key_get_for_user(*, user: Any, key_id: int) -> PublisherKey:
    """The user's own key (revoking one is theirs alone), or 404."""
    key = PublisherKey.objects.select_related("user").filter(pk=key_id, user=user).first()
    if key is None:
        raise NotFound("No such key of yours.")
    return key
