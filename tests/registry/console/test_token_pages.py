"""The API tokens page through Django's test client: who sees and manages which tokens, the
secret shown once, revoke with confirmation, CSRF, bad input, and a bounded query count."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from registry.models import ApiToken, AuditLog
from registry.roles import ADMIN, ANALYST, AUTHOR
from registry.services.tokens import api_token_create
from tests.factories import UserFactory, user_with_role

pytestmark = pytest.mark.django_db

SECRET = re.compile(r"skr_[A-Za-z0-9_-]{20,}")


@pytest.fixture
def admin_client(client):
    client.force_login(user_with_role(ADMIN, username="root"))
    return client


def _create(client, **form):
    data = {"name": "ci-deploy", "scopes": ["skills:read"], **form}
    return client.post("/tokens/", data)


def test_logged_out_the_tokens_pages_redirect_to_login(client):
    token, _ = api_token_create(
        name="t", username=user_with_role(AUTHOR, username="ann").username, scopes=["skills:read"]
    )

    for response in (client.get("/tokens/"), client.get(f"/tokens/{token.pk}/revoke/"), _create(client)):
        assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert ApiToken.objects.count() == 1


def test_the_secret_is_shown_once_and_only_its_hash_is_stored(author_client, author):
    response = _create(author_client, scopes=["skills:read", "skills:write"])

    assert response.status_code == 201
    assert "no-store" in response["Cache-Control"]
    secret = SECRET.search(response.content.decode()).group(0)
    token = ApiToken.objects.get(name="ci-deploy")
    assert token.user == author and token.scopes == ["skills:read", "skills:write"]
    assert token.secret_hash == ApiToken.hash_secret(secret)
    assert secret not in str(ApiToken.objects.values().get())

    again = author_client.get("/tokens/").content.decode()
    assert "ci-deploy" in again and secret not in again and not SECRET.search(again)
    audit = AuditLog.objects.get(action="token.create")
    assert audit.actor == author and audit.via == "console" and secret not in str(audit.after)


def test_the_new_token_works_against_the_api(author_client):
    secret = SECRET.search(_create(author_client).content.decode()).group(0)

    api = Client().get("/api/v1/skills", HTTP_AUTHORIZATION=f"Bearer {secret}")

    assert api.status_code == 200


def test_an_author_sees_and_revokes_only_their_own_tokens(author_client, author):
    other = user_with_role(AUTHOR, username="bob")
    mine, _ = api_token_create(name="mine", username=author.username, scopes=["skills:read"])
    theirs, _ = api_token_create(name="theirs", username=other.username, scopes=["skills:read"])

    page = author_client.get("/tokens/").content.decode()
    assert "mine" in page and "theirs" not in page
    assert author_client.get(f"/tokens/{theirs.pk}/revoke/").status_code == 404
    assert author_client.post(f"/tokens/{theirs.pk}/revoke/", {"confirm": "1"}).status_code == 404
    assert _create(author_client, name="for-bob", owner="bob").status_code == 403

    confirm = author_client.post(f"/tokens/{mine.pk}/revoke/")  # no confirm: the question first
    assert confirm.status_code == 200 and "Confirm" in confirm.content.decode()
    mine.refresh_from_db()
    assert mine.revoked_at is None

    done = author_client.post(f"/tokens/{mine.pk}/revoke/", {"confirm": "1"}, follow=True)
    assert "Revoked token mine" in done.content.decode()
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert mine.revoked_at is not None and theirs.revoked_at is None
    assert AuditLog.objects.filter(action="token.revoke", object_repr="mine", via="console").count() == 1


def test_an_admin_sees_every_token_and_creates_one_for_another_user(admin_client):
    user_with_role(AUTHOR, username="bob")
    api_token_create(name="bobs", username="bob", scopes=["skills:read"])

    page = admin_client.get("/tokens/").content.decode()
    assert "bobs" in page and 'name="owner"' in page

    response = _create(admin_client, name="for-bob", owner="bob", scopes=["rules:write"])
    assert response.status_code == 201
    assert ApiToken.objects.get(name="for-bob").user.username == "bob"


def test_scopes_beyond_the_owners_role_are_refused_next_to_the_field(admin_client):
    user_with_role(ANALYST, username="ana")

    response = _create(admin_client, name="too-much", owner="ana", scopes=["skills:write"])

    assert response.status_code == 400
    assert "beyond the owner" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_an_analyst_reads_and_revokes_their_tokens_but_cannot_create_one(analyst_client, analyst):
    token, _ = api_token_create(name="reader", username=analyst.username, scopes=["skills:read"])
    other, _ = api_token_create(name="other", username=user_with_role(AUTHOR).username, scopes=["skills:read"])

    page = analyst_client.get("/tokens/")
    html = page.content.decode()
    assert page.status_code == 200 and "reader" in html and "other" not in html
    assert "Create token" not in html and "Revoke reader" in html

    assert _create(analyst_client).status_code == 403
    assert analyst_client.post(f"/tokens/{other.pk}/revoke/", {"confirm": "1"}).status_code == 404
    assert analyst_client.post(f"/tokens/{token.pk}/revoke/", {"confirm": "1"}).status_code == 302
    token.refresh_from_db()
    other.refresh_from_db()
    assert token.revoked_at is not None and other.revoked_at is None and ApiToken.objects.count() == 2


def test_a_user_whose_role_was_lowered_can_still_revoke_the_tokens_they_made(client):
    user = user_with_role(AUTHOR, username="demoted")
    token, _ = api_token_create(name="ci-write", username=user.username, scopes=["skills:write"])
    # The token's write scope is inert now, and still theirs.
    user.groups.set([Group.objects.get_or_create(name=ANALYST)[0]])
    client.force_login(user)

    assert "Revoke ci-write" in client.get("/tokens/").content.decode()
    assert client.post(f"/tokens/{token.pk}/revoke/", {"confirm": "1"}).status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert AuditLog.objects.filter(action="token.revoke", object_repr="ci-write", actor=user).exists()


def test_writes_need_the_csrf_token(author):
    token, _ = api_token_create(name="mine", username=author.username, scopes=["skills:read"])
    client = Client(enforce_csrf_checks=True)
    client.force_login(author)

    assert _create(client, name="new").status_code == 403
    assert client.post(f"/tokens/{token.pk}/revoke/", {"confirm": "1"}).status_code == 403
    token.refresh_from_db()
    assert token.revoked_at is None and ApiToken.objects.count() == 1


@pytest.mark.parametrize(
    ("form", "problem"),
    [
        ({"name": ""}, "This field is required"),
        ({"name": "x" * 101}, "at most 100 characters"),
        ({"name": "two\nlines"}, "printable"),
        ({"scopes": []}, "This field is required"),
        ({"scopes": ["skills:delete"]}, "not one of the available choices"),
    ],
)
def test_bad_input_is_a_400_naming_the_problem(author_client, form, problem):
    response = _create(author_client, **form)

    assert response.status_code == 400
    assert problem in response.content.decode()
    assert not ApiToken.objects.exists()


def test_a_taken_name_and_an_unknown_owner_are_clear_errors(admin_client):
    _create(admin_client, name="dup")

    assert "already exists" in _create(admin_client, name="dup").content.decode()
    unknown = _create(admin_client, name="new", owner="nobody")
    assert unknown.status_code == 404 and "No user named" in unknown.content.decode()
    assert ApiToken.objects.count() == 1


def test_revoking_a_revoked_token_says_so(author_client, author):
    token, _ = api_token_create(name="mine", username=author.username, scopes=["skills:read"])
    author_client.post(f"/tokens/{token.pk}/revoke/", {"confirm": "1"})

    again = author_client.post(f"/tokens/{token.pk}/revoke/", {"confirm": "1"}, follow=True)

    assert "already revoked" in again.content.decode()
    assert AuditLog.objects.filter(action="token.revoke").count() == 1


def test_the_tokens_page_does_a_bounded_number_of_queries(admin_client, django_assert_max_num_queries):
    for number in range(30):
        owner = user_with_role(AUTHOR if number % 2 else ANALYST, username=f"owner-{number}")
        api_token_create(name=f"token-{number}", username=owner.username, scopes=["skills:read"])
    admin_client.get("/tokens/")

    with django_assert_max_num_queries(8):
        assert admin_client.get("/tokens/").status_code == 200


def test_an_account_without_a_role_gets_403_on_tokens_and_audit(client):
    client.force_login(UserFactory(username="nobody"))

    assert client.get("/tokens/").status_code == 403
    assert client.get("/audit/").status_code == 403
    assert _create(client).status_code == 403
    assert not ApiToken.objects.exists()
