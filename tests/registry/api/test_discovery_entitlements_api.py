"""The discovery index and a reader's entitlements: `?tools=` and `?mcp_servers=` (comma-separated
names) leave out the skills whose `tool:` or `mcp:` requirements the reader does not meet,
`?explain=true` lists them with why; a reader that says nothing gets the whole index."""

from __future__ import annotations

import pytest
from django.test import Client

from registry.services.labels import label_move
from tests.factories import publish
from tests.registry.api.test_resolve_requirements_api import PDF_TOOLS_LEFT_OUT

INDEX = "/.well-known/agent-skills/index.json"

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(settings):
    settings.DISCOVERY_LABEL = "production"
    for name, description, requires in (
        ("pdf-tools", "Extracts text from documents.", "tool:Bash"),
        ("tax-forms", "Fills tax forms.", "skill:pdf-tools, mcp:acrobat"),
        ("meeting-notes", "Writes meeting notes.", None),
    ):
        fields = {"metadata": f'{{requires: "{requires}"}}'} if requires else {}
        result = publish(name, description=description, **fields)
        label_move(skill=result.skill, label="production", version_number=1)


def listed(query: str = "") -> tuple[list[str], dict]:
    response = Client().get(INDEX + query)
    assert response.status_code == 200, response.content
    body = response.json()
    return [entry["name"] for entry in body["skills"]], body


def test_a_reader_that_says_nothing_gets_every_skill(published):
    names, body = listed()
    assert names == ["meeting-notes", "pdf-tools", "tax-forms"]
    assert "left_out" not in body


def test_skills_needing_what_the_reader_lacks_are_left_out(published):
    assert listed("?tools=Read,Grep")[0] == ["meeting-notes"]
    assert listed("?tools=Bash")[0] == ["meeting-notes", "pdf-tools", "tax-forms"]  # servers unchecked
    assert listed("?tools=bash&mcp_servers=github")[0] == ["meeting-notes", "pdf-tools"]
    assert listed("?tools=Bash&mcp_servers=github,acrobat")[0] == ["meeting-notes", "pdf-tools", "tax-forms"]
    assert listed("?mcp_servers=")[0] == ["meeting-notes", "pdf-tools"]  # empty: it has none


def test_the_etag_follows_what_is_listed(published):
    whole = Client().get(INDEX)
    narrowed = Client().get(INDEX + "?tools=Read")
    assert whole["ETag"] != narrowed["ETag"]
    again = Client().get(INDEX + "?tools=Read", HTTP_IF_NONE_MATCH=narrowed["ETag"])
    assert again.status_code == 304


def test_explain_lists_the_skills_left_out_and_why(published):
    names, body = listed("?tools=Read&mcp_servers=acrobat&explain=true")
    assert names == ["meeting-notes"]
    assert body["left_out"] == [
        PDF_TOOLS_LEFT_OUT,
        {
            "name": "tax-forms",
            "version": 1,
            "missing": ["tool:Bash"],
            "reasons": [
                "requires skill:pdf-tools, which requires tool:Bash, which is not among the tools the consumer has"
            ],
        },
    ]
    assert listed("?explain=true")[1]["left_out"] == []


def test_a_left_out_skill_stays_readable_by_name(published):
    assert Client().get("/.well-known/agent-skills/pdf-tools/SKILL.md?tools=Read").status_code == 200


@pytest.mark.parametrize(
    "query, field",
    [
        ("?tools=" + ",".join(f"t{n}" for n in range(501)), "tools"),
        ("?mcp_servers=" + "s" * 201, "mcp_servers"),
        ("?tools=Read,,Bash", "tools"),
        ("?explain=perhaps", "explain"),
    ],
)
def test_bad_entitlements_are_a_400_naming_the_parameter(published, query, field):
    response = Client().get(INDEX + query)
    assert response.status_code == 400
    body = response.json()
    assert field in body["fields"] and field in body["detail"]
