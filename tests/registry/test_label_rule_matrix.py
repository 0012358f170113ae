"""One rule for a label a skill does not have, the same on every read path: a request naming a
label gets only the skills that carry it (the others are absent: a 404, left out of a listing, a
forced skill refused naming the label); a request naming none gets `production` where the skill
has it, else latest. A label's rollout then decides which version of the label applies.

The same registry is read through every path at every label, and each cell is checked against
`expected`, the rule written out plainly from the table below (not the code's `label_applied`).
Every read names a subject (or has one: the token, the turn's conversation), so the rollout at
100% always serves its canary.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client as DjangoClient
from mcp.shared.exceptions import MCPError
from rest_framework.test import APIClient
from skill_registry_client import Client as RegistryClient
from skill_registry_client import NotFound as ClientNotFound

from agents.models import TraceEvent
from agents.turns import services as agent_services
from registry.errors import ApplicationError
from registry.models import Skill, TokenScope
from registry.services.labels import label_delete, label_move
from registry.services.rollouts import label_rollout_set
from registry.skillformat.bundle import read_zip
from tests.clients.test_python_client import Registry
from tests.factories import publish
from tests.registry.mcp.test_mcp_endpoint import HANDSHAKE, MODERN, Host, run_host

pytestmark = pytest.mark.django_db
# The paths read from another connection (HTTP servers, a turn's lease) need the table committed.
committed = pytest.mark.django_db(transaction=True)

SUBJECT = "matrix-reader"

# name: versions published, labels {label: version}, a rollout (label, canary) at weight 100.
TABLE: dict[str, dict[str, Any]] = {
    "alpha": {"versions": 2, "labels": {"production": 1}},  # production behind latest
    "bravo": {"versions": 2, "labels": {}},  # no label at all
    "charlie": {"versions": 2, "labels": {"staging": 1}},  # staging only, no production
    "delta": {"versions": 3, "labels": {"production": 1}, "rollout": ("production", 2)},
}
ASKED = [None, "production", "staging", "latest"]


def expected(name: str, asked: str | None) -> int | None:
    """The version a request at `asked` reads of `name`, or None when the skill is absent."""
    spec = TABLE[name]
    if asked is None:
        applied = "production" if "production" in spec["labels"] else "latest"
    elif asked == "latest" or asked in spec["labels"]:
        applied = asked
    else:
        return None
    if applied == "latest":
        return spec["versions"]
    rollout = spec.get("rollout")
    return rollout[1] if rollout and rollout[0] == applied else spec["labels"][applied]


def expected_row(asked: str | None) -> dict[str, int | None]:
    return {name: expected(name, asked) for name in TABLE}


def body(name: str, number: int) -> str:
    return f"BODY {name} v{number}"


def version_of(text: str, name: str) -> int:
    """Which version a SKILL.md text is, from the body each version was published with."""
    found = [n for n in range(1, TABLE[name]["versions"] + 1) if body(name, n) in text]
    assert len(found) == 1, text
    return found[0]


@pytest.fixture
def registry_table():
    for name, spec in TABLE.items():
        for number in range(1, spec["versions"] + 1):
            publish(name, description=f"The {name} skill, version {number}.", body=body(name, number) + "\n")
        skill = Skill.objects.get(name=name)
        for label, number in spec["labels"].items():
            label_move(skill=skill, label=label, version_number=number)
        if "rollout" in spec:
            label, canary = spec["rollout"]
            label_rollout_set(skill=skill, label=label, version_number=canary, weight=100)


def label_params(asked: str | None) -> dict[str, str]:
    return {"label": asked} if asked else {}


# --- the REST reads -------------------------------------------------------------------------


def _rest(api: APIClient, suffix: str, asked: str | None) -> dict[str, int | None]:
    row: dict[str, int | None] = {}
    for name in TABLE:
        response = api.get(f"/api/v1/skills/{name}{suffix}", {**label_params(asked), "subject": SUBJECT})
        if response.status_code == 404:
            assert f"has no label '{asked}'" in response.json()["detail"]
            row[name] = None
            continue
        assert response.status_code == 200, response.content
        row[name] = int(response["X-Skill-Version"])
        if suffix == "/SKILL.md":
            assert version_of(response.content.decode(), name) == row[name]
        if suffix == "/bundle.zip":
            assert version_of(read_zip(response.content).skill_md.decode(), name) == row[name]
    return row


@pytest.mark.parametrize("asked", ASKED)
@pytest.mark.parametrize("suffix", ["", "/SKILL.md", "/bundle.zip"], ids=["detail", "skill_md", "bundle"])
def test_rest_reads(api, registry_table, suffix, asked):
    assert _rest(api, suffix, asked) == expected_row(asked)


# --- resolve --------------------------------------------------------------------------------


@pytest.mark.parametrize("asked", ASKED)
def test_resolve(api, registry_table, asked):
    answer = api.post(
        "/api/v1/resolve", {"query": "", "label": asked, "context": {"subject": SUBJECT}}, format="json"
    ).json()
    offered = {skill["name"]: skill["version"] for skill in answer["skills"]}

    assert {name: offered.get(name) for name in TABLE} == expected_row(asked)
    assert set(offered) <= set(TABLE)


@pytest.mark.parametrize("asked", ASKED)
def test_resolve_with_a_forced_skill(api, registry_table, asked):
    for name in TABLE:
        answer = api.post(
            "/api/v1/resolve",
            {"query": "", "label": asked, "forced_skill": name, "context": {"subject": SUBJECT}},
            format="json",
        ).json()
        if expected(name, asked) is None:
            assert answer["forced_skill"] is None and name not in [s["name"] for s in answer["skills"]]
            assert f"The forced skill '{name}' does not carry the label '{asked}'." in answer["warnings"]
        else:
            assert answer["forced_skill"] == name
            assert answer["skills"][0]["name"] == name and answer["skills"][0]["version"] == expected(name, asked)


# --- agent turns: the scripted model reads every skill at the turn's label --------------------


def _read(name: str) -> dict:
    return {"content": None, "tool_calls": [{"name": "read_skill", "arguments": {"skill_name": name}}]}


@committed  # the turn's lease is renewed from a thread of its own, on its own connection
@pytest.mark.parametrize("asked", ASKED)
def test_turns(admin_user, registry_table, asked):
    script = [_read(name) for name in TABLE] + [{"content": "Read them all."}]
    turn = agent_services.agent_turn_create(
        user=admin_user, message="read every skill", model="scripted", script=script, label=asked
    )
    claimed = agent_services.agent_turn_claim(turn_id=str(turn.pk))
    assert claimed is not None
    agent_services.agent_turn_run(claimed=claimed)
    turn.refresh_from_db()
    events = TraceEvent.objects.filter(turn=turn)
    loaded = {e.data["skill"]: e.data["version"] for e in events.filter(type="skill_activated")}
    reads = [e.data for e in events.filter(type="tool_call") if e.data.get("tool") == "read_skill"]

    assert turn.status == "succeeded", turn.error
    assert {name: loaded.get(name) for name in TABLE} == expected_row(asked)
    assert [read["ok"] for read in reads] == [expected(name, asked) is not None for name in TABLE]


@pytest.mark.parametrize("asked", ASKED)
@pytest.mark.parametrize("how", ["forced_skill", "command"])
def test_a_turn_forcing_a_skill_without_the_label_is_refused_naming_it(admin_user, registry_table, asked, how):
    for name in TABLE:
        given = {"forced_skill": name, "message": "go"} if how == "forced_skill" else {"message": f"/{name} go"}
        if expected(name, asked) is not None:
            agent_services.agent_turn_create(
                user=admin_user, model="scripted", script=[{"content": "ok"}], label=asked, **given
            )
            continue
        with pytest.raises(ApplicationError) as refused:
            agent_services.agent_turn_create(
                user=admin_user, model="scripted", script=[{"content": "ok"}], label=asked, **given
            )
        assert f"The skill '{name}' has no label '{asked}'" in refused.value.detail
        assert refused.value.fields == {"message" if how == "command" else how: f"'{name}' has no label '{asked}'"}


@committed  # the turn's lease is renewed from a thread of its own, on its own connection
@pytest.mark.parametrize("how", ["forced_skill", "command"])
def test_a_turn_whose_label_goes_after_it_was_queued_fails_naming_the_label(admin_user, how):
    skill = publish("deploy-check", description="Checks a deploy.").skill
    label_move(skill=skill, label="staging", version_number=1)
    given = (
        {"forced_skill": "deploy-check", "message": "go"} if how == "forced_skill" else {"message": "/deploy-check go"}
    )
    turn = agent_services.agent_turn_create(
        user=admin_user, model="scripted", script=[{"content": "ok"}], label="staging", **given
    )

    label_delete(skill=skill, label="staging")  # while the turn waits in the queue
    claimed = agent_services.agent_turn_claim(turn_id=str(turn.pk))
    assert claimed is not None
    agent_services.agent_turn_run(claimed=claimed)

    turn.refresh_from_db()
    assert turn.status == "failed"
    assert "'/deploy-check'" in turn.error and "no label 'staging'" in turn.error, turn.error


# --- MCP: skills/list, skills/get and resources/read, on both revisions -----------------------


def _mcp_url(live_server, asked: str | None) -> str:
    query = f"subject={SUBJECT}" + (f"&label={asked}" if asked else "")
    return f"{live_server.url}/mcp?{query}"


@committed
@pytest.mark.parametrize("asked", ASKED)
@pytest.mark.parametrize("revision", [HANDSHAKE, MODERN])
def test_mcp(live_server, make_token, registry_table, revision, asked):
    token = make_token(["skills:read"])

    async def steps(host: Host, _):
        listed = {s["frontmatter"]["name"]: s["_meta"]["io.skill-registry/version"] for s in await host.all_skills()}
        got: dict[str, int | None] = {}
        read: dict[str, int | None] = {}
        for name in TABLE:
            uri = f"skill://{name}/SKILL.md"
            try:
                got[name] = (await host.skills_get(uri))["skill"]["_meta"]["io.skill-registry/version"]
            except MCPError as error:
                assert error.code == -32602 and (not asked or f"at label '{asked}'" in error.message)
                got[name] = None
            try:
                (contents,) = (await host.session.read_resource(uri)).contents
                read[name] = contents.meta["io.skill-registry/version"]
                assert version_of(contents.text, name) == read[name]
            except MCPError as error:
                assert error.code == -32602
                read[name] = None
        return listed, got, read

    listed, got, read = run_host(_mcp_url(live_server, asked), token, revision, steps)

    row = expected_row(asked)
    assert {name: listed.get(name) for name in TABLE} == row
    assert got == row
    assert read == row


# --- the discovery index: one named label (it has no "no label" column) ------------------------


@pytest.mark.parametrize("asked", [label for label in ASKED if label])
def test_discovery(registry_table, settings, asked):
    settings.DISCOVERY_LABEL = asked
    anonymous = DjangoClient()
    index = anonymous.get("/.well-known/agent-skills/index.json", {"subject": SUBJECT})
    assert index.status_code == 200, index.content
    listed = {entry["name"]: int(entry["version"]) for entry in json.loads(index.content)["skills"]}
    fetched: dict[str, int | None] = {}
    for name in TABLE:
        response = anonymous.get(f"/.well-known/agent-skills/{name}/SKILL.md", {"subject": SUBJECT})
        fetched[name] = version_of(response.content.decode(), name) if response.status_code == 200 else None
        assert response.status_code in (200, 404)

    assert {name: listed.get(name) for name in TABLE} == expected_row(asked)
    assert fetched == expected_row(asked)


# --- the Python client, against the registry served over HTTP ---------------------------------


@pytest.fixture(scope="module")
def served(django_db_setup, django_db_blocker):
    server = Registry().start()
    yield server
    server.stop()
    server.log.unlink(missing_ok=True)


@committed
@pytest.mark.parametrize("asked", ASKED)
def test_python_client(served, make_token, registry_table, asked):
    client = RegistryClient(served.url, make_token(list(TokenScope.values)), ttl=0, stale_while_revalidate=0)
    resolved = {skill["name"]: skill["version"] for skill in client.resolve("", label=asked, subject=SUBJECT).skills}
    texts: dict[str, int | None] = {}
    bundles: dict[str, int | None] = {}
    for name in TABLE:
        try:
            texts[name] = version_of(client.skill_md(name, label=asked), name)
        except ClientNotFound as error:
            assert f"has no label '{asked}'" in str(error)
            texts[name] = None
        try:
            files = client.files(name, label=asked)
            bundles[name] = version_of(files[0].content.decode(), name)
        except ClientNotFound:
            bundles[name] = None
    client.close()

    row = expected_row(asked)
    assert {name: resolved.get(name) for name in TABLE} == row
    assert texts == row
    assert bundles == row
