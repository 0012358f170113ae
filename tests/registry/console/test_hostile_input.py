"""Hostile or malformed input to the skills console gets a clear answer, never a 500."""

from __future__ import annotations

import pytest

from registry.models import SkillVersion
from tests.factories import make_skill_md, publish

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "skill_md",
    [
        make_skill_md(body="NUL \x00 inside\n"),
        "\ufeff" + make_skill_md(),
        "x" * (300 * 1024),
        "---\nname: [unclosed\n---\n",
        "",
    ],
)
def test_publishing_odd_text_never_500s_and_writes_nothing_half(author_client, skill_md):
    publish("demo-skill")

    response = author_client.post("/skills/demo-skill/edit/", {"skill_md": skill_md, "base_version": "1"})
    check = author_client.post(
        "/skills/demo-skill/edit/",
        {"skill_md": skill_md, "base_version": "1", "check": "problems"},
        HTTP_HX_REQUEST="true",
    )

    assert response.status_code in (302, 400, 413)
    assert check.status_code == 200
    assert SkillVersion.objects.count() in (1, 2)
    if response.status_code != 302:
        assert SkillVersion.objects.count() == 1


@pytest.mark.parametrize(
    "url",
    [
        "/skills/demo-skill/?version=abc",
        "/skills/demo-skill/?version=99999999999999999999999",
        "/skills/demo-skill/diff/?from=x&to=1",
        "/skills/demo-skill/?source=nowhere",
        "/skills/no-such-skill/",
        "/skills/demo-skill/files/../../etc/passwd",
    ],
)
def test_bad_addresses_are_404_not_500(author_client, url):
    publish("demo-skill")

    assert author_client.get(url).status_code == 404


@pytest.mark.parametrize(
    "query",
    ["?q=" + "a" * 5000, "?page=-1", "?page=abc", "?label=NOT%20VALID", "?sort=nonsense", "?enabled=maybe", "?q=%00"],
)
def test_odd_list_queries_answer_a_page(author_client, query):
    publish("demo-skill")

    assert author_client.get("/skills/" + query).status_code == 200


def test_a_bad_base_version_is_a_400_with_the_text_kept(author_client):
    publish("demo-skill")

    response = author_client.post("/skills/demo-skill/edit/", {"skill_md": make_skill_md(), "base_version": "x"})

    assert response.status_code == 400
    assert SkillVersion.objects.count() == 1
