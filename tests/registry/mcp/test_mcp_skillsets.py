"""`/mcp?skillset=`: a host sees exactly the set's members at its version's numbers (listing,
entries, file reads and the resolve tool), each subject one side of the set's rollout for every
member; an unknown set or label is the endpoint's 404 naming it."""

from __future__ import annotations

import httpx2
import mcp_types as types
import pytest

from registry.models import Skill
from registry.selectors.skillsets import served_skillset
from tests.registry.mcp.test_mcp_endpoint import _ANY, MODERN, SUBJECT_META, Host, SkillsListRequest, run_host
from tests.registry.skillset_fixtures import V1, V2, data_set_publish, set_label

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def data_set():
    data_set_publish()


def _url(live_server, **query) -> str:
    return f"{live_server.url}/mcp?" + "&".join(f"{key}={value}" for key, value in query.items())


def _versions(listing: list[dict]) -> dict[str, int]:
    return {s["uri"].split("/")[2]: s["_meta"]["io.skill-registry/version"] for s in listing}


def test_a_host_on_a_skillset_endpoint_sees_exactly_its_members_at_the_sets_numbers(live_server, make_token, data_set):
    token = make_token(["skills:read"])

    async def steps(host: Host, _):
        listing = await host.all_skills()
        skill_md = await host.read_bytes("skill://pdf-tools/SKILL.md")
        resources = await host.session.list_resources()
        called = await host.session.call_tool("resolve", {"query": "data tools"})
        return listing, skill_md, resources, called

    listing, skill_md, resources, called = run_host(_url(live_server, skillset="data"), token, MODERN, steps)

    # The set's production (v1): pdf-tools 1 although pdf-tools' own production is 2; no web-fetch.
    assert _versions(listing) == V1
    assert skill_md == Skill.objects.get(name="pdf-tools").versions.get(number=1).skill_md.encode()
    assert sorted(r.name for r in resources.resources) == ["pdf-tools", "xlsx-tools"]
    assert not called.is_error
    answer = called.structured_content
    assert {s["name"]: s["version"] for s in answer["skills"]} == V1
    assert answer["skillset"]["version"] == 1 and answer["skillset"]["members"] == V1

    # The set's label moves: so does every member, at once.
    set_label("data", "production", 2)
    listing = run_host(_url(live_server, skillset="data"), token, MODERN, lambda host, _: host.all_skills())
    assert _versions(listing) == V2
    latest = run_host(_url(live_server, skillset="data", label="latest"), token, MODERN, lambda h, _: h.all_skills())
    assert _versions(latest) == V2


def test_each_subject_gets_one_side_of_the_sets_rollout_for_every_member(live_server, make_token, data_set):
    set_label("data", "production", 1, canary=2, weight=50)
    token = make_token(["skills:read"])
    subjects = [f"user-{n}" for n in range(16)]

    async def steps(host: Host, _):
        seen = {}
        for subject in subjects:
            request = SkillsListRequest(params=types.PaginatedRequestParams(_meta={SUBJECT_META: subject}))
            listing = (await host.session.send_request(request, _ANY))["skills"]
            called = await host.session.call_tool("resolve", {"query": "data", "context": {"subject": subject}})
            seen[subject] = listing, called.structured_content
        return seen

    seen = run_host(_url(live_server, skillset="data"), token, MODERN, steps)
    sides = set()
    for subject, (listing, answer) in seen.items():
        expected = served_skillset("data", "production", subject=subject)
        assert _versions(listing) == expected.members, subject
        assert {s["_meta"]["io.skill-registry/canary"] for s in listing} == {expected.canary}
        assert {s["name"]: s["version"] for s in answer["skills"]} == expected.members
        sides.add(expected.version)
    assert sides == {1, 2}
    # The endpoint's ?subject= is the default subject of the listing and of the resolve tool.
    subject = next(s for s in subjects if served_skillset("data", "production", subject=s).canary)

    async def by_endpoint(host: Host, _):
        return await host.all_skills(), (await host.session.call_tool("resolve", {"query": "x"})).structured_content

    listing, answer = run_host(_url(live_server, skillset="data", subject=subject), token, MODERN, by_endpoint)
    assert _versions(listing) == V2 and answer["skillset"]["canary"] is True


@pytest.mark.parametrize(
    ("query", "status", "named"),
    [
        ("skillset=nope", 404, "nope"),
        ("skillset=data&label=staging", 404, "staging"),
        ("skillset=" + "x" * 129, 400, "skillset"),
    ],
)
def test_an_unknown_set_or_label_is_a_404_naming_it(live_server, make_token, data_set, query, status, named):
    headers = {
        "Authorization": f"Bearer {make_token(['skills:read'])}",
        "Accept": "application/json, text/event-stream",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}

    response = httpx2.post(f"{live_server.url}/mcp?{query}", json=body, headers=headers)

    assert response.status_code == status, response.text
    assert named in response.text
