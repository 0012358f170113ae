"""What every API view shares: auth and scopes, body limits, hostile-input guards, ETags."""

from __future__ import annotations

import codecs
import json
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpResponse
from django.utils.http import parse_etags
from rest_framework import exceptions, parsers, renderers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from registry import selectors
from registry.api.auth import ScopePermission
from registry.api.errors import RequestTooLarge
from registry.api.schema import RegistryAutoSchema
from registry.models import ApiToken, Skill, SkillVersion
from registry.readmodel.rollouts import subject_canary, subject_of
from registry.roles import acting_role, user_roles
from registry.services.audit import Actor


def _shown(where: str) -> str:
    return where.encode("utf-8", "backslashreplace").decode("utf-8")


# No request body needs more nesting than this (a rule's tool arguments, a usage event's metadata);
# deeper JSON is refused before anything recurses over it (serializers, json.dumps, the ORM).
JSON_MAX_DEPTH = 64


def _too_deep(where: str) -> exceptions.ParseError:
    return exceptions.ParseError(
        f"The JSON body is nested too deeply at {_shown(where)[:200]}: at most {JSON_MAX_DEPTH} levels of "
        "arrays and objects are accepted."
    )


def _check_strings(value, path: str = "body") -> None:
    """Refuse NUL and lone surrogates anywhere in parsed JSON: PostgreSQL cannot store either, and
    a 500 from the database is not an answer to bad input. Refuse nesting past JSON_MAX_DEPTH.
    Iterative, so hostile nesting cannot exhaust the stack here."""
    stack = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, dict | list) and depth >= JSON_MAX_DEPTH:
            raise _too_deep(where)
        if isinstance(item, str):
            if "\x00" in item:
                raise exceptions.ParseError(f"{_shown(where)} contains a NUL (\\u0000) character.")
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise exceptions.ParseError(
                    f"{_shown(where)} contains an unpaired surrogate (invalid Unicode)."
                ) from None
        elif isinstance(item, dict):
            for key, child in item.items():
                stack.append((key, where, depth + 1))
                stack.append((child, f"{where}.{key}"[:200], depth + 1))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{i}]"[:200], depth + 1) for i, child in enumerate(item))


class SafeJSONParser(parsers.JSONParser):
    """JSON that is strict (no NaN/Infinity) and holds only text PostgreSQL can store."""

    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = codecs.getreader(encoding)(stream).read()
            data = json.loads(text, parse_constant=_reject_constant)
        except RecursionError:
            # The decoder guards its own recursion; nesting this deep is past JSON_MAX_DEPTH anyway.
            raise _too_deep("body") from None
        except (ValueError, UnicodeDecodeError, LookupError) as exc:
            raise exceptions.ParseError(f"The JSON body could not be read: {exc}") from None
        if not _plainly_storable(text, data):
            _check_strings(data)  # walks every value, and names the one at fault
        return data


def _plainly_storable(text: str, data) -> bool:
    """True when no string in `data` can hold a NUL or a lone surrogate and it nests less than
    JSON_MAX_DEPTH deep, found without visiting every string (`_check_strings` takes longer than
    storing a batch of 1,000 usage events). The decoder copies characters from the text, except
    for escapes, and only a \\u escape yields a character that is not itself in the text; so a
    text without one, without NUL and encodable as UTF-8 holds no string that is not either."""
    if "\\u" in text or "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    containers = [(data, 0)] if type(data) is dict or type(data) is list else []
    while containers:
        item, depth = containers.pop()
        if depth >= JSON_MAX_DEPTH:
            return False
        for child in item.values() if type(item) is dict else item:
            if type(child) is dict or type(child) is list:
                containers.append((child, depth + 1))
    return True


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


class ZipParser(parsers.BaseParser):
    """A raw zip body (`Content-Type: application/zip`) is a bundle upload."""

    media_type = "application/zip"

    def parse(self, stream, media_type=None, parser_context=None):
        return {"bundle_bytes": stream.read() if stream is not None else b""}


class SafeJSONRenderer(renderers.JSONRenderer):
    """JSON out; text that cannot be UTF-8 encoded (a lone surrogate echoed in an error) is
    escaped as \\uXXXX instead of failing the response."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            return json.dumps(
                data, cls=self.encoder_class, ensure_ascii=True, allow_nan=False, separators=(",", ":")
            ).encode()


class Pagination(LimitOffsetPagination):
    """`limit`/`offset` paging. A limit over `max_limit` is capped, as DRF does; a value that is not
    a whole number in range is a 400 (DRF would silently use the default)."""

    default_limit = 50
    max_limit = 500

    def get_limit(self, request) -> int:
        return min(
            _whole_number(request, self.limit_query_param, minimum=1, default=self.default_limit), self.max_limit
        )

    def get_offset(self, request) -> int:
        return _whole_number(request, self.offset_query_param, minimum=0, default=0)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.limit_query_param:
                parameter["schema"]["minimum"] = 1
                parameter["description"] += (
                    f" At most {self.max_limit}; a larger limit is capped. Default {self.default_limit}."
                )
            elif parameter["name"] == self.offset_query_param:
                parameter["schema"]["minimum"] = 0
        return parameters


def _whole_number(request, name: str, *, minimum: int, default: int) -> int:
    raw = request.query_params.get(name, "")
    if raw == "":  # like every optional query parameter, `?limit=` is "not given"
        return default
    if not (raw.isascii() and raw.isdigit()) or int(raw) < minimum:
        raise exceptions.ValidationError({name: [f"A whole number of at least {minimum} is required."]})
    return int(raw)


class ApiView(APIView):
    """Base for registry API views: JSON in and out, scopes per method, size-capped bodies."""

    schema = RegistryAutoSchema()
    # Used by `paginated`; the schema shows the envelope (and limit/offset) for list responses.
    pagination_class = Pagination
    permission_classes = [ScopePermission]
    renderer_classes = [SafeJSONRenderer]
    parser_classes = [SafeJSONParser]
    required_scopes: dict[str, str | tuple[str, ...]] = {}
    # Bodies over this are refused with 413 before anything reads them.
    max_body_bytes = 1024 * 1024

    def initial(self, request, *args, **kwargs):
        for value in kwargs.values():
            # `%00` and other control characters in a path segment: no skill or label has them,
            # and PostgreSQL would refuse the query with an error instead of "not found".
            if isinstance(value, str) and any(ord(char) < 32 for char in value):
                raise exceptions.NotFound()
        length = request.META.get("CONTENT_LENGTH")
        try:
            size = int(length) if length else 0
        except ValueError:
            raise exceptions.ParseError("Content-Length is not a number.") from None
        if size > self.max_body_bytes:
            raise RequestTooLarge(
                f"The request body is {size:,} bytes; this endpoint accepts at most {self.max_body_bytes:,}."
            )
        super().initial(request, *args, **kwargs)
        # Every query parameter takes one value; DRF would silently use the last of several.
        repeated = sorted(key for key, values in request.query_params.lists() if len(values) > 1)
        if repeated:
            raise exceptions.ValidationError({key: ["Give this parameter once."] for key in repeated})

    def paginated(self, items: Sequence[Any] | QuerySet, render) -> Response:
        """One page of `items`, each rendered, in DRF's `{"count", "next", "previous", "results"}`
        (a query is sliced in the database: only the page's rows are read)."""
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(items, self.request, view=self)
        return paginator.get_paginated_response([render(item) for item in page])

    def skill_and_params(self, name: str, params: type[Serializer], *, body: bool = False) -> tuple[Skill, dict]:
        """The skill a `/skills/{name}/...` request is about, and its parsed parameters.

        `params` reads the query string (the request body with `body`); its optional `source`
        picks the skill in that source. A bad parameter is a 400 and an unknown skill a 404,
        both before the view does anything.
        """
        parsed = params(data=self.request.data if body else self.request.query_params)
        parsed.is_valid(raise_exception=True)
        skill = selectors.skill_get(name=name, source=parsed.validated_data.get("source"))
        return skill, parsed.validated_data

    def version_and_params(self, name: str, number: int, params: type[Serializer]) -> tuple[Skill, SkillVersion, dict]:
        """What a `/skills/{name}/versions/{number}/...` request is about: the skill, its version
        `number` (a 404 when it has none) and the parsed parameters, as `skill_and_params` reads them."""
        skill, parsed = self.skill_and_params(name, params)
        return skill, selectors.skill_version_for(skill=skill, number=number), parsed

    def subject(self, params: dict) -> str | None:
        """Who a read is for, for a label's rollout: the `subject` parameter, else the token
        (or the signed-in user)."""
        request = self.request
        token = request.auth.pk if isinstance(request.auth, ApiToken) else None
        user = getattr(request.user, "pk", None)
        return subject_of(given=params.get("subject"), token=token or (f"user:{user}" if user else None))

    def served_version(self, skill: Skill, params: dict) -> SkillVersion:
        """The version of `skill` this read gets: its `version`, else its label's (production
        by default) — the canary when the label's rollout puts the read's subject there."""
        number, label = params.get("version"), params.get("label")
        canary = (
            None
            if number is not None
            else subject_canary(name=skill.name, source=skill.source, label=label, subject=self.subject(params))
        )
        return selectors.skill_version_for(skill=skill, label=label, number=number, canary=canary)

    def actor(self) -> Actor:
        request = self.request
        if isinstance(request.auth, ApiToken):
            return Actor(user=request.user, via=f"api token {request.auth.name}")
        return Actor(user=request.user, via="console")

    def acting_role(self) -> str:
        """The role a label policy sees: the account's, or a token's owner's (its scopes were
        already checked against the method)."""
        return acting_role(user_roles(self.request.user))


class RawApiView(ApiView):
    """Views that answer with bytes (SKILL.md, files, zips): errors are still JSON, whatever Accept says."""

    def perform_content_negotiation(self, request, force=False):
        return super().perform_content_negotiation(request, force=True)


def if_none_match(request, etag: str) -> bool:
    """True when the request's If-None-Match matches `etag` (weak comparison, as RFC 9110 says)."""
    header = request.META.get("HTTP_IF_NONE_MATCH")
    if not header:
        return False
    tags = parse_etags(header)
    if "*" in tags:
        return True
    bare = etag.removeprefix("W/")
    return any(tag.removeprefix("W/") == bare for tag in tags)


def not_modified(etag: str, *, extra: dict | None = None) -> HttpResponse:
    response = HttpResponse(status=304)
    response["ETag"] = etag
    if extra and "X-Skill-Version" in extra:
        response["X-Skill-Version"] = extra["X-Skill-Version"]  # which version the ETag is of
    return response


def raw_response(
    request,
    content: bytes,
    etag: str,
    content_type: str,
    *,
    extra: dict | None = None,
    cache_control: str = "private, no-cache",
) -> HttpResponse:
    """Bytes with their strong ETag (304 when If-None-Match matches; no body for HEAD). Clients
    revalidate every time (`no-cache`): what a name or label serves can change."""
    if if_none_match(request, etag):
        return not_modified(etag, extra=extra)
    response = HttpResponse(b"" if request.method == "HEAD" else content, content_type=content_type)
    response["ETag"] = etag
    response["Content-Length"] = str(len(content))
    response["Cache-Control"] = cache_control
    for key, value in (extra or {}).items():
        response[key] = value
    return response
