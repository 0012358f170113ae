"""The rules console through Django's test client: list, editor with the live RE2 check, writes
through the audited services, roles, CSRF, the tester (the API's resolve), bounded queries."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils.html import escape

from registry.models import AuditLog, ForceIncludeRule
from registry.services.audit import Actor
from registry.services.rules import rule_create
from tests.factories import publish

pytestmark = pytest.mark.django_db


def make_rule(name: str = "pdf-rule", **fields) -> ForceIncludeRule:
    values = {"pattern": r"\bpdf\b", "skills": ["pdf-tools"], "instruction": "Read the PDF skill first."}
    return rule_create(name=name, **(values | fields)).rule


def rule_form(**fields) -> dict:
    form = {
        "name": "pdf-rule",
        "pattern": r"\bpdfs?\b",
        "skills": ["pdf-tools"],
        "other_skills": "",
        "instruction": "Use the pdf-tools skill.",
        "auto_invoke_tool": "",
        "auto_invoke_arguments": "",
        "priority": "5",
        "tools": "",
        "enabled": "on",
    }
    return form | fields


def pages() -> list[str]:
    rule = make_rule()
    return ["/rules/", "/rules/new/", f"/rules/{rule.pk}/", "/rules/test/", "/rules/test/?query=a+pdf+please"]


def test_logged_out_every_rules_page_redirects_to_login(client):
    for url in pages():
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/login/")


def test_an_author_sees_every_rules_page(author_client):
    publish("pdf-tools")
    for url in pages():
        assert author_client.get(url).status_code == 200, url


def test_the_list_shows_priority_pattern_skills_and_their_state(author_client):
    publish("pdf-tools")
    make_rule(priority=7)
    make_rule("later-rule", pattern="later", skills=["not-published-yet"], enabled=False)

    html = author_client.get("/rules/").content.decode()

    assert "pdf-rule" in html and r"\bpdf\b" in html and ">7<" in html
    assert "not-published-yet" in html and "(missing)" in html
    assert "New rule" in html and "disabled" in html
    assert html.index("pdf-rule") < html.index("later-rule")  # highest priority first


def test_an_empty_list_says_what_to_do_next(author_client):
    html = author_client.get("/rules/").content.decode()
    assert "No rules yet" in html and "Create a rule" in html


def test_an_author_creates_a_rule_and_it_is_audited_as_a_console_write(author_client, author):
    publish("pdf-tools")

    response = author_client.post("/rules/new/", rule_form())

    rule = ForceIncludeRule.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/rules/{rule.pk}/"
    assert (rule.pattern, rule.skills, rule.priority, rule.enabled) == (r"\bpdfs?\b", ["pdf-tools"], 5, True)
    audit = AuditLog.objects.get(action="rule.create")
    assert audit.actor == author and audit.via == "console"


def test_a_rule_may_name_skills_not_published_yet_with_a_warning(author_client):
    response = author_client.post(
        "/rules/new/", rule_form(skills=[], other_skills="release-notes, changelog"), follow=True
    )

    assert ForceIncludeRule.objects.get().skills == ["release-notes", "changelog"]
    assert "No skill named &#x27;release-notes&#x27; exists yet" in response.content.decode()


def test_auto_invoke_is_saved_from_a_tool_and_json_arguments(author_client):
    arguments = '{"skill_name": "pdf-tools", "args": ["{{query}}"]}'
    author_client.post("/rules/new/", rule_form(auto_invoke_tool="run_skill", auto_invoke_arguments=arguments))

    assert ForceIncludeRule.objects.get().auto_invoke == {
        "tool": "run_skill",
        "arguments": {"skill_name": "pdf-tools", "args": ["{{query}}"]},
    }


@pytest.mark.parametrize(
    ("fields", "status", "words"),
    [
        ({"pattern": r"(a)\1"}, 400, "Backreferences"),
        ({"pattern": r"x(?=y)"}, 400, "Lookahead"),
        ({"pattern": ""}, 400, "empty"),
        ({"priority": "high"}, 400, "whole number"),
        ({"auto_invoke_tool": "run_skill", "auto_invoke_arguments": "{not json"}, 400, "Not valid JSON"),
        ({"auto_invoke_arguments": '{"a": 1}'}, 400, "Name the tool"),
        ({"skills": ["<script>"]}, 400, "Not valid skill names"),
        ({"skills": [], "instruction": ""}, 400, "must do something"),
        ({"name": ""}, 400, "needs a name"),
    ],
)
def test_a_bad_rule_is_refused_next_to_its_field_with_the_text_kept(author_client, fields, status, words):
    response = author_client.post("/rules/new/", rule_form(**fields))

    html = response.content.decode()
    assert response.status_code == status
    assert words in html
    assert 'value="pdf-rule"' in html or fields.get("name") == ""  # what was typed is kept
    assert not ForceIncludeRule.objects.exists() and not AuditLog.objects.filter(action="rule.create").exists()


def test_a_duplicate_name_is_a_409_conflict(author_client):
    make_rule()
    response = author_client.post("/rules/new/", rule_form())
    assert response.status_code == 409
    assert "already exists" in response.content.decode()


def test_the_pattern_is_checked_as_you_type_with_re2s_message(author_client):
    bad = author_client.post("/rules/check/", {"pattern": r"(a)\1"}, HTTP_HX_REQUEST="true")
    good = author_client.post("/rules/check/", {"pattern": r"\bpdf\b", "sample": "a PDF file"}, HTTP_HX_REQUEST="true")
    miss = author_client.post("/rules/check/", {"pattern": r"\bpdf\b", "sample": "a word file"}, HTTP_HX_REQUEST="true")

    assert (
        bad.status_code == 200 and "RE2 says" in bad.content.decode() and 'id="pattern-check"' in bad.content.decode()
    )
    assert "<mark>PDF</mark>" in good.content.decode() and "characters 2–5" in good.content.decode()
    assert "does <strong>not</strong> match" in miss.content.decode()
    assert "<html" not in good.content.decode()  # only the fragment


def test_a_slow_pattern_is_refused_by_the_live_check_as_by_a_save(author_client, settings):
    settings.RULE_PATTERN_PROBE_MS = 0  # every pattern is "too slow": the check runs the same probe as a save
    response = author_client.post("/rules/check/", {"pattern": "abc"}, HTTP_HX_REQUEST="true")
    assert "too slow to match" in response.content.decode()


def test_an_author_edits_a_rule_changing_only_what_changed(author_client, author):
    rule = make_rule()
    form = rule_form(name="pdf-rule", pattern=r"\bpdf\b", instruction="Read the PDF skill first.", priority="9")

    response = author_client.post(f"/rules/{rule.pk}/", form)

    rule.refresh_from_db()
    assert response.status_code == 302 and rule.priority == 9
    audit = AuditLog.objects.get(action="rule.update")
    assert audit.before == {"priority": 0} and audit.after == {"priority": 9} and audit.via == "console"


def test_enable_disable_and_delete_with_confirmation(author_client):
    rule = make_rule()

    author_client.post(f"/rules/{rule.pk}/enabled/", {"enabled": "0", "next": "/rules/"})
    rule.refresh_from_db()
    assert not rule.enabled

    confirm_page = author_client.post(f"/rules/{rule.pk}/delete/")
    assert confirm_page.status_code == 200 and "Confirm" in confirm_page.content.decode()
    assert ForceIncludeRule.objects.filter(pk=rule.pk).exists()  # nothing deleted before Confirm

    response = author_client.post(f"/rules/{rule.pk}/delete/", {"confirm": "1"})
    assert response.status_code == 302 and not ForceIncludeRule.objects.exists()
    assert AuditLog.objects.filter(action="rule.delete", object_repr="pdf-rule").exists()


@pytest.mark.parametrize("elsewhere", ["//evil.example/", "/\\evil.example/", "/\\/evil.example/"])
def test_next_never_leaves_the_site(author_client, elsewhere):
    rule = make_rule()
    response = author_client.post(f"/rules/{rule.pk}/enabled/", {"enabled": "0", "next": elsewhere})
    assert response["Location"] == "/rules/"


def test_an_analyst_reads_rules_but_sees_no_write_controls(analyst_client):
    rule = make_rule()

    listing = analyst_client.get("/rules/").content.decode()
    page = analyst_client.get(f"/rules/{rule.pk}/").content.decode()

    assert "pdf-rule" in listing and "New rule" not in listing and "Disable" not in listing
    assert r"\bpdf\b" in page and '<form method="post"' not in page.split("</header>")[1]
    assert "Save rule" not in page and "Delete" not in page


def test_every_rules_write_refuses_an_analyst_with_403(analyst_client):
    rule = make_rule()
    writes = [
        ("get", "/rules/new/", {}),
        ("post", "/rules/new/", rule_form(name="other")),
        ("post", f"/rules/{rule.pk}/", rule_form(priority="99")),
        ("post", f"/rules/{rule.pk}/enabled/", {"enabled": "0"}),
        ("post", f"/rules/{rule.pk}/delete/", {"confirm": "1"}),
        ("post", "/rules/check/", {"pattern": "x"}),
    ]
    for method, url, data in writes:
        assert getattr(analyst_client, method)(url, data).status_code == 403, url
    rule.refresh_from_db()
    assert ForceIncludeRule.objects.count() == 1 and rule.enabled and rule.priority == 0


def test_rule_writes_need_the_csrf_token(author):
    rule = make_rule()
    client = Client(enforce_csrf_checks=True)
    client.force_login(author)

    assert client.post("/rules/new/", rule_form(name="other")).status_code == 403
    assert client.post(f"/rules/{rule.pk}/delete/", {"confirm": "1"}).status_code == 403
    assert client.post(f"/rules/{rule.pk}/enabled/", {"enabled": "0"}).status_code == 403
    assert ForceIncludeRule.objects.count() == 1


def test_unknown_rules_are_404(author_client):
    assert author_client.get("/rules/999999/").status_code == 404
    assert author_client.post("/rules/999999/delete/", {"confirm": "1"}).status_code == 404


def test_the_tester_shows_what_the_api_answers(author_client, api):
    publish("pdf-tools", description="Extract text and tables from PDF files.")
    publish("sql-query", description="Write SQL.")
    make_rule(auto_invoke={"tool": "run_skill", "arguments": {"args": ["{{query}}"]}})
    make_rule("quiet-rule", pattern="never-matches-this", skills=["sql-query"])
    query = "summarise this pdf please"

    html = author_client.get("/rules/test/", {"query": query}).content.decode()
    expected = api.post("/api/v1/rules/test", {"query": query}, format="json").json()

    assert [rule["name"] for rule in expected["fired"]] == ["pdf-rule"]
    assert "pdf-rule" in html and escape(expected["fired"][0]["why"]) in html
    assert "Read the PDF skill first." in html
    assert expected["prompt_block"].replace("<", "&lt;").replace(">", "&gt;") in html  # the exact block
    assert "&quot;summarise this pdf please&quot;" in html  # auto_invoke with {{query}} substituted
    assert "quiet-rule" in html.split("Rules that do not fire")[1]


def test_the_tester_answers_htmx_with_its_fragment_and_bad_input_with_400(author_client):
    fragment = author_client.get("/rules/test/", {"query": "x"}, HTTP_HX_REQUEST="true")
    bad_label = author_client.get("/rules/test/", {"query": "x", "label": "NOT VALID"})
    too_long = author_client.get("/rules/test/", {"query": "x" * 100_001})

    assert fragment.status_code == 200 and "<html" not in fragment.content.decode()
    assert bad_label.status_code == 400 and "label" in bad_label.content.decode()
    assert too_long.status_code == 400


def test_an_analyst_may_use_the_tester(analyst_client):
    make_rule()
    assert "pdf-rule" in analyst_client.get("/rules/test/", {"query": "a pdf"}).content.decode()


@pytest.fixture
def crowded_rules():
    for number in range(30):
        publish(f"skill-{number:02d}")
    for number in range(25):
        rule_create(
            name=f"rule-{number:02d}",
            pattern=f"word{number}|shared",
            skills=[f"skill-{number:02d}", "missing-skill"],
            instruction=f"Instruction {number}.",
            actor=Actor(user=None, via="test"),
        )
    return ForceIncludeRule.objects.order_by("pk").first()


@pytest.mark.parametrize(
    ("url", "max_queries"),
    [("/rules/", 8), ("/rules/new/", 8), ("/rules/{id}/", 9), ("/rules/test/?query=shared+words", 9)],
)
def test_rules_pages_do_a_bounded_number_of_queries(
    author_client, crowded_rules, django_assert_max_num_queries, url, max_queries
):
    url = url.replace("{id}", str(crowded_rules.pk))
    author_client.get(url)  # warm per-process caches (session, generation, snapshot)

    with django_assert_max_num_queries(max_queries):
        assert author_client.get(url).status_code == 200


@pytest.mark.parametrize(
    "fields",
    [
        {"instruction": "nul \x00 inside"},
        {"name": "nul \x00 name"},
        {"pattern": "nul\x00"},
        {"priority": "99999999999999999999"},
        {"auto_invoke_tool": "run_skill", "auto_invoke_arguments": '{"a": "\\u0000"}'},
        {"auto_invoke_tool": "run_skill", "auto_invoke_arguments": '{"a": "\\ud800"}'},
        {"auto_invoke_tool": "run_skill", "auto_invoke_arguments": '{"a": NaN}'},
        {"auto_invoke_tool": "run_skill", "auto_invoke_arguments": "[" * 5000 + "]" * 5000},
        {"auto_invoke_tool": "run_skill", "auto_invoke_arguments": "[1, 2]"},
        {"auto_invoke_tool": "x" * 500},
        {"tools": "ok, b@d"},
        {"other_skills": "x" * 5000},
    ],
)
def test_hostile_rule_input_is_a_clear_400_never_a_500(author_client, fields):
    response = author_client.post("/rules/new/", rule_form(**fields))

    assert response.status_code == 400, response.content.decode()[:500]
    assert "Not saved" in response.content.decode()
    assert not ForceIncludeRule.objects.exists()


@pytest.mark.parametrize(
    "url",
    ["/rules/99999999999999999999/", "/rules/0/", "/rules/-1/", "/rules/test/?query=%00", "/rules/test/?label=%00"],
)
def test_odd_rule_addresses_answer_without_a_500(author_client, url):
    assert author_client.get(url).status_code in (200, 400, 404)
