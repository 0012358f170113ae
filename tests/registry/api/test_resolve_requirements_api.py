"""`POST /resolve` and `metadata.requires`: the skills a consumer's tools and MCP servers cannot
serve are left out (and explained on request), the skills an offered skill requires come with it
(`required_by`), at the request's label or the version pinned, within the prompt budget."""

from __future__ import annotations

import pytest

from registry.models import Skill
from registry.selectors.resolve import registry_snapshot
from registry.services.labels import label_move
from tests.factories import publish

pytestmark = pytest.mark.django_db


# pdf-tools, which needs Bash, for a consumer without it: on every surface that explains.
PDF_TOOLS_LEFT_OUT = {
    "name": "pdf-tools",
    "version": 1,
    "missing": ["tool:Bash"],
    "reasons": ["requires tool:Bash, which is not among the tools the consumer has"],
}


def requires(text: str) -> str:
    """A SKILL.md `metadata` map holding `requires` (flow style, as make_skill_md writes fields)."""
    return f'{{requires: "{text}"}}'


@pytest.fixture
def catalog(db):
    """pdf-tools needs Bash; tax-forms requires pdf-tools and the acrobat server; github-review
    needs the github server and Read; meeting-notes needs nothing; unit-convert has two versions
    (v1 at `stable`), pinned by converter-v1 and by label in converter-stable."""
    publish("pdf-tools", description="Extracts text from documents.", metadata=requires("tool:Bash"))
    publish(
        "tax-forms",
        description="Fills tax forms for a household.",
        metadata=requires("skill:pdf-tools, mcp:acrobat"),
    )
    publish("github-review", description="Reviews pull requests.", metadata=requires("mcp:github, tool:Read"))
    publish("meeting-notes", description="Writes meeting notes.")
    first = publish("unit-convert", description="Converts measurement units.")
    publish("unit-convert", description="Converts measurement units, v2.")
    label_move(skill=first.version.skill, label="stable", version_number=1)
    publish("converter-v1", description="Rewrites recipes in grams.", metadata=requires("skill:unit-convert@1"))
    publish(
        "converter-stable", description="Plans hiking routes in metres.", metadata=requires("skill:unit-convert@stable")
    )


def resolve(api, body: dict, path: str = "/api/v1/resolve"):
    response = api.post(path, body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def names(body: dict) -> list[str]:
    return [skill["name"] for skill in body["skills"]]


def test_the_requirements_are_parsed_into_the_snapshot_once_per_version(catalog):
    snapshot = registry_snapshot()
    assert [str(r) for r in snapshot.by_name["tax-forms"].requires] == ["skill:pdf-tools", "mcp:acrobat"]
    assert snapshot.by_name["meeting-notes"].requires == ()
    # Worked out once per snapshot: every request at this generation reads the same object.
    assert registry_snapshot().requirements is snapshot.requirements


def test_a_consumer_that_says_nothing_is_offered_everything(api, catalog):
    body = resolve(api, {"query": ""})
    assert len(body["skills"]) == 7 and body["truncated"]["total"] == 7
    assert "left_out" not in body
    assert all(skill["required_by"] == [] for skill in body["skills"])


def test_skills_needing_a_tool_or_server_the_consumer_lacks_are_left_out(api, catalog):
    body = resolve(api, {"query": "", "context": {"tools": ["Read"], "mcp_servers": ["github"]}})

    # pdf-tools needs Bash; tax-forms needs acrobat, and Bash through pdf-tools.
    assert set(names(body)) == {"github-review", "meeting-notes", "unit-convert", "converter-v1", "converter-stable"}
    assert body["truncated"]["total"] == 5
    assert "pdf-tools" not in body["prompt_block"] and "tax-forms" not in body["prompt_block"]
    assert "left_out" not in body  # the reasons only on request

    # Having them, the consumer is offered them; an empty list says it has none.
    everything = resolve(api, {"context": {"tools": ["Read", "Bash"], "mcp_servers": ["github", "acrobat"]}})
    assert len(everything["skills"]) == 7
    nothing = resolve(api, {"context": {"tools": [], "mcp_servers": []}})
    assert set(names(nothing)) == {"meeting-notes", "unit-convert", "converter-v1", "converter-stable"}


def test_only_the_list_the_consumer_gives_is_checked(api, catalog):
    # Tools only: mcp: requirements are not checked, so github-review (Read + github) stays.
    body = resolve(api, {"context": {"tools": ["Read"]}})
    assert "github-review" in names(body)
    assert "pdf-tools" not in names(body) and "tax-forms" not in names(body)
    servers_only = resolve(api, {"context": {"mcp_servers": ["acrobat"]}})
    assert {"pdf-tools", "tax-forms"} <= set(names(servers_only)) and "github-review" not in names(servers_only)


def test_names_are_compared_without_case_and_a_tool_pattern_needs_its_tool(api, db):
    publish("git-commit", description="Commits staged work.", metadata=requires("tool:Bash(git commit:*), mcp:GitHub"))
    assert names(resolve(api, {"context": {"tools": ["bash"], "mcp_servers": ["github"]}})) == ["git-commit"]
    assert names(resolve(api, {"context": {"tools": ["Read"], "mcp_servers": ["github"]}})) == []


@pytest.mark.parametrize("how", ["body", "query"])
def test_explain_lists_the_skills_left_out_and_why(api, catalog, how):
    body = {"context": {"tools": ["Read"], "mcp_servers": ["github"]}}
    if how == "body":
        found = resolve(api, {**body, "explain": True})
    else:
        found = resolve(api, body, path="/api/v1/resolve?explain=true")

    assert found["left_out"] == [
        PDF_TOOLS_LEFT_OUT,
        {
            "name": "tax-forms",
            "version": 1,
            "missing": ["mcp:acrobat", "tool:Bash"],
            "reasons": [
                "requires mcp:acrobat, which is not among the MCP servers the consumer has",
                "requires skill:pdf-tools, which requires tool:Bash, which is not among the tools the consumer has",
            ],
        },
    ]


def test_a_forced_skill_the_consumer_cannot_use_is_left_out_with_a_warning(api, catalog):
    body = resolve(api, {"forced_skill": "tax-forms", "context": {"mcp_servers": ["acrobat"], "tools": []}})
    assert "tax-forms" not in names(body) and body["forced_skill"] is None
    assert body["warnings"] == [
        "The forced skill 'tax-forms' is left out: it requires skill:pdf-tools, which requires tool:Bash, "
        "which is not among the tools the consumer has."
    ]


def test_a_matched_skill_brings_the_skills_it_requires_marked_with_why(api, catalog):
    body = resolve(api, {"query": "fill my tax forms", "max_skills": 3})

    # tax-forms matches; pdf-tools comes right after it (before unmatched skills listed by name).
    assert names(body)[:2] == ["tax-forms", "pdf-tools"]
    offered = {skill["name"]: skill for skill in body["skills"]}
    assert offered["pdf-tools"]["required_by"] == ["tax-forms"] and offered["pdf-tools"]["score"] == 0.0
    assert offered["tax-forms"]["required_by"] == [] and offered["tax-forms"]["score"] > 0
    assert "<name>pdf-tools</name>" in body["prompt_block"]


def test_a_forced_skill_brings_what_it_requires(api, catalog):
    body = resolve(api, {"query": "", "forced_skill": "tax-forms", "max_skills": 2})
    assert names(body) == ["tax-forms", "pdf-tools"]
    assert body["skills"][1]["required_by"] == ["tax-forms"] and body["skills"][1]["forced_by"] == []


def test_required_skills_are_offered_at_the_version_or_label_pinned(api, catalog):
    pinned = resolve(api, {"query": "rewrite recipes", "max_skills": 2})
    assert [(s["name"], s["version"], s["required_by"]) for s in pinned["skills"]] == [
        ("converter-v1", 1, []),
        ("unit-convert", 1, ["converter-v1"]),  # its newest version is 2
    ]
    by_label = resolve(api, {"query": "plan hiking routes", "max_skills": 2})
    assert [(s["name"], s["version"]) for s in by_label["skills"]] == [("converter-stable", 1), ("unit-convert", 1)]
    # Unpinned, a request reads unit-convert at its own label: the newest version.
    plain = resolve(api, {"query": "convert measurement units", "max_skills": 1})
    assert [(s["name"], s["version"]) for s in plain["skills"]] == [("unit-convert", 2)]


def test_a_required_skill_is_offered_at_the_requests_label(api, catalog):
    for name in ("tax-forms", "pdf-tools"):
        label_move(skill=Skill.objects.get(name=name), label="staging", version_number=1)
    publish("pdf-tools", description="Extracts text, v2.", metadata=requires("tool:Bash"))
    body = resolve(api, {"query": "tax forms", "label": "staging"})
    assert [(s["name"], s["version"], s["required_by"]) for s in body["skills"]] == [
        ("tax-forms", 1, []),
        ("pdf-tools", 1, ["tax-forms"]),
    ]
    latest = resolve(api, {"query": "tax forms", "max_skills": 2})
    assert [(s["name"], s["version"]) for s in latest["skills"]] == [("tax-forms", 1), ("pdf-tools", 2)]


def test_required_skills_count_in_the_prompt_budget(api, catalog):
    body = resolve(api, {"query": "fill my tax forms", "max_skills": 1})
    assert names(body) == ["tax-forms"]
    assert body["truncated"] == {"included": 1, "total": 7, "described": 1, "truncated": True}


@pytest.mark.parametrize(
    "body, field",
    [
        ({"context": {"tools": "Bash"}}, "context.tools"),
        ({"context": {"tools": [1]}}, "context.tools"),
        ({"context": {"tools": ["x" * 201]}}, "context.tools"),
        ({"context": {"tools": [""]}}, "context.tools"),
        ({"context": {"mcp_servers": [f"s{n}" for n in range(501)]}}, "context.mcp_servers"),
        ({"context": {"mcp_servers": {"github": True}}}, "context.mcp_servers"),
        ({"explain": "perhaps"}, "explain"),
    ],
)
def test_bad_entitlements_are_a_400_naming_the_field(api, catalog, body, field):
    response = api.post("/api/v1/resolve", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["detail"] or field in str(response.json()["fields"])
