"""Skillsets through the API: publishing a version from names and versions or labels, the bad
input that is refused naming the member, label moves that take every member's label along under
each member's policy (all or nothing), the set's sticky rollout and its rollback."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from registry.errors import NotFound
from registry.models import AuditLog, Label, Skill, SkillsetLabelHistory, WebhookDelivery
from registry.selectors.skillsets import served_skillset
from registry.services.label_policies import label_policy_set
from registry.services.labels import label_move
from registry.services.skills import skill_set_enabled
from registry.services.webhooks import webhook_create
from tests.factories import publish
from tests.registry.test_scans import _scanned as scanned

pytestmark = pytest.mark.django_db

SET_URL = "/api/v1/skillsets/data"
LABEL_URL = f"{SET_URL}/labels/production"


@pytest.fixture
def members():
    """`csv-tools` v1..2 (staging on v2), `sql-tools` v1..3, `charts` v1."""
    publish("csv-tools")
    csv = publish("csv-tools", description="Second edition.").skill
    label_move(skill=csv, label="staging", version_number=2)
    for n in range(3):
        publish("sql-tools", description=f"Edition {n + 1}.")
    publish("charts")
    return {
        "csv-tools": csv,
        "sql-tools": Skill.objects.get(name="sql-tools"),
        "charts": Skill.objects.get(name="charts"),
    }


def _author(make_token) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['skills:read', 'skills:write'])}")
    return client


def _labels(name: str) -> dict[str, int]:
    return dict(Label.objects.filter(skill__name=name).values_list("name", "version__number"))


def test_a_publish_takes_numbers_as_given_and_labels_as_they_point(api, members):
    answer = api.put(SET_URL, {"members": {"csv-tools": "staging", "sql-tools": 2, "charts": "latest"}}, format="json")

    assert answer.status_code == 201, answer.json()
    body = answer.json()
    assert body["number"] == 1
    assert {m["name"]: m["version"] for m in body["members"]} == {"csv-tools": 2, "sql-tools": 2, "charts": 1}
    again = api.put(SET_URL, {"members": {"csv-tools": 2, "sql-tools": 2, "charts": 1}}, format="json")
    assert again.status_code == 200 and again.json()["number"] == 1  # the same members: nothing new
    assert api.put(SET_URL, {"members": {"csv-tools": 1, "sql-tools": 3}}, format="json").json()["number"] == 2
    listed = api.get("/api/v1/skillsets").json()["results"]
    assert [(row["name"], row["latest_version"], row["members"]) for row in listed] == [("data", 2, 2)]
    assert api.get(f"{SET_URL}/versions/1").json()["members"][0] == {
        "name": "charts",
        "version": 1,
        "source": "user",
        "missing": False,
        "disabled": False,
    }
    assert AuditLog.objects.filter(action="skillset.publish").count() == 2


@pytest.mark.parametrize(
    ("given", "named", "field"),
    [
        ({"csv-tools": 1, "nope": 1}, "nope", "unknown skill"),
        ({"csv-tools": 9}, "csv-tools", "between 1 and 2"),
        ({"csv-tools": "production"}, "csv-tools", "no label 'production'"),
        ({"csv-tools": 1, "CSV-tools": 2}, "CSV-tools", "listed twice"),
        ({"csv-tools": True}, "csv-tools", "a version number or a label"),
    ],
)
def test_a_bad_member_is_a_400_naming_it(api, members, given, named, field):
    answer = api.put(SET_URL, {"members": given}, format="json")

    assert answer.status_code == 400
    body = answer.json()
    assert body["member"] == named and f"'{named}'" in body["detail"]
    assert body["fields"][f"members.{named}"] == field
    assert api.get(SET_URL).status_code == 404  # nothing half-written


def test_a_member_named_twice_in_the_body_is_a_400_naming_it(api, members):
    raw = '{"members": {"csv-tools": 1, "csv-tools": 2}}'
    answer = api.put(SET_URL, raw, content_type="application/json")

    assert answer.status_code == 400
    assert "csv-tools" in json.dumps(answer.json())


def test_a_disabled_member_is_a_400_naming_it(api, members):
    skill_set_enabled(skill=members["charts"], enabled=False)
    answer = api.put(SET_URL, {"members": {"csv-tools": 1, "charts": 1}}, format="json")
    assert answer.status_code == 400
    assert answer.json()["member"] == "charts" and answer.json()["fields"] == {"members.charts": "disabled"}


def test_an_empty_set_and_a_set_over_the_limit_are_400s(api, members):
    empty = api.put(SET_URL, {"members": {}}, format="json")
    assert empty.status_code == 400 and empty.json()["fields"] == {"members": "empty"}
    with override_settings(SKILLSET_MAX_MEMBERS=2):
        huge = api.put(SET_URL, {"members": {"csv-tools": 1, "sql-tools": 1, "charts": 1}}, format="json")
    assert huge.status_code == 400
    assert huge.json()["setting"] == "SKILLSET_MAX_MEMBERS" and "at most 2" in huge.json()["detail"]


def test_skills_and_skillsets_share_one_namespace(api, members):
    taken = api.put("/api/v1/skillsets/charts", {"members": {"csv-tools": 1}}, format="json")
    assert taken.status_code == 400 and taken.json()["fields"] == {"name": "taken by the skill 'charts'"}
    assert api.put(SET_URL, {"members": {"csv-tools": 1}}, format="json").status_code == 201

    skill = api.post(
        "/api/v1/skills", {"skill_md": "---\nname: data\ndescription: Clashes with a set.\n---\nBody\n"}, format="json"
    )

    assert skill.status_code == 400
    assert skill.json()["fields"] == {"name": "taken by the skillset 'data'"}
    assert not Skill.objects.filter(name="data").exists()


def test_a_member_deleted_later_keeps_its_number_and_shows_missing(api, members):
    api.put(SET_URL, {"members": {"csv-tools": 1, "charts": 1}}, format="json")
    Skill.objects.filter(name="charts").delete()

    version = api.get(f"{SET_URL}/versions/1").json()

    charts = next(m for m in version["members"] if m["name"] == "charts")
    assert (charts["version"], charts["missing"], charts["source"]) == (1, True, None)
    refused = api.put(LABEL_URL, {"version": 1}, format="json")
    assert refused.status_code == 400 and refused.json()["member"] == "charts"


def test_a_label_move_moves_every_members_label_of_that_name(api, members):
    webhook_create(url="http://93.184.215.14/hook", events=["skillset.label_moved", "label.moved"])
    api.put(SET_URL, {"members": {"csv-tools": 1, "sql-tools": 2}}, format="json")
    api.put(SET_URL, {"members": {"csv-tools": 2, "sql-tools": 3}}, format="json")

    assert api.put(LABEL_URL, {"version": 1}, format="json").status_code == 200
    assert (_labels("csv-tools")["production"], _labels("sql-tools")["production"]) == (1, 2)
    moved = api.put(LABEL_URL, {"version": 2}, format="json")

    assert moved.status_code == 200
    assert moved.json()["labels"][0]["version"] == 2
    assert (_labels("csv-tools")["production"], _labels("sql-tools")["production"]) == (2, 3)
    assert served_skillset("data", "production").members == {"csv-tools": 2, "sql-tools": 3}
    events = [json.loads(bytes(d.payload))["event"] for d in WebhookDelivery.objects.order_by("id")]
    assert events.count("skillset.label_moved") == 2 and events.count("label.moved") == 4


def test_one_members_policy_refusing_moves_nothing_and_names_the_member_and_check(make_token, members):
    author = _author(make_token)
    author.put(SET_URL, {"members": {"csv-tools": 1, "sql-tools": 1}}, format="json")
    author.put(LABEL_URL, {"version": 1}, format="json")
    author.put(SET_URL, {"members": {"csv-tools": 2, "sql-tools": 3}}, format="json")
    label_policy_set(label="production", roles=["author", "admin"], require_scan={"max_verdict": "review"})
    # csv-tools v2 passes (and moves first, in name order); sql-tools v3 was never scanned.
    scanned(members["csv-tools"].versions.get(number=2), "clean")

    refused = author.put(LABEL_URL, {"version": 2}, format="json")

    assert refused.status_code == 409
    body = refused.json()
    assert body["member"] == "sql-tools" and body["unmet"][0]["check"] == "scan"
    assert body["detail"].startswith("Member 'sql-tools': v3 of sql-tools does not meet the policy")
    assert (_labels("csv-tools")["production"], _labels("sql-tools")["production"]) == (1, 1)
    assert served_skillset("data", "production").version == 1
    assert not SkillsetLabelHistory.objects.filter(to_version=2).exists()


def test_a_role_the_policy_does_not_name_is_a_403_naming_the_member(make_token, members):
    author = _author(make_token)
    author.put(SET_URL, {"members": {"charts": 1}}, format="json")
    label_policy_set(label="production", roles=["admin"])

    refused = author.put(LABEL_URL, {"version": 1}, format="json")

    assert refused.status_code == 403 and refused.json()["member"] == "charts"
    assert "production" not in _labels("charts")


def test_removing_a_set_label_asks_each_members_policy_and_names_the_member(make_token, members):
    author = _author(make_token)
    author.put(SET_URL, {"members": {"charts": 1, "csv-tools": 1}}, format="json")
    author.put(LABEL_URL, {"version": 1}, format="json")
    label_policy_set(label="production", roles=["admin"])

    refused = author.delete(LABEL_URL)

    assert refused.status_code == 403 and refused.json()["member"] == "charts"
    assert refused.json()["detail"].startswith("Member 'charts': ")
    assert served_skillset("data", "production").version == 1
    assert not SkillsetLabelHistory.objects.filter(kind="delete").exists()


def test_an_eval_gated_set_label_is_removed_only_by_an_admin_with_a_reason(make_token, members, api):
    author = _author(make_token)
    author.put(SET_URL, {"members": {"charts": 1}}, format="json")
    author.put(LABEL_URL, {"version": 1}, format="json")
    gate = {"model": "scripted", "min_task_rate": 0.8, "min_trigger_f1": 0.8, "not_worse": True}
    label_policy_set(label="production", roles=["admin", "author"], require_eval=gate)

    refused = author.delete(LABEL_URL)
    assert refused.status_code == 409
    assert refused.json()["member"] == "charts" and refused.json()["unmet"][0]["check"] == "removal"
    assert author.delete(f"{LABEL_URL}?override_reason=sure").status_code == 403
    assert api.delete(LABEL_URL).status_code == 409
    assert served_skillset("data", "production").version == 1

    removed = api.delete(f"{LABEL_URL}?override_reason=Retiring+the+set")

    assert removed.status_code == 204, removed.content
    with pytest.raises(NotFound):
        served_skillset("data", "production")
    row = SkillsetLabelHistory.objects.get(kind="delete")
    assert (row.from_version, row.to_version, row.reason) == (1, None, "Retiring the set")
    assert AuditLog.objects.get(action="label.override").after["reason"] == "Retiring the set"
    assert _labels("charts")["production"] == 1  # the member keeps its own label


def test_a_rollout_sends_a_subject_to_the_whole_new_set_or_none(api, members):
    api.put(SET_URL, {"members": {"csv-tools": 1, "sql-tools": 1}}, format="json")
    api.put(LABEL_URL, {"version": 1}, format="json")
    api.put(SET_URL, {"members": {"csv-tools": 2, "sql-tools": 3, "charts": 1}}, format="json")

    started = api.put(LABEL_URL, {"version": 2, "weight": 30}, format="json")

    assert started.status_code == 200
    label = started.json()["labels"][0]
    assert (label["version"], label["canary_version"], label["weight"]) == (1, 2, 30)
    canaries = {m: Label.objects.get(skill__name=m, name="production") for m in ("csv-tools", "sql-tools")}
    assert {m: (lb.canary_version.number, lb.weight) for m, lb in canaries.items()} == {
        "csv-tools": (2, 30),
        "sql-tools": (3, 30),
    }
    served = [served_skillset("data", "production", subject=f"s{n}") for n in range(400)]
    sides = {tuple(sorted(s.members.items())) for s in served}
    assert sides == {(("csv-tools", 1), ("sql-tools", 1)), (("charts", 1), ("csv-tools", 2), ("sql-tools", 3))}
    share = sum(s.version == 2 for s in served) / len(served)
    assert 0.2 < share < 0.4
    assert served_skillset("data", "production", subject="s7") == served_skillset("data", "production", subject="s7")

    rolled_back = api.post(f"{LABEL_URL}/rollback", {}, format="json")

    assert rolled_back.status_code == 200
    assert rolled_back.json()["labels"][0]["canary_version"] is None
    assert all(Label.objects.get(skill__name=m, name="production").canary_version is None for m in canaries)
    assert {served_skillset("data", "production", subject=f"s{n}").version for n in range(50)} == {1}


def test_rollback_moves_the_set_and_its_members_back(api, members):
    api.put(SET_URL, {"members": {"csv-tools": 1, "sql-tools": 1}}, format="json")
    api.put(SET_URL, {"members": {"csv-tools": 2, "sql-tools": 3}}, format="json")
    api.put(LABEL_URL, {"version": 1}, format="json")
    nothing = api.post(f"{LABEL_URL}/rollback", {}, format="json")
    assert nothing.status_code == 409  # it has held v1 since it was set
    api.put(LABEL_URL, {"version": 2}, format="json")

    back = api.post(f"{LABEL_URL}/rollback", {}, format="json")

    assert back.status_code == 200 and back.json()["labels"][0]["version"] == 1
    assert (_labels("csv-tools")["production"], _labels("sql-tools")["production"]) == (1, 1)
    assert back.json()["history"][0]["kind"] == "rollback"


def test_diff_says_which_members_changed(api, members):
    api.put(SET_URL, {"members": {"csv-tools": 1, "sql-tools": 1, "charts": 1}}, format="json")
    api.put(SET_URL, {"members": {"csv-tools": 2, "sql-tools": 1}}, format="json")

    diff = api.get(f"{SET_URL}/diff", {"from": 1, "to": 2}).json()

    assert [(c["name"], c["change"], c["old"], c["new"]) for c in diff] == [
        ("charts", "removed", 1, None),
        ("csv-tools", "changed", 1, 2),
        ("sql-tools", "same", 1, 1),
    ]


def test_an_analyst_reads_but_cannot_publish_or_move(make_token, members, api):
    api.put(SET_URL, {"members": {"charts": 1}}, format="json")
    analyst = APIClient()
    analyst.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['skills:read'])}")
    assert analyst.get(SET_URL).status_code == 200
    assert analyst.put(SET_URL, {"members": {"charts": 1}}, format="json").status_code == 403
    assert analyst.put(LABEL_URL, {"version": 1}, format="json").status_code == 403


def test_unknown_sets_and_labels_are_404s(api, members):
    assert api.get("/api/v1/skillsets/nothing").status_code == 404
    api.put(SET_URL, {"members": {"charts": 1}}, format="json")
    assert api.get(f"{SET_URL}/versions/7").status_code == 404
    assert api.delete(LABEL_URL).status_code == 404
    assert api.delete(f"{LABEL_URL}/rollout").status_code == 404
    with pytest.raises(Exception, match="no label 'production'"):
        served_skillset("data", "production")


def test_a_set_change_moves_resolve_snapshots_forward_without_a_skill_of_its_name(api, members):
    """Set changes bump the generation naming the set; a snapshot read before moves forward in
    place (the set's name has no skill to replace) and still serves every skill."""
    asked = {"query": "work with csv data", "max_skills": 5}
    before = api.post("/api/v1/resolve", asked, format="json").json()
    assert before["skills"]
    api.put(SET_URL, {"members": {"csv-tools": 1, "charts": 1}}, format="json")
    api.put(LABEL_URL, {"version": 1}, format="json")

    after = api.post("/api/v1/resolve", asked, format="json")

    assert after.status_code == 200
    assert {s["name"] for s in after.json()["skills"]} == {s["name"] for s in before["skills"]}
    assert after.json()["generation"] != before["generation"]
