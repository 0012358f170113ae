"""`/mcp` through the `mcp` package's own client (Streamable HTTP + ClientSession) over real HTTP
to a running server, on both protocol revisions a host may speak."""

from __future__ import annotations

import base64
import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal
from urllib.parse import unquote

import anyio
import httpx2
import mcp_types as types
import pytest
from django.db import connection
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from registry.mcp.catalog import SCAN_META
from registry.models import Blob, Skill
from registry.services.labels import label_move
from registry.services.rollouts import label_rollout_set
from registry.services.rules import rule_create
from registry.services.skills import skill_set_enabled
from tests.factories import publish

pytestmark = pytest.mark.django_db(transaction=True)

SKILLS = "io.modelcontextprotocol/skills"
HANDSHAKE, MODERN = "2025-11-25", "2026-07-28"
BINARY = bytes(range(256)) * 4  # every byte value, NUL and invalid UTF-8 included
TEXT = "#!/bin/sh\r\necho 'héllo'  \n\ttrailing\n".encode()
_ANY = TypeAdapter(dict[str, Any])


class SkillsListRequest(types.Request[types.PaginatedRequestParams, Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"


class SkillsGetParams(types.RequestParams):
    uri: str


class SkillsGetRequest(types.Request[SkillsGetParams, Literal["skills/get"]]):
    method: Literal["skills/get"] = "skills/get"


class DirectoryReadParams(types.PaginatedRequestParams):
    uri: str


class DirectoryReadRequest(types.Request[DirectoryReadParams, Literal["resources/directory/read"]]):
    method: Literal["resources/directory/read"] = "resources/directory/read"


class Host:
    """What an MCP host does with one connection: the calls the tests make, as plain dicts."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def skills_list(self, cursor: str | None = None) -> dict[str, Any]:
        request = SkillsListRequest(params=types.PaginatedRequestParams(cursor=cursor))
        return await self.session.send_request(request, _ANY)

    async def all_skills(self) -> list[dict[str, Any]]:
        found, cursor = [], None
        while True:
            page = await self.skills_list(cursor)
            found += page["skills"]
            cursor = page.get("nextCursor")
            if cursor is None:
                return found

    async def skills_get(self, uri: str) -> dict[str, Any]:
        return await self.session.send_request(SkillsGetRequest(params=SkillsGetParams(uri=uri)), _ANY)

    async def directory(self, uri: str) -> dict[str, Any]:
        return await self.session.send_request(DirectoryReadRequest(params=DirectoryReadParams(uri=uri)), _ANY)

    async def read_bytes(self, uri: str) -> bytes:
        result = await self.session.read_resource(uri)
        (contents,) = result.contents
        if isinstance(contents, types.TextResourceContents):
            return contents.text.encode("utf-8")
        return base64.b64decode(contents.blob)


def run_host(url: str, token: str, revision: str, steps, *, skills_settings: dict[str, Any] | None = None) -> Any:
    """Connect as a host speaking `revision` and run `steps(host, connected_result)`; the host's
    capabilities give the Skills extension `skills_settings`."""

    async def main():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write, extensions={SKILLS: skills_settings or {}}) as session:
                    connected = await session.initialize() if revision == HANDSHAKE else await session.discover()
                    assert session.protocol_version == revision
                    return await steps(Host(session), connected)

    # The browser tests' Playwright leaves an event loop running in the main thread for the rest
    # of the session, where a second one cannot start: the host runs in a thread of its own.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, main).result()


def _sha(content: bytes) -> str:
    return "sha256:" + hashlib.sha256(content).hexdigest()


@pytest.fixture
def catalog(skill_md):
    """pdf-tools (text, binary and nested files; v1 in production, v2 at staging), a plain skill,
    one disabled in the registry and one whose SKILL.md says `enabled: false`."""
    files = [
        ("scripts/run.sh", TEXT, True),
        ("assets/logo.bin", BINARY, False),
        ("templates/a/b.md", b"B\n", False),
        ("docs/naïve 100%.md", "Ünïcode name\n".encode(), False),  # percent-encoded in its URI
    ]
    first = publish("pdf-tools", files=files, description="Fills PDF forms when asked for a form.")
    publish("pdf-tools", files=[*files, ("templates/new.md", b"new\n", False)], description="Fills PDF forms v2.")
    skill = first.version.skill
    label_move(skill=skill, label="production", version_number=1)
    label_move(skill=skill, label="staging", version_number=2)
    publish("git-flow", description="Git branching conventions for commits.", license="MIT")
    off = publish("switched-off", description="A skill an admin disabled.").version.skill
    skill_set_enabled(skill=off, enabled=False)
    publish("says-off", description="A skill whose SKILL.md disables it.", enabled="false")
    return skill


def _url(live_server, label: str | None = None, subject: str | None = None) -> str:
    query = "&".join(f"{key}={value}" for key, value in (("label", label), ("subject", subject)) if value)
    return f"{live_server.url}/mcp" + (f"?{query}" if query else "")


@pytest.mark.parametrize("revision", [HANDSHAKE, MODERN])
def test_a_host_lists_gets_and_reads_skills_byte_exact_on_both_revisions(live_server, make_token, catalog, revision):
    token = make_token(["skills:read"])

    async def steps(host: Host, connected):
        capabilities = connected.capabilities
        assert capabilities.resources is not None
        # The SDK's 2025-11-25 client schema keeps `experimental` only (the wire has both, see
        # test_the_handshake_announces_the_extension_under_extensions_and_experimental).
        announced = capabilities.experimental if revision == HANDSHAKE else capabilities.extensions
        assert announced[SKILLS] == {"directoryRead": True}
        listing = await host.skills_list()
        entry = await host.skills_get("skill://pdf-tools/SKILL.md")
        reads = {r["uri"]: await host.read_bytes(r["uri"]) for r in entry["skill"]["resources"]}
        directory = await host.directory("skill://pdf-tools/templates")
        root = await host.directory("skill://pdf-tools")
        return listing, entry, reads, directory, root

    listing, entry, reads, directory, root = run_host(_url(live_server), token, revision, steps)

    assert listing["resultType"] == "complete"
    assert listing["cacheScope"] == "private" and listing["ttlMs"] > 0
    # Effective enabled skills only: neither the disabled skill nor the one its SKILL.md turns off.
    assert [s["uri"] for s in listing["skills"]] == ["skill://git-flow/SKILL.md", "skill://pdf-tools/SKILL.md"]
    git_flow = listing["skills"][0]
    assert git_flow["frontmatter"] == {
        "name": "git-flow",
        "description": "Git branching conventions for commits.",
        "license": "MIT",
    }
    skill = entry["skill"]
    assert skill == listing["skills"][1]  # the same entry by either method
    assert entry["resultType"] == "complete" and entry["cacheScope"] == "private"
    # Without ?label= each skill's served version: production's v1 (no templates/new.md).
    version = catalog.versions.get(number=1)
    stored = {f.path: f.blob_id for f in version.files.all()}
    expected_md = version.skill_md.encode("utf-8")
    assert skill["resources"][0] == {
        "uri": "skill://pdf-tools/SKILL.md",
        "digest": _sha(expected_md),
        "size": len(expected_md),
    }
    assert {unquote(r["uri"].removeprefix("skill://pdf-tools/")): r["digest"] for r in skill["resources"][1:]} == {
        path: f"sha256:{sha}" for path, sha in stored.items()
    }
    for resource in skill["resources"]:
        content = reads[resource["uri"]]
        assert _sha(content) == resource["digest"] and len(content) == resource["size"]
    assert (
        reads["skill://pdf-tools/assets/logo.bin"]
        == BINARY
        == bytes(Blob.objects.get(sha256=stored["assets/logo.bin"]).content)
    )
    assert reads["skill://pdf-tools/scripts/run.sh"] == TEXT
    assert reads["skill://pdf-tools/SKILL.md"] == expected_md
    assert [(r["name"], r["mimeType"]) for r in directory["resources"]] == [("a", "inode/directory")]
    assert directory["ttlMs"] == listing["ttlMs"] and directory["cacheScope"] == "private"
    assert reads["skill://pdf-tools/docs/na%C3%AFve%20100%25.md"] == "Ünïcode name\n".encode()
    assert [r["uri"] for r in root["resources"]] == [
        "skill://pdf-tools/SKILL.md",
        "skill://pdf-tools/assets",
        "skill://pdf-tools/docs",
        "skill://pdf-tools/scripts",
        "skill://pdf-tools/templates",
    ]


@pytest.mark.parametrize("revision", [HANDSHAKE, MODERN])
def test_unknown_skills_and_files_are_invalid_params(live_server, make_token, catalog, revision):
    token = make_token(["skills:read"])

    async def steps(host: Host, _):
        codes = []
        for call in (
            host.skills_get("skill://no-such-skill/SKILL.md"),
            host.skills_get("skill://switched-off/SKILL.md"),
            host.skills_get("skill://pdf-tools/scripts/run.sh"),
            host.session.read_resource("skill://pdf-tools/no/such/file.md"),
            host.session.read_resource("skill://says-off/SKILL.md"),
            host.directory("skill://pdf-tools/scripts/run.sh"),
            host.skills_list(cursor="not-a-cursor"),
            host.session.read_resource("skill://pdf-tools/../git-flow/SKILL.md"),
        ):
            with pytest.raises(MCPError) as raised:
                await call
            codes.append(raised.value.code)
        return codes

    assert run_host(_url(live_server), token, revision, steps) == [-32602] * 8


def test_label_selects_the_version_served(live_server, make_token, catalog):
    token = make_token(["skills:read"])

    async def steps(host: Host, _):
        entry = (await host.skills_get("skill://pdf-tools/SKILL.md"))["skill"]
        return entry, await host.read_bytes("skill://pdf-tools/templates/new.md")

    entry, new = run_host(_url(live_server, "staging"), token, MODERN, steps)
    assert entry["frontmatter"]["description"] == "Fills PDF forms v2."
    assert "skill://pdf-tools/templates/new.md" in [r["uri"] for r in entry["resources"]]
    assert new == b"new\n"


@pytest.mark.parametrize("revision", [HANDSHAKE, MODERN])
def test_the_resolve_tool_answers_as_post_resolve(live_server, make_token, catalog, revision):
    rule_create(name="git-rule", pattern="git", skills=["git-flow"], instruction="Follow the branch naming rules.")
    token = make_token(["skills:read"])
    arguments = {"query": "help me commit on a git branch", "context": {"toolName": "bash"}}

    async def steps(host: Host, _):
        tools = await host.session.list_tools()
        called = await host.session.call_tool("resolve", arguments)
        refused = await host.session.call_tool("resolve", {"query": "x", "max_skills": -1})
        return tools, called, refused

    tools, called, refused = run_host(_url(live_server, "staging"), token, revision, steps)
    assert [tool.name for tool in tools.tools] == ["resolve"]
    assert not called.is_error
    rest = httpx2.post(
        f"{live_server.url}/api/v1/resolve",
        json={**arguments, "label": "staging"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert rest.status_code == 200
    assert called.structured_content == rest.json()
    assert json.loads(called.content[0].text) == rest.json()
    assert [rule["instruction"] for rule in rest.json()["fired_rules"]] == ["Follow the branch naming rules."]
    assert refused.is_error and "max_skills" in refused.content[0].text


def test_tokens_without_the_scope_or_validity_are_refused(live_server, make_token, catalog):
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"Accept": "application/json, text/event-stream"}
    url = _url(live_server)
    assert httpx2.post(url, json=body, headers=headers).status_code == 401
    assert httpx2.post(url, json=body, headers={**headers, "Authorization": "Bearer nope"}).status_code == 401
    no_scope = make_token(["usage:write"])
    denied = httpx2.post(url, json=body, headers={**headers, "Authorization": f"Bearer {no_scope}"})
    assert denied.status_code == 403 and "skills:read" in denied.text
    bad_label = httpx2.post(
        f"{url}?label=Not%20A%20Label",
        json=body,
        headers={**headers, "Authorization": f"Bearer {make_token(['skills:read'])}"},
    )
    assert bad_label.status_code == 400 and "label" in bad_label.text
    # No sessions, so no stream to open and none to end: 405 (never a hanging GET).
    reader = {"Authorization": f"Bearer {make_token(['skills:read'])}"}
    assert httpx2.get(url, headers=reader, timeout=10).status_code == 405
    # As a host opening the optional stream asks for it: still 405, which it reads as "none here".
    stream = {**reader, "Accept": "text/event-stream"}
    assert httpx2.get(url, headers=stream, timeout=10).status_code == 405
    assert httpx2.delete(url, headers=reader, timeout=10).status_code == 405

    # The real client fails to connect with a bad token, too.
    with pytest.raises(ExceptionGroup) as raised:
        run_host(url, "not-a-token", HANDSHAKE, lambda host, _: anyio.sleep(0))
    assert raised.group_contains(MCPError, match="error response")


@pytest.mark.parametrize("revision", [HANDSHAKE, MODERN])
def test_the_extension_is_announced_under_extensions_and_experimental(live_server, make_token, catalog, revision):
    """On the wire, as its reference server does (`capabilities.extensions`), and under
    `experimental` too on 2025-11-25 for hosts written before extensions had their own field."""
    headers = {
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {make_token(['skills:read'])}",
    }
    if revision == HANDSHAKE:
        params = {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    else:
        headers.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover"})
        envelope = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": envelope}}
    answer = httpx2.post(_url(live_server), json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    capabilities = answer.json()["result"]["capabilities"]
    assert capabilities["extensions"] == {SKILLS: {"directoryRead": True}}
    if revision == HANDSHAKE:
        assert capabilities["experimental"] == {SKILLS: {"directoryRead": True}}


def test_a_skill_beyond_the_extensions_limits_is_not_listed(live_server, make_token, db):
    # 18 MiB in two files: within the registry's default limits, over the extension's 16 MiB.
    big = b"x" * (9 * 1024 * 1024)
    publish("too-big", files=[("data/a.txt", big, False), ("data/b.txt", big, False)])
    publish("small-one")
    token = make_token(["skills:read"])

    async def steps(host: Host, _):
        names = [s["frontmatter"]["name"] for s in await host.all_skills()]
        with pytest.raises(MCPError) as raised:
            await host.skills_get("skill://too-big/SKILL.md")
        return names, raised.value, await host.read_bytes("skill://too-big/SKILL.md")

    names, error, content = run_host(_url(live_server), token, MODERN, steps)
    assert names == ["small-one"]
    assert error.code == -32602 and "16 MiB" in error.message
    assert content.startswith(b"---\nname: too-big\n")


def test_listing_pages_hold_every_skill_once_and_follow_changes(live_server, make_token, db):
    from registry.mcp import server

    for i in range(5):
        publish(f"skill-{i}")
    token = make_token(["skills:read"])
    page_size = server.PAGE_SIZE
    server.PAGE_SIZE = 2
    try:

        async def steps(host: Host, _):
            first = await host.skills_list()
            every = await host.all_skills()
            await anyio.to_thread.run_sync(disable, "skill-3")
            return first, every, await host.all_skills()

        first, every, after = run_host(_url(live_server), token, MODERN, steps)
    finally:
        server.PAGE_SIZE = page_size
    assert len(first["skills"]) == 2 and "nextCursor" in first
    assert [s["frontmatter"]["name"] for s in every] == [f"skill-{i}" for i in range(5)]
    assert [s["frontmatter"]["name"] for s in after] == ["skill-0", "skill-1", "skill-2", "skill-4"]


def disable(name: str) -> None:
    """From the host's worker thread: its own database connection, closed before the test ends."""
    try:
        skill_set_enabled(skill=Skill.objects.get(name=name), enabled=False)
    finally:
        connection.close()


SUBJECT_META = "io.skill-registry/subject"


def served_meta(version: int, canary: bool) -> dict[str, Any]:
    """The `_meta` of a Skill entry and of a file read: reverse-domain prefixed keys."""
    return {"io.skill-registry/version": version, "io.skill-registry/canary": canary}


def test_during_a_rollout_each_subject_gets_the_version_rest_serves_it(live_server, make_token, catalog):
    """pdf-tools production: v1 stable, v2 to 50% of subjects. For each subject (in the request's
    `_meta`, or the endpoint's ?subject=, else the token), MCP serves the version REST does."""
    label_rollout_set(skill=catalog, label="production", version_number=2, weight=50)
    token = make_token(["skills:read"])
    auth = {"Authorization": f"Bearer {token}"}
    subjects = [f"user-{n}" for n in range(20)]
    bodies = {n: catalog.versions.get(number=n).skill_md.encode("utf-8") for n in (1, 2)}

    async def steps(host: Host, _):
        seen = {}
        for subject in subjects:
            meta = {SUBJECT_META: subject}
            got = await host.session.send_request(
                SkillsGetRequest(params=SkillsGetParams(uri="skill://pdf-tools/SKILL.md", _meta=meta)), _ANY
            )
            read = await host.session.read_resource("skill://pdf-tools/SKILL.md", meta=meta)
            seen[subject] = got["skill"], read.contents[0]
        return seen, await host.all_skills()

    seen, listing = run_host(_url(live_server), token, MODERN, steps)
    served = set()
    for subject, (skill, contents) in seen.items():
        rest = httpx2.get(f"{live_server.url}/api/v1/skills/pdf-tools/SKILL.md?subject={subject}", headers=auth)
        version = int(rest.headers["X-Skill-Version"])
        served.add(version)
        assert served_meta(version, version == 2).items() <= skill["_meta"].items(), subject
        assert contents.meta == served_meta(version, version == 2)
        assert skill["_meta"][SCAN_META] == {"verdict": None}  # no scans worker runs here
        assert contents.text.encode("utf-8") == rest.content == bodies[version]
        assert skill["resources"][0]["digest"] == _sha(bodies[version])
        # Only v2 has templates/new.md: the entry's files are the subject's version's.
        has_new = "skill://pdf-tools/templates/new.md" in [r["uri"] for r in skill["resources"]]
        assert has_new == (version == 2)
    assert served == {1, 2}  # 20 subjects at 50%: both sides are exercised
    # Without a subject of its own, a request reads as its token does over REST.
    by_token = httpx2.get(f"{live_server.url}/api/v1/skills/pdf-tools/SKILL.md", headers=auth)
    entry = next(s for s in listing if s["uri"] == "skill://pdf-tools/SKILL.md")
    assert entry["_meta"]["io.skill-registry/version"] == int(by_token.headers["X-Skill-Version"])

    # ?subject= on the endpoint is the default subject of every request on it.
    subject = next(s for s, (skill, _) in seen.items() if skill["_meta"]["io.skill-registry/canary"])

    async def by_endpoint(host: Host, _):
        entry = (await host.skills_get("skill://pdf-tools/SKILL.md"))["skill"]
        return entry, await host.read_bytes("skill://pdf-tools/templates/new.md")

    entry, new = run_host(_url(live_server, subject=subject), token, HANDSHAKE, by_endpoint)
    assert served_meta(2, True).items() <= entry["_meta"].items() and new == b"new\n"


def test_a_subject_that_is_not_a_string_is_invalid_params(live_server, make_token, catalog):
    token = make_token(["skills:read"])

    async def steps(host: Host, _):
        with pytest.raises(MCPError) as raised:
            await host.session.read_resource("skill://pdf-tools/SKILL.md", meta={SUBJECT_META: 7})
        return raised.value.code

    assert run_host(_url(live_server), token, MODERN, steps) == -32602
    bad = httpx2.post(_url(live_server, subject="x" * 1000), headers={"Authorization": f"Bearer {token}"}, json={})
    assert bad.status_code == 400 and "subject" in bad.text


@pytest.mark.parametrize("revision", [HANDSHAKE, MODERN])
def test_a_subject_in_meta_is_capped_at_200_characters_like_the_query_on_both_revisions(
    live_server, make_token, catalog, revision
):
    """201 characters is refused (INVALID_PARAMS naming the key) by every method that reads by
    subject, not cut to 200; 200 is read."""
    label_rollout_set(skill=catalog, label="production", version_number=2, weight=50)
    token = make_token(["skills:read"])
    uri = "skill://pdf-tools/SKILL.md"

    async def steps(host: Host, _):
        too_long, longest = {SUBJECT_META: "s" * 201}, {SUBJECT_META: "s" * 200}
        calls = {
            "skills/list": lambda meta: host.session.send_request(
                SkillsListRequest(params=types.PaginatedRequestParams(_meta=meta)), _ANY
            ),
            "skills/get": lambda meta: host.session.send_request(
                SkillsGetRequest(params=SkillsGetParams(uri=uri, _meta=meta)), _ANY
            ),
            "resources/directory/read": lambda meta: host.session.send_request(
                DirectoryReadRequest(params=DirectoryReadParams(uri="skill://pdf-tools", _meta=meta)), _ANY
            ),
            "resources/read": lambda meta: host.session.read_resource(uri, meta=meta),
            "resources/list": lambda meta: host.session.list_resources(params=types.PaginatedRequestParams(_meta=meta)),
        }
        refused, served = {}, {}
        for method, call in calls.items():
            with pytest.raises(MCPError) as raised:
                await call(too_long)
            refused[method] = raised.value.error
            served[method] = await call(longest)
        return refused, served

    refused, served = run_host(_url(live_server), token, revision, steps)

    assert (
        set(refused)
        == set(served)
        == {
            "skills/list",
            "skills/get",
            "resources/directory/read",
            "resources/read",
            "resources/list",
        }
    )
    for method, error in refused.items():
        assert error.code == -32602, method
        assert f"_meta['{SUBJECT_META}'] is 201 characters" in error.message and "1 to 200" in error.message
        assert error.data == {"key": SUBJECT_META, "max_length": 200}
    rest = httpx2.get(
        f"{live_server.url}/api/v1/skills/pdf-tools/SKILL.md?subject={'s' * 200}",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert served["skills/get"]["skill"]["_meta"]["io.skill-registry/version"] == int(rest.headers["X-Skill-Version"])
