"""One exception handler: domain errors and DRF errors become `{"error", "detail", ...}` JSON.

Django's own error pages (a URL no route matches, a crash outside DRF) answer in the same JSON
shape under /api/, and as the usual HTML pages everywhere else (config/urls.py installs them).
A backing service that cannot be reached is a 503 naming it (`UnavailableMiddleware`)."""

from __future__ import annotations

import logging

import kombu.exceptions
import redis
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from registry.errors import ApplicationError

_DRF_CODES = {
    status.HTTP_400_BAD_REQUEST: "invalid",
    status.HTTP_401_UNAUTHORIZED: "unauthenticated",
    status.HTTP_403_FORBIDDEN: "forbidden",
    status.HTTP_404_NOT_FOUND: "not_found",
    status.HTTP_405_METHOD_NOT_ALLOWED: "method_not_allowed",
    status.HTTP_406_NOT_ACCEPTABLE: "not_acceptable",
    status.HTTP_413_REQUEST_ENTITY_TOO_LARGE: "too_large",
    status.HTTP_415_UNSUPPORTED_MEDIA_TYPE: "unsupported_media_type",
    status.HTTP_429_TOO_MANY_REQUESTS: "throttled",
    status.HTTP_503_SERVICE_UNAVAILABLE: "unavailable",
}
log = logging.getLogger(__name__)


class RequestTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "too_large"


# An error may quote what it refuses (DRF's "'...' is not a valid choice", a service naming a bad
# value); quoting a megabyte-long input back whole helps nobody, so every text in an error body is cut.
QUOTE_MAX_CHARS = 300


def _cut(value):
    if isinstance(value, str):
        if len(value) <= QUOTE_MAX_CHARS:
            return value
        return f"{value[:QUOTE_MAX_CHARS]}… ({len(value) - QUOTE_MAX_CHARS:,} more characters)"
    if isinstance(value, dict):
        return {_cut(str(key)): _cut(child) for key, child in value.items()}
    if isinstance(value, list | tuple):
        return [_cut(child) for child in value]
    return value


def exception_handler(exc, context):
    response = _exception_response(exc, context)
    if response is not None:
        response.data = _cut(response.data)
    return response


def _exception_response(exc, context):
    if isinstance(exc, ApplicationError):
        return Response(exc.as_dict(), status=exc.status, headers=exc.headers())
    extra: dict = {}
    if isinstance(exc, RequestDataTooBig):
        # Django raises this past DATA_UPLOAD_MAX_MEMORY_SIZE; it is a size problem, not a 400.
        exc = RequestTooLarge(str(exc) or RequestTooLarge.default_detail)
    elif isinstance(exc, TooManyFieldsSent | SuspiciousOperation):
        exc = exceptions.ParseError(str(exc) or "The request could not be read.")
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    scope = getattr(exc, "scope", None)
    if scope:
        extra["scope"] = scope
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    body: dict = {"error": _DRF_CODES.get(response.status_code, "error")}
    if isinstance(exc, exceptions.ValidationError):
        body["detail"] = _summary(exc.detail)
        body["fields"] = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
    else:
        detail = str(exc.detail) if hasattr(exc, "detail") else str(exc)
        body["detail"] = detail
        if response.status_code == status.HTTP_403_FORBIDDEN and detail.startswith("CSRF Failed"):
            body["error"] = "csrf_failed"
    body.update(extra)
    response.data = body
    return response


def _summary(detail) -> str:
    """A one-line description of a serializer error, naming the first bad field."""
    if isinstance(detail, dict) and detail:
        field, problems = next(iter(detail.items()))
        first = problems
        while isinstance(first, dict | list) and first:
            first = next(iter(first.values())) if isinstance(first, dict) else first[0]
        return f"Invalid '{field}': {first}" if field != "non_field_errors" else str(first)
    if isinstance(detail, list) and detail:
        return str(detail[0])
    return "Some fields are invalid."


def _api_error(request, status_code: int, detail: str) -> JsonResponse | None:
    if not request.path_info.startswith("/api/"):
        return None
    return JsonResponse({"error": _DRF_CODES.get(status_code, "server_error"), "detail": detail}, status=status_code)


def bad_request(request, exception):
    return _api_error(request, 400, "The request could not be read.") or defaults.bad_request(request, exception)


def permission_denied(request, exception):
    return _api_error(request, 403, "Permission denied.") or defaults.permission_denied(request, exception)


def page_not_found(request, exception):
    # Reached only when no route matches (DRF views answer their own 404s), e.g. `/rules/abc`.
    detail = "No API operation has this path; /api/schema/ lists them."
    return _api_error(request, 404, detail) or defaults.page_not_found(request, exception)


def server_error(request):
    return _api_error(request, 500, "Internal server error.") or defaults.server_error(request)


# What a client can do about these is wait: the database, the cache or the broker is down or
# refusing connections. (OperationalError also covers a cancelled or timed-out statement.)
_UNAVAILABLE = (
    ((OperationalError, InterfaceError), "The database"),
    ((redis.ConnectionError, redis.TimeoutError), "The cache"),
    ((kombu.exceptions.OperationalError,), "The task broker"),
)
RETRY_AFTER_SECONDS = 5


class UnavailableMiddleware:
    """Turns an unreachable backing service into a 503 with Retry-After, in every view (the
    SKILL.md fast path runs before DRF, the console outside it), instead of a 500."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception) -> HttpResponse | None:
        service = next((name for kinds, name in _UNAVAILABLE if isinstance(exception, kinds)), None)
        if service is None:
            return None
        log.warning("%s is unavailable: %s %s", service, request.method, request.path, exc_info=exception)
        detail = f"{service} is unavailable right now; try again shortly."
        response = _api_error(request, 503, detail) or HttpResponse(detail, status=503, content_type="text/plain")
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
