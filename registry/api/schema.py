"""OpenAPI helpers: the error responses every operation documents, and the bearer auth scheme."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiResponse

from registry.api.serializers import ErrorSerializer

_DESCRIPTIONS = {
    400: "Invalid input: `fields` names what is wrong; a bad SKILL.md also gives its `line`.",
    401: "No token, or an invalid/revoked one (`Authorization: Bearer <token>`).",
    403: "The token or account lacks the scope named in `scope` (or CSRF failed for a session).",
    404: "No such skill, version, label, file or rule.",
    409: "`base_version` is stale: someone published meanwhile; `latest_version` says which is newest.",
    413: "The body, bundle, a file or SKILL.md is over its size limit.",
    415: "Unsupported Content-Type.",
}


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    return {code: OpenApiResponse(ErrorSerializer, description=_DESCRIPTIONS[code]) for code in codes}


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "registry.api.auth.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token (`python manage.py tokens create`); scopes decide what it may do.",
        }
