"""`/.well-known/agent-skills/index.json?skillset=`: exactly the set's members at the numbers of
its version at DISCOVERY_LABEL; each `url` carries the set (and subject), so following it serves
the bytes of the digest listed; an unknown set or label is a 404 naming it."""

from __future__ import annotations

import hashlib
import json
from urllib.parse import urljoin

import pytest
from django.test import Client

from registry.selectors.skillsets import served_skillset
from tests.registry.skillset_fixtures import V1, V2, data_set_publish, set_label

pytestmark = pytest.mark.django_db

INDEX = "/.well-known/agent-skills/index.json"


@pytest.fixture
def data_set(settings):
    settings.DISCOVERY_LABEL = "production"
    data_set_publish(pdf_files=[("scripts/run.sh", b"#!/bin/sh\necho run\n", True)])


def _index(query: str = "") -> dict:
    response = Client().get(INDEX + query)
    assert response.status_code == 200, response.content
    return json.loads(response.content)


def _followed(entries: list[dict]) -> dict[str, tuple[int, bool]]:
    """{name: (version served, its bytes' sha256 equals the listed digest)} following each url."""
    found = {}
    for entry in entries:
        response = Client().get(urljoin(INDEX, entry["url"]))
        assert response.status_code == 200, (entry, response.content)
        digest = "sha256:" + hashlib.sha256(response.content).hexdigest()
        found[entry["name"]] = (int(response["X-Skill-Version"]), digest == entry["digest"])
    return found


def test_the_index_of_a_skillset_lists_exactly_its_members_at_the_sets_numbers(data_set):
    index = _index("?skillset=data")

    assert {e["name"]: int(e["version"]) for e in index["skills"]} == V1  # pdf-tools' own label says 2
    assert {e["name"]: e["url"] for e in index["skills"]} == {
        "pdf-tools": "pdf-tools.zip?skillset=data",
        "xlsx-tools": "xlsx-tools/SKILL.md?skillset=data",
    }
    assert _followed(index["skills"]) == {"pdf-tools": (1, True), "xlsx-tools": (2, True)}
    # The plain index is unchanged: every production skill at its own label.
    plain = {e["name"]: int(e["version"]) for e in _index()["skills"]}
    assert plain == {"pdf-tools": 2, "xlsx-tools": 2, "web-fetch": 1}
    # A skill that is no member is not served under the set.
    assert Client().get("/.well-known/agent-skills/web-fetch/SKILL.md?skillset=data").status_code == 404

    set_label("data", "production", 2)
    index = _index("?skillset=data")
    assert {e["name"]: int(e["version"]) for e in index["skills"]} == V2
    assert _followed(index["skills"]) == {"pdf-tools": (2, True), "xlsx-tools": (3, True)}


def test_a_subject_reads_one_side_of_the_sets_rollout_for_every_member(data_set):
    set_label("data", "production", 1, canary=2, weight=50)
    sides = set()
    for n in range(20):
        subject = f"agent-{n}"
        index = _index(f"?skillset=data&subject={subject}")
        expected = served_skillset("data", "production", subject=subject)
        assert {e["name"]: int(e["version"]) for e in index["skills"]} == expected.members
        assert all(e["url"].endswith(f"?skillset=data&subject={subject}") for e in index["skills"])
        followed = _followed(index["skills"])
        assert {name: version for name, (version, _) in followed.items()} == expected.members
        assert all(same for _, same in followed.values())
        sides.add(expected.version)
    assert sides == {1, 2}


@pytest.mark.parametrize(
    ("query", "status", "named"),
    [
        ("?skillset=nope", 404, "nope"),
        ("?skillset=" + "x" * 129, 400, "skillset"),
    ],
)
def test_an_unknown_set_is_a_404_naming_it_and_a_bad_one_a_400(data_set, query, status, named):
    for path in (INDEX, "/.well-known/agent-skills/xlsx-tools/SKILL.md"):
        response = Client().get(path + query)
        assert response.status_code == status, response.content
        assert named in response.content.decode()


def test_a_set_without_the_published_label_is_a_404_naming_the_label(data_set, settings):
    settings.DISCOVERY_LABEL = "staging"
    response = Client().get(INDEX + "?skillset=data")
    assert response.status_code == 404 and "staging" in response.json()["detail"]
