"""The console says which version is served: the skill page opens at the version a reader who
names no label gets (production where set, else latest), the list shows it apart from the
latest, and rollback is offered only below what production points to, worded as moving it."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry import selectors
from registry.models import Label
from registry.selectors import skill_get
from registry.services.labels import label_move
from tests.factories import publish

pytestmark = pytest.mark.django_db


def _three_versions_production_at(number: int | None) -> None:
    for words in ("Version one.", "Version two.", "Version three."):
        publish("demo-skill", description=words, body=f"# {words}\n")
    if number is not None:
        label_move(skill=skill_get(name="demo-skill"), label="production", version_number=number)


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_skill_page_opens_at_the_production_version_with_the_latest_beside_it(author_client):
    _three_versions_production_at(1)

    html = author_client.get("/skills/demo-skill/").content.decode()
    text = _text(html)

    assert "Version one." in text and "Version three." not in text
    assert "Agents and API readers get v1 production , shown here." in text
    assert "Latest is v3 (draft, not served) · edit v3 ." in text
    assert "Download v1 (production) as zip" in text and "?version=1" in html
    assert "it serves v1 (production)" in text
    assert 'name="action" value="upload"' not in html  # files change on the latest only


def test_the_latest_says_it_is_not_served_and_carries_the_file_controls(author_client):
    _three_versions_production_at(1)
    label_move(skill=skill_get(name="demo-skill"), label="staging", version_number=3)

    html = author_client.get("/skills/demo-skill/?version=3").content.decode()
    text = _text(html)

    assert "Version three." in text
    assert "You are looking at v3 staging , which is not served: readers get v1 production ." in text
    assert "Download v3 (latest) as zip" in text
    assert 'name="action" value="upload"' in html


def test_without_production_the_latest_is_served_and_said_once(author_client):
    _three_versions_production_at(None)

    text = _text(author_client.get("/skills/demo-skill/").content.decode())

    assert "Version three." in text
    assert "not served" not in text and 'id="served"' not in text
    assert "v3 · served · latest" in text
    assert "Download v3 (latest) as zip" in text


def test_the_list_shows_the_served_version_apart_from_the_latest(author_client):
    _three_versions_production_at(1)
    publish("other-skill")

    text = _text(author_client.get("/skills/").content.decode())

    assert "served v1 (production) · latest v3" in text
    assert "other-skill" in text and "served v1 (production) · latest v1" not in text


def test_rollback_is_offered_only_below_production_and_moves_the_label(author_client):
    _three_versions_production_at(2)

    text = _text(author_client.get("/skills/demo-skill/versions/").content.decode())

    assert "Move production back to v1" in text
    assert "back to v2" not in text and "back to v3" not in text and "Roll back" not in text
    assert "Promote v3 to production" in text
    asked = _text(
        author_client.post("/skills/demo-skill/labels/", {"label": "production", "version": "1"}).content.decode()
    )
    assert "Move production back to v1?" in asked
    assert Label.objects.get(name="production").version.number == 2  # the confirmation moves it, not this


def test_without_production_older_versions_offer_to_set_it(author_client):
    _three_versions_production_at(None)

    text = _text(author_client.get("/skills/demo-skill/versions/").content.decode())

    assert "Set production to v1" in text and "Set production to v2" in text
    assert "Set production to v3" not in text and "Promote v3" not in text


def test_an_analyst_sees_what_is_served_but_no_label_buttons(analyst_client):
    _three_versions_production_at(2)

    page = _text(analyst_client.get("/skills/demo-skill/").content.decode())
    versions = _text(analyst_client.get("/skills/demo-skill/versions/").content.decode())

    assert "Agents and API readers get v2 production" in page and "edit v3" not in page
    assert "production to v" not in versions and "Readers that name no label get v2" in versions


_NAMES = itertools.count()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(versions=st.integers(1, 4), production=st.none() | st.integers(1, 4), staging=st.none() | st.integers(1, 4))
def test_the_lists_served_number_is_the_version_the_api_serves(versions, production, staging):
    name = f"skill-{next(_NAMES)}"
    for number in range(versions):
        publish(name, description=f"Revision {number}.")
    skill = skill_get(name=name)
    for label, number in (("production", production), ("staging", staging)):
        if number is not None and number <= versions:
            label_move(skill=skill, label=label, version_number=number)

    [row] = [row for row in selectors.skill_catalog() if row.skill.name == name]

    assert row.served == selectors.skill_version_for(skill=skill_get(name=name)).number
