"""The editor through Django's test client: the live check and Publish agree (one check), and a
field the fallback read as text publishes only through the "Publish as read" step."""

from __future__ import annotations

import hashlib
import html
import re

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.models import Skill, SkillVersion
from tests.factories import make_skill_md, publish
from tests.registry.test_publish_check import AS_TEXT, UNCLOSED_TAGS

pytestmark = pytest.mark.django_db


def _check(client, url: str, text: str, base_version: int) -> dict[str, int]:
    response = client.post(
        url, {"skill_md": text, "base_version": str(base_version), "check": "problems"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    html = response.content.decode()
    levels = re.findall(r'data-level="(error|warning)"', html)
    return {"error": levels.count("error"), "warning": levels.count("warning"), "taken": "data-name-taken" in html}


def _publish(client, url: str, text: str, base_version: int, **extra):
    return client.post(url, {"skill_md": text, "base_version": str(base_version), "message": "", **extra})


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_live_check_shows_the_unclosed_list_as_an_error_on_line_4(author_client):
    response = author_client.post(
        "/skills/new/", {"skill_md": UNCLOSED_TAGS, "base_version": "0", "check": "problems"}, HTTP_HX_REQUEST="true"
    )

    page = response.content.decode()
    assert re.search(r'<li class="error" data-line="4" data-level="error">', page)
    assert "not valid YAML" in page and "lines 4-5" in page


def test_publish_refuses_it_and_offers_publish_as_read_with_each_field_as_stored(author_client):
    response = _publish(author_client, "/skills/new/", UNCLOSED_TAGS, 0)

    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    assert "Not published." in page and "line 4:" in page
    assert "Publish as read" in page and f'value="{_sha(UNCLOSED_TAGS)}"' in page
    fields = dict(re.findall(r'data-field="([^"]+)">.*?<code class="stored">(.*?)</code>', page, re.S))
    assert fields["name"] == "release-checklist" and fields["tags"] == AS_TEXT and "triggers" not in fields
    read = dict(re.findall(r'data-read="([^"]+)">.*?<code class="stored">(.*?)</code>', page, re.S))
    assert read["triggers"] == "[] (none)"
    assert read["tags"] == '["release", "checklist triggers: [task_match", "explicit_command"]'
    assert not Skill.objects.exists()


def test_publish_as_read_publishes_the_fields_it_showed(author_client):
    response = _publish(
        author_client, "/skills/new/", UNCLOSED_TAGS, 0, accept_lenient="1", read_sha256=_sha(UNCLOSED_TAGS)
    )

    assert response.status_code == 302
    version = SkillVersion.objects.get(skill__name="release-checklist")
    assert version.frontmatter["tags"] == AS_TEXT and version.triggers == []


def test_accepting_a_reading_of_other_text_shows_the_new_reading_first(author_client):
    edited = UNCLOSED_TAGS.replace("tags: [release, checklist\n", "tags: [release, checklist, more\n")

    response = _publish(author_client, "/skills/new/", edited, 0, accept_lenient="1", read_sha256=_sha(UNCLOSED_TAGS))

    assert response.status_code == 400 and f'value="{_sha(edited)}"' in response.content.decode()
    assert not Skill.objects.exists()


def test_publish_as_read_works_when_editing_an_existing_skill(author_client):
    publish("release-checklist")
    url = "/skills/release-checklist/edit/"

    refused = _publish(author_client, url, UNCLOSED_TAGS, 1)
    accepted = _publish(author_client, url, UNCLOSED_TAGS, 1, accept_lenient="1", read_sha256=_sha(UNCLOSED_TAGS))

    assert refused.status_code == 400 and "Publish as read" in refused.content.decode()
    assert accepted.status_code == 302
    assert SkillVersion.objects.get(skill__name="release-checklist", number=2).frontmatter["tags"] == AS_TEXT


@pytest.mark.parametrize("name", ["My Skill!", "café", "../etc/passwd", "-lead-dash"])
def test_a_name_refused_at_publish_is_an_error_while_typing(author_client, name):
    text = make_skill_md(name)

    assert _check(author_client, "/skills/new/", text, 0)["error"] == 1
    response = _publish(author_client, "/skills/new/", text, 0)
    assert response.status_code == 400 and "Publish as read" not in response.content.decode()


# --- the live check and Publish agree on any text --------------------------------------------

LINES = [
    "tags: [release, checklist",
    "triggers: [task_match, explicit_command]",
    "tags: [a, b]",
    "\ttools: Read",
    "tools:\tRead",
    "metadata: {a: 1,}",
    "metadata:\n  a: b",
    "- stray item",
    "just words",
    "key: value: more",
    "version: 1.10",
    "enabled: maybe",
    "allowed-tools: Read Grep",
    "  indented: x",
    "? complex",
    "a: &x [1]\nb: *x",
    "x: !!python/object/apply:os.system [ls]",
    "description: again",
    "name: edited-skill",
    "---",
    "...",
    "",
]
NAMES = ["release-checklist", "My Skill!", "café", "../etc/passwd", "-lead-dash", "x" * 130, "a_b.c", "'q'", "[a"]
DESCRIPTIONS = ["Does a thing.", "Use when: the user asks", "", "[open", "'quoted'", "|\n  block\n  text", "1.5"]


@st.composite
def skill_md_texts(draw) -> str:
    if draw(st.integers(0, 9)) == 0:  # sometimes anything at all
        return draw(st.text(st.characters(exclude_categories=("Cs",)), max_size=200))
    fields = []
    if draw(st.integers(0, 5)):
        fields.append(f"name: {draw(st.sampled_from(NAMES) | st.text(max_size=12))}")
    if draw(st.integers(0, 5)):
        fields.append(f"description: {draw(st.sampled_from(DESCRIPTIONS) | st.text(max_size=20))}")
    fields += draw(st.lists(st.sampled_from(LINES) | st.text(max_size=20), max_size=5))
    order = draw(st.permutations(fields))
    return "---\n" + "\n".join(order) + "\n---\n" + draw(st.sampled_from(["# Body\n", "", "\r\nbody\r\n"]))


@pytest.fixture
def edited_skill(db):
    return publish("edited-skill").skill


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=skill_md_texts(), editing=st.booleans())
def test_the_live_check_and_publish_agree_on_any_text(author_client, edited_skill, text, editing):
    url, base = ("/skills/edited-skill/edit/", 1) if editing else ("/skills/new/", 0)
    with transaction.atomic():
        check = _check(author_client, url, text, base)
        before = SkillVersion.objects.count()
        response = _publish(author_client, url, text, base)
        created = SkillVersion.objects.order_by("-pk").first() if SkillVersion.objects.count() > before else None
        transaction.set_rollback(True)

    if check["error"]:
        # A name that exists is an error the check shows and the publish refuses as taken (409),
        # once the text has no other error (those are refused first, as 400).
        only_taken = check["taken"] and check["error"] == 1
        assert response.status_code == (409 if only_taken else 400), (text, check)
        assert created is None
    else:
        assert response.status_code == 302, (text, check, response.content.decode()[:2000])
        if created is not None:  # (an unchanged text publishes nothing)
            assert len(created.warnings) == check["warning"], (text, created.warnings)
