"""What every API view shares: auth and scopes, body limits, hostile-input guards, ETags."""

from __future__ import annotations

import codecs
import json

from django.conf import settings
from django.http import HttpResponse
from django.utils.http import parse_etags
from rest_framework import exceptions, parsers, renderers
from rest_framework.views import APIView

from registry.api.auth import ScopePermission
from registry.api.errors import RequestTooLarge
from registry.models import ApiToken
from registry.services.audit import Actor


def _shown(where: str) -> str:
    return where.encode("utf-8", "backslashreplace").decode("utf-8")


def _check_strings(value, path: str = "body") -> None:
    """Refuse NUL and lone surrogates anywhere in parsed JSON: PostgreSQL cannot store either, and
    a 500 from the database is not an answer to bad input."""
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
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
                stack.append((key, where))
                stack.append((child, f"{where}.{key}"[:200]))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))


class SafeJSONParser(parsers.JSONParser):
    """JSON that is strict (no NaN/Infinity) and holds only text PostgreSQL can store."""

    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        try:
            decoded = codecs.getreader(encoding)(stream)
            data = json.load(decoded, parse_constant=_reject_constant)
        except (ValueError, UnicodeDecodeError, LookupError) as exc:
            raise exceptions.ParseError(f"The JSON body could not be read: {exc}") from None
        _check_strings(data)
        return data


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


class ApiView(APIView):
    """Base for registry API views: JSON in and out, scopes per method, size-capped bodies."""

    permission_classes = [ScopePermission]
    renderer_classes = [SafeJSONRenderer]
    parser_classes = [SafeJSONParser]
    required_scopes: dict[str, str] = {}
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

    def actor(self) -> Actor:
        request = self.request
        if isinstance(request.auth, ApiToken):
            return Actor(user=request.user, via=f"api token {request.auth.name}")
        return Actor(user=request.user, via="console")


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


def not_modified(etag: str) -> HttpResponse:
    response = HttpResponse(status=304)
    response["ETag"] = etag
    return response
