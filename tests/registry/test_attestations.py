"""Signed releases: every published version gets an in-toto statement in a DSSE envelope signed
with the registry's Ed25519 key; keys.json lists the keys; a separate script that knows only
keys.json and the bytes verifies it; rotation keeps old attestations verifiable."""

from __future__ import annotations

import base64
import hashlib
import json
import stat
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from registry.models import SigningKey, VersionAttestation
from registry.services.attestations import (
    SigningUnavailable,
    record_scan_verdict,
    signing_key_current,
    signing_key_expire,
    signing_key_rotate,
)
from registry.services.audit import Actor
from registry.services.skills import skill_version_publish
from registry.skillformat import attestation as dsse
from registry.skillformat.bundle import bundle_from_parts
from tests.factories import UserFactory, make_skill_md, publish

pytestmark = pytest.mark.django_db

VERIFIER = Path(__file__).resolve().parent.parent / "verify_attestation.py"
SCRIPT = b"#!/bin/sh\necho hello\n"
KEYS = "/.well-known/skill-registry/keys.json"


@pytest.fixture(autouse=True)
def key_file(settings, tmp_path):
    """A signing key of this test's own: rotation must not change the key other tests sign with."""
    settings.SIGNING_KEY_FILE = tmp_path / "keys" / "signing_key.pem"
    settings.DISCOVERY_LABEL = "latest"
    return settings.SIGNING_KEY_FILE


def _statement(envelope: dict) -> dict:
    return json.loads(base64.b64decode(envelope["payload"]))


def _verify(tmp_path: Path, keys: dict, envelope: dict, artifact: bytes, subject: str | None = None):
    """Run tests/verify_attestation.py in an isolated interpreter (-I: no cwd or PYTHONPATH on
    sys.path, so it can import nothing of the project)."""
    (tmp_path / "keys.json").write_text(json.dumps(keys))
    (tmp_path / "envelope.json").write_text(json.dumps(envelope))
    (tmp_path / "artifact").write_bytes(artifact)
    args = [
        sys.executable,
        "-I",
        str(VERIFIER),
        "keys.json",
        "envelope.json",
        "artifact",
        *([subject] if subject else []),
    ]
    return subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=60)


def _attestation(api, name: str, number: int) -> dict:
    response = api.get(f"/api/v1/skills/{name}/versions/{number}/attestation")
    assert response.status_code == 200, response.content
    return response.json()


def test_publishing_signs_an_in_toto_statement_over_the_archive_and_every_file(api, key_file):
    result = publish("signed-skill", files=[("scripts/run.sh", SCRIPT, True)])
    envelope = _attestation(api, "signed-skill", 1)
    statement = _statement(envelope)

    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == "https://skill-registry.dev/attestation/release/v1"
    archive = Client().get("/.well-known/agent-skills/signed-skill.zip").content
    digests = {item["name"]: item["digest"]["sha256"] for item in statement["subject"]}
    assert digests == {
        "signed-skill.zip": hashlib.sha256(archive).hexdigest(),
        "signed-skill/SKILL.md": result.version.skill_md_sha256,
        "signed-skill/scripts/run.sh": hashlib.sha256(SCRIPT).hexdigest(),
    }
    predicate = statement["predicate"]
    assert predicate["skill"] == "signed-skill" and predicate["version"] == 1
    assert predicate["source"] == "import"  # the service called without a channel or user: the system
    assert predicate["scan"] is None and predicate["publisherSignature"] is None
    assert predicate["fingerprint"] == result.version.fingerprint
    keyid = envelope["signatures"][0]["keyid"]
    assert keyid.startswith("SHA256:") and keyid == SigningKey.objects.get().keyid
    # The private key was made on first use, readable by its owner only.
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


def test_the_source_names_where_the_publish_came_from(api, make_token):
    user = UserFactory(username="ann", is_superuser=True)
    body = {"skill_md": make_skill_md("from-api"), "files": []}
    assert api.post("/api/v1/skills", body, format="json").status_code == 201
    assert (
        api.post(
            "/api/v1/skills",
            {"skill_md": make_skill_md("from-skillreg")},
            format="json",
            HTTP_USER_AGENT="skill-registry-client/0.1",
        ).status_code
        == 201
    )
    bundle = bundle_from_parts(make_skill_md("from-console").encode(), [])
    skill_version_publish(bundle=bundle, actor=Actor(user=user, via="console"))
    sources = {
        name: _statement(_attestation(api, name, 1))["predicate"]["source"]
        for name in ("from-api", "from-skillreg", "from-console")
    }
    assert sources == {"from-api": "api", "from-skillreg": "cli", "from-console": "console"}
    assert _statement(_attestation(api, "from-console", 1))["predicate"]["publisher"] == "ann"


def test_a_separate_script_verifies_the_download_and_refuses_a_flipped_byte(api, tmp_path):
    publish("verified-skill", files=[("scripts/run.sh", SCRIPT, True)])
    keys = Client().get(KEYS).json()
    archive = Client().get("/.well-known/agent-skills/verified-skill.zip").content
    envelope = _attestation(api, "verified-skill", 1)

    ok = _verify(tmp_path, keys, envelope, archive)
    assert ok.returncode == 0, ok.stderr
    assert "verified: verified-skill.zip is verified-skill v1" in ok.stdout

    flipped = bytearray(archive)
    flipped[len(flipped) // 2] ^= 0x01
    bad = _verify(tmp_path, keys, envelope, bytes(flipped))
    assert bad.returncode == 1
    assert "verified-skill.zip: sha256" in bad.stderr and "does not match the signed" in bad.stderr

    # One file of the skill against its own subject.
    skill_md = Client().get("/.well-known/agent-skills/verified-skill/SKILL.md").content
    assert _verify(tmp_path, keys, envelope, skill_md, "verified-skill/SKILL.md").returncode == 0

    # A payload changed after signing: the signature no longer holds.
    statement = _statement(envelope)
    statement["predicate"]["version"] = 2
    forged = {**envelope, "payload": base64.b64encode(json.dumps(statement).encode()).decode()}
    refused = _verify(tmp_path, keys, forged, archive)
    assert refused.returncode == 1 and "bad signature by key" in refused.stderr


def test_a_signature_by_a_key_not_in_keys_json_is_refused_naming_it(api, tmp_path):
    publish("unknown-key-skill")
    archive = Client().get("/.well-known/agent-skills/unknown-key-skill/SKILL.md").content
    envelope = _attestation(api, "unknown-key-skill", 1)
    stranger = {"keys": [], "current": None}
    refused = _verify(tmp_path, stranger, envelope, archive, "unknown-key-skill/SKILL.md")
    assert refused.returncode == 1
    assert f"signed by unknown key {envelope['signatures'][0]['keyid']}" in refused.stderr


def test_rotation_keeps_old_attestations_verifiable_and_endorses_the_new_key(api, tmp_path, key_file):
    publish("rotating", description="First edition.")
    old = SigningKey.objects.get()
    new = signing_key_rotate()
    publish("rotating", description="Second edition.")

    keys = Client().get(KEYS).json()
    assert [key["keyid"] for key in keys["keys"]] == [old.keyid, new.keyid]
    assert keys["current"] == new.keyid
    assert keys["keys"][0]["valid_until"] is not None and keys["keys"][1]["valid_until"] is None
    assert keys["keys"][1]["endorsed_by"]["keyid"] == old.keyid
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600

    first, second = _attestation(api, "rotating", 1), _attestation(api, "rotating", 2)
    assert first["signatures"][0]["keyid"] == old.keyid
    assert second["signatures"][0]["keyid"] == new.keyid
    for number, envelope in ((1, first), (2, second)):
        skill_md = api.get(f"/api/v1/skills/rotating/SKILL.md?version={number}").content
        checked = _verify(tmp_path, keys, envelope, skill_md, "rotating/SKILL.md")
        assert checked.returncode == 0, checked.stderr

    # The new key's entry is signed by the old key, over exactly what keys.json says of it.
    entry = keys["keys"][1]
    payload = dsse.key_endorsement_payload(
        keyid=entry["keyid"], public_key=entry["public_key"], valid_from=entry["valid_from"]
    )
    assert dsse.signature_valid(
        base64.b64decode(old.public_key), payload, entry["endorsed_by"]["sig"], dsse.KEY_ENDORSEMENT_TYPE
    )


def test_an_old_key_that_signs_after_rotation_or_has_expired_is_refused(api, tmp_path, key_file):
    publish("expiring")
    old_pem = key_file.read_bytes()
    old = SigningKey.objects.get()
    signing_key_rotate()
    # The retired key in the file again (a restored backup): the registry will not sign with it.
    key_file.write_bytes(old_pem)
    with pytest.raises(SigningUnavailable, match="rotated out"):
        signing_key_current()
    # Something signed by it after its window is refused by the verifier.
    late = dsse.private_key_load(old_pem)
    statement = _statement(_attestation(api, "expiring", 1))
    statement["predicate"]["issuedAt"] = (timezone.now() + timedelta(minutes=5)).isoformat()
    payload = dsse.canonical_json(statement)
    backdated = dsse.envelope(payload, [dsse.sign(late, payload)])
    skill_md = api.get("/api/v1/skills/expiring/SKILL.md").content
    keys = Client().get(KEYS).json()
    refused = _verify(tmp_path, keys, backdated, skill_md, "expiring/SKILL.md")
    assert refused.returncode == 1 and f"key {old.keyid} did not sign at" in refused.stderr

    # An operator expires the old key (it may have leaked): its attestations are refused.
    signing_key_expire(keyid=old.keyid)
    keys = Client().get(KEYS).json()
    refused = _verify(tmp_path, keys, _attestation(api, "expiring", 1), skill_md, "expiring/SKILL.md")
    assert refused.returncode == 1 and f"key {old.keyid} expired at" in refused.stderr


def test_the_scan_verdict_reissues_the_statement_signed_with_the_current_key(api, tmp_path):
    result = publish("scanned")
    before = _attestation(api, "scanned", 1)
    signing_key_rotate()
    record_scan_verdict(result.version, "review", scanner="skill-scanner 2.3.1")
    after = _attestation(api, "scanned", 1)
    statement = _statement(after)
    assert statement["predicate"]["scan"]["verdict"] == "review"
    assert statement["subject"] == _statement(before)["subject"]
    assert after["signatures"][0]["keyid"] == SigningKey.objects.get(valid_until=None).keyid
    skill_md = api.get("/api/v1/skills/scanned/SKILL.md").content
    checked = _verify(tmp_path, Client().get(KEYS).json(), after, skill_md, "scanned/SKILL.md")
    assert checked.returncode == 0, checked.stderr


def test_an_unchanged_publish_signs_nothing_new_and_attestation_errors_are_clear(api):
    publish("steady")
    publish("steady")
    assert VersionAttestation.objects.count() == 1
    assert api.get("/api/v1/skills/steady/versions/9/attestation").status_code == 404
    missing = api.get("/api/v1/skills/steady/versions/1/attestation?signer=publisher")
    assert missing.status_code == 404 and "not signed by its publisher" in missing.json()["detail"]
    bad = api.get("/api/v1/skills/steady/versions/1/attestation?signer=someone")
    assert bad.status_code == 400 and "signer" in bad.json()["fields"]


def test_keys_command_lists_rotates_expires_and_signs_older_versions(api):
    from io import StringIO

    from django.core.management import call_command

    result = publish("older")
    VersionAttestation.objects.filter(version=result.version).delete()  # as if published before signing
    out = StringIO()
    call_command("keys", "attest-missing", stdout=out)
    assert "Signed 1 versions." in out.getvalue()
    assert _statement(_attestation(api, "older", 1))["predicate"]["source"] == "import"

    first = SigningKey.objects.get().keyid
    call_command("keys", "rotate", stdout=out)
    assert f"endorsed by {first}" in out.getvalue()
    call_command("keys", "expire", first, "--at", "2030-01-01T00:00:00Z", stdout=out)
    listed = StringIO()
    call_command("keys", "list", stdout=listed)
    lines = listed.getvalue().splitlines()
    assert lines[0].split()[:2] == ["KEY", "VALID"]
    assert first in lines[1] and "2030-01-01T00:00:00Z" in lines[1]
    assert "(signing)" in lines[2]
    from django.core.management.base import CommandError

    current = SigningKey.objects.get(valid_until=None).keyid
    with pytest.raises(CommandError, match="current signing key"):
        call_command("keys", "expire", current)
    with pytest.raises(CommandError, match="No signing key"):
        call_command("keys", "expire", "SHA256:nope")


def test_the_discovery_index_and_mcp_entries_say_where_the_attestation_is(api, tmp_path):
    from urllib.parse import urljoin

    from registry.mcp.catalog import mcp_skill_catalog

    publish("listed-archive", files=[("scripts/run.sh", SCRIPT, True)])
    publish("listed-plain")
    anonymous = Client()
    index_url = "http://testserver/.well-known/agent-skills/index.json"
    keys = anonymous.get(KEYS).json()
    for entry in anonymous.get(index_url).json()["skills"]:
        assert entry["attestation"] == f"{entry['name']}.intoto.json"
        envelope = anonymous.get(urljoin(index_url, entry["attestation"]))
        assert envelope.status_code == 200 and envelope["X-Skill-Version"] == entry["version"]
        artifact = anonymous.get(urljoin(index_url, entry["url"])).content
        subject = f"{entry['name']}.zip" if entry["type"] == "archive" else f"{entry['name']}/SKILL.md"
        checked = _verify(tmp_path, keys, envelope.json(), artifact, subject)
        assert checked.returncode == 0, checked.stderr
    assert anonymous.get("/.well-known/agent-skills/nope.intoto.json").status_code == 404

    wire = next(entry for entry in mcp_skill_catalog().entries if entry.name == "listed-plain")
    meta = wire.as_wire(canary=False)["_meta"]["io.skill-registry/attestation"]
    assert meta == {"url": "/api/v1/skills/listed-plain/versions/1/attestation", "keys": KEYS}
    assert api.get(meta["url"]).status_code == 200


def test_a_policy_requiring_the_publishers_signature_through_the_api(api):
    body = {"roles": ["admin", "author"], "require_publisher_signature": True}
    assert api.put("/api/v1/label-policies/production", body, format="json").status_code == 200
    assert api.get("/api/v1/label-policies/production").json()["require_publisher_signature"] is True
    bad = api.put("/api/v1/label-policies/production", {**body, "require_publisher_signature": "maybe"}, format="json")
    assert bad.status_code == 400 and "require_publisher_signature" in bad.json()["fields"]

    publish("unsigned-skill")
    refused = api.put("/api/v1/skills/unsigned-skill/labels/production", {"version": 1}, format="json")
    assert refused.status_code == 409
    assert refused.json()["unmet"][0]["check"] == "publisher_signature"
    assert "its publisher's signature" in refused.json()["needs"]
    overridden = api.put(
        "/api/v1/skills/unsigned-skill/labels/production",
        {"version": 1, "override_reason": "signed offline, checked by hand"},
        format="json",
    )
    assert overridden.status_code == 200


def test_bad_publisher_signatures_refuse_the_publish_naming_the_problem(api, make_token):
    from skill_registry_client.attestation import publisher_envelope

    from registry.services.attestations import publisher_key_add
    from tests.factories import user_with_role

    ann = user_with_role("author", username="ann")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['skills:read', 'skills:write'], user=ann)}")
    key = Ed25519PrivateKey.generate()
    public = dsse.b64(dsse.raw_public_key(key.public_key()))
    publisher_key_add(user=ann, name="laptop", public_key=public)
    skill_md = make_skill_md("sig-checked")
    digest = hashlib.sha256(skill_md.encode()).hexdigest()

    def post(envelope):
        return client.post("/api/v1/skills", {"skill_md": skill_md, "signature": envelope}, format="json")

    other = publisher_envelope(key, skill="sig-checked", files={"SKILL.md": "0" * 64})
    refused = post(other)
    assert (
        refused.status_code == 400
        and "does not match the published files at sig-checked/SKILL.md" in refused.json()["detail"]
    )
    wrong_skill = publisher_envelope(key, skill="another", files={"SKILL.md": digest})
    assert "names skill 'another'" in post(wrong_skill).json()["detail"]
    good = publisher_envelope(key, skill="sig-checked", files={"SKILL.md": digest})
    tampered = {**good, "signatures": [{**good["signatures"][0], "sig": dsse.b64(b"\0" * 64)}]}
    assert "does not verify" in post(tampered).json()["detail"]
    assert post({"payloadType": "text/plain"}).json()["fields"]["signature"]
    assert not VersionAttestation.objects.exists()  # every refusal left nothing behind
    assert post(good).status_code == 201
    assert VersionAttestation.objects.get().publisher_key.user == ann


def test_a_signing_key_file_others_can_read_is_warned_about(key_file):
    from registry.checks import var_dir_is_private

    publish("makes-the-key")
    assert not [w for w in var_dir_is_private(None) if str(key_file) in w.msg]
    key_file.chmod(0o644)
    warned = [w for w in var_dir_is_private(None) if str(key_file) in w.msg]
    assert warned and warned[0].hint == f"chmod 600 {key_file}"


def test_pushing_the_same_content_signed_adds_the_signature_to_that_version(api, tmp_path):
    from skill_registry_client.attestation import publisher_envelope

    from registry.services.attestations import publisher_key_add
    from tests.factories import user_with_role

    ann = user_with_role("author", username="ann")
    key = Ed25519PrivateKey.generate()
    registered = publisher_key_add(user=ann, name="laptop", public_key=dsse.b64(dsse.raw_public_key(key.public_key())))
    actor = Actor(user=ann, via="api token ci")
    bundle = bundle_from_parts(make_skill_md("signed-later").encode(), [("scripts/run.sh", SCRIPT, True)])
    skill_version_publish(bundle=bundle, actor=actor)
    files = {
        "SKILL.md": hashlib.sha256(bundle.skill_md).hexdigest(),
        "scripts/run.sh": hashlib.sha256(SCRIPT).hexdigest(),
    }
    again = skill_version_publish(
        bundle=bundle, actor=actor, publisher_signature=publisher_envelope(key, skill="signed-later", files=files)
    )
    assert again.created is False and again.version.number == 1
    statement = _statement(_attestation(api, "signed-later", 1))
    assert statement["predicate"]["publisherSignature"] == {"keyid": registered.keyid, "publisher": "ann"}
    skill_md = api.get("/api/v1/skills/signed-later/SKILL.md").content
    checked = _verify(
        tmp_path, Client().get(KEYS).json(), _attestation(api, "signed-later", 1), skill_md, "signed-later/SKILL.md"
    )
    assert checked.returncode == 0, checked.stderr
