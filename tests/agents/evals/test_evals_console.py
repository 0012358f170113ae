"""The evals console with Django's client: editing a suite through its row form (each save a
revision, audited), problems shown in place naming the case and field, evals.json import and
export, who may do what, the run page's poll (286 once the run ends), the compare view, "Save as
eval case" on a playground turn, and each version's eval result on the skill page.

Runs here are written through the registry's services (the runner's own tests run them on real
workers); what these tests check is what the pages show of them."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from agents.models import AgentTurn, TraceEvent, TurnOrigin, TurnStatus
from registry.models import AuditLog, EvalCaseResult, EvalRun
from registry.roles import ANALYST, AUTHOR
from registry.selectors import skill_get
from registry.selectors.evals import eval_run_results, eval_suite_revision
from registry.services.evals import eval_result_grade, eval_run_create, eval_suite_replace
from tests.agents.evals.eval_runs import SUITE, graded_run
from tests.factories import publish, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def skill():
    publish("code-review", description="Review code for bugs and security problems.")
    return skill_get(name="code-review")


def console(role: str) -> Client:
    client = Client()
    client.force_login(user_with_role(role))
    return client


def text(response) -> str:
    return response.content.decode()


def cases_of(skill) -> list[dict]:
    revision = eval_suite_revision(skill=skill)
    return revision.cases if revision else []


def test_an_author_adds_edits_and_deletes_cases_each_save_a_revision(skill):
    author = console(AUTHOR)
    page = author.get("/skills/code-review/evals/")
    assert page.status_code == 200 and "No eval cases yet" in text(page)

    added = author.post(
        "/skills/code-review/evals/cases/",
        {"id": "t-pr", "kind": "trigger", "query": "review this PR", "should_trigger": "on"},
        HTTP_HX_REQUEST="true",
    )
    assert added.status_code == 200 and added["HX-Retarget"] == "#suite"
    assert "Added case t-pr: suite revision 1." in text(added)
    assert cases_of(skill) == [{"id": "t-pr", "kind": "trigger", "query": "review this PR", "should_trigger": True}]

    form = author.get("/skills/code-review/evals/?edit=t-pr", HTTP_HX_REQUEST="true")
    assert 'name="original_id" value="t-pr"' in text(form) and "review this PR" in text(form)
    author.post(
        "/skills/code-review/evals/cases/",
        {
            "original_id": "t-pr",
            "id": "k-pr",
            "kind": "task",
            "prompt": "Review the PR",
            "expect": '[{"max_steps": 4}]',
        },
    )
    assert cases_of(skill) == [{"id": "k-pr", "kind": "task", "prompt": "Review the PR", "expect": [{"max_steps": 4}]}]

    deleted = author.post("/skills/code-review/evals/cases/delete/", {"id": "k-pr"}, follow=True)
    assert "Deleted case k-pr: suite revision 3." in text(deleted)
    assert cases_of(skill) == []
    actions = list(AuditLog.objects.filter(action="eval_suite.replace").values_list("after", flat=True))
    assert sorted(after["revision"] for after in actions) == [1, 2, 3]


def row_form_fields(page: str) -> dict[str, str]:
    """What the case form on `page` posts as it is shown: its inputs, checked boxes and textareas."""
    form_html = re.search(r'<form class="case-form.*?</form>', page, re.S).group(0)
    fields = {}
    for tag in re.findall(r"<input [^>]*>", form_html):
        name, value = re.search(r'name="([^"]+)"', tag), re.search(r'value="([^"]*)"', tag)
        if name and ('type="checkbox"' not in tag or " checked" in tag):
            fields[name.group(1)] = html.unescape(value.group(1)) if value else "on"
    for name, text in re.findall(r'<textarea name="([^"]+)"[^>]*>(.*?)</textarea>', form_html, re.S):
        fields[name] = html.unescape(text)
    fields["kind"] = re.search(r'<option value="([a-z]+)" selected>', form_html).group(1)
    return fields


@pytest.mark.parametrize("htmx", [True, False], ids=["row-form", "page-form"])
def test_editing_a_case_in_the_table_keeps_its_script(skill, htmx):
    """Given a trigger and a task case with scripts, when an author opens each in the table,
    changes its text and saves the form as shown, then each keeps its script; a script edited in
    the form is saved as edited, and one cleared in the form is gone."""
    script = [{"tool_calls": [{"name": "read_skill", "arguments": {"skill_name": "code-review"}}]}, {"content": "ok"}]
    trigger = {"id": "t-pr", "kind": "trigger", "query": "review this PR", "should_trigger": True, "script": script}
    task = {"id": "k-sql", "kind": "task", "prompt": "Review app.py", "expect": [{"max_steps": 4}], "script": script}
    eval_suite_replace(skill=skill, document={"cases": [trigger, task]})
    author, headers = console(AUTHOR), {"HTTP_HX_REQUEST": "true"} if htmx else {}

    def save(case_id: str, **changes: str) -> dict:
        form = row_form_fields(text(author.get(f"/skills/code-review/evals/?edit={case_id}", **headers)))
        saved = author.post("/skills/code-review/evals/cases/", {**form, **changes}, **headers)
        assert saved.status_code == (200 if htmx else 302), text(saved)
        return next(case for case in cases_of(skill) if case["id"] == changes.get("id", case_id))

    assert save("t-pr", query="review this pull request") == {**trigger, "query": "review this pull request"}
    assert save("k-sql", prompt="Review app.py for SQL injection") == {
        **task,
        "prompt": "Review app.py for SQL injection",
    }
    assert save("t-pr", id="t-pull-request")["script"] == script  # renamed in place
    assert save("t-pull-request", script='[{"content": "edited"}]')["script"] == [{"content": "edited"}]
    assert "script" not in save("t-pull-request", script="")
    bad = {"original_id": "k-sql", "id": "k-sql", "kind": "trigger", "query": "q", "script": "[{oops"}
    refused = author.post("/skills/code-review/evals/cases/", bad, **headers)
    assert refused.status_code == 400 and 'data-field="script"' in text(refused)


def test_a_bad_case_comes_back_in_its_row_naming_the_field(skill):
    author = console(AUTHOR)
    eval_suite_replace(skill=skill, document=SUITE)
    not_json = author.post(
        "/skills/code-review/evals/cases/",
        {"original_id": "k-sql", "id": "k-sql", "kind": "task", "prompt": "Review", "expect": "[{oops"},
        HTTP_HX_REQUEST="true",
    )
    assert not_json.status_code == 400
    assert 'data-field="expect"' in text(not_json) and 'name="original_id" value="k-sql"' in text(not_json)
    # The service's own rule (a check it does not know), named by case and field.
    unknown_check = author.post(
        "/skills/code-review/evals/cases/",
        {"id": "k-new", "kind": "task", "prompt": "Review", "expect": '[{"smells_nice": true}]'},
        HTTP_HX_REQUEST="true",
    )
    assert unknown_check.status_code == 400 and 'data-field="expect"' in text(unknown_check)
    assert "k-new" in text(unknown_check)
    duplicate = author.post(
        "/skills/code-review/evals/cases/", {"id": "t-pr", "kind": "trigger", "query": "again"}, HTTP_HX_REQUEST="true"
    )
    assert duplicate.status_code == 400 and 'data-field="id"' in text(duplicate)
    assert "earlier case" in text(duplicate)
    assert eval_suite_revision(skill=skill).number == 1  # nothing saved


def test_import_reads_ours_and_skill_creators_and_names_a_bad_case(skill):
    author = console(AUTHOR)
    ours = SimpleUploadedFile("evals.json", json.dumps(SUITE).encode(), content_type="application/json")
    imported = author.post("/skills/code-review/evals/import/", {"evals_file": ours}, follow=True)
    assert "Imported 3 cases from evals.json: suite revision 1." in text(imported)
    creator = {
        "skill_name": "code-review",
        "evals": [{"id": 1, "prompt": "Review app.py", "expected_output": "", "expectations": ["Names the bug."]}],
    }
    upload = SimpleUploadedFile("evals.json", json.dumps(creator).encode())
    author.post("/skills/code-review/evals/import/", {"evals_file": upload})
    assert [case["expect"] for case in cases_of(skill)] == [[{"judge": "Names the bug."}]]

    bad = {"cases": [SUITE["cases"][0], {"id": "t-x", "kind": "trigger", "query": "", "should_trigger": True}]}
    refused = author.post(
        "/skills/code-review/evals/import/", {"evals_file": SimpleUploadedFile("e.json", json.dumps(bad).encode())}
    )
    assert refused.status_code == 400 and "Case &#x27;t-x&#x27;: query is required" in text(refused)
    not_json = author.post("/skills/code-review/evals/import/", {"evals_file": SimpleUploadedFile("e.json", b"{nope")})
    assert not_json.status_code == 400 and "Not imported" in text(not_json)

    exported = author.get("/skills/code-review/evals/evals.json")
    assert json.loads(exported.content) == {"cases": cases_of(skill)}
    assert "evals" in json.loads(author.get("/skills/code-review/evals/evals.json?format=skill-creator").content)


def test_an_analyst_reads_the_suite_and_runs_but_changes_nothing(skill):
    eval_suite_replace(skill=skill, document=SUITE)
    analyst = console(ANALYST)
    page = analyst.get("/skills/code-review/evals/")
    assert page.status_code == 200 and "t-poem" in text(page)
    assert "Add trigger case" not in text(page) and "Start run" not in text(page)
    assert analyst.get("/skills/code-review/evals/?edit=t-pr").status_code == 200  # no form, just the page
    assert analyst.post("/skills/code-review/evals/cases/", {"id": "x", "kind": "trigger"}).status_code == 403
    assert analyst.post("/skills/code-review/evals/cases/delete/", {"id": "t-pr"}).status_code == 403
    assert analyst.post("/skills/code-review/evals/runs/", {"model": "offline"}).status_code == 403
    assert eval_suite_revision(skill=skill).number == 1
    assert analyst.get("/skills/no-such-skill/evals/").status_code == 404


def field_error(page: str, field: str) -> str:
    found = re.search(rf'<div class="field-error" data-field="{field}">(.*?)</div>', page, re.S)
    return html.unescape(found.group(1)) if found else ""


def test_the_run_form_shows_each_field_s_problem_as_the_api_words_it(skill, make_token):
    eval_suite_replace(skill=skill, document=SUITE)
    author = console(AUTHOR)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['skills:read', 'agent:run'])}")
    runs = "/api/v1/skills/code-review/evals/runs"

    refused = author.post(
        "/skills/code-review/evals/runs/", {"target": "version", "version": "x", "model": "scripted", "repeat": "99"}
    )
    answered = api.post(runs, {"version": "x", "model": "scripted", "repeat": 99}, format="json")
    assert refused.status_code == answered.status_code == 400
    for field in ("version", "repeat"):
        assert field_error(text(refused), field) == " ".join(answered.json()["fields"][field])

    # The model is the service's to judge (AGENT_MODELS), for the form as for the API.
    refused = author.post("/skills/code-review/evals/runs/", {"target": "label", "model": "gpt-nope", "repeat": "1"})
    answered = api.post(runs, {"model": "gpt-nope"}, format="json")
    assert refused.status_code == answered.status_code == 400
    assert field_error(text(refused), "model") == answered.json()["detail"] and "gpt-nope" in answered.json()["detail"]

    no_version = author.post("/skills/code-review/evals/runs/", {"target": "version", "model": "scripted"})
    assert no_version.status_code == 400 and field_error(text(no_version), "version") == "Choose a version."
    assert not EvalRun.objects.exists()


def test_the_run_page_polls_until_the_run_ends_and_links_each_case_to_its_trace(skill):
    eval_suite_replace(skill=skill, document=SUITE)
    analyst = console(ANALYST)
    queued = eval_run_create(skill=skill, version=skill.versions.get(number=1), model="scripted")
    page = analyst.get(f"/evals/runs/{queued.pk}/")
    assert page.status_code == 200 and 'hx-trigger="every 1s"' in text(page)
    assert analyst.get(f"/evals/runs/{queued.pk}/live/", HTTP_HX_REQUEST="true").status_code == 200

    run = graded_run(skill, outcomes={"t-pr": True, "t-poem": True, "k-sql": False})
    live = analyst.get(f"/evals/runs/{run.pk}/live/", HTTP_HX_REQUEST="true")
    assert live.status_code == 286 and "hx-trigger" not in text(live)
    page = text(analyst.get(f"/evals/runs/{run.pk}/"))
    for result in eval_run_results(run=run):
        assert f'href="/turns/{result.turn_id}/"' in page
    trace = text(analyst.get(f"/turns/{result.turn_id}/"))
    assert f'href="/evals/runs/{run.pk}/"' in trace  # and back from the trace to its run
    summary = page.split('id="run-summary"')[1].split("</section>")[0]
    # t-pr triggered as it should, t-poem stayed quiet as it should: F1 1.00.
    assert 'title="true positives">1<' in summary and 'title="true negatives">1<' in summary
    assert "1.00" in summary and "0 passed · 1 failed" in summary
    # The suite's run list leads from a pass rate to the cases behind it.
    runs = text(analyst.get("/skills/code-review/evals/"))
    assert f'<a href="/evals/runs/{run.pk}/#cases-h" title="The cases and their turns">0%</a>' in runs
    # A run whose task cases the offline demo model failed says why that is expected.
    assert "task-model-note" not in page
    offline = graded_run(skill, outcomes={"t-pr": True, "t-poem": True, "k-sql": False}, model="offline")
    assert "task-model-note" in text(analyst.get(f"/evals/runs/{offline.pk}/"))
    assert analyst.get("/evals/runs/not-a-run/").status_code == 404
    assert analyst.post(f"/evals/runs/{queued.pk}/cancel/").status_code == 403


def test_a_poll_of_a_running_run_reads_its_results_once(skill):
    eval_suite_replace(skill=skill, document=SUITE)
    run = eval_run_create(skill=skill, version=skill.versions.get(number=1), model="scripted", repeat=3)
    first = eval_run_results(run=run)[0]
    eval_result_grade(result_id=first.pk, passed=True, triggered=True, checks=[])
    analyst = console(ANALYST)
    results_table = EvalCaseResult._meta.db_table

    with CaptureQueriesContext(connection) as queries:
        live = analyst.get(f"/evals/runs/{run.pk}/live/", HTTP_HX_REQUEST="true")

    assert live.status_code == 200 and 'id="run-done">1<' in text(live) and 'id="run-total">9<' in text(live)
    assert 'title="true positives">1<' in text(live)  # the figures so far, from the same read
    reads = [query["sql"] for query in queries if results_table in query["sql"]]
    assert len(reads) == 1, reads


def test_the_compare_view_shows_the_difference_and_the_flipped_cases(skill):
    eval_suite_replace(skill=skill, document=SUITE)
    a = graded_run(skill, outcomes={"t-pr": True, "t-poem": True, "k-sql": False})
    b = graded_run(skill, outcomes={"t-pr": False, "t-poem": True, "k-sql": True})
    with CaptureQueriesContext(connection) as queries:
        page = console(ANALYST).get(f"/evals/runs/compare/?a={a.pk}&b={b.pk}")
    assert page.status_code == 200
    reads = [query["sql"] for query in queries if EvalCaseResult._meta.db_table in query["sql"]]
    assert len(reads) == 2, reads  # each run's results once
    body = text(page)
    assert "+100%" in body and "P(B better)" in body
    flipped = body.split('id="flipped"')[1].split("</section>")[0]
    assert 'data-case="t-pr"' in flipped and 'data-case="k-sql"' in flipped and "t-poem" not in flipped


def test_the_skill_page_shows_each_versions_eval_result(skill):
    eval_suite_replace(skill=skill, document=SUITE)
    run = graded_run(skill, outcomes={"t-pr": True, "t-poem": True, "k-sql": True})
    page = text(console(ANALYST).get("/skills/code-review/"))
    evals = page.split('id="version-evals"')[1].split("</table>")[0]
    assert f'href="/evals/runs/{run.pk}/"' in evals and "task 100%" in evals and "F1 1.00" in evals


def test_save_as_eval_case_builds_a_case_from_a_playground_turn(skill):
    author = user_with_role(AUTHOR)
    client = Client()
    client.force_login(author)
    script = [{"tool_calls": [{"name": "read_skill", "arguments": {"skill_name": "code-review"}}]}, {"content": "ok"}]
    turn = AgentTurn.objects.create(
        user=author,
        message="Review app.py for SQL injection",
        model="scripted",
        script=script,
        origin=TurnOrigin.PLAYGROUND,
        status=TurnStatus.SUCCEEDED,
        finished_at=timezone.now(),
    )
    for seq, (kind, data) in enumerate(
        [
            ("skill_activated", {"skill": "code-review", "version": 1, "trigger": "read_skill"}),
            ("tool_call", {"tool": "read_skill", "ok": True}),
            ("tool_call", {"tool": "file_read", "ok": True}),
        ],
        start=1,
    ):
        TraceEvent.objects.create(turn=turn, seq=seq, type=kind, at=timezone.now(), data=data)
    assert "Save as eval case" in text(client.get(f"/playground/?turn={turn.pk}"))

    saved = client.post(f"/playground/turns/{turn.pk}/eval-case/", {"skill": "code-review", "kind": "task"})
    assert saved.status_code == 302 and "?edit=k-review-app-py-for" in saved["Location"]
    client.post(f"/playground/turns/{turn.pk}/eval-case/", {"skill": "code-review", "kind": "trigger"})
    assert cases_of(skill) == [
        {
            "id": "k-review-app-py-for",
            "kind": "task",
            "prompt": "Review app.py for SQL injection",
            "expect": [{"skill_loaded": "code-review"}, {"tool_called": {"name": "file_read"}}],
            "script": script,
        },
        {
            "id": "t-review-app-py-for",
            "kind": "trigger",
            "query": "Review app.py for SQL injection",
            "should_trigger": True,
            "script": script,
        },
    ]
    analyst = console(ANALYST)
    assert (
        analyst.post(f"/playground/turns/{turn.pk}/eval-case/", {"skill": "code-review", "kind": "task"}).status_code
        == 403
    )


def test_a_turn_the_suite_refuses_as_a_case_comes_back_to_the_playground_with_why(skill):
    author = user_with_role(AUTHOR)
    client = Client()
    client.force_login(author)
    turn = AgentTurn.objects.create(
        user=author, message="   ", model="offline", origin=TurnOrigin.PLAYGROUND, status=TurnStatus.SUCCEEDED
    )

    refused = client.post(f"/playground/turns/{turn.pk}/eval-case/", {"skill": "code-review", "kind": "trigger"})
    assert refused.status_code == 302 and refused["Location"] == f"/playground/?turn={turn.pk}"
    page = text(client.get(refused["Location"]))
    assert "Not saved as an eval case: Case &#x27;t-case&#x27;: query is required" in page
    unnamed = client.post(f"/playground/turns/{turn.pk}/eval-case/", {"skill": "", "kind": "trigger"}, follow=True)
    assert "Choose a skill and whether the case is a trigger or a task case." in text(unnamed)
    assert cases_of(skill) == []


def test_the_run_form_queues_a_run_as_the_api_does_and_an_author_cancels_it(skill):
    eval_suite_replace(skill=skill, document=SUITE)
    publish("code-review", description="Review code, second version.")
    author = console(AUTHOR)
    started = author.post(
        "/skills/code-review/evals/runs/",
        {"target": "version", "version": "1", "model": "scripted", "repeat": "2", "baseline": "on"},
    )
    run = EvalRun.objects.get()
    assert started.status_code == 302 and started["Location"] == f"/evals/runs/{run.pk}/"
    assert (run.version.number, run.label, run.model, run.repeat, run.baseline) == (1, "", "scripted", 2, True)
    assert len(eval_run_results(run=run)) == 3 * 2 * 2
    page = text(author.get(f"/evals/runs/{run.pk}/"))
    assert 'id="run-baseline"' in page and 'id="run-done">0<' in page and 'id="run-total">12<' in page
    at_label = author.post("/skills/code-review/evals/runs/", {"target": "label", "label": "", "model": "offline"})
    assert at_label.status_code == 302
    assert EvalRun.objects.latest("created_at").version.number == 2  # no production label: the latest

    cancelled = author.post(f"/evals/runs/{run.pk}/cancel/", follow=True)
    run.refresh_from_db()
    assert run.status == "cancelled" and "Cancelled" in text(cancelled)
    again = author.post(f"/evals/runs/{run.pk}/cancel/", follow=True)
    assert "Not cancelled" in text(again)


def test_a_run_of_an_empty_suite_is_refused_beside_the_form(skill):
    refused = console(AUTHOR).post("/skills/code-review/evals/runs/", {"target": "label", "model": "offline"})
    assert refused.status_code == 409 and "has no eval cases yet" in text(refused)
    assert 'id="run-error"' in text(refused)


def test_saving_a_case_someone_changed_meanwhile_is_refused_and_keeps_the_text(skill):
    eval_suite_replace(skill=skill, document=SUITE)
    first, second = console(AUTHOR), console(AUTHOR)
    mine = {"original_id": "t-pr", "id": "t-pr", "kind": "trigger", "query": "mine", "revision": "1"}
    theirs = {**mine, "query": "theirs", "should_trigger": "on"}
    other_case = {"original_id": "t-poem", "id": "t-poem", "kind": "trigger", "query": "a limerick", "revision": "1"}
    assert second.post("/skills/code-review/evals/cases/", other_case).status_code == 302  # another case: fine
    assert second.post("/skills/code-review/evals/cases/", theirs).status_code == 302
    refused = first.post("/skills/code-review/evals/cases/", mine, HTTP_HX_REQUEST="true")
    assert refused.status_code == 409 and "Someone changed case t-pr" in text(refused)
    assert ">mine</textarea>" in text(refused)
    assert [case.get("query") for case in cases_of(skill)] == ["theirs", "a limerick", None]


@pytest.mark.parametrize(
    "url",
    [
        "/skills/code-review/evals/?edit=no-such-case",
        "/skills/code-review/evals/evals.json?format=yaml",
        "/evals/runs/not-a-uuid/",
        "/evals/runs/00000000-0000-0000-0000-000000000000/",
        "/evals/runs/compare/?a=1&b=2",
        "/evals/runs/compare/",
        "/skills/no-such-skill/evals/evals.json",
    ],
)
def test_bad_addresses_are_404_not_500(skill, url):
    eval_suite_replace(skill=skill, document=SUITE)
    assert console(AUTHOR).get(url).status_code == 404


def test_hostile_form_text_is_a_400_in_place(skill):
    author = console(AUTHOR)
    nul = author.post("/skills/code-review/evals/cases/", {"id": "t-x", "kind": "trigger", "query": "a\x00b"})
    assert nul.status_code == 400 and "NUL" in text(nul)
    kind = author.post("/skills/code-review/evals/cases/", {"id": "t-x", "kind": "poem", "query": "q"})
    assert kind.status_code == 400 and 'data-field="kind"' in text(kind)
    binary = author.post(
        "/skills/code-review/evals/import/", {"evals_file": SimpleUploadedFile("e.json", b"\xff\xfe\x00")}
    )
    assert binary.status_code == 400 and "The file could not be read" in text(binary) and "utf-8" in text(binary)
    deep = author.post(
        "/skills/code-review/evals/import/", {"evals_file": SimpleUploadedFile("e.json", b"[" * 5000 + b"]" * 5000)}
    )
    assert deep.status_code == 400
    assert eval_suite_revision(skill=skill) is None
