"""REST endpoints for catalog eval runs (docs/analysts/catalog-routing.md): queue a run of every
served skill's trigger cases with the whole catalog offered, read its progress and its confusion
matrix, cancel it. Scopes are the skill eval runs': `agent:run` starts or cancels one,
`skills:read` reads it."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from agents.evals import catalog_runner
from registry.api.base import ApiView
from registry.api.schema import errors
from registry.api.serializers import LabelField, TextField, WholeNumberField
from registry.models import CatalogEvalRun, EvalRunStatus
from registry.selectors import catalog_evals as selectors
from registry.services.evals import MAX_REPEAT

READ, RUN = "skills:read", "agent:run"


class CatalogRunInputSerializer(serializers.Serializer):
    """What a catalog run is started with, from the API's JSON or the console's form."""

    label = LabelField(
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="The label the catalog is served at (`latest`: newest versions); without it resolve's default.",
    )
    model = TextField(required=False, allow_blank=True, max_length=200, help_text="One of AGENT_MODELS.")
    repeat = WholeNumberField(required=False, default=1, min_value=1, max_value=MAX_REPEAT)

    def queue_arguments(self) -> dict[str, Any]:
        values = self.validated_data
        return {"label": values.get("label") or None, "model": values.get("model") or None, "repeat": values["repeat"]}


class ShareSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    rate = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True, help_text="95% Wilson interval.")
    high = serializers.FloatField(allow_null=True)


class LoadedOtherSerializer(ShareSerializer):
    skill = serializers.CharField()


class CatalogSkillSerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.IntegerField()
    description = serializers.CharField()
    status = serializers.ChoiceField(
        choices=["measured", "no evidence", "not offered"],
        help_text="`no evidence`: no trigger case that should load it (never counted as perfect); "
        "`not offered`: the model may not invoke it.",
    )
    cases = serializers.IntegerField(help_text="Its trigger cases that should load it.")
    queries = serializers.IntegerField(help_text="Its cases x repeats graded so far.")
    loaded_self = ShareSerializer(allow_null=True)
    loaded_none = ShareSerializer(allow_null=True)
    loaded_other = LoadedOtherSerializer(many=True, help_text="Each other skill its queries loaded, most first.")


class CollisionSerializer(ShareSerializer):
    skill = serializers.CharField()
    # `with` is a keyword: declared under another name and renamed below.
    with_ = serializers.CharField(help_text="The skill `skill`'s queries loaded instead (or as well).")
    queries = serializers.IntegerField()
    skill_description = serializers.CharField(
        allow_blank=True, help_text="`skill`'s description as the run offered it."
    )
    with_description = serializers.CharField(allow_blank=True, help_text="`with`'s description as the run offered it.")
    turns = serializers.ListField(child=serializers.UUIDField(), help_text="The turns behind it (at most 20).")

    def get_fields(self):
        fields = super().get_fields()
        fields["with"] = fields.pop("with_")
        return fields


class CatalogRunSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.CharField(help_text=" | ".join(EvalRunStatus.values))
    label = serializers.CharField(allow_null=True)
    model = serializers.CharField()
    repeat = serializers.IntegerField()
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    progress = serializers.DictField(child=serializers.IntegerField(), help_text="{done, total}: turns graded.")
    turns = serializers.IntegerField(help_text="The agent turns the run costs: trigger cases x repeat.")
    queries = serializers.IntegerField()
    loaded_self = ShareSerializer(help_text="Across the catalog: the share of queries that loaded their own skill.")
    skills = CatalogSkillSerializer(many=True)
    collisions = CollisionSerializer(
        many=True, help_text="Pairs where `skill`'s queries load `with` at a rate whose interval excludes zero."
    )
    tokens = serializers.IntegerField()
    cost = serializers.FloatField()


def catalog_run_detail(run: CatalogEvalRun) -> dict[str, Any]:
    """The run as `GET /catalog/evals/runs/{id}` shows it, and its console page."""
    progress = selectors.catalog_eval_run_progress(run=run)
    return {
        "id": str(run.pk),
        "status": run.status,
        "label": run.label or None,
        "model": run.model,
        "repeat": run.repeat,
        "error": run.error,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "progress": progress,
        "turns": progress["total"],
        **selectors.catalog_eval_run_result(run=run),
    }


class CatalogEvalRunCreateApi(ApiView):
    required_scopes = {"POST": RUN}

    class QueuedSerializer(serializers.Serializer):
        id = serializers.UUIDField()
        status = serializers.CharField()
        turns = serializers.IntegerField()

    @extend_schema(
        operation_id="catalog_evals_runs_create",
        request=CatalogRunInputSerializer,
        responses={202: QueuedSerializer, **errors(400, 401, 403, 404, 409, 413, 415)},
        summary="Run every served skill's trigger cases with the whole catalog offered; record what the model loads",
        description="A model outside AGENT_MODELS is a 400 naming `model`; a label no skill carries a 404 naming "
        "`label`; a catalog without trigger cases a 409. The eval quotas apply, the run's turns counted: 429 with "
        "Retry-After (`setting` names the limit) past EVAL_MAX_ACTIVE_RUNS_PER_USER or EVAL_MAX_QUEUED_TURNS.",
    )
    def post(self, request):
        body = CatalogRunInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        run = catalog_runner.catalog_eval_run_queue(actor=self.actor(), **body.queue_arguments())
        turns = selectors.catalog_eval_run_progress(run=run)["total"]
        return Response({"id": str(run.pk), "status": run.status, "turns": turns}, status=status.HTTP_202_ACCEPTED)


class CatalogEvalRunDetailApi(ApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="catalog_evals_runs_read",
        responses={200: CatalogRunSerializer, **errors(401, 403, 404)},
        summary="A catalog eval run: status, progress and its confusion matrix with Wilson intervals",
    )
    def get(self, request, run_id):
        return Response(CatalogRunSerializer(catalog_run_detail(selectors.catalog_eval_run_get(run_id=run_id))).data)


class CatalogEvalRunCancelApi(ApiView):
    required_scopes = {"POST": RUN}

    @extend_schema(
        operation_id="catalog_evals_runs_cancel",
        request=None,
        responses={200: CatalogRunSerializer, **errors(401, 403, 404, 409)},
        summary="Cancel a catalog eval run and its unfinished turns (a finished run is a 409)",
    )
    def post(self, request, run_id):
        run = catalog_runner.catalog_eval_run_cancel(
            run=selectors.catalog_eval_run_get(run_id=run_id), actor=self.actor()
        )
        return Response(CatalogRunSerializer(catalog_run_detail(run)).data)
