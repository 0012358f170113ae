"""REST endpoints for evals (docs/authors/evals.md): read and replace a skill's suite, queue a run of it,
read a run's progress, summary and cases, compare two runs, cancel one. In the agents app
because a run dispatches agent turns; mounted under `/api/v1/` beside the registry's routes."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response

from agents.evals import runner as evals
from registry.api.base import ApiView
from registry.api.schema import errors
from registry.api.serializers import LabelField, TextField, WholeNumberField
from registry.models import EvalRun, EvalRunStatus
from registry.selectors import evals as eval_selectors
from registry.selectors.skills import skill_get
from registry.selectors.suite_reviews import eval_suite_accepted_revision
from registry.services.evals import MAX_REPEAT, eval_suite_replace
from registry.services.suite_reviews import eval_suite_revision_accept

READ, WRITE, RUN = "skills:read", "skills:write", "agent:run"


class CheckSerializer(serializers.Serializer):
    check = serializers.CharField(help_text="triggered, turn, skill_loaded, tool_called, answer_matches, ...")
    passed = serializers.BooleanField()
    detail = serializers.CharField()


class CaseResultSerializer(serializers.Serializer):
    id = serializers.CharField(source="case_id")
    kind = serializers.ChoiceField(choices=["trigger", "task"])
    repeat = serializers.IntegerField()
    baseline = serializers.BooleanField(help_text="Run with the skill unavailable.")
    passed = serializers.BooleanField(allow_null=True, help_text="null until its turn has ended and been graded.")
    turn = serializers.UUIDField(source="turn_id", allow_null=True, help_text="The agent turn: its trace is there.")
    checks = CheckSerializer(many=True)
    error = serializers.CharField(help_text="Why a check could not be graded (e.g. no judge model); empty if none.")


class TriggerFiguresSerializer(serializers.Serializer):
    tp = serializers.IntegerField()
    fp = serializers.IntegerField()
    tn = serializers.IntegerField()
    fn = serializers.IntegerField()
    precision = serializers.FloatField(allow_null=True)
    recall = serializers.FloatField(allow_null=True)
    f1 = serializers.FloatField(allow_null=True)


class TaskFiguresSerializer(serializers.Serializer):
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()
    rate = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True, help_text="95% Wilson interval of the rate.")
    high = serializers.FloatField(allow_null=True)


class BaselineSerializer(serializers.Serializer):
    trigger = TriggerFiguresSerializer()
    task = TaskFiguresSerializer()


class SummarySerializer(serializers.Serializer):
    trigger = TriggerFiguresSerializer()
    task = TaskFiguresSerializer()
    baseline = BaselineSerializer(allow_null=True, help_text="The same cases without the skill; null without one.")
    tokens = serializers.IntegerField()
    cost = serializers.FloatField()
    duration_ms = serializers.IntegerField(allow_null=True)
    errors = serializers.IntegerField(help_text="Cases with a check that could not be graded.")


class ProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField()
    total = serializers.IntegerField()


class RunSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    skill = serializers.CharField(source="skill.name")
    version = serializers.IntegerField(source="version.number")
    label = serializers.CharField()
    model = serializers.CharField()
    repeat = serializers.IntegerField()
    baseline = serializers.BooleanField()
    suite_revision = serializers.IntegerField(source="suite_revision.number")
    TURNS_HELP = "The agent turns the run costs: cases x repeat (x 2 with a baseline)."
    turns = serializers.IntegerField(help_text=TURNS_HELP)
    suite_revision_accepted = serializers.BooleanField(
        source="suite_revision.accepted",
        help_text="Whether the suite revision the run ran is accepted (now): label policies' eval gates count "
        "runs on accepted revisions only.",
    )
    status = serializers.CharField(help_text=" | ".join(EvalRunStatus.values))
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class RunDetailSerializer(RunSerializer):
    progress = ProgressSerializer()
    summary = SummarySerializer()
    cases = CaseResultSerializer(many=True)


def run_detail(run: EvalRun) -> dict:
    """The run as `GET /evals/runs/{id}` shows it: the same detail its console page shows."""
    detail = eval_selectors.eval_run_detail(run=run)
    return {
        **RunSerializer(run).data,
        "progress": detail.progress,
        "summary": SummarySerializer(detail.summary).data,
        "cases": CaseResultSerializer(detail.results, many=True).data,
    }


SUITE_REQUEST = {
    "application/json": {
        "description": 'Our `{"cases": [...]}`, skill-creator\'s evals.json (`{"skill_name", "evals": [...]}`) '
        'or its trigger-eval list (`[{"query", "should_trigger"}]`).',
        "oneOf": [
            {
                "type": "object",
                "properties": {"cases": {"type": "array", "items": {"type": "object"}}},
                "required": ["cases"],
            },
            {
                "type": "object",
                "properties": {
                    "skill_name": {"type": "string"},
                    "evals": {"type": "array", "items": {"type": "object"}},
                },
                "required": ["evals"],
            },
            {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"query": {"type": "string"}, "should_trigger": {"type": "boolean"}},
                    "required": ["query", "should_trigger"],
                },
            },
        ],
    }
}


class SuiteSerializer(serializers.Serializer):
    skill = serializers.CharField()
    revision = serializers.IntegerField(help_text="0 while the skill has no suite.")
    accepted = serializers.BooleanField(
        help_text="false: the revision is a proposal (made by a role outside the require_eval policies' roles); "
        "eval runs use it, label policies' gates do not count them until it is accepted."
    )
    created_by = serializers.CharField(allow_null=True)
    accepted_by = serializers.CharField(allow_null=True, help_text="null: not accepted, or by the operator.")
    accepted_at = serializers.DateTimeField(allow_null=True)
    counted_revision = serializers.IntegerField(
        allow_null=True, help_text="The newest accepted revision: the one eval gates want runs on (null: none)."
    )
    cases = serializers.ListField(child=serializers.DictField(), help_text="As docs/authors/evals.md describes them.")


def suite_detail(skill) -> dict:
    """The suite as `GET /skills/{name}/evals` shows it: its newest revision and its standing."""
    revision = eval_selectors.eval_suite_revision(skill=skill)
    counted = eval_suite_accepted_revision(skill=skill)
    return {
        "skill": skill.name,
        "revision": revision.number if revision else 0,
        "accepted": revision.accepted if revision else True,
        "created_by": revision.created_by.username if revision and revision.created_by else None,
        "accepted_by": revision.accepted_by.username if revision and revision.accepted_by else None,
        "accepted_at": revision.accepted_at if revision else None,
        "counted_revision": counted.number if counted else None,
        "cases": revision.cases if revision else [],
    }


class EvalSuiteApi(ApiView):
    required_scopes = {"GET": READ, "PUT": WRITE}

    @extend_schema(
        operation_id="skills_evals_read",
        responses={200: SuiteSerializer, **errors(401, 403, 404)},
        summary="A skill's eval suite (its newest revision)",
    )
    def get(self, request, name: str):
        return Response(SuiteSerializer(suite_detail(skill_get(name=name))).data)

    @extend_schema(
        operation_id="skills_evals_replace",
        request=SUITE_REQUEST,
        responses={200: SuiteSerializer, **errors(400, 401, 403, 404, 413, 415)},
        summary="Replace a skill's eval suite (a new revision; the same cases make none)",
        description='A bad case is a 400 naming the case and field (`fields: {"cases[2].expect[0]": ...}`). '
        "While a label policy has `require_eval`, a revision made by a role outside its roles (admins are "
        "always inside) is a proposal (`accepted: false`) until `POST .../evals/revisions/{n}/accept`.",
    )
    def put(self, request, name: str):
        skill = skill_get(name=name)
        eval_suite_replace(skill=skill, document=request.data, actor=self.actor(), role=self.acting_role())
        return Response(SuiteSerializer(suite_detail(skill)).data)


class EvalSuiteRevisionAcceptApi(ApiView):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        operation_id="skills_evals_revisions_accept",
        request=None,
        responses={200: SuiteSerializer, **errors(401, 403, 404, 409)},
        summary="Accept a proposed suite revision: label policies' eval gates count runs on it, those made before too",
        description="Only admin and the roles every `require_eval` policy names (403 otherwise); 409 when a newer "
        "revision is accepted already. Accepting an accepted revision changes nothing.",
    )
    def post(self, request, name: str, number: int):
        skill = skill_get(name=name)
        eval_suite_revision_accept(skill=skill, number=number, actor=self.actor(), role=self.acting_role())
        return Response(SuiteSerializer(suite_detail(skill)).data)


class EvalSuiteSkillCreatorApi(ApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="skills_evals_export",
        responses={
            200: inline_serializer(
                "SkillCreatorEvals",
                {"skill_name": serializers.CharField(), "evals": serializers.ListField(child=serializers.DictField())},
            ),
            **errors(401, 403, 404),
        },
        summary="The suite's task cases as skill-creator's evals/evals.json",
    )
    def get(self, request, name: str):
        return Response(eval_selectors.eval_suite_skill_creator(skill=skill_get(name=name)))


class RunInputSerializer(serializers.Serializer):
    """What a run is started with, from the API's JSON or the console's run form: the field rules
    here, the rest (the model allowed, the version runnable, a suite to run) in `eval_run_queue`."""

    version = WholeNumberField(required=False, allow_null=True, min_value=1, max_value=2**31 - 1)
    label = LabelField(required=False, allow_blank=True, allow_null=True, help_text="Instead of `version`.")
    model = TextField(required=False, allow_blank=True, max_length=200, help_text="One of AGENT_MODELS.")
    repeat = WholeNumberField(required=False, default=1, min_value=1, max_value=MAX_REPEAT)
    baseline = serializers.BooleanField(required=False, default=False)

    def queue_arguments(self) -> dict[str, Any]:
        """`eval_run_queue`'s arguments (besides the skill and the actor) once the input is valid."""
        values = self.validated_data
        return {
            "version": values.get("version"),
            "label": values.get("label") or None,
            "model": values.get("model") or None,
            "repeat": values["repeat"],
            "baseline": values["baseline"],
        }


class EvalRunListCreateApi(ApiView):
    required_scopes = {"GET": READ, "POST": RUN}

    class RunQueuedSerializer(serializers.Serializer):
        id = serializers.UUIDField()
        status = serializers.CharField()
        turns = serializers.IntegerField(help_text=RunSerializer.TURNS_HELP)

    @extend_schema(
        operation_id="skills_evals_runs_create",
        request=RunInputSerializer,
        responses={202: RunQueuedSerializer, **errors(400, 401, 403, 404, 409, 413, 415)},
        summary="Run a skill's eval suite against a version; each case x repeat is an agent turn",
        description="Refused with 429 and Retry-After (`setting` names the limit) past "
        "EVAL_MAX_ACTIVE_RUNS_PER_USER runs queued or running for the caller, or EVAL_MAX_QUEUED_TURNS "
        "eval turns not yet graded across everyone.",
    )
    def post(self, request, name: str):
        body = RunInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        run = evals.eval_run_queue(skill_name=name, actor=self.actor(), **body.queue_arguments())
        return Response({"id": str(run.pk), "status": run.status, "turns": run.turns}, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        operation_id="skills_evals_runs_list",
        responses={200: RunSerializer(many=True), **errors(400, 401, 403, 404)},
        summary="A skill's eval runs, newest first",
    )
    def get(self, request, name: str):
        runs = eval_selectors.eval_runs_of_skill(skill=skill_get(name=name), limit=500)
        return self.paginated(runs, lambda run: RunSerializer(run).data)


class EvalRunDetailApi(ApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="evals_runs_read",
        responses={200: RunDetailSerializer, **errors(401, 403, 404)},
        summary="An eval run: status, progress, summary and every case's checks",
    )
    def get(self, request, run_id):
        return Response(run_detail(eval_selectors.eval_run_get(run_id=run_id)))


class EvalRunCancelApi(ApiView):
    required_scopes = {"POST": RUN}

    @extend_schema(
        operation_id="evals_runs_cancel",
        request=None,
        responses={200: RunDetailSerializer, **errors(401, 403, 404, 409)},
        summary="Cancel an eval run and its unfinished turns (a finished run is a 409)",
    )
    def post(self, request, run_id):
        run = evals.eval_run_cancel(run=eval_selectors.eval_run_get(run_id=run_id), actor=self.actor())
        return Response(run_detail(run))


class CompareSerializer(serializers.Serializer):
    class Side(serializers.Serializer):
        id = serializers.UUIDField()
        skill = serializers.CharField()
        version = serializers.IntegerField()
        model = serializers.CharField()
        status = serializers.CharField()
        suite_revision = serializers.IntegerField()

    class Difference(serializers.Serializer):
        estimate = serializers.FloatField(allow_null=True)
        ci_low = serializers.FloatField(allow_null=True)
        ci_high = serializers.FloatField(allow_null=True)

    class Task(serializers.Serializer):
        a = TaskFiguresSerializer()
        b = TaskFiguresSerializer()
        difference = serializers.DictField(help_text="b's task pass rate minus a's, with Newcombe's 95% interval.")
        probability_b_better = serializers.FloatField()

    class Trigger(serializers.Serializer):
        a = TriggerFiguresSerializer()
        b = TriggerFiguresSerializer()
        f1_a = serializers.FloatField(allow_null=True)
        f1_b = serializers.FloatField(allow_null=True)

    class Flip(serializers.Serializer):
        id = serializers.CharField()
        kind = serializers.CharField()
        a = serializers.DictField()
        b = serializers.DictField()
        now = serializers.ChoiceField(choices=["passes", "fails"])

    a = Side()
    b = Side()
    task = Task()
    trigger = Trigger()
    flipped = Flip(many=True, help_text="Cases whose outcome (passed in most repeats) differs between the runs.")


class EvalRunCompareApi(ApiView):
    required_scopes = {"GET": READ}

    class CompareQuerySerializer(serializers.Serializer):
        a = serializers.UUIDField(help_text="The run compared against (a run id).")
        b = serializers.UUIDField(help_text="The run compared with it (a run id).")

    @extend_schema(
        operation_id="evals_runs_compare",
        parameters=[CompareQuerySerializer],
        responses={200: CompareSerializer, **errors(400, 401, 403, 404)},
        summary="Run b against run a: task-rate difference, P(b better), trigger F1, flipped cases",
    )
    def get(self, request):
        query = self.CompareQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        a = eval_selectors.eval_run_get(run_id=query.validated_data["a"])
        b = eval_selectors.eval_run_get(run_id=query.validated_data["b"])
        return Response(eval_selectors.eval_runs_compare(a=a, b=b))
