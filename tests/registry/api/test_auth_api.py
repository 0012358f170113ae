"""Who may call what: 401 without a valid token, 403 naming the scope a token lacks, session auth
with CSRF for the console, and the OpenAPI schema and docs."""

from __future__ import annotations

import re
import uuid

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import URLResolver, get_resolver
from rest_framework.test import APIClient

from registry.models import ForceIncludeRule, Skill, TokenScope
from registry.roles import ANALYST
from registry.services.label_policies import label_policy_set
from registry.services.tokens import api_token_revoke
from registry.services.webhooks import webhook_create
from tests.factories import UserFactory, make_skill_md, publish, user_with_role

pytestmark = pytest.mark.django_db

# (method, path, scope, JSON body)
ENDPOINTS = [
    ("get", "/api/v1/skills", "skills:read", None),
    ("post", "/api/v1/skills", "skills:write", {"skill_md": make_skill_md("fresh")}),
    ("get", "/api/v1/skills/guarded", "skills:read", None),
    ("patch", "/api/v1/skills/guarded", "skills:write", {"enabled": False}),
    ("get", "/api/v1/skills/guarded/SKILL.md", "skills:read", None),
    ("get", "/api/v1/skills/guarded/files/notes.txt", "skills:read", None),
    ("get", "/api/v1/skills/guarded/bundle.zip", "skills:read", None),
    ("get", "/api/v1/skills/guarded/versions", "skills:read", None),
    (
        "post",
        "/api/v1/skills/guarded/versions",
        "skills:write",
        {"skill_md": make_skill_md("guarded", description="Changed.")},
    ),
    ("get", "/api/v1/skills/guarded/versions/1", "skills:read", None),
    ("get", "/api/v1/skills/guarded/diff", "skills:read", None),
    ("get", "/api/v1/skills/guarded/labels", "skills:read", None),
    ("put", "/api/v1/skills/guarded/labels/production", "skills:write", {"version": 1}),
    ("delete", "/api/v1/skills/guarded/labels/staging", "skills:write", None),
    ("get", "/api/v1/rules", "skills:read", None),
    ("post", "/api/v1/rules", "rules:write", {"name": "new", "pattern": "x", "skills": ["guarded"]}),
    ("get", "/api/v1/rules/{rule}", "skills:read", None),
    ("patch", "/api/v1/rules/{rule}", "rules:write", {"priority": 5}),
    ("delete", "/api/v1/rules/{rule}", "rules:write", None),
    ("post", "/api/v1/rules/test", "skills:read", {"query": "guarded"}),
    ("get", "/api/v1/match?q=guarded", "skills:read", None),
    ("post", "/api/v1/resolve", "skills:read", {"query": "guarded"}),
    (
        "post",
        "/api/v1/usage",
        "usage:write",
        {"events": [{"event_id": "e1", "kind": "loaded", "skill": "guarded", "version": 1}]},
    ),
    ("get", "/api/v1/analytics/skills", "analytics:read", None),
    ("get", "/api/v1/label-policies", "skills:read", None),
    ("get", "/api/v1/label-policies/canary", "skills:read", None),
    ("put", "/api/v1/label-policies/canary", "policies:write", {"roles": ["admin", "author"]}),
    ("delete", "/api/v1/label-policies/canary", "policies:write", None),
    ("get", "/api/v1/webhooks", "webhooks:write", None),
    ("post", "/api/v1/webhooks", "webhooks:write", {"url": "http://93.184.215.14/hook", "events": ["label.moved"]}),
    ("get", "/api/v1/webhooks/{webhook}/deliveries", "webhooks:write", None),
    ("delete", "/api/v1/webhooks/{webhook}", "webhooks:write", None),
]
SUCCESS = {200, 201, 204}


@pytest.fixture
def world(db):
    publish("guarded", files=[("notes.txt", b"notes\n", False)])
    skill = Skill.objects.get(name="guarded")
    from registry.services.labels import label_move

    label_move(skill=skill, label="staging", version_number=1)
    webhook, _ = webhook_create(url="http://93.184.215.14/hook", events=["label.moved"])
    label_policy_set(label="canary", roles=["admin"])
    return {
        "rule": ForceIncludeRule.objects.create(name="r", pattern="guard", skills=["guarded"]).pk,
        "webhook": webhook.pk,
    }


def call(client, method, path, body, world):
    path = path.format(**world)
    return getattr(client, method)(path, body, format="json") if body is not None else getattr(client, method)(path)


@pytest.mark.parametrize(("method", "path", "scope", "body"), ENDPOINTS, ids=[f"{m} {p}" for m, p, _, _ in ENDPOINTS])
def test_without_a_token_it_is_401(world, method, path, scope, body):
    response = call(APIClient(), method, path, body, world)
    assert response.status_code == 401
    assert response.json()["error"] == "unauthenticated"
    assert response["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize(("method", "path", "scope", "body"), ENDPOINTS, ids=[f"{m} {p}" for m, p, _, _ in ENDPOINTS])
def test_a_token_without_the_scope_is_403_naming_it(world, make_token, method, path, scope, body):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token([s for s in TokenScope.values if s != scope])}")

    response = call(client, method, path, body, world)

    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"
    assert response.json()["scope"] == scope
    assert scope in response.json()["detail"]


@pytest.mark.parametrize(("method", "path", "scope", "body"), ENDPOINTS, ids=[f"{m} {p}" for m, p, _, _ in ENDPOINTS])
def test_a_token_with_only_that_scope_succeeds(world, make_token, method, path, scope, body):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token([scope])}")
    response = call(client, method, path, body, world)
    assert response.status_code in SUCCESS, response.content


def test_an_invalid_or_revoked_token_is_401(world, make_token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer skr_not-a-real-token")
    assert client.get("/api/v1/skills").status_code == 401

    secret = make_token(["skills:read"])
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get("/api/v1/skills").status_code == 200
    api_token_revoke(name="token-0")
    assert client.get("/api/v1/skills").status_code == 401
    assert client.get("/api/v1/skills/guarded/SKILL.md").status_code == 401


def test_a_request_reads_its_tokens_grant_once_whatever_it_checks(db, make_token, settings):
    """The turn list asks for either of two scopes, then which of them the token holds: every
    check reads the grant authentication got. Without the change listener (as on SQLite) each
    read of a grant is a query by the token's secret hash (registry/selectors/tokens.py), so
    this counts those."""
    settings.REGISTRY_LISTEN = False
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['analytics:read'])}")

    with CaptureQueriesContext(connection) as queries:
        response = client.get("/api/v1/agent/turns")

    assert response.status_code == 200, response.content
    grant_reads = [query for query in queries.captured_queries if "WHERE t.secret_hash = " in query["sql"]]
    assert len(grant_reads) == 1


def test_an_inactive_users_token_is_401(world, make_token):
    user = user_with_role(ANALYST)
    secret = make_token(["skills:read"], user=user)
    user.is_active = False
    user.save()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get("/api/v1/skills/guarded/SKILL.md").status_code == 401


# --- OPTIONS ------------------------------------------------------------------------------------

# A value for every path converter the API's routes use: OPTIONS is answered before the view
# looks anything up, so any well-formed value will do.
_ROUTE_VALUES = {"name": "guarded", "path": "notes.txt", "label": "staging"}
_CONVERTER_VALUES = {"IntConverter": 1, "UUIDConverter": uuid.UUID(int=1)}


def _api_routes() -> list[tuple[str, type]]:
    """(path, view class) for every route under /api/v1/, read from the URL configuration, so a
    view added later is covered without being listed here."""
    routes = []

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
                continue
            route = prefix + str(pattern.pattern)
            view = getattr(pattern.callback, "cls", None)
            if not route.startswith("api/v1/") or view is None:
                continue
            values = {
                key: _ROUTE_VALUES.get(key, _CONVERTER_VALUES.get(type(converter).__name__, "x"))
                for key, converter in pattern.pattern.converters.items()
            }
            path = "/" + route
            for key, value in values.items():
                path = re.sub(rf"<(?:\w+:)?{key}>", str(value), path)
            routes.append((path, view))

    walk(get_resolver().url_patterns, "")
    return routes


API_ROUTES = _api_routes()


def _implemented(view: type) -> set[str]:
    return {method.upper() for method in view.http_method_names if hasattr(view, method)} - {"OPTIONS", "HEAD"}


def _view_scopes(view: type) -> set[str]:
    # A method that takes any of several scopes names them in a tuple.
    return {
        scope
        for method in _implemented(view)
        for scope in (
            (view.required_scopes[method],)
            if isinstance(view.required_scopes[method], str)
            else view.required_scopes[method]
        )
    }


def test_the_api_routes_are_found():
    paths = {path for path, _ in API_ROUTES}
    assert {"/api/v1/resolve", "/api/v1/usage", "/api/v1/skills/guarded/labels/staging"} <= paths
    assert any(path.startswith("/api/v1/agent/turns/") for path in paths)


@pytest.mark.parametrize(("path", "view"), API_ROUTES, ids=[path for path, _ in API_ROUTES])
def test_every_method_of_every_api_view_declares_its_scope(path, view):
    assert _implemented(view) <= set(view.required_scopes), f"{view.__name__} serves a method with no scope"


@pytest.mark.parametrize(("path", "view"), API_ROUTES, ids=[path for path, _ in API_ROUTES])
def test_options_needs_the_scope_of_a_method_it_describes(db, make_token, path, view):
    """OPTIONS describes the view's methods, so a token that may use none of them is refused
    (it answered 200 on /resolve and /usage, whose only method is POST) and one that may use
    any of them is answered; without a token it is 401 like every other method."""
    scopes = _view_scopes(view)
    anonymous = APIClient().options(path)
    assert anonymous.status_code == 401

    lacking = APIClient()
    lacking.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token([s for s in TokenScope.values if s not in scopes])}")
    refused = lacking.options(path)
    assert refused.status_code == 403, refused.content
    assert refused.json()["scope"] in scopes
    assert all(scope in refused.json()["detail"] for scope in scopes)

    for scope in scopes:
        holding = APIClient()
        holding.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token([scope])}")
        answered = holding.options(path)
        assert answered.status_code == 200, (scope, answered.content)


def test_options_follows_the_role_not_only_the_token(db, make_token):
    """A token whose owner's role no longer grants its scope is refused OPTIONS too."""
    user = user_with_role(ANALYST)
    secret = make_token(["skills:read"], user=user)
    user.groups.clear()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")

    refused = client.options("/api/v1/resolve")

    assert refused.status_code == 403
    assert "owner's role does not grant it" in refused.json()["detail"]


# --- console sessions ---------------------------------------------------------------------------


def test_a_session_write_needs_the_csrf_token(admin_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    body = {"skill_md": make_skill_md("from-console")}

    refused = client.post("/api/v1/skills", body, content_type="application/json")
    assert refused.status_code == 403
    assert refused.json()["error"] == "csrf_failed"
    assert not Skill.objects.filter(name="from-console").exists()

    client.get("/")  # the console page sets the csrftoken cookie
    token = client.cookies["csrftoken"].value
    accepted = client.post("/api/v1/skills", body, content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert accepted.status_code == 201, accepted.content


def test_a_session_read_needs_no_csrf_and_roles_decide_scopes(db):
    from django.contrib.auth.models import Group

    publish("visible")
    analyst = UserFactory()
    analyst.groups.add(Group.objects.get_or_create(name="analyst")[0])
    client = Client(enforce_csrf_checks=True)
    client.force_login(analyst)

    assert client.get("/api/v1/skills").status_code == 200
    assert client.get("/api/v1/analytics/skills").status_code == 200
    client.get("/")
    token = client.cookies["csrftoken"].value
    denied = client.patch(
        "/api/v1/skills/visible", {"enabled": False}, content_type="application/json", HTTP_X_CSRFTOKEN=token
    )
    assert denied.status_code == 403 and denied.json()["scope"] == "skills:write"


def test_a_user_without_a_role_gets_403_not_401(db):
    client = Client()
    client.force_login(UserFactory())
    response = client.get("/api/v1/skills")
    assert response.status_code == 403


# --- OpenAPI ------------------------------------------------------------------------------------


def test_the_schema_describes_every_endpoint_with_its_error_responses(admin_client):
    response = admin_client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    for method, path, _, _ in ENDPOINTS:
        template = path.split("?")[0].replace("{rule}", "{rule_id}").replace("{webhook}", "{webhook_id}")
        template = (
            template.replace("/guarded", "/{name}")
            .replace("/notes.txt", "/{path}")
            .replace("/versions/1", "/versions/{number}")
            .replace("/labels/production", "/labels/{label}")
            .replace("/labels/staging", "/labels/{label}")
            .replace("/label-policies/canary", "/label-policies/{label}")
        )
        template = template.replace("/rules/{rule_id}", "/rules/{rule_id}")
        assert template in paths, template
        operation = paths[template][method]
        assert {"401", "403"} <= set(operation["responses"]), (method, template)
    assert "bearerAuth" in response.json()["components"]["securitySchemes"]


def test_the_docs_page_renders(admin_client):
    response = admin_client.get("/api/docs/")
    assert response.status_code == 200
    assert b"swagger" in response.content.lower()


def test_the_docs_page_loads_no_assets_from_a_cdn(admin_client, settings):
    if "drf_spectacular_sidecar" not in settings.INSTALLED_APPS:
        pytest.skip("drf-spectacular-sidecar is not installed (INSTALLED_APPS lacks drf_spectacular_sidecar)")
    content = admin_client.get("/api/docs/").content
    assert b"cdn.jsdelivr.net" not in content and b"unpkg.com" not in content
