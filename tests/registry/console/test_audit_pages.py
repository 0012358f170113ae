"""The audit log page through Django's test client: filters, pagination, the htmx fragment, the
readable before → after, what each role reads, and a bounded query count."""

from __future__ import annotations

import datetime as dt

import pytest

from registry.models import AuditLog
from registry.roles import ADMIN
from registry.selectors.audit import audit_changes
from registry.services.audit import Actor, audit_record
from tests.factories import publish, user_with_role

pytestmark = pytest.mark.django_db


def _rows(html: str) -> int:
    table = html.split('<table class="audit">', 1)
    return table[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0].count("<tr>") if len(table) == 2 else 0


def _record(user=None, *, action="label.move", object_type="skill", object_repr="pdf@user", at=None, **values):
    row = audit_record(
        actor=Actor(user=user, via="console" if user else "cli"),
        action=action,
        object_type=object_type,
        object_repr=object_repr,
        **values,
    )
    if at is not None:
        AuditLog.objects.filter(pk=row.pk).update(at=at)
    return row


def test_logged_out_the_audit_page_redirects_to_login(client):
    response = client.get("/audit/")

    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_a_publish_shows_who_what_and_before_after(author_client, author):
    publish("pdf-tools")
    author_client.post(
        "/skills/pdf-tools/labels/", {"label": "production", "version": "1", "confirm": "1"}, follow=True
    )

    html = author_client.get("/audit/").content.decode()

    assert "label.move" in html and "version.publish" in html and "pdf-tools@user" in html
    assert ">ada<" in html and "console" in html
    assert "<del>null</del>" in html and "<ins>1</ins>" in html  # production: from no version to v1
    assert 'href="/skills/pdf-tools/?source=user"' in html


def test_filters_by_actor_object_action_and_dates(author_client, author):
    other = user_with_role("author", username="bob")
    now = dt.datetime.now(dt.UTC)
    _record(author, object_repr="pdf@user", at=now - dt.timedelta(days=10))
    _record(author, object_repr="sql@user", action="version.publish")
    _record(other, object_repr="pdf@user")
    _record(None, object_type="rule", object_repr="deploy-rule", action="rule.create")

    def count(query: str) -> int:
        response = author_client.get(f"/audit/?{query}")
        assert response.status_code == 200, query
        return _rows(response.content.decode())

    assert count("") == 4
    assert count("actor=ADA") == 2
    assert count("actor=system") == 1
    assert count("actor=nobody") == 0
    assert count("object_type=rule") == 1
    assert count("object=pdf") == 2
    assert count("object_type=skill&object=pdf&actor=bob") == 1
    assert count("action=version") == 1
    today = now.date()
    assert count(f"date_from={today - dt.timedelta(days=1)}") == 3
    assert count(f"date_to={today - dt.timedelta(days=5)}") == 1
    assert count(f"date_from={today - dt.timedelta(days=10)}&date_to={today - dt.timedelta(days=10)}") == 1


def test_htmx_gets_the_table_fragment(author_client, author):
    _record(author)

    response = author_client.get("/audit/?actor=ada", HTTP_HX_REQUEST="true")

    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="audit-table">') and "<html" not in html
    assert _rows(html) == 1


def test_a_bad_date_is_named_beside_its_field_and_the_other_filters_still_apply(author_client, author):
    _record(author)
    _record(None)

    response = author_client.get("/audit/?date_from=yesterday&actor=ada")

    html = response.content.decode()
    assert response.status_code == 400
    assert "date_from" in html and "Enter a valid date" in html
    assert _rows(html) == 1


def test_a_reversed_date_range_is_an_error_not_an_empty_page(author_client, author):
    _record(author)

    response = author_client.get("/audit/?date_from=2026-05-02&date_to=2026-05-01")

    assert response.status_code == 400
    assert "The end date is before the start date" in response.content.decode()


def test_pagination_keeps_the_filters(author_client, author):
    for number in range(60):
        _record(author, object_repr=f"skill-{number}@user")

    first = author_client.get("/audit/?actor=ada").content.decode()
    second = author_client.get("/audit/?actor=ada&page=2").content.decode()

    assert _rows(first) == 50 and _rows(second) == 10
    assert "Page 1 of 2" in first and 'href="?actor=ada&page=2"' in first
    assert "skill-59@user" in first and "skill-0@user" in second


def test_account_entries_are_for_admins_only(client, analyst_client):
    _record(None, action="login.failure", object_type="user", object_repr="root", after={"ip": "10.0.0.9"})
    _record(None, object_repr="pdf@user")

    analyst_view = analyst_client.get("/audit/").content.decode()
    assert _rows(analyst_view) == 1 and "10.0.0.9" not in analyst_view
    assert _rows(analyst_client.get("/audit/?object_type=user").content.decode()) == 0

    client.force_login(user_with_role(ADMIN, username="root"))
    admin_view = client.get("/audit/").content.decode()
    assert _rows(admin_view) == 2 and "10.0.0.9" in admin_view


def test_an_analyst_reads_the_log_but_sees_no_write_controls(analyst_client):
    _record(None)

    html = analyst_client.get("/audit/").content.decode()

    assert _rows(html) == 1
    assert 'method="post"' not in html.split("<main", 1)[1]


def test_before_after_becomes_field_changes():
    changes = audit_changes(
        {"enabled": True, "auto_invoke": {"tool": "a"}, "name": "x"},
        {"enabled": False, "auto_invoke": {"tool": "b"}, "name": "x", "priority": 3},
    )

    assert [(c.key, c.kind, c.before, c.after) for c in changes] == [
        ("enabled", "changed", "true", "false"),
        ("auto_invoke.tool", "changed", "a", "b"),
        ("name", "same", "x", "x"),
        ("priority", "added", None, "3"),
    ]
    assert [c.kind for c in audit_changes({"user": "ann"}, None)] == ["removed"]
    assert audit_changes(None, None) == []


def test_the_audit_page_does_a_bounded_number_of_queries(client, django_assert_max_num_queries):
    admin = user_with_role(ADMIN, username="root")
    for number in range(80):
        actor = user_with_role("author", username=f"author-{number}")
        _record(actor, object_repr=f"skill-{number}@user", before={"version": number}, after={"version": number + 1})
    client.force_login(admin)
    client.get("/audit/")

    with django_assert_max_num_queries(6):
        assert client.get("/audit/?object_type=skill&page=2").status_code == 200


def test_past_the_count_cap_the_page_says_so_and_dates_narrow_it(author_client, author, monkeypatch):
    monkeypatch.setattr("registry.selectors.audit.COUNT_CAP", 20)
    for number in range(30):
        _record(author, object_repr=f"skill-{number}@user")
    yesterday = dt.datetime.now(dt.UTC) - dt.timedelta(days=1)
    _record(author, object_repr="old@user", at=yesterday)

    html = author_client.get("/audit/").content.decode()
    narrowed = author_client.get(f"/audit/?date_to={yesterday.date()}").content.decode()

    assert "More than 20 entries" in html and "Page 1 of 1" not in html
    assert _rows(narrowed) == 1 and "1 entry match" in narrowed
