"""REST endpoints for turns (SPEC §5): queue a turn, read its status and trace, feedback, cancel."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from agents import services
from agents.models import AgentTurn
from registry.api.auth import ScopePermission

ERROR = inline_serializer("AgentError", {"error": serializers.CharField(), "detail": serializers.CharField()})


class TurnApi(APIView):
    permission_classes = [ScopePermission]
    required_scopes = {"GET": "agent:run", "POST": "agent:run"}


class AgentTurnCreateApi(TurnApi):
    class TurnCreateInputSerializer(serializers.Serializer):
        message = serializers.CharField(max_length=20_000, trim_whitespace=False)
        conversation = serializers.UUIDField(required=False, allow_null=True)
        model = serializers.CharField(max_length=200, required=False, allow_blank=True)
        forced_skill = serializers.CharField(max_length=128, required=False, allow_blank=True, allow_null=True)
        script = serializers.JSONField(required=False, allow_null=True)
        max_input_tokens = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=10_000_000)

    class TurnQueuedSerializer(serializers.Serializer):
        id = serializers.UUIDField()
        status = serializers.CharField()
        conversation = serializers.UUIDField(source="conversation_id")

    @extend_schema(
        request=TurnCreateInputSerializer,
        responses={202: TurnQueuedSerializer, 400: ERROR, 401: ERROR, 403: ERROR},
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
        conversation = serializers.UUIDField(source="conversation_id")
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

    @extend_schema(
        responses={200: TurnDetailSerializer, 404: ERROR},
        summary="A turn's status, answer and trace",
        parameters=[inline_serializer("TraceAfter", {"after": serializers.IntegerField(required=False)})],
    )
    def get(self, request, turn_id):
        turn = services.agent_turn_get_for_user(user=request.user, turn_id=turn_id)
        try:
            after = max(0, int(request.query_params.get("after", 0)))
        except ValueError:
            after = 0
        return Response(self.TurnDetailSerializer(turn, context={"after": after}).data)


class AgentTurnFeedbackApi(TurnApi):
    class TurnFeedbackSerializer(serializers.Serializer):
        rating = serializers.ChoiceField(choices=["up", "down"])
        comment = serializers.CharField(max_length=2000, required=False, allow_blank=True)

    @extend_schema(
        request=TurnFeedbackSerializer,
        responses={200: OpenApiResponse(description="Recorded"), 400: ERROR, 404: ERROR},
        summary="Rate a finished turn; feeds the skills' analytics",
    )
    def post(self, request, turn_id):
        turn = services.agent_turn_get_for_user(user=request.user, turn_id=turn_id)
        data = self.TurnFeedbackSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.agent_turn_feedback(turn=turn, **data.validated_data)
        return Response({"id": str(turn.pk), "rating": data.validated_data["rating"]})


class AgentTurnCancelApi(TurnApi):
    @extend_schema(
        request=None,
        responses={202: AgentTurnCreateApi.TurnQueuedSerializer, 404: ERROR},
        summary="Cancel a queued or running turn",
    )
    def post(self, request, turn_id):
        turn = services.agent_turn_get_for_user(user=request.user, turn_id=turn_id)
        turn = services.agent_turn_cancel(turn=turn)
        return Response(AgentTurnCreateApi.TurnQueuedSerializer(turn).data, status=status.HTTP_202_ACCEPTED)
