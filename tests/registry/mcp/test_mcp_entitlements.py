"""`/mcp` and a host's entitlements: the tools and MCP servers it has, in a request's `_meta` or
in its capabilities (the Skills extension's entry), leave out of `skills/list` and
`resources/list` the skills whose `tool:` or `mcp:` requirements it does not meet, named with why
in the listing's `_meta`; the `resolve` tool reads them as `context.tools` / `context.mcp_servers`."""

from __future__ import annotations

from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.factories import publish
from tests.registry.api.test_resolve_requirements_api import PDF_TOOLS_LEFT_OUT
from tests.registry.mcp.test_mcp_endpoint import (
    _ANY,
    HANDSHAKE,
    MODERN,
    Host,
    SkillsListRequest,
    _url,
    run_host,
)

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS, SERVERS, LEFT_OUT = "io.skill-registry/tools", "io.skill-registry/mcp_servers", "io.skill-registry/left_out"


@pytest.fixture
def catalog(db):
    publish("pdf-tools", description="Extracts text from pdf documents.", metadata='{requires: "tool:Bash"}')
    publish("tax-forms", description="Fills tax forms.", metadata='{requires: "skill:pdf-tools, mcp:acrobat"}')
    publish("meeting-notes", description="Writes meeting notes.")


def _names(listing: dict[str, Any]) -> list[str]:
    return [entry["uri"].removeprefix("skill://").removesuffix("/SKILL.md") for entry in listing["skills"]]


async def _listings(host: Host, meta: dict[str, Any] | None) -> tuple[dict[str, Any], types.ListResourcesResult]:
    skills = await host.session.send_request(SkillsListRequest(params=types.PaginatedRequestParams(_meta=meta)), _ANY)
    resources = await host.session.list_resources(params=types.PaginatedRequestParams(_meta=meta))
    return skills, resources


@pytest.mark.parametrize("revision", [HANDSHAKE, MODERN])
def test_a_hosts_tools_in_meta_leave_skills_out_of_both_listings_with_why(live_server, make_token, catalog, revision):
    async def steps(host: Host, _):
        return await _listings(host, None), await _listings(host, {TOOLS: ["Read"], SERVERS: ["acrobat"]})

    (whole, whole_resources), (narrowed, resources) = run_host(
        _url(live_server), make_token(["skills:read"]), revision, steps
    )

    assert _names(whole) == ["meeting-notes", "pdf-tools", "tax-forms"]
    assert LEFT_OUT not in whole.get("_meta", {}) and len(whole_resources.resources) == 3
    assert _names(narrowed) == ["meeting-notes"]
    assert [r.name for r in resources.resources] == ["meeting-notes"]
    tax_forms = {
        "name": "tax-forms",
        "version": 1,
        "missing": ["tool:Bash"],
        "reasons": [
            "requires skill:pdf-tools, which requires tool:Bash, which is not among the tools the consumer has"
        ],
    }
    assert narrowed["_meta"][LEFT_OUT] == [PDF_TOOLS_LEFT_OUT, tax_forms]
    assert resources.meta[LEFT_OUT] == [PDF_TOOLS_LEFT_OUT, tax_forms]


def test_the_hosts_capabilities_say_it_for_every_request(live_server, make_token, catalog):
    async def steps(host: Host, _):
        listing = await host.session.send_request(SkillsListRequest(params=types.PaginatedRequestParams()), _ANY)
        # A request's own `_meta` overrides the capabilities, key by key.
        widened = await _listings(host, {TOOLS: ["Bash"]})
        return listing, widened[0]

    listing, widened = run_host(
        _url(live_server), make_token(["skills:read"]), MODERN, steps, skills_settings={TOOLS: ["Read"], SERVERS: []}
    )
    assert _names(listing) == ["meeting-notes"]
    assert _names(widened) == ["meeting-notes", "pdf-tools"]  # acrobat is still missing for tax-forms


def test_the_resolve_tool_reads_the_hosts_entitlements_unless_its_arguments_say(live_server, make_token, catalog):
    token = make_token(["skills:read"])

    async def steps(host: Host, _):
        meta = {TOOLS: ["Read"]}
        from_meta = await host.session.call_tool("resolve", {"query": "pdf", "explain": True}, meta=meta)
        from_arguments = await host.session.call_tool(
            "resolve", {"query": "pdf", "context": {"tools": ["Bash"]}}, meta=meta
        )
        return from_meta, from_arguments

    from_meta, from_arguments = run_host(_url(live_server), token, MODERN, steps)

    rest = httpx2.post(
        f"{live_server.url}/api/v1/resolve",
        json={"query": "pdf", "context": {"tools": ["Read"]}, "explain": True},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert from_meta.structured_content == rest.json()
    assert [s["name"] for s in from_meta.structured_content["skills"]] == ["meeting-notes"]
    assert [entry["name"] for entry in from_meta.structured_content["left_out"]] == ["pdf-tools", "tax-forms"]
    assert [s["name"] for s in from_arguments.structured_content["skills"]] == [
        "pdf-tools",
        "meeting-notes",
        "tax-forms",
    ]


@pytest.mark.parametrize("meta", [{TOOLS: "Bash"}, {SERVERS: [1]}, {TOOLS: ["t"] * 501}, {SERVERS: ["x" * 201]}])
def test_bad_entitlements_are_invalid_params_naming_the_key(live_server, make_token, catalog, meta):
    async def steps(host: Host, _):
        with pytest.raises(MCPError) as raised:
            await _listings(host, meta)
        return raised.value.error

    error = run_host(_url(live_server), make_token(["skills:read"]), MODERN, steps)
    (key,) = meta
    assert error.code == -32602 and key in error.message and error.data["key"] == key
