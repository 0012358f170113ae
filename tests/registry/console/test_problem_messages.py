"""Problem messages in the editor: `code` spans become <code> and nothing else becomes markup,
and the advice is the console's (Publish as read), while the API keeps naming its own field."""

from __future__ import annotations

import pytest

from registry.console.skills import console_advice, live_check
from registry.errors import NameTaken
from registry.services.skills import skill_md_check, skill_version_publish
from registry.skillformat.bundle import bundle_from_parts
from registry.skillformat.skillmd import Issue
from registry.templatetags.console import code_spans
from tests.factories import make_skill_md, publish
from tests.registry.test_publish_check import UNCLOSED_TAGS

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "message, shown",
    [
        ("`tags` should be a list", "<code>tags</code> should be a list"),
        ("the `[` on line 4", "the <code>[</code> on line 4"),
        (
            "`<script>alert(1)</script>` and <b>bold</b>",
            "<code>&lt;script&gt;alert(1)&lt;/script&gt;</code> and &lt;b&gt;bold&lt;/b&gt;",
        ),
        ('an `"accept_lenient": true` & more', "an <code>&quot;accept_lenient&quot;: true</code> &amp; more"),
        ("one ` unpaired backtick", "one ` unpaired backtick"),
    ],
)
def test_code_spans_are_code_and_the_rest_is_text(message, shown):
    assert code_spans(message) == shown


def test_the_editor_gives_console_advice_where_the_api_names_its_field():
    [api_error] = skill_md_check(skill_md=UNCLOSED_TAGS).errors
    assert "accept_lenient" in api_error.message

    [shown] = [issue for issue in live_check(UNCLOSED_TAGS).issues if issue.level == "error"]
    assert "accept_lenient" not in shown.message and "Publish as read" in shown.message
    assert shown.line == api_error.line and shown.fallback


def test_the_editor_drops_the_api_route_from_a_name_taken():
    publish("taken-name")
    with pytest.raises(NameTaken) as taken:
        skill_version_publish(bundle=bundle_from_parts(make_skill_md("taken-name").encode(), []), create=True)
    assert "/api/v1/skills/taken-name/versions" in taken.value.detail  # the API's advice

    shown = console_advice(Issue("error", 2, taken.value.detail, "name"))
    assert "/api/v1" not in shown.message and "base_version" not in shown.message
    assert shown.message.startswith("'taken-name' exists") and "open it or choose another name" in shown.message
