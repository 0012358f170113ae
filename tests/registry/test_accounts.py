"""The account services the users page and the `users` command share: what they refuse, and that
a deactivated owner's token is refused by the one token check (registry/selectors/tokens.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from registry.errors import ApplicationError, Conflict, NotFound
from registry.models import ApiToken
from registry.selectors import account_admins, account_list
from registry.selectors.tokens import api_token_grant
from registry.services.accounts import account_active_set, account_create, account_password_link
from registry.services.audit import Actor
from registry.services.tokens import api_token_create, api_token_revoke
from tests.factories import UserFactory, user_with_role

pytestmark = pytest.mark.django_db

User = get_user_model()
CONSOLE = Actor(via="console")


def test_nobody_deactivates_their_own_account():
    root = user_with_role("admin", username="root")
    user_with_role("admin", username="second")

    with pytest.raises(Conflict, match="your own account"):
        account_active_set(username="root", active=False, actor=Actor(user=root, via="console"))
    assert User.objects.get(username="root").is_active


def test_the_last_active_admin_is_not_deactivated_but_another_admin_is():
    user_with_role("admin", username="root")
    user_with_role("admin", username="second")

    account_active_set(username="second", active=False, actor=CONSOLE)

    with pytest.raises(Conflict, match="last active admin"):
        account_active_set(username="root", active=False, actor=CONSOLE)
    assert [user.username for user in account_admins()] == ["root"]


def test_a_deactivated_owners_token_is_refused_and_comes_back_with_the_account():
    user_with_role("author", username="ada")
    _, secret = api_token_create(name="ada-agent", username="ada", scopes=["skills:read"])
    grant = lambda: api_token_grant(secret_hash=ApiToken.hash_secret(secret))[0]  # noqa: E731

    assert grant().user_active
    account_active_set(username="ada", active=False, actor=CONSOLE)
    assert not grant().user_active
    account_active_set(username="ada", active=True, actor=CONSOLE)
    assert grant().user_active


def test_the_list_counts_live_tokens_only():
    user_with_role("author", username="ada")
    api_token_create(name="one", username="ada", scopes=["skills:read"])
    api_token_create(name="two", username="ada", scopes=["skills:read"])
    api_token_revoke(name="two")
    UserFactory(username="nobody")

    rows = {row.user.username: (row.roles, row.live_tokens) for row in account_list()}

    assert rows == {"ada": (["author"], 1), "nobody": ([], 0)}


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"username": "", "password": None}, "username"),
        ({"username": "a b", "password": None}, "username"),
        ({"username": "ann", "password": "short"}, "password"),
        ({"username": "ann", "password": None, "email": "not-an-address"}, "email"),
    ],
)
def test_bad_input_names_the_field(fields, problem):
    with pytest.raises(ApplicationError) as refused:
        account_create(role="author", actor=CONSOLE, **fields)
    assert list(refused.value.fields) == [problem]
    assert not User.objects.filter(username=fields["username"]).exists()


def test_a_password_link_is_for_an_active_account_only():
    user_with_role("analyst", username="zoe")
    account_active_set(username="zoe", active=False, actor=CONSOLE)

    with pytest.raises(Conflict, match="deactivated"):
        account_password_link(username="zoe", actor=CONSOLE)
    with pytest.raises(NotFound):
        account_password_link(username="nobody", actor=CONSOLE)
