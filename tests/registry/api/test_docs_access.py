"""The OpenAPI schema and Swagger UI need a login or a token unless API_DOCS_PUBLIC=true."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_an_anonymous_schema_request_is_401():
    response = Client().get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 401
    assert response.json()["error"] == "unauthenticated"


def test_an_anonymous_browser_is_sent_to_log_in_for_the_docs():
    response = Client().get("/api/docs/")
    assert response.status_code == 302 and response["Location"] == "/login/?next=/api/docs/"


def test_a_logged_in_user_reads_schema_and_docs(admin_client):
    assert admin_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["openapi"].startswith("3.")
    assert admin_client.get("/api/docs/").status_code == 200


def test_any_token_reads_the_schema_and_docs(make_token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['skills:read'])}")
    assert client.get("/api/schema/", HTTP_ACCEPT="application/json").status_code == 200
    assert client.get("/api/docs/").status_code == 200


def test_a_bad_token_is_401_for_the_docs_too():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer skr_nope")
    assert client.get("/api/docs/").status_code == 401


def test_api_docs_public_opens_both(settings):
    settings.API_DOCS_PUBLIC = True
    assert Client().get("/api/schema/", HTTP_ACCEPT="application/json").status_code == 200
    assert Client().get("/api/docs/").status_code == 200
