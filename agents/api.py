"""REST endpoints for turns (SPEC §5): queue a turn, read its status and trace, feedback, cancel."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response

from agents import services
from agents.models import AgentTurn
from registry.api.base import ApiView
from registry.api.schema import errors
from registry.api.serializers import LabelField, TextField, WholeNumberField


class TurnApi(ApiView):
    """The registry's API base: JSON bodies only (the safe parser refuses text PostgreSQL cannot
    store, even inside `script`), size-capped, errors in the one JSON shape."""

    required_scopes = {"GET": "agent:run", "POST": "agent:run"}

    @property
    def max_body_bytes(self) -> int:  # type: ignore[override]
        # A full-length message of non-ASCII text arrives as \uXXXX escapes: 6 bytes a character.
        return max(ApiView.max_body_bytes, settings.AGENT_MAX_MESSAGE_CHARS * 6 + 64 * 1024)


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


class AgentTurnCreateApi(TurnApi):
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
            "skills without it fall back as `GET /resolve` does. Default: production, else latest.",
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
            return TraceEventSerializer(turn.trace_events.filter(seq__gt=after).order_by("seq"), many=True).data

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
        turn = services.agent_turn_get_for_user(user=request.user, turn_id=turn_id)
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
        turn = services.agent_turn_get_for_user(user=request.user, turn_id=turn_id)
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
        turn = services.agent_turn_get_for_user(user=request.user, turn_id=turn_id)
        turn = services.agent_turn_cancel(turn=turn)
        return Response(self.TurnCancelSerializer(turn).data, status=status.HTTP_202_ACCEPTED)
