"""Verify a Skill Registry release attestation knowing only the registry's keys.json and the bytes.

    python verify_attestation.py KEYS_JSON ENVELOPE_JSON ARTIFACT [SUBJECT_NAME]

KEYS_JSON is /.well-known/skill-registry/keys.json, ENVELOPE_JSON the DSSE envelope from
/api/v1/skills/NAME/versions/N/attestation, ARTIFACT the downloaded file (the discovery zip
`NAME.zip`, or one file of the skill) and SUBJECT_NAME the statement subject it must match
(default: the subject ending in `.zip`). Exit 0 and "verified" on success; exit 1 naming what
failed. Imports only the standard library and `cryptography`: no registry code, on purpose
(tests/registry/test_attestations.py runs it in a plain interpreter).
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from datetime import UTC, datetime

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

PAYLOAD_TYPE = "application/vnd.in-toto+json"


def pae(payload_type: str, payload: bytes) -> bytes:
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def when(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text.replace("Z", "+00:00"))


def verify(keys_doc: dict, envelope: dict, artifact: bytes, subject_name: str | None) -> str:
    if envelope.get("payloadType") != PAYLOAD_TYPE:
        raise ValueError(f"payloadType is not {PAYLOAD_TYPE}")
    payload = base64.b64decode(envelope["payload"], validate=True)
    statement = json.loads(payload)
    keys = {key["keyid"]: key for key in keys_doc["keys"]}
    issued = when(statement["predicate"]["issuedAt"])
    problems = []
    for signature in envelope["signatures"]:
        key = keys.get(signature["keyid"])
        if key is None:
            problems.append(f"signed by unknown key {signature['keyid']}")
            continue
        public = Ed25519PublicKey.from_public_bytes(base64.b64decode(key["public_key"]))
        try:
            public.verify(base64.b64decode(signature["sig"]), pae(envelope["payloadType"], payload))
        except InvalidSignature:
            problems.append(f"bad signature by key {key['keyid']}")
            continue
        expires = when(key.get("expires"))
        if expires is not None and datetime.now(UTC) >= expires:
            problems.append(f"key {key['keyid']} expired at {key['expires']}")
            continue
        start, end = when(key["valid_from"]), when(key.get("valid_until"))
        if issued < start or (end is not None and issued > end):
            problems.append(
                f"key {key['keyid']} did not sign at {statement['predicate']['issuedAt']} (outside its validity)"
            )
            continue
        break
    else:
        raise ValueError("; ".join(problems) or "no signatures")
    subjects = {item["name"]: item["digest"]["sha256"] for item in statement["subject"]}
    if subject_name is None:
        subject_name = next((name for name in subjects if name.endswith(".zip")), None)
    if subject_name not in subjects:
        raise ValueError(f"no subject named {subject_name}")
    digest = hashlib.sha256(artifact).hexdigest()
    if digest != subjects[subject_name]:
        raise ValueError(f"{subject_name}: sha256 {digest} does not match the signed {subjects[subject_name]}")
    predicate = statement["predicate"]
    return f"verified: {subject_name} is {predicate['skill']} v{predicate['version']}, signed by {signature['keyid']}"


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as keys, open(argv[1], encoding="utf-8") as envelope:
        keys_doc, document = json.load(keys), json.load(envelope)
    with open(argv[2], "rb") as artifact:
        content = artifact.read()
    try:
        print(verify(keys_doc, document, content, argv[3] if len(argv) == 4 else None))
    except (ValueError, KeyError) as error:
        print(f"NOT verified: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
