"""Signed releases over the network: the registry keys a client trusts (pinned on first use, then
only narrowed or extended by endorsement, attestation.keys_update) and a version's attestation.
`skillreg` pins the keys in skills.lock; `Client` keeps them for its lifetime, or takes them."""

from __future__ import annotations

from typing import Protocol

from skill_registry_client.attestation import KEYS_PATH, SignatureRefused, keys_first_use, keys_update
from skill_registry_client.errors import NotFound
from skill_registry_client.transport import Transport, skill_path


class PinnedKeys(Protocol):
    keys: dict[str, dict]  # keyid -> keys.json entry; empty until the first use


class KeySet:
    """The registry keys `holder` pins (skills.lock's, or a client's), from keys.json on first use.
    keys.json is read once, and again on `refresh()`: it may only narrow a pinned key (rotated
    out, expired) or add a key an already trusted key endorsed."""

    def __init__(self, transport: Transport, holder: PinnedKeys) -> None:
        self.transport = transport
        self.holder = holder
        self.read = False

    def trusted(self) -> dict[str, dict]:
        if not self.read:
            self.refresh()
        return self.holder.keys

    def refresh(self) -> None:
        document = self.transport.request("GET", KEYS_PATH).json()
        pinned = self.holder.keys
        self.holder.keys = keys_update(pinned, document) if pinned else keys_first_use(document)
        self.read = True


def attestation_get(transport: Transport, name: str, *, version: int, source: str | None) -> dict:
    """The registry's signed statement (DSSE envelope) of version `version` of `name`."""
    try:
        return transport.request(
            "GET", skill_path(name, "versions", str(version), "attestation"), params={"source": source}
        ).json()
    except NotFound:
        raise SignatureRefused(
            f"{name}: version {version} has no attestation, so its bytes cannot be checked; refusing it "
            "(an operator signs older versions with `manage.py keys attest-missing`).",
            skill=name,
        ) from None
