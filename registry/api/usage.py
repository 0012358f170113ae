"""`POST /usage` (batched, idempotent events) and `GET /analytics/skills` (JSON or CSV)."""

from __future__ import annotations

import csv
import io

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import renderers
from rest_framework.response import Response

from registry.api import serializers as s
from registry.api.base import ApiView, SafeJSONRenderer
from registry.api.schema import errors
from registry.models import ApiToken
from registry.services.analytics import CSV_COLUMNS, skill_analytics
from registry.services.usage import UsageEventInput, usage_record


class UsageApi(ApiView):
    required_scopes = {"POST": "usage:write"}
    max_body_bytes = 5 * 1024 * 1024

    @extend_schema(
        operation_id="usage_record",
        request=s.UsageBatchInputSerializer,
        responses={200: s.UsageBatchSerializer, **errors(400, 401, 403, 413, 415)},
        summary="Record a batch of usage events; idempotent by event_id (re-sending never double-counts).",
    )
    def post(self, request):
        data = request.data
        if isinstance(data, list):  # a bare list of events is accepted too
            data = {"events": data}
        body = s.UsageBatchInputSerializer(data=data)
        body.is_valid(raise_exception=True)
        default_client = body.validated_data.get("client_id") or (
            request.auth.name if isinstance(request.auth, ApiToken) else ""
        )
        events = [
            UsageEventInput(
                event_id=e["event_id"],
                kind=e["kind"],
                skill=e["skill"],
                version=e.get("version"),
                trigger=e.get("trigger", ""),
                client_id=e.get("client_id") or default_client,
                duration_ms=e.get("duration_ms"),
                tokens=e.get("tokens"),
                cost=e.get("cost"),
                rating=e.get("rating"),
                at=e.get("at"),
            )
            for e in body.validated_data["events"]
        ]
        result = usage_record(events=events, actor=self.actor())
        return Response(
            {"accepted": result.accepted, "duplicates": result.duplicates, "duplicate_ids": list(result.duplicate_ids)}
        )


class AnalyticsCSVRenderer(renderers.BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for row in data["skills"]:
            writer.writerow(["" if row.get(c) is None else row.get(c) for c in CSV_COLUMNS])
        return buffer.getvalue().encode(self.charset)


class AnalyticsSkillsApi(ApiView):
    required_scopes = {"GET": "analytics:read"}
    renderer_classes = [SafeJSONRenderer, AnalyticsCSVRenderer]

    def finalize_response(self, request, response, *args, **kwargs):
        if response.status_code != 200 or request.method == "OPTIONS":
            # Only the analytics rows have a CSV form: errors (SPEC §5) and OPTIONS answer in JSON
            # even for a client that asked for CSV.
            request.accepted_renderer, request.accepted_media_type = SafeJSONRenderer(), "application/json"
        return super().finalize_response(request, response, *args, **kwargs)

    @extend_schema(
        operation_id="analytics_skills",
        parameters=[s.AnalyticsQuerySerializer],
        responses={
            (200, "application/json"): s.AnalyticsSerializer,
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.STR, description="The same rows as CSV (`format=csv` or `Accept: text/csv`)."
            ),
            **errors(400, 401, 403),
            (404, "application/json"): OpenApiResponse(
                s.ErrorSerializer, description="`format` is neither `json` nor `csv`."
            ),
        },
        summary="Per-skill counts and success rate with its 95% Wilson interval and n.",
    )
    def get(self, request, format=None):
        query = s.AnalyticsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        stats = skill_analytics(
            date_from=params.get("from"),
            date_to=params.get("to"),
            label=params.get("label"),
            version=params.get("version"),
            skill=params.get("skill"),
            by_version=params.get("by_version", False),
        )
        response = Response(
            {
                "from": params.get("from"),
                "to": params.get("to"),
                "label": params.get("label"),
                "version": params.get("version"),
                "skills": [row.as_dict() for row in stats],
            }
        )
        if getattr(request, "accepted_renderer", None) and request.accepted_renderer.format == "csv":
            response["Content-Disposition"] = 'attachment; filename="skill-analytics.csv"'
        return response
