"""`/mcp`: a bearer token with `skills:read` (401 without a valid one, 403 without the scope), a
valid `?label=` and `?subject=` (the token without one, as for the REST reads), a `?skillset=` that
exists and carries the label (404 naming either), then the request as the `mcp` package's
Streamable HTTP transport answers it."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.negotiation import BaseContentNegotiation

from registry.api.auth import BearerTokenAuthentication
from registry.api.base import ApiView
from registry.api.serializers import LabelField
from registry.readmodel.rollouts import SUBJECT_MAX_CHARS
from registry.readmodel.skillsets import skillset_served

READ = "skills:read"


class McpQuerySerializer(serializers.Serializer):
    label = LabelField(allow_null=True, default=None)
    subject = serializers.CharField(min_length=1, max_length=SUBJECT_MAX_CHARS, required=False)
    skillset = serializers.CharField(min_length=1, max_length=128, required=False, default=None)


def _asgi_scope(request) -> dict:
    port = request.META.get("SERVER_PORT", "")
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode("utf-8"),
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "root_path": "",
        "headers": [(key.lower().encode("latin-1"), value.encode("latin-1")) for key, value in request.headers.items()],
        "server": (request.META.get("SERVER_NAME", ""), int(port) if str(port).isdigit() else 0),
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
    }


class McpNegotiation(BaseContentNegotiation):
    """The view's own answers (401, 403, 405) are JSON whatever `Accept` asks: a host opening the
    optional GET stream sends `Accept: text/event-stream`, and must get 405 (no stream here), which
    Streamable HTTP clients read as "carry on without one", never 406. The transport itself
    answers POSTs in the form their `Accept` allows."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


@extend_schema(exclude=True)  # JSON-RPC over HTTP: the MCP specification describes it, not OpenAPI
class McpApi(ApiView):
    # Machine clients only: a console session's cookie is not a way in (no CSRF to guard).
    authentication_classes = [BearerTokenAuthentication]
    # POST only: a stateless server has no stream to offer on GET and no session to end on
    # DELETE, so both are 405, as the Streamable HTTP transport allows.
    required_scopes = {"POST": READ}
    content_negotiation_class = McpNegotiation

    def post(self, request):
        query = McpQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        skillset = query.validated_data["skillset"]
        if skillset is not None:
            # An unknown set or a label it lacks is the endpoint's 404, naming it, before any MCP.
            skillset_served(name=skillset, label=query.validated_data["label"])
        # The `mcp` package costs a second and a half of imports; every process that loads the
        # URLs (each manage.py command, each Celery worker) would pay it for nothing, so it is
        # imported here, and config/wsgi.py imports it in each web process before its first request.
        from registry.mcp.server import mcp_serve

        # Django's request thread runs the selectors (`sync_to_async` inside goes back to it), so
        # database connections are the request's own, closed with it.
        exchange = async_to_sync(mcp_serve)(
            scope=_asgi_scope(request),
            body=request.body,
            label=query.validated_data["label"],
            subject=self.subject(query.validated_data),
            skillset=skillset,
        )
        response = HttpResponse(bytes(exchange.content), status=exchange.status)
        for key, value in exchange.headers:
            if key.lower() != b"content-length":
                response[key.decode("latin-1")] = value.decode("latin-1")
        return response
