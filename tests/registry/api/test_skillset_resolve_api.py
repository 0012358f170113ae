"""`POST /resolve` with `skillset`: exactly the set's members at the numbers of its version at the
label, never the members' own labels; a set label's rollout is one draw per subject for the whole
set; unknown sets and labels are 404s naming them."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from registry.models import Skill
from registry.readmodel.generation import current_generation
from registry.readmodel.skillsets import skillset_served
from registry.selectors.resolve import resolve
from registry.selectors.skillsets import served_skillset
from registry.services.generation import registry_changed
from registry.services.labels import label_move
from registry.services.skills import skill_set_enabled
from tests.registry.skillset_fixtures import V1, V2, data_set_publish, set_label

pytestmark = pytest.mark.django_db


@pytest.fixture
def data_set():
    """`data` v1 = pdf-tools 1, xlsx-tools 2; v2 = pdf-tools 2, xlsx-tools 3; production at v1.
    The members' own production labels point elsewhere, and `web-fetch` is no member."""
    data_set_publish()
    label_move(skill=Skill.objects.get(name="xlsx-tools"), label="production", version_number=1)


def _resolve(api, **body):
    return api.post("/api/v1/resolve", {"query": "tools for the data team", **body}, format="json")


def _served(body) -> dict[str, int]:
    return {skill["name"]: skill["version"] for skill in body["skills"]}


def test_a_skillset_resolves_to_exactly_its_members_at_the_sets_numbers(api, data_set):
    response = _resolve(api, skillset="data", label="production")

    assert response.status_code == 200, response.content
    body = response.json()
    assert _served(body) == V1  # not the members' own production labels (pdf 2, xlsx 1), no web-fetch
    assert body["skillset"] == {
        "name": "data",
        "label": "production",
        "version": 1,
        "canary": False,
        "members": V1,
        "missing": [],
    }
    assert "web-fetch" not in body["prompt_block"] and "pdf-tools" in body["prompt_block"]
    # Without a skillset nothing changes: the members' own labels, and every other skill.
    assert _served(_resolve(api, label="production").json()) == {"pdf-tools": 2, "xlsx-tools": 1, "web-fetch": 1}


def test_moving_the_set_label_moves_every_member_at_once_and_back(api, data_set):
    set_label("data", "production", 2)
    assert _served(_resolve(api, skillset="data", label="production").json()) == V2
    set_label("data", "production", 1)
    assert _served(_resolve(api, skillset="data", label="production").json()) == V1
    # `latest` is the set's newest version; no label is production.
    assert _served(_resolve(api, skillset="data", label="latest").json()) == V2
    assert _served(_resolve(api, skillset="data").json()) == V1


def test_a_set_rollout_gives_each_subject_all_new_members_or_none(api, data_set):
    set_label("data", "production", 1, canary=2, weight=50)
    sides = set()
    for n in range(40):
        subject = f"agent-{n}"
        body = _resolve(api, skillset="data", label="production", context={"subject": subject}).json()
        expected = served_skillset("data", "production", subject=subject)
        assert _served(body) == expected.members and body["skillset"]["version"] == expected.version
        assert body["skillset"]["canary"] == expected.canary
        assert all(skill["canary"] == expected.canary for skill in body["skills"])
        again = _resolve(api, skillset="data", label="production", context={"subject": subject}).json()
        assert _served(again) == _served(body)  # sticky
        sides.add(expected.version)
    assert sides == {1, 2}  # 40 subjects at 50% see both sides
    # Without a subject, the stable side.
    assert _served(_resolve(api, skillset="data", label="production").json()) == V1


@pytest.mark.parametrize(
    ("body", "status", "field", "named"),
    [
        ({"skillset": "nope", "label": "production"}, 404, "skillset", "nope"),
        ({"skillset": "data", "label": "staging"}, 404, "label", "staging"),
        ({"skillset": "", "label": "production"}, 400, "skillset", None),
        ({"skillset": 5}, 400, "skillset", None),
        ({"skillset": "x" * 129}, 400, "skillset", None),
    ],
)
def test_bad_skillset_requests_name_the_set_label_or_field(api, data_set, body, status, field, named):
    response = _resolve(api, **body)

    assert response.status_code == status, response.content
    assert field in response.json()["fields"]
    if named:
        assert named in response.json()["detail"]


def test_a_deleted_member_is_left_out_and_named(api, data_set):
    # No service deletes a skill (an operator's manual delete): the set version keeps its numbers.
    skill = Skill.objects.get(name="xlsx-tools")
    skill.labels.all().delete()
    skill.delete()
    registry_changed()
    body = _resolve(api, skillset="data", label="production").json()

    assert _served(body) == {"pdf-tools": 1}
    assert body["skillset"]["members"] == V1 and body["skillset"]["missing"] == ["xlsx-tools"]
    assert any("xlsx-tools" in warning for warning in body["warnings"])


def test_a_disabled_member_and_a_forced_non_member_are_left_out_with_warnings(api, data_set):
    skill_set_enabled(skill=Skill.objects.get(name="pdf-tools"), enabled=False)

    body = _resolve(api, skillset="data", label="production", forced_skill="web-fetch").json()

    assert _served(body) == {"xlsx-tools": 2}
    assert body["skillset"]["missing"] == ["pdf-tools"]
    assert "The forced skill 'web-fetch' is not a served member of the skillset 'data'." in body["warnings"]


def test_the_read_model_agrees_with_served_skillset_for_every_subject_and_costs_no_query_warm(data_set):
    set_label("data", "production", 1, canary=2, weight=30)
    subjects = [f"user-{n}" for n in range(300)]
    for label in ("production", "latest", None):
        for subject in [None, *subjects]:
            fast = skillset_served(name="data", label=label, subject=subject)
            oracle = served_skillset("data", label, subject=subject)
            assert (fast.name, fast.label, fast.version, fast.members, fast.canary) == (
                oracle.name,
                oracle.label,
                oracle.version,
                oracle.members,
                oracle.canary,
            )
    generation = current_generation()  # read once: the test settings do not LISTEN
    with CaptureQueriesContext(connection) as queries:
        for subject in subjects:
            skillset_served(name="DATA", label="production", subject=subject, generation=generation)
    assert len(queries) == 0


def test_a_warm_skillset_resolve_of_a_new_query_reads_nothing_but_the_generation(data_set):
    resolve(query="first question", skillset="data", label="production", context={"subject": "a"})
    generation = current_generation()

    with CaptureQueriesContext(connection) as queries:
        result = resolve(query="another question", skillset="data", label="production", context={"subject": "b"})

    assert {skill.skill.name: skill.skill.version for skill in result.skills} == V1
    assert result.generation == generation
    assert len(queries) <= 1  # the generation (the test settings do not LISTEN): the set is in memory
