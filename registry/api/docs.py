"""The OpenAPI schema and Swagger UI: behind a console login or a bearer token, unless
API_DOCS_PUBLIC is true (the schema maps every operation, which is an attacker's to-do list)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import BasePermission


class DocsAccess(BasePermission):
    # Read at request time, so the setting can be changed without re-importing the views.
    def has_permission(self, request, view) -> bool:
        return settings.API_DOCS_PUBLIC or bool(request.user and request.user.is_authenticated)


class ApiSchemaView(SpectacularAPIView):
    permission_classes = [DocsAccess]


# The split view serves Swagger UI's start-up script from its own URL (`?script`), not inline,
# so the page runs under the console's Content-Security-Policy.
_swagger = SpectacularSwaggerSplitView.as_view(url_name="api-schema", permission_classes=[DocsAccess])


def api_docs(request, *args, **kwargs):
    """Swagger UI. A person opening it in a browser without a session is sent to log in and
    brought back; a request with a bearer token is judged by DRF like any API call."""
    if not (settings.API_DOCS_PUBLIC or request.user.is_authenticated or "HTTP_AUTHORIZATION" in request.META):
        return redirect_to_login(request.get_full_path())
    return _swagger(request, *args, **kwargs)
