"""`POST /catalog/evals/model-check` and `GET /catalog/evals/model-checks/{id}`: what a model change
would break, skill by skill (docs/consumers/model-checks.md). In the agents app because a check
runs agent turns; its rows and report are the registry's (registry/models/model_checks.py)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from agents.evals.model_check import model_check_current, model_check_start
from registry.api.base import ApiView
from registry.api.schema import errors
from registry.api.serializers import LabelField, TextField, WholeNumberField
from registry.models import ModelCheck
from registry.selectors.model_checks import model_check_get, model_check_progress
from registry.services.evals import MAX_REPEAT

READ, RUN = "skills:read", "agent:run"


class ModelCheckInputSerializer(serializers.Serializer):
    label = LabelField(required=True, help_text="The label whose served skills are checked, at the versions it serves.")
    candidate_model = TextField(max_length=200, help_text="The model you would switch to: one of AGENT_MODELS.")
    current_model = TextField(
        required=False, allow_blank=True, max_length=200, help_text="One of AGENT_MODELS; default AGENT_MODEL."
    )
    repeat = WholeNumberField(required=False, default=1, min_value=1, max_value=MAX_REPEAT)

    def start_arguments(self) -> dict[str, Any]:
        """`model_check_start`'s arguments (besides the actor) once the input is valid."""
        values = self.validated_data
        return {
            "label": values["label"],
            "candidate_model": values["candidate_model"],
            "current_model": values.get("current_model") or None,
            "repeat": values["repeat"],
        }


class FigureSerializer(serializers.Serializer):
    current = serializers.FloatField()
    candidate = serializers.FloatField()
    delta = serializers.FloatField(help_text="candidate − current.")
    interval = serializers.ListField(
        child=serializers.FloatField(),
        help_text="95% interval of the delta: Newcombe's for the task rate, the posterior's for trigger F1.",
    )
    probability_worse = serializers.FloatField(help_text="P(the candidate's figure is below the current one's).")


class ModelCheckSkillSerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.IntegerField(help_text="The version the label serves.")
    cases = serializers.IntegerField(help_text="Cases in its eval suite (0: no evidence).")
    evidence = serializers.ChoiceField(choices=["measured", "no evidence"])
    regressed = serializers.BooleanField(help_text="P(worse) in trigger F1 or task rate reaches the threshold.")
    worse_in = serializers.ListField(child=serializers.CharField(), help_text="trigger_f1, task_rate.")
    trigger_f1 = FigureSerializer(allow_null=True, help_text="Null: no trigger case that should load it.")
    task_rate = FigureSerializer(allow_null=True, help_text="Null: no task cases.")
    probability_worse = serializers.FloatField(allow_null=True, help_text="The larger of the two; null: no evidence.")
    reason = serializers.CharField(help_text="Why there is no evidence; empty when measured.")
    runs = serializers.DictField(help_text="The eval runs behind it: {current, candidate} ids (GET /evals/runs/{id}).")


class ThresholdSerializer(serializers.Serializer):
    p_worse = serializers.FloatField()
    source = serializers.ChoiceField(choices=["policy", "default"])
    detail = serializers.CharField()


class ModelCheckSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=["check", "watch"])
    status = serializers.ChoiceField(choices=["running", "succeeded", "failed"])
    label = serializers.CharField()
    current_model = serializers.CharField()
    candidate_model = serializers.CharField()
    repeat = serializers.IntegerField()
    progress = serializers.DictField(help_text="{runs_done, runs}.")
    threshold = ThresholdSerializer(allow_null=True, help_text="When a skill counts as regressed; null while running.")
    regressed = serializers.IntegerField()
    skills = ModelCheckSkillSerializer(many=True, help_text="Regressed first; empty while running.")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


def model_check_detail(check: ModelCheck) -> dict[str, Any]:
    report = check.report or {}
    return {
        "id": check.pk,
        "kind": check.kind,
        "status": check.status,
        "label": check.label,
        "current_model": check.current_model,
        "candidate_model": check.candidate_model,
        "repeat": check.repeat,
        "progress": model_check_progress(check=check),
        "threshold": report.get("threshold"),
        "regressed": check.regressed,
        "skills": report.get("skills", []),
        "created_at": check.created_at,
        "finished_at": check.finished_at,
    }


class ModelCheckCreateApi(ApiView):
    required_scopes = {"POST": RUN}

    class QueuedSerializer(serializers.Serializer):
        id = serializers.UUIDField()
        status = serializers.CharField()
        runs = serializers.IntegerField(help_text="Eval runs queued: two per served skill with cases.")

    @extend_schema(
        operation_id="catalog_evals_model_check_create",
        request=ModelCheckInputSerializer,
        responses={202: QueuedSerializer, **errors(400, 401, 403, 413, 415)},
        summary="Run every served skill's eval suite on the current and a candidate model",
        description="A model outside AGENT_MODELS is a 400 naming `candidate_model` or `current_model`. The eval "
        "quotas apply to the check as a whole: 429 with Retry-After past EVAL_MAX_ACTIVE_RUNS_PER_USER runs going "
        "for the caller or EVAL_MAX_QUEUED_TURNS eval turns (the check counts all its turns).",
    )
    def post(self, request):
        body = ModelCheckInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        check = model_check_start(actor=self.actor(), **body.start_arguments())
        queued = {"id": check.pk, "status": check.status, "runs": check.runs.count()}
        return Response(self.QueuedSerializer(queued).data, status=status.HTTP_202_ACCEPTED)


class ModelCheckDetailApi(ApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="catalog_evals_model_checks_read",
        responses={200: ModelCheckSerializer, **errors(401, 403, 404)},
        summary="A model check: status and, once its runs ended, each skill's figures, regressed first",
    )
    def get(self, request, check_id):
        check = model_check_current(check=model_check_get(check_id=check_id))
        return Response(ModelCheckSerializer(model_check_detail(check)).data)
