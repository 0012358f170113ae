"""The routing page (analysts and authors) and the editor's overlap warning: both name the two
skills whose descriptions compete, and not the distinct third."""

from __future__ import annotations

import pytest

from tests.factories import make_skill_md, publish
from tests.registry.routing_catalog import competing_catalog

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalog(db):
    competing_catalog()


def problems(client, url: str, text: str) -> str:
    response = client.post(url, {"skill_md": text, "base_version": "1", "check": "problems"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    return response.content.decode()


def test_the_live_check_warns_of_an_overlapping_description_naming_the_skill(author_client, catalog):
    draft = make_skill_md(
        "invoice-brief",
        description="Summarizes PDF invoices and billing statements into totals, due dates and vendors, briefly.",
        tags=["invoice", "billing"],
    )

    html = problems(author_client, "/skills/new/", draft)

    assert "overlaps the skill &#x27;invoice-summary&#x27;" in html
    assert "overlaps the skill &#x27;invoice-digest&#x27;" in html
    assert "haiku-poems" not in html and "no-cases" not in html
    assert 'data-level="warning"' in html and "shared" in html


def test_a_distinct_description_gets_no_overlap_warning(author_client, catalog):
    draft = make_skill_md("regex-help", description="Explains and writes regular expressions.", tags=["regex"])

    assert "overlaps the skill" not in problems(author_client, "/skills/new/", draft)


def test_editing_a_skill_does_not_compare_it_with_itself(author_client, catalog):
    text = make_skill_md(
        "haiku-poems",
        description="Writes haiku poems about the seasons, in five, seven and five syllables.",
        tags=["haiku", "poetry"],
    )

    assert "overlaps the skill" not in problems(author_client, "/skills/haiku-poems/edit/", text)


def test_an_analyst_sees_the_routing_report(analyst_client, catalog):
    response = analyst_client.get("/catalog/routing/")

    html = response.content.decode()
    assert response.status_code == 200
    assert "recall@1" in html and "Overlapping descriptions" in html and "Confusions" in html
    overlaps = html.split('class="routing-overlaps"')[1].split("</table>")[0]
    assert "invoice-summary" in overlaps and "invoice-digest" in overlaps and "haiku-poems" not in overlaps
    assert "no evidence" in html
    assert 'href="/catalog/routing/"' in html  # in the nav


def test_a_bad_label_is_named_beside_the_field(analyst_client, catalog):
    response = analyst_client.get("/catalog/routing/", {"label": "Not A Label"})

    assert response.status_code == 400
    assert 'id="label-error"' in response.content.decode()


def test_an_unused_label_shows_what_to_do(author_client):
    publish("lonely", description="Only at latest.")

    html = author_client.get("/catalog/routing/", {"label": "staging"}).content.decode()

    assert "No skills are served at “staging”" in html
