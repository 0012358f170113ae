"""One exception handler: domain errors and DRF errors become `{"error", "detail", ...}` JSON."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
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
}


def exception_handler(exc, context):
    if isinstance(exc, ApplicationError):
        return Response(exc.as_dict(), status=exc.status)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    body: dict = {"error": _DRF_CODES.get(response.status_code, "error")}
    if isinstance(exc, exceptions.ValidationError):
        body["detail"] = "Some fields are invalid."
        body["fields"] = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
    else:
        body["detail"] = str(exc.detail) if hasattr(exc, "detail") else str(exc)
    response.data = body
    return response
