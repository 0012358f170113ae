"""Capabilities through the API: a version's manifest and its diff against another
(`GET .../versions/{n}/capabilities?against=M`), stored at publish; and the label policy's
`new_capabilities: "admin"` check: a move to a version that adds a network destination, a
command or a credential read is a 403 naming them for an author, an admin's override with a
reason passes and is in the label history, and moves that add nothing gated pass."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from registry.models import AuditLog, LabelChange, LabelHistory, SkillVersion, VersionCapabilities
from registry.roles import ADMIN, AUTHOR
from registry.services.label_policies import label_policy_set
from registry.services.labels import label_move
from registry.skillformat.capabilities import ANALYZER_VERSION
from tests.factories import publish, user_with_role

pytestmark = pytest.mark.django_db

OFFLINE = b"def main():\n    print('offline')\n"
# scripts/sync.py: the token read on line 5, the call on line 6.
ONLINE = (
    b"import os\n"
    b"import requests\n"
    b"\n"
    b"def main():\n"
    b'    token = os.environ["GITHUB_TOKEN"]\n'
    b'    requests.post("https://api.example.com/sync", headers={"Authorization": token})\n'
)


def client_for(make_token, role: str) -> APIClient:
    scopes = {ADMIN: ["skills:read", "skills:write", "policies:write"], AUTHOR: ["skills:read", "skills:write"]}
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(scopes[role], user=user_with_role(role))}")
    return client


@pytest.fixture
def admin(make_token):
    return client_for(make_token, ADMIN)


@pytest.fixture
def author(make_token):
    return client_for(make_token, AUTHOR)


@pytest.fixture
def sync_skill():
    """v1 runs offline and is production; v2 reads GITHUB_TOKEN and posts to api.example.com."""
    v1 = publish("sync", description="Syncs.", files=[("scripts/sync.py", OFFLINE, False)])
    label_move(skill=v1.skill, label="production", version_number=1)
    publish("sync", description="Syncs.", files=[("scripts/sync.py", ONLINE, False)])
    return v1.skill


def move(client, version: int, **extra):
    return client.put("/api/v1/skills/sync/labels/production", {"version": version, **extra}, format="json")


# --- the endpoint --------------------------------------------------------------------------------


def test_the_manifest_names_each_capability_with_file_and_line(author, sync_skill):
    response = author.get("/api/v1/skills/sync/versions/2/capabilities")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["version"] == 2 and body["diff"] is None
    entries = {(e["kind"], e["value"], e["file"], e["line"]) for e in body["manifest"]["entries"]}
    assert entries == {
        ("network", "api.example.com", "scripts/sync.py", 6),
        ("credential", "GITHUB_TOKEN", "scripts/sync.py", 5),
    }
    assert body["manifest"]["counts"]["network"] == 1 and body["manifest"]["truncated"] is False


def test_the_diff_against_the_served_version_names_the_network_call_and_the_token_read(author, sync_skill):
    body = author.get("/api/v1/skills/sync/versions/2/capabilities?against=1").json()
    assert body["diff"]["against"] == 1
    assert [change["text"] for change in body["diff"]["added"]] == [
        "+ network: api.example.com (scripts/sync.py:6)",
        "+ reads GITHUB_TOKEN (scripts/sync.py:5)",
    ]
    assert all(change["gated"] for change in body["diff"]["added"])
    assert body["diff"]["removed"] == []
    back = author.get("/api/v1/skills/sync/versions/1/capabilities?against=production").json()
    assert back["diff"]["added"] == []  # production is v1 itself
    dropped = author.get("/api/v1/skills/sync/versions/1/capabilities?against=2").json()["diff"]["removed"]
    assert [change["text"] for change in dropped] == [
        "− network: api.example.com (scripts/sync.py:6)",
        "− reads GITHUB_TOKEN (scripts/sync.py:5)",
    ]


def test_publishing_stores_the_manifest_and_an_unstored_one_is_computed_alike(author, sync_skill):
    version = SkillVersion.objects.get(skill=sync_skill, number=2)
    stored = VersionCapabilities.objects.get(version=version)
    assert stored.analyzer == ANALYZER_VERSION
    before = author.get("/api/v1/skills/sync/versions/2/capabilities").json()["manifest"]
    stored.delete()  # a version published before the analysis existed
    after = author.get("/api/v1/skills/sync/versions/2/capabilities").json()["manifest"]
    assert after == before


@pytest.mark.parametrize(
    ("query", "status", "field"),
    [("against=9", 404, None), ("against=Bad%20Label", 400, "against"), ("source=nowhere", 400, "source")],
)
def test_bad_parameters_are_4xx_naming_them(author, sync_skill, query, status, field):
    response = author.get(f"/api/v1/skills/sync/versions/2/capabilities?{query}")
    assert response.status_code == status, response.content
    if field:
        assert field in response.json()["fields"]


def test_an_unknown_version_or_skill_is_a_404(author, sync_skill):
    assert author.get("/api/v1/skills/sync/versions/7/capabilities").status_code == 404
    assert author.get("/api/v1/skills/nope/versions/1/capabilities").status_code == 404


def test_the_endpoint_is_in_the_openapi_schema(author):
    schema = author.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    text = schema.content.decode()
    assert "/api/v1/skills/{name}/versions/{number}/capabilities" in text
    assert "skills_versions_capabilities" in text and "new_capabilities" in text


def test_a_hostile_bundle_publishes_and_its_manifest_reads(author):
    files = [
        ("deep.py", b"x = " + b"(" * 1000 + b")" * 1000 + b"\n", False),
        ("bin.dat", bytes(range(256)) * 100, False),
        ("big.sh", b"#!/bin/sh\n" + b"curl https://x.example.com\n" * 30_000, True),
    ]
    publish("hostile", description="Hostile.", files=files)
    body = author.get("/api/v1/skills/hostile/versions/1/capabilities").json()
    assert {s["file"] for s in body["manifest"]["skipped"]} == {"big.sh"}


# --- the policy ----------------------------------------------------------------------------------


def test_policies_take_new_capabilities_and_refuse_other_values(admin, author):
    body = {"roles": ["admin", "author"], "new_capabilities": "admin"}
    response = admin.put("/api/v1/label-policies/production", body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["new_capabilities"] == "admin"
    assert author.get("/api/v1/label-policies/production").json()["new_capabilities"] == "admin"
    bad = admin.put("/api/v1/label-policies/production", {"roles": ["admin"], "new_capabilities": "yes"}, format="json")
    assert bad.status_code == 400 and "new_capabilities" in bad.json()["fields"]
    cleared = admin.put("/api/v1/label-policies/production", {"roles": ["admin"]}, format="json")
    assert cleared.json()["new_capabilities"] is None


def test_an_author_moving_to_a_version_that_adds_capabilities_gets_403_naming_them(author, sync_skill):
    label_policy_set(label="production", roles=["admin", "author"], new_capabilities="admin")
    response = move(author, 2)
    assert response.status_code == 403, response.content
    body = response.json()
    assert body["error"] == "policy"
    assert "api.example.com (scripts/sync.py:6)" in body["detail"] and "GITHUB_TOKEN" in body["detail"]
    assert body["new_capabilities"] == [
        "+ network: api.example.com (scripts/sync.py:6)",
        "+ reads GITHUB_TOKEN (scripts/sync.py:5)",
    ]
    assert sync_skill.labels.get(name="production").version.number == 1
    refused = move(author, 2, override_reason="I checked it")
    assert refused.status_code == 403  # only an admin overrides


def test_an_admin_approves_new_capabilities_with_a_reason_recorded_in_the_history(admin, sync_skill):
    label_policy_set(label="production", roles=["admin", "author"], new_capabilities="admin")
    unexplained = move(admin, 2)
    assert unexplained.status_code == 403 and "override" in unexplained.json()["detail"]
    response = move(admin, 2, override_reason="Reviewed: it posts to our own sync service.")
    assert response.status_code == 200, response.content
    row = LabelHistory.objects.filter(skill=sync_skill, label="production").first()
    assert row.kind == LabelChange.OVERRIDE and row.to_version == 2
    assert row.reason == "Reviewed: it posts to our own sync service."
    assert row.unmet[0]["check"] == "new_capabilities"
    assert row.unmet[0]["got"] == [
        "+ network: api.example.com (scripts/sync.py:6)",
        "+ reads GITHUB_TOKEN (scripts/sync.py:5)",
    ]
    assert AuditLog.objects.filter(action="label.override").exists()


def test_moves_that_add_nothing_gated_pass_and_so_do_rollbacks(author, sync_skill):
    label_policy_set(label="production", roles=["admin", "author"], new_capabilities="admin")
    label_move(skill=sync_skill, label="production", version_number=2)  # the operator moved it
    # v3 keeps v2's capabilities and adds only a package and an env read: nothing gated.
    more = ONLINE + b'    home = os.getenv("HOME")\n'
    publish(
        "sync", description="Syncs.", files=[("scripts/sync.py", more, False), ("requirements.txt", b"rich\n", False)]
    )
    assert move(author, 3).status_code == 200
    assert move(author, 1).status_code == 200  # v1 does less
    assert move(author, 3).status_code == 200  # back to what it served within the rollback window
    assert LabelHistory.objects.filter(skill=sync_skill, label="production").first().kind == LabelChange.ROLLBACK


def test_without_the_check_the_policy_moves_as_before(author, sync_skill):
    label_policy_set(label="production", roles=["admin", "author"])
    assert move(author, 2).status_code == 200


def test_a_rollout_to_a_version_with_new_capabilities_is_gated_too(author, sync_skill):
    label_policy_set(label="production", roles=["admin", "author"], new_capabilities="admin")
    response = move(author, 2, weight=10)
    assert response.status_code == 403 and "GITHUB_TOKEN" in response.json()["detail"]


def test_removing_a_label_is_not_a_capability_question(author, sync_skill):
    label_policy_set(label="production", roles=["admin", "author"], new_capabilities="admin")
    assert author.delete("/api/v1/skills/sync/labels/production").status_code == 204


def test_with_nothing_served_everything_the_version_does_is_new(author, sync_skill):
    label_policy_set(label="staging", roles=["admin", "author"], new_capabilities="admin")
    assert author.put("/api/v1/skills/sync/labels/staging", {"version": 1}, format="json").status_code == 200
    author.delete("/api/v1/skills/sync/labels/staging")
    refused = author.put("/api/v1/skills/sync/labels/staging", {"version": 2}, format="json")
    assert refused.status_code == 403
    assert "compared with nothing served" in refused.json()["detail"]
