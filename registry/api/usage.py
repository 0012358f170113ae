"""`POST /usage` (batched, idempotent events) and the analytics endpoints (JSON, or CSV with
`format=csv` / `Accept: text/csv`). Every analytics answer is read from the rollups."""

from __future__ import annotations

import csv
import datetime as dt
import io

from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import renderers
from rest_framework.fields import empty
from rest_framework.response import Response

from registry.api import serializers as s
from registry.api.base import ApiView, SafeJSONRenderer
from registry.api.schema import Responses, errors
from registry.models import ApiToken, UsageKind, UsageSource
from registry.selectors import analytics
from registry.services.usage import UsageEventInput, usage_offers_roll_up, usage_record


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
        batch = plain_batch(data)
        if batch is None:  # anything unusual: the serializer validates it and says what is wrong
            body = s.UsageBatchInputSerializer(data=data)
            body.is_valid(raise_exception=True)
            batch = body.validated_data
        default_client = batch.get("client_id") or (request.auth.name if isinstance(request.auth, ApiToken) else "")
        events = [
            UsageEventInput(
                event_id=e["event_id"],
                kind=e["kind"],
                skill=e["skill"],
                skill_source=e.get("source", ""),
                version=e.get("version"),
                trigger=e.get("trigger", ""),
                label=e.get("label", ""),
                model=e.get("model", ""),
                client_id=e.get("client_id") or default_client,
                duration_ms=e.get("duration_ms"),
                tokens=e.get("tokens"),
                cost=e.get("cost"),
                rating=e.get("rating"),
                at=e.get("at"),
            )
            for e in batch["events"]
        ]
        result = usage_record(events=events, source=UsageSource.API, actor=self.actor())
        return Response(
            {"accepted": result.accepted, "duplicates": result.duplicates, "duplicate_ids": list(result.duplicate_ids)}
        )


# --- the plain-batch fast path ---------------------------------------------------------------
# DRF spends longer validating an event than storing it takes (docs/benchmarks/index.md). Most batches
# are plain (known keys, values already of the right type and in range), and for those one pass
# of the checks below gives exactly what the serializer would; anything else falls back to the
# serializer, which also writes the error messages. Limits are read from the serializer's own
# fields, and a property test (tests/registry/api/test_usage_fast_path.py) checks that every
# batch accepted here is one the serializer accepts with the same values.

_EVENT_FIELDS = s.UsageEventInputSerializer().fields
_EVENT_FIELD_NAMES = frozenset(_EVENT_FIELDS)  # the fields' own keys() compare key by key, in Python
_TEXT_LIMITS = {
    name: (field.max_length, field.required, field.allow_blank)
    for name, field in _EVENT_FIELDS.items()
    if isinstance(field, s.TextField)
}
_WHOLE_LIMITS = {
    name: (field.min_value, field.max_value)
    for name, field in _EVENT_FIELDS.items()
    if isinstance(field, s.WholeNumberField)
}
_DEFAULTS = {name: field.default for name, field in _EVENT_FIELDS.items() if field.default is not empty}
_COST = _EVENT_FIELDS["cost"]
_KINDS = frozenset(_EVENT_FIELDS["kind"].choices)
_SOURCES = frozenset(_EVENT_FIELDS["source"].choices)
_BATCH_FIELDS = s.UsageBatchInputSerializer().fields
_BATCH_LIMIT = _BATCH_FIELDS["events"].max_length
_CLIENT_ID_LIMIT = _BATCH_FIELDS["client_id"].max_length


def plain_batch(data) -> dict | None:
    """The validated batch when it is plain, else None (then the serializer decides)."""
    if type(data) is not dict or not data.keys() <= {"events", "client_id"}:
        return None
    events, client_id = data.get("events"), data.get("client_id", "")
    if type(events) is not list or not 1 <= len(events) <= _BATCH_LIMIT:
        return None
    if not _plain_text(client_id, _CLIENT_ID_LIMIT, blank=True):
        return None
    checked = [_plain_event(event) for event in events]
    if any(event is None for event in checked):
        return None
    return {"events": checked, "client_id": client_id}


def _plain_text(value, max_length: int, *, blank: bool) -> bool:
    """A string DRF's CharField keeps as it is: no surrounding whitespace (it would strip it), no
    NUL or lone surrogate (it refuses them), within its length, blank only where allowed."""
    if type(value) is not str or len(value) > max_length or value != value.strip() or "\x00" in value:
        return False
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return bool(value) or blank


def _plain_event(event) -> dict | None:
    if (
        type(event) is not dict
        or not event.keys() <= _EVENT_FIELD_NAMES
        or type(event.get("kind")) is not str
        or event["kind"] not in _KINDS
    ):
        return None
    for name, (max_length, required, blank) in _TEXT_LIMITS.items():
        if name in event:
            if not _plain_text(event[name], max_length, blank=blank):
                return None
        elif required:
            return None
    for name, (low, high) in _WHOLE_LIMITS.items():
        value = event.get(name)
        if value is not None and (type(value) is not int or not low <= value <= high):
            return None
    cost = event.get("cost")
    if cost is not None and (type(cost) not in (int, float) or not _COST.min_value <= cost <= _COST.max_value):
        return None
    rating = event.get("rating")
    if rating is not None and (type(rating) not in (str, int) or rating not in s._RATINGS):
        return None
    if event["kind"] == UsageKind.FEEDBACK and rating is None:
        return None
    source = event.get("source", "")
    if type(source) is not str or (source and source not in _SOURCES):
        return None
    at = _plain_datetime(event.get("at"))
    if at is False:
        return None
    return {
        **_DEFAULTS,
        **event,
        "cost": None if cost is None else float(cost),
        "rating": None if rating is None else s._RATINGS[rating],
        "at": at,
    }


def _plain_datetime(value) -> dt.datetime | None | bool:
    """An ISO 8601 string as the serializer's MomentField reads it (range checked before time
    zones are applied; naive means UTC), None when absent, False when it is anything else."""
    if value is None:
        return None
    try:
        at = parse_datetime(value) if type(value) is str else None
    except ValueError:  # well-formed but impossible, e.g. February 30th
        return False
    if at is None or not s.EARLIEST_DAY <= at.date() <= s.LATEST_DAY:
        return False
    return timezone.make_aware(at, timezone.get_current_timezone()) if timezone.is_naive(at) else at


# OWASP's CSV injection rule: a spreadsheet runs a cell that begins with one of these as a formula
# (`=HYPERLINK(...)` sent as a skill name would leak the sheet when an analyst clicks it). A leading
# apostrophe makes it text. Numbers we computed are left alone: -0.5 is a value, not a formula.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def _spreadsheet_cell(value):
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


class CSVRenderer(renderers.BaseRenderer):
    """Writes the answer's list (`csv_rows` names it) with the view's `csv_columns`, every text cell
    safe to open in a spreadsheet. Every CSV the project serves goes through it."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        view = (renderer_context or {}).get("view")
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(view.csv_columns)
        for row in data[view.csv_rows]:
            writer.writerow([_spreadsheet_cell(row.get(c)) for c in view.csv_columns])
        return buffer.getvalue().encode(self.charset)


def _json_or_csv(body, rows: str, *more_errors: int) -> Responses:
    """An analytics answer's responses: `body` as JSON, or its `rows` as CSV."""
    return {
        (200, "application/json"): body,
        (200, "text/csv"): OpenApiResponse(
            OpenApiTypes.STR, description=f"{rows} as CSV (`format=csv` or `Accept: text/csv`)."
        ),
        (404, "application/json"): OpenApiResponse(s.ErrorSerializer, description="`format` is neither json nor csv."),
        **errors(400, 401, 403, *more_errors),
    }


class AnalyticsApi(ApiView):
    required_scopes = {"GET": "analytics:read"}
    renderer_classes = [SafeJSONRenderer, CSVRenderer]
    csv_columns: tuple[str, ...] = analytics.CSV_COLUMNS
    csv_rows = "skills"
    csv_filename = "skill-analytics.csv"

    def finalize_response(self, request, response, *args, **kwargs):
        if response.status_code != 200 or request.method == "OPTIONS":
            # Only the analytics rows have a CSV form: errors (SPEC §5) and OPTIONS answer in JSON
            # even for a client that asked for CSV.
            request.accepted_renderer, request.accepted_media_type = SafeJSONRenderer(), "application/json"
        elif getattr(request, "accepted_renderer", None) and request.accepted_renderer.format == "csv":
            response["Content-Disposition"] = f'attachment; filename="{self.csv_filename}"'
        return super().finalize_response(request, response, *args, **kwargs)

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        # Authenticated and allowed: count the queued offers in, so the answer includes every
        # turn finished before the request (the selectors only read).
        usage_offers_roll_up()

    def query(self, serializer_class) -> dict:
        query = serializer_class(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return query.validated_data

    @staticmethod
    def filters(params: dict, **extra) -> analytics.AnalyticsFilter:
        return analytics.AnalyticsFilter(
            date_from=params.get("from"),
            date_to=params.get("to"),
            version=params.get("version"),
            skill=params.get("skill"),
            label=params.get("label"),
            trigger=params.get("trigger"),
            model=params.get("model"),
            skill_source=params.get("source"),
            **extra,
        )


class AnalyticsSkillsApi(AnalyticsApi):
    @extend_schema(
        operation_id="analytics_skills",
        parameters=[s.AnalyticsQuerySerializer],
        responses=_json_or_csv(s.AnalyticsSerializer, "The same rows"),
        summary="Per-skill (or per-version, per trigger/model/label) counts, success rate with its 95% "
        "Wilson interval and n, tokens, duration and cost.",
    )
    def get(self, request, format=None):
        params = self.query(s.AnalyticsQuerySerializer)
        stats = analytics.skill_analytics(
            filters=self.filters(params), by_version=params.get("by_version", False), by=params.get("by")
        )
        self.csv_columns = analytics.csv_columns(by=params.get("by"))  # the CSV keeps the rows' grouping
        return Response(
            {
                "from": params.get("from"),
                "to": params.get("to"),
                "label": params.get("label"),
                "version": params.get("version"),
                "skills": [row.as_dict() for row in stats],
            }
        )


class AnalyticsTimeseriesApi(AnalyticsApi):
    csv_columns = ("bucket", "succeeded", "failed", "n", "success_rate", "ci_low", "ci_high")
    csv_rows = "points"
    csv_filename = "skill-timeseries.csv"

    @extend_schema(
        operation_id="analytics_skill_timeseries",
        parameters=[s.AnalyticsTimeseriesQuerySerializer],
        responses=_json_or_csv(s.TimeseriesSerializer, "The points"),
        summary="Outcomes of one skill per UTC hour, day or ISO week, each with its Wilson interval.",
    )
    def get(self, request, name, format=None):
        params = self.query(s.AnalyticsTimeseriesQuerySerializer)
        points = analytics.skill_timeseries(name=name, filters=self.filters(params), interval=params["interval"])
        return Response({"skill": name, "interval": params["interval"], "points": [p.as_dict() for p in points]})


class AnalyticsCompareApi(AnalyticsApi):
    csv_columns = ("side", *analytics.CSV_COLUMNS)
    csv_rows = "versions"
    csv_filename = "version-comparison.csv"

    @extend_schema(
        operation_id="analytics_skill_compare",
        parameters=[s.AnalyticsCompareQuerySerializer],
        responses=_json_or_csv(s.ComparisonSerializer, "The two versions' rows", 404),
        summary="Version b against version a: p_b − p_a with Newcombe's interval and P(p_b > p_a).",
    )
    def get(self, request, name, format=None):
        params = self.query(s.AnalyticsCompareQuerySerializer)
        comparison = analytics.skill_versions_compare(
            name=name, a=params["a"], b=params["b"], filters=self.filters(params)
        )
        body = comparison.as_dict()
        body["versions"] = [{"side": "a", **body["a"]}, {"side": "b", **body["b"]}]
        return Response(body)


class AnalyticsFunnelApi(AnalyticsApi):
    csv_columns = ("offered", "loaded", "executed", "succeeded", "failed")
    csv_rows = "rows"
    csv_filename = "funnel.csv"

    @extend_schema(
        operation_id="analytics_funnel",
        parameters=[s.AnalyticsFunnelQuerySerializer],
        responses=_json_or_csv(s.FunnelSerializer, "The counts"),
        summary="Event counts offered → loaded → executed → succeeded / failed.",
    )
    def get(self, request, format=None):
        funnel = analytics.usage_funnel(filters=self.filters(self.query(s.AnalyticsFunnelQuerySerializer)))
        return Response({**funnel, "rows": [funnel]})


class AnalyticsFailingApi(AnalyticsApi):
    @extend_schema(
        operation_id="analytics_failing",
        parameters=[s.AnalyticsFailingQuerySerializer],
        responses=_json_or_csv(s.FailingSerializer, "The rows"),
        summary="Skills failing most surely: lowest Wilson upper bound first, of those with n ≥ min_n and a failure.",
    )
    def get(self, request, format=None):
        params = self.query(s.AnalyticsFailingQuerySerializer)
        rows = analytics.skills_failing(filters=self.filters(params), min_n=params["min_n"], limit=params["limit"])
        return Response({"min_n": params["min_n"], "skills": [row.as_dict() for row in rows]})
