"""`/api/v1/rules...`: force-include rules (seed 004) and the rule tester."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response

from registry.api import serializers as s
from registry.api.base import ApiView
from registry.api.schema import errors
from registry.selectors.resolve import rules_test
from registry.selectors.rules import rule_get, rule_list
from registry.services.rules import RuleWriteResult, rule_create, rule_delete, rule_update

READ, WRITE = "skills:read", "rules:write"


def _written(result: RuleWriteResult) -> dict:
    # A write also says what it noticed (a skill that does not exist yet): `warnings`, which
    # reads leave out.
    return {**s.RuleSerializer(result.rule).data, "warnings": list(result.warnings)}


class RuleListCreateApi(ApiView):
    required_scopes = {"GET": READ, "POST": WRITE}

    @extend_schema(
        operation_id="rules_list",
        responses={200: s.RuleSerializer(many=True), **errors(400, 401, 403)},
        summary="Force-include rules, highest priority first.",
    )
    def get(self, request):
        return self.paginated(rule_list(), lambda rule: s.RuleSerializer(rule).data)

    @extend_schema(
        operation_id="rules_create",
        request=s.RuleInputSerializer,
        responses={201: s.RuleSerializer, **errors(400, 401, 403, 409, 413, 415)},
        summary="Create a rule; the pattern is compiled with RE2 (no backreferences/lookaround).",
    )
    def post(self, request):
        body = s.RuleInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        result = rule_create(actor=self.actor(), **body.validated_data)
        return Response(_written(result), status=status.HTTP_201_CREATED)


class RuleDetailApi(ApiView):
    required_scopes = {"GET": READ, "PATCH": WRITE, "DELETE": WRITE}

    @extend_schema(operation_id="rules_retrieve", responses={200: s.RuleSerializer, **errors(401, 403, 404)})
    def get(self, request, rule_id: int):
        return Response(s.RuleSerializer(rule_get(rule_id=rule_id)).data)

    @extend_schema(
        operation_id="rules_partial_update",
        request=s.RulePatchInputSerializer,
        responses={200: s.RuleSerializer, **errors(400, 401, 403, 404, 409, 413, 415)},
    )
    def patch(self, request, rule_id: int):
        body = s.RulePatchInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        result = rule_update(rule=rule_get(rule_id=rule_id), actor=self.actor(), **body.validated_data)
        return Response(_written(result))

    @extend_schema(
        operation_id="rules_delete", responses={204: OpenApiResponse(description="Deleted."), **errors(401, 403, 404)}
    )
    def delete(self, request, rule_id: int):
        rule_delete(rule=rule_get(rule_id=rule_id), actor=self.actor())
        return Response(status=status.HTTP_204_NO_CONTENT)


class RulesTestApi(ApiView):
    required_scopes = {"POST": READ}
    max_body_bytes = ApiView.max_body_bytes + s.QUERY_MAX_JSON_BYTES

    @extend_schema(
        operation_id="rules_test",
        request=s.RulesTestInputSerializer,
        responses={200: s.RulesTestSerializer, **errors(400, 401, 403, 413, 415)},
        summary="Which rules fire for a query and why, and the exact prompt block and instructions.",
    )
    def post(self, request):
        body = s.RulesTestInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        result = rules_test(query=body.validated_data["query"], label=body.validated_data.get("label"))
        payload = result.as_dict()
        return Response(
            {
                "fired": payload["fired_rules"],
                "skills": [offered.skill.name for offered in result.skills],
                "prompt_block": result.prompt_block,
                "instructions": list(result.instructions),
                "warnings": list(result.warnings),
            }
        )
