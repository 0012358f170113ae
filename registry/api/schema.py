"""OpenAPI helpers: the error responses operations document, the bearer auth scheme, and the
AutoSchema that makes the published schema state what the views really accept."""

from __future__ import annotations

import inspect

from django.core.validators import RegexValidator
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import get_doc
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from registry.api.serializers import ErrorSerializer

# A character that str.strip() keeps. Python's whitespace is not ECMA's `\s` (it has \x1c-\x1f and
# \x85, not \ufeff), so the class lists Python's own.
NOT_ONLY_WHITESPACE = "[^" + "".join(f"\\u{code:04x}" for code in range(0x10000) if chr(code).isspace()) + "]"

_DESCRIPTIONS = {
    400: "Invalid input: `fields` names what is wrong; a bad SKILL.md also gives its `line`. Text anywhere in a "
    "body (unknown keys included) must not contain U+0000 or unpaired surrogates, which PostgreSQL cannot store.",
    401: "No token, or an invalid/revoked one (`Authorization: Bearer <token>`).",
    403: "The token or account lacks the scope named in `scope` (or CSRF failed for a session), or a label "
    "policy (`policy`) does not let its role change the label.",
    404: "No such skill, version, label, file, rule, turn or conversation (or no operation has this path).",
    409: "Clashes with the current state: a stale `base_version` (someone published meanwhile; "
    "`latest_version` says which is newest), a name already taken, a turn that has not finished, or "
    "(`error: policy`) a version without the eval evidence a label policy asks for (`unmet`).",
    413: "The body, bundle, a file or SKILL.md is over its size limit.",
    415: "Unsupported Content-Type.",
    429: "Over `API_THROTTLE_RATE` for this token or user; `Retry-After` says in how many seconds to retry.",
}


# drf-spectacular's `responses`: by status, or by (status, media type).
Responses = dict[int | tuple[int, str], OpenApiResponse]


def errors(*codes: int) -> Responses:
    """Error responses: always JSON, whatever else the operation renders (SPEC §5). Every
    operation is rate limited, so each lists 429 too."""
    return {
        (code, "application/json"): OpenApiResponse(ErrorSerializer, description=_DESCRIPTIONS[code])
        for code in (*codes, 429)
    }


class RegistryAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema, told how our views read input, so that a client (or
    schemathesis) that follows the schema is not refused, and one that breaks it is not accepted."""

    def get_description(self) -> str:  # type: ignore[override]
        # Only the view's own docstring: the base classes' ones say how views are built, not what they do.
        return get_doc(getattr(self.view, self.method.lower(), None)) or inspect.cleandoc(type(self.view).__doc__ or "")

    def _get_parameters(self):
        parameters = super()._get_parameters()
        for parameter in parameters:
            if parameter["in"] == "query" and not parameter.get("required"):
                # DRF (and our pagination) read `?name=` as "not given", which is how HTML forms
                # send an unset field.
                parameter["allowEmptyValue"] = True
        return parameters

    def _get_request_for_media_type(self, serializer, direction="request"):
        schema, required = super()._get_request_for_media_type(serializer, direction)
        # A raw binary body (an application/zip upload) is the payload itself: it is required,
        # which spectacular cannot tell from the type alone.
        return schema, required or serializer == OpenApiTypes.BINARY

    def _get_serializer_field_meta(self, field, direction):
        meta = super()._get_serializer_field_meta(field, direction)
        if direction == "request" and isinstance(field, serializers.CharField) and not field.allow_blank:
            meta["minLength"] = max(meta.get("minLength", 0), 1)
            has_pattern = any(isinstance(v, RegexValidator) for v in field.validators)
            if field.trim_whitespace and not has_pattern:
                # DRF strips the value before the blank check, so whitespace alone is blank too.
                meta["pattern"] = NOT_ONLY_WHITESPACE
        return meta

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if schema is not None and isinstance(field, serializers.ListSerializer):
            # spectacular leaves out the bounds of a nested `many=True` list (`events` of POST /usage).
            if not field.allow_empty or field.min_length:
                schema["minItems"] = max(field.min_length or 0, 1)
            if field.max_length is not None:
                schema["maxItems"] = field.max_length
        return schema

    def resolve_serializer(self, serializer, direction, bypass_extensions=False):
        if direction == "request" and self.method == "PATCH":
            # spectacular assumes DRF's generic PATCH (`partial=True`, nothing required); our PATCH
            # views validate with the serializer as declared, so its required fields stay required.
            # `serializer` is spectacular's own copy here.
            serializer.partial = False
        return super().resolve_serializer(serializer, direction, bypass_extensions)


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "registry.api.auth.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token (`python manage.py tokens create`); scopes decide what it may do.",
        }
