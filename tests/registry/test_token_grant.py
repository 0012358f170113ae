"""The one token check (`api_token_grant`, one raw query or a per-process cache) gives the ORM's
answer: the live token with that secret, its owner's is_active, and the token's scopes that the
owner's role grants (registry/roles.py). The ORM reading below is the oracle."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.models import ApiToken, TokenScope
from registry.readmodel.generation import current_generation
from registry.roles import user_has_scope
from registry.selectors.tokens import api_token_grant
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

SCOPES = [scope.value for scope in TokenScope]


def orm_answer(secret_hash: str) -> tuple[int, int, bool, frozenset[str]] | None:
    """How the token was checked through the ORM: the live token with its user, the user's
    is_active, and each scope the token has whose owner's role grants it."""
    token = ApiToken.objects.select_related("user").filter(secret_hash=secret_hash, revoked_at__isnull=True).first()
    if token is None:
        return None
    user = token.user
    granted = frozenset(scope for scope in token.scopes if token.has_scope(scope) and user_has_scope(user, scope))
    return token.pk, user.pk, user.is_active, granted


tokens = st.fixed_dictionaries(
    {
        "superuser": st.booleans(),
        "active": st.booleans(),
        "groups": st.sets(st.sampled_from(["admin", "author", "analyst", "other"])),
        "scopes": st.lists(st.sampled_from([*SCOPES, "unknown:scope"]), unique=True),
        "revoked": st.booleans(),
        "last_used": st.booleans(),
        "asked": st.sampled_from(["its secret", "another secret"]),
    }
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(token=tokens)
def test_the_token_check_gives_the_orm_answer(token):
    username = f"u-{uuid.uuid4().hex[:12]}"
    user = UserFactory(username=username, is_superuser=token["superuser"], is_active=token["active"])
    user.groups.set([Group.objects.get_or_create(name=name)[0] for name in token["groups"]])
    secret = uuid.uuid4().hex
    ApiToken.objects.create(
        name=f"t-{secret[:12]}",
        user=user,
        prefix=secret[:8],
        secret_hash=ApiToken.hash_secret(secret),
        scopes=token["scopes"],
        revoked_at=timezone.now() if token["revoked"] else None,
        last_used_at=timezone.now() if token["last_used"] else None,
    )
    asked = ApiToken.hash_secret(secret if token["asked"] == "its secret" else uuid.uuid4().hex)

    found = api_token_grant(secret_hash=asked)

    expected = orm_answer(asked)
    if expected is None:
        assert found is None
        return
    assert found is not None
    grant, generation = found
    assert (grant.token_id, grant.user_id, grant.user_active) == expected[:3]
    if grant.user_active:  # an inactive owner's token is refused whatever its scopes
        assert grant.scopes == expected[3]
    assert generation == current_generation()
    assert (grant.last_used_at is None) == (not token["last_used"])
