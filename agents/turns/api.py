"""REST endpoints for turns (SPEC §5): queue a turn, list and filter turns with their failure
causes, read a turn's status and trace, feedback, cancel."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.http import QueryDict
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response

from agents.models import AgentTurn, FailureCause, TurnOrigin, TurnStatus
from agents.turns import selectors, services
from agents.turns.selectors import ANALYTICS, EVENT_KINDS, RUN, TurnFilter, TurnReader
from registry.api.auth import ScopeRequired, has_scope
from registry.api.base import ApiView
from registry.api.schema import errors
from registry.api.serializers import DayField, LabelField, TextField, WholeNumberField
from registry.models import SkillSource

# Reading turns: `agent:run` reads one's own, `analytics:read` (analysts, admins) every turn.
READ_SCOPES = (RUN, ANALYTICS)


class TurnApi(ApiView):
    """The registry's API base: JSON bodies only (the safe parser refuses text PostgreSQL cannot
    store, even inside `script`), size-capped, errors in the one JSON shape."""

    required_scopes: dict[str, str | tuple[str, ...]] = {"GET": READ_SCOPES, "POST": RUN}

    @property
    def max_body_bytes(self) -> int:  # type: ignore[override]
        # A full-length message of non-ASCII text arrives as \uXXXX escapes: 6 bytes a character.
        return max(ApiView.max_body_bytes, settings.AGENT_MAX_MESSAGE_CHARS * 6 + 64 * 1024)

    def reader(self, *, scopes: tuple[str, ...] = READ_SCOPES) -> TurnReader:
        """Whose turns this request reads (`scopes`: those it reads with; acting on a turn is
        `agent:run` alone)."""
        reader = selectors.turn_reader(
            user=self.request.user, scopes={scope for scope in scopes if has_scope(self.request, scope)}
        )
        if reader is None:  # an author's token with analytics:read only: their turns need agent:run
            raise ScopeRequired(RUN, why=" to read your own turns (analysts and admins read all with 'analytics:read')")
        return reader


class TurnFilterSerializer(serializers.Serializer):
    """The turn list's filters (query parameters), shared by the API and the console."""

    skill = TextField(required=False, max_length=128, help_text="Turns that loaded this skill.")
    source = serializers.ChoiceField(
        choices=SkillSource.values,
        required=False,
        help_text="With `skill`: the one of that source (a name may be bundled, user and workspace skills).",
    )
    version = WholeNumberField(
        required=False, min_value=1, max_value=2**31 - 1, help_text="With `skill`: that version of it."
    )
    trigger = TextField(required=False, max_length=32, help_text="Turns that loaded a skill through this trigger.")
    event = serializers.ChoiceField(
        choices=[str(kind) for kind in EVENT_KINDS],
        required=False,
        help_text="Match `skill`, `version` and `trigger` against the turn's usage events of this kind instead "
        "of its loads (`failed`: the turns a skill's failure count counts); `from`/`to` then select the "
        "event's day, as the analytics pages do.",
    )
    status = serializers.ChoiceField(choices=TurnStatus.values, required=False)
    model = TextField(required=False, max_length=200)
    origin = serializers.ChoiceField(choices=TurnOrigin.values, required=False)
    feedback = serializers.ChoiceField(choices=["up", "down"], required=False)
    cause = serializers.ChoiceField(
        choices=FailureCause.values, required=False, help_text="Failed or cancelled turns of this cause."
    )
    detail = TextField(
        required=False,
        max_length=200,
        allow_blank=True,
        help_text="With `cause`: its detail (the tool, the budget, the abort's reason).",
    )
    q = TextField(required=False, max_length=200, help_text="Text in the turn's message (case-insensitive).")
    locals()["from"] = DayField(required=False, help_text="First day (UTC), inclusive.")
    to = DayField(required=False, help_text="Last day (UTC), inclusive.")

    def validate(self, attrs):
        if attrs.get("source") and not attrs.get("skill"):
            raise serializers.ValidationError({"source": "needs `skill`."})
        if attrs.get("version") is not None and not attrs.get("skill"):
            raise serializers.ValidationError({"version": "needs `skill`: versions are numbered per skill."})
        if "detail" in attrs and not attrs.get("cause"):
            raise serializers.ValidationError({"detail": "needs `cause`."})
        if attrs.get("from") and attrs.get("to") and attrs["from"] > attrs["to"]:
            raise serializers.ValidationError({"from": "must not be after 'to'."})
        return attrs

    def turn_filter(self) -> TurnFilter:
        values = dict(self.validated_data)
        return TurnFilter(date_from=values.pop("from", None), date_to=values.pop("to", None), **values)


def turn_filter_params(params, *, leave_out: Iterable[str] = ()) -> QueryDict:
    """The filters of a query string: a parameter given empty (an HTML form's unset field) is
    not given. A QueryDict, so number fields read text as a query string's numbers."""
    given = QueryDict(mutable=True)
    for key in TurnFilterSerializer().fields:
        if params.get(key, "") != "" and key not in leave_out:
            given[key] = params[key]
    return given


def turn_filter_from(params) -> TurnFilter:
    """The list's filters from a query string; a 400 naming the parameter when one is bad."""
    parsed = TurnFilterSerializer(data=turn_filter_params(params))
    parsed.is_valid(raise_exception=True)
    return parsed.turn_filter()


class TurnSkillSerializer(serializers.Serializer):
    # Serializes a LoadedSkill (agents/turns/selectors.py); no docstring: it would enter the schema.
    name = serializers.CharField()
    version = serializers.IntegerField(allow_null=True)
    trigger = serializers.CharField()


class TurnFeedbackShownSerializer(serializers.Serializer):
    rating = serializers.ChoiceField(choices=["up", "down"])
    comment = serializers.CharField()


class TurnRowSerializer(serializers.ModelSerializer):
    """One row of the turn list (`turns_filtered` gives each turn its `loaded_events`)."""

    duration_ms = serializers.IntegerField(allow_null=True, help_text="From the worker's first claim to the end.")
    message = serializers.SerializerMethodField(help_text="Its first 300 characters.")
    skills = serializers.SerializerMethodField()
    tokens = serializers.SerializerMethodField()
    feedback = serializers.SerializerMethodField()

    class Meta:
        model = AgentTurn
        fields = ["id", "status", "created_at", "duration_ms", "model", "origin", "message", "skills", "tokens"]
        fields += ["cost", "feedback", "error"]

    def get_message(self, turn) -> str:
        return turn.message[:300]

    @extend_schema_field(TurnSkillSerializer(many=True))
    def get_skills(self, turn) -> list[dict]:
        return TurnSkillSerializer(selectors.turn_row_skills(turn), many=True).data

    def get_tokens(self, turn) -> int:
        return turn.prompt_tokens + turn.completion_tokens

    @extend_schema_field(TurnFeedbackShownSerializer(allow_null=True))
    def get_feedback(self, turn) -> dict | None:
        if turn.feedback_rating is None:
            return None
        return {"rating": "up" if turn.feedback_rating > 0 else "down", "comment": turn.feedback_comment}


@extend_schema_field(
    {
        "type": "object",
        "nullable": True,
        "additionalProperties": {"type": "integer", "minimum": 1},
        "example": {"code-review": 3},
    }
)
class SkillVersionsField(serializers.JSONField):
    """{skill name: version number}, judged by the turn service (which names `skill_versions.<name>`
    in its 400s); annotated so the schema shows the shape it accepts."""


class AgentTurnListCreateApi(TurnApi):
    class TurnCreateInputSerializer(serializers.Serializer):
        # A pasted log or document is welcome: the runtime trims what does not fit the model.
        message = TextField(
            max_length=settings.AGENT_MAX_MESSAGE_CHARS,
            trim_whitespace=False,
            help_text="A leading `/skill-name` forces that skill (a 400 when no enabled skill has the name).",
        )
        conversation = serializers.UUIDField(required=False, allow_null=True)
        model = TextField(
            max_length=200,
            required=False,
            allow_blank=True,
            help_text="One of the operator's AGENT_MODELS (default AGENT_MODEL); any other is a 400 "
            "listing them in `allowed_models`.",
        )
        forced_skill = TextField(
            max_length=128,
            required=False,
            allow_blank=True,
            allow_null=True,
            help_text="Force this skill (as a leading `/skill-name` in the message does); "
            "an unknown or disabled skill is a 400 naming the closest names.",
        )
        label = LabelField(
            allow_blank=True,
            allow_null=True,
            help_text="Resolve every skill of the turn at this label (offered list, `read_skill`, a forced skill); "
            "skills without it are left out, as `POST /resolve` leaves them out, and forcing one is a 400 naming "
            "the label. Default: production, else latest.",
        )
        skill_versions = SkillVersionsField(
            required=False,
            allow_null=True,
            help_text='Pin skills to exact versions for this turn, e.g. `{"code-review": 3}`: offered, loaded '
            "and forced at that version whatever the label says. An unknown or disabled skill, or a version it "
            "does not have, is a 400 naming `skill_versions.<name>`.",
        )
        script = serializers.JSONField(
            required=False,
            allow_null=True,
            help_text='Steps for `"model": "scripted"` only (a test aid, where AGENT_ALLOW_SCRIPTED is on).',
        )
        max_input_tokens = WholeNumberField(required=False, allow_null=True, min_value=1, max_value=10_000_000)

    class TurnQueuedSerializer(serializers.Serializer):
        id = serializers.UUIDField()
        status = serializers.CharField()
        conversation = serializers.UUIDField(source="conversation_id", allow_null=True)

    @extend_schema(
        request=TurnCreateInputSerializer,
        responses={202: TurnQueuedSerializer, **errors(400, 401, 403, 404, 413, 415)},
        summary="Queue an agent turn; a worker runs it",
    )
    def post(self, request):
        data = self.TurnCreateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        turn = services.agent_turn_create(
            user=request.user,
            message=values["message"],
            conversation_id=values.get("conversation"),
            model=values.get("model") or None,
            forced_skill=values.get("forced_skill") or None,
            script=values.get("script"),
            max_input_tokens=values.get("max_input_tokens"),
            label=values.get("label") or None,
            skill_versions=values.get("skill_versions"),
        )
        return Response(self.TurnQueuedSerializer(turn).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        operation_id="agent_turns_list",
        parameters=[TurnFilterSerializer],
        responses={200: TurnRowSerializer(many=True), **errors(400, 401, 403)},
        summary="List turns, newest first, filtered",
        description="Analysts and admins (`analytics:read`) see every turn; anyone else with `agent:run` their own.",
    )
    def get(self, request):
        filters = turn_filter_from(request.query_params)
        turns = selectors.turns_filtered(reader=self.reader(), filters=filters)
        return self.paginated(turns, lambda turn: TurnRowSerializer(turn).data)


class CauseSerializer(serializers.Serializer):
    cause = serializers.ChoiceField(choices=FailureCause.values)
    title = serializers.CharField()
    detail = serializers.CharField(help_text="The abort's reason, the budget, the tool; empty for the others.")
    count = serializers.IntegerField()


class AgentTurnCausesApi(TurnApi):
    class CausesSerializer(serializers.Serializer):
        failed = serializers.IntegerField()
        cancelled = serializers.IntegerField()
        causes = CauseSerializer(many=True, help_text="Most first.")

    @extend_schema(
        parameters=[TurnFilterSerializer],
        responses={200: CausesSerializer, **errors(400, 401, 403)},
        summary="Why the listed turns failed: failed and cancelled turns by cause",
        description="Takes the list's filters. One cause a turn: cancelled; aborted (with its reason); model "
        "errors; tool errors (by the tool that failed most); budget exceeded (time, tokens, iterations); other.",
    )
    def get(self, request):
        filters = turn_filter_from(request.query_params)
        counts = selectors.turn_counts(reader=self.reader(), filters=filters)
        return Response(self.CausesSerializer(counts).data)


class TraceEventSerializer(serializers.Serializer):
    seq = serializers.IntegerField()
    type = serializers.CharField()
    at = serializers.DateTimeField()
    data = serializers.JSONField()


class AgentTurnDetailApi(TurnApi):
    class TurnDetailSerializer(serializers.ModelSerializer):
        trace = serializers.SerializerMethodField()
        conversation = serializers.UUIDField(source="conversation_id", allow_null=True)
        is_demo_model = serializers.SerializerMethodField()

        class Meta:
            model = AgentTurn
            fields = [
                "id",
                "status",
                "answer",
                "error",
                "trace",
                "conversation",
                "message",
                "model",
                "forced_skill",
                "label",
                "skill_versions",
                "steps",
                "prompt_tokens",
                "completion_tokens",
                "cost",
                "attempts",
                "feedback_rating",
                "created_at",
                "started_at",
                "finished_at",
                "is_demo_model",
            ]

        def get_trace(self, turn) -> list[dict]:
            after = self.context.get("after", 0)
            return TraceEventSerializer(selectors.turn_trace_events(turn=turn, after=after), many=True).data

        def get_is_demo_model(self, turn) -> bool:
            return turn.model == "offline"

    class TraceQuerySerializer(serializers.Serializer):
        after = WholeNumberField(
            required=False, default=0, min_value=0, help_text="Only trace events with a higher `seq` (for polling)."
        )

    @extend_schema(
        responses={200: TurnDetailSerializer, **errors(400, 401, 403, 404)},
        summary="A turn's status, answer and trace",
        parameters=[TraceQuerySerializer],
    )
    def get(self, request, turn_id):
        turn = selectors.turn_get_for_reader(reader=self.reader(), turn_id=turn_id)
        query = self.TraceQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(self.TurnDetailSerializer(turn, context={"after": query.validated_data["after"]}).data)


class AgentTurnFeedbackApi(TurnApi):
    class TurnFeedbackSerializer(serializers.Serializer):
        rating = serializers.ChoiceField(choices=["up", "down"])
        comment = TextField(max_length=2000, required=False, allow_blank=True)

    class FeedbackRecordedSerializer(serializers.Serializer):
        id = serializers.UUIDField()
        rating = serializers.ChoiceField(choices=["up", "down"])

    @extend_schema(
        request=TurnFeedbackSerializer,
        responses={200: FeedbackRecordedSerializer, **errors(400, 401, 403, 404, 409, 413, 415)},
        summary="Rate a finished turn; feeds the skills' analytics",
    )
    def post(self, request, turn_id):
        turn = selectors.turn_get_for_reader(reader=self.reader(scopes=(RUN,)), turn_id=turn_id)
        data = self.TurnFeedbackSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.agent_turn_feedback(turn=turn, **data.validated_data)
        return Response({"id": str(turn.pk), "rating": data.validated_data["rating"]})


class AgentTurnCancelApi(TurnApi):
    class TurnCancelSerializer(serializers.Serializer):
        id = serializers.UUIDField()
        status = serializers.CharField(help_text="`cancelled` when it ended now; `running` until its next step.")
        cancel_requested = serializers.BooleanField()

    @extend_schema(
        request=None,
        responses={202: TurnCancelSerializer, **errors(401, 403, 404, 409)},
        summary="Cancel a queued or running turn",
        description="A queued turn, or a running one whose worker stopped responding, is cancelled at once "
        "(`status: cancelled`); a running turn stops before its next model or tool call. "
        "A turn that already succeeded or failed is a 409.",
    )
    def post(self, request, turn_id):
        turn = selectors.turn_get_for_reader(reader=self.reader(scopes=(RUN,)), turn_id=turn_id)
        turn = services.agent_turn_cancel(turn=turn)
        return Response(self.TurnCancelSerializer(turn).data, status=status.HTTP_202_ACCEPTED)
