"""`/api/v1/label-policies...`: who may move a label (of any skill) and on what eval evidence.

Anyone who reads skills may read the policies (they say why a move was refused); changing one
needs `policies:write`, which only admins hold."""

from __future__ import annotations

from django.utils.duration import duration_iso_string
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response

from registry.api.base import ApiView
from registry.api.schema import errors
from registry.api.serializers import FlagField, NumberField, TextField, WholeNumberField
from registry.api.skills import LABEL_PATH
from registry.errors import NotFound
from registry.models import LabelPolicy
from registry.roles import ROLE_SCOPES
from registry.selectors.label_policies import label_policy_get, label_policy_list
from registry.services.label_policies import (
    MODEL_MAX,
    P_WORSE_MAX,
    SCAN_MAX_VERDICTS,
    label_policy_delete,
    label_policy_set,
)
from registry.services.labels import label_name_check

READ, WRITE = "skills:read", "policies:write"


class RequireEvalSerializer(serializers.Serializer):
    model = TextField(max_length=MODEL_MAX, help_text="The model the eval run must have used: one of AGENT_MODELS.")
    min_task_rate = NumberField(
        min_value=0, max_value=1, allow_null=True, required=False, help_text="Least task pass rate (null: any)."
    )
    min_trigger_f1 = NumberField(
        min_value=0, max_value=1, allow_null=True, required=False, help_text="Least trigger F1 (null: any)."
    )
    not_worse = FlagField(
        required=False,
        default=False,
        help_text="Refuse a version whose task rate is worse than the held version's with P >= 0.95.",
    )


class GuardSerializer(serializers.Serializer):
    min_n = WholeNumberField(min_value=1, max_value=1_000_000, help_text="Outcomes needed on each side.")
    p_worse = NumberField(min_value=0.5, max_value=P_WORSE_MAX, help_text="Roll back at this P(canary worse).")


class RequireScanSerializer(serializers.Serializer):
    max_verdict = serializers.ChoiceField(
        choices=SCAN_MAX_VERDICTS,
        help_text="The worst scan verdict the label may serve; `error` and not-yet-scanned never pass.",
    )


class RequireScanShownSerializer(RequireScanSerializer):
    pass


class LabelPolicyInputSerializer(serializers.Serializer):
    roles = serializers.ListField(
        child=serializers.ChoiceField(choices=sorted(ROLE_SCOPES)),
        min_length=1,
        max_length=len(ROLE_SCOPES),
        help_text="The roles that may move the label; others get 403.",
    )
    require_eval = RequireEvalSerializer(
        allow_null=True,
        required=False,
        default=None,
        help_text="The eval evidence a version needs before the label may point to it (null: none).",
    )
    guard = GuardSerializer(
        allow_null=True,
        required=False,
        default=None,
        help_text="When a rollout of this label is rolled back automatically (null: never).",
    )
    rollback_window = TextField(
        required=False,
        default=None,
        max_length=40,
        help_text="How recently the label must have served a version for the policy's roles to move it back "
        "there without new evidence (a rollback): ISO 8601 (`P7D`, `PT36H`) or `7d`, `36h`, `90m`; 0 to 365 "
        "days, default 7 days.",
    )
    new_capabilities = serializers.ChoiceField(
        choices=["admin"],
        allow_null=True,
        required=False,
        default=None,
        help_text="`admin`: a move to a version that adds a network destination, a command or a credential read "
        "(compared with the version the label serves) needs an admin's override_reason; others get 403 naming "
        "the new capabilities. null: no such check.",
    )
    require_publisher_signature = FlagField(
        required=False,
        default=False,
        help_text="A version needs its publisher's signature (`skillreg push --sign`) before the label may "
        "point to it; an admin may override with a reason.",
    )
    require_scan = RequireScanSerializer(
        allow_null=True,
        required=False,
        default=None,
        help_text="The scan verdict a version needs before the label may point to it (null: none).",
    )


@extend_schema_field({"type": "string", "format": "duration", "example": "P7DT00H00M00S"})
class DurationShownField(serializers.Field):
    """A duration as ISO 8601, the form the input accepts too."""

    def to_representation(self, value):
        return duration_iso_string(value)


# The answer's own components: the schema of a request part says what is accepted (a model
# name of at least one character), that of an answer part what is returned.
class RequireEvalShownSerializer(RequireEvalSerializer):
    pass


class GuardShownSerializer(GuardSerializer):
    pass


class LabelPolicySerializer(serializers.Serializer):
    label = TextField()
    roles = serializers.ListField(child=TextField())
    require_eval = RequireEvalShownSerializer(allow_null=True)
    guard = GuardShownSerializer(allow_null=True)
    rollback_window = DurationShownField(
        help_text="Moving the label back to a version it served this recently "
        "needs the policy's role, not new evidence."
    )
    new_capabilities = serializers.SerializerMethodField(
        help_text="`admin` when a move that adds network, command or credential capabilities needs an admin."
    )
    require_publisher_signature = serializers.BooleanField()
    require_scan = RequireScanShownSerializer(allow_null=True)
    updated_by = TextField(source="updated_by.username", allow_null=True, default=None)
    updated_at = serializers.DateTimeField()

    @extend_schema_field({"type": "string", "enum": ["admin"], "nullable": True})
    def get_new_capabilities(self, policy: LabelPolicy) -> str | None:
        return policy.new_capabilities or None


def _shown(policy: LabelPolicy) -> dict:
    return LabelPolicySerializer(policy).data


class LabelPolicyListApi(ApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="label_policies_list",
        responses={200: LabelPolicySerializer(many=True), **errors(400, 401, 403)},
        summary="Every label policy, by label.",
    )
    def get(self, request):
        return self.paginated(label_policy_list(), _shown)


@LABEL_PATH
class LabelPolicyApi(ApiView):
    required_scopes = {"GET": READ, "PUT": WRITE, "DELETE": WRITE}

    @extend_schema(
        operation_id="label_policies_get",
        responses={200: LabelPolicySerializer, **errors(400, 401, 403, 404)},
        summary="The policy protecting a label (404: the label is unprotected).",
    )
    def get(self, request, label: str):
        label_name_check(label)
        policy = label_policy_get(label=label)
        if policy is None:
            raise NotFound(f"No policy protects the label '{label}'.")
        return Response(_shown(policy))

    @extend_schema(
        operation_id="label_policies_set",
        request=LabelPolicyInputSerializer,
        responses={200: LabelPolicySerializer, **errors(400, 401, 403, 404, 413, 415)},
        summary="Create or replace a label's policy (admins; audited).",
    )
    def put(self, request, label: str):
        label_name_check(label)
        body = LabelPolicyInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        policy = label_policy_set(label=label, actor=self.actor(), **body.validated_data)
        return Response(_shown(policy))

    @extend_schema(
        operation_id="label_policies_delete",
        responses={
            204: OpenApiResponse(description="Removed: the label moves freely again."),
            **errors(400, 401, 403, 404),
        },
        summary="Remove a label's policy (admins; audited).",
    )
    def delete(self, request, label: str):
        label_name_check(label)
        label_policy_delete(label=label, actor=self.actor())
        return Response(status=status.HTTP_204_NO_CONTENT)
