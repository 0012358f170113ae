"""`GET /catalog/routing`: the catalog's routing report without a model (docs/analysts/catalog-routing.md)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from registry.api.base import ApiView
from registry.api.schema import errors
from registry.api.serializers import LabelField
from registry.services.catalog_routing import catalog_routing_current

READ = "skills:read"


class RoutingQuerySerializer(serializers.Serializer):
    label = LabelField(
        help_text="The label agents resolve at (`latest` for the newest versions); without it, "
        "resolve's default: `production` where a skill has it, else its newest version."
    )


class RoutingCaseSerializer(serializers.Serializer):
    case = serializers.CharField(help_text="The trigger case's id in the skill's eval suite.")
    query = serializers.CharField()
    rank = serializers.IntegerField(allow_null=True, help_text="1-based place in the prompt block; null: not in it.")
    above = serializers.ListField(
        child=serializers.CharField(),
        help_text="The skills ranked above it (at most five; all in the block when missing).",
    )


class RoutingSkillSerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.IntegerField()
    status = serializers.ChoiceField(
        choices=["measured", "no evidence", "not offered"],
        help_text="`no evidence`: no trigger case that should load it; `not offered`: the model may not invoke it.",
    )
    cases = serializers.IntegerField(help_text="Its trigger cases that should load it.")
    recall_at_1 = serializers.FloatField(allow_null=True)
    recall_at_5 = serializers.FloatField(allow_null=True)
    in_block = serializers.FloatField(allow_null=True, help_text="Share of its cases where it is in the prompt block.")
    results = RoutingCaseSerializer(many=True)


class RoutingConfusionSerializer(serializers.Serializer):
    skill = serializers.CharField()
    # `with` is a keyword: declared under another name and renamed below.
    with_ = serializers.CharField(help_text="A skill ranked above `skill` for some of its queries.")
    rate = serializers.FloatField(help_text="Share of `skill`'s cases where `with` ranked above it.")
    cases = serializers.IntegerField()
    shared_terms = serializers.ListField(child=serializers.CharField())

    def get_fields(self):
        fields = super().get_fields()
        fields["with"] = fields.pop("with_")
        return fields


class RoutingOverlapSerializer(serializers.Serializer):
    a = serializers.CharField()
    b = serializers.CharField()
    score = serializers.FloatField(help_text="0..1: the cosine similarity of their term weights in resolve's index.")
    shared_terms = serializers.ListField(child=serializers.CharField())


class RoutingReportSerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=["ready", "computing"],
        help_text="`computing` (202): a worker is computing the current report; the figures are the newest "
        "report there is (of `generation`), or empty.",
    )
    label = serializers.CharField(allow_null=True)
    generation = serializers.IntegerField(allow_null=True, help_text="The registry generation it was computed at.")
    digest = serializers.CharField(allow_null=True)
    computed_at = serializers.DateTimeField(allow_null=True)
    cases = serializers.IntegerField(help_text="Trigger cases measured across the catalog.")
    recall_at_1 = serializers.FloatField(allow_null=True, help_text="Null when no skill has evidence.")
    recall_at_5 = serializers.FloatField(allow_null=True)
    overlap_threshold = serializers.FloatField()
    skills = RoutingSkillSerializer(many=True)
    confusions = RoutingConfusionSerializer(many=True)
    overlaps = RoutingOverlapSerializer(many=True)


class CatalogRoutingApi(ApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="catalog_routing",
        parameters=[RoutingQuerySerializer],
        responses={
            200: RoutingReportSerializer,
            202: OpenApiResponse(RoutingReportSerializer, description="Being computed: `status` is `computing`."),
            **errors(400, 401, 403),
        },
        summary="How the catalog routes its skills' trigger cases, without a model: recall, confusions, overlaps.",
    )
    def get(self, request):
        """For every trigger case of every skill served at `label`, where resolve ranks the skill for
        the case's query with the whole catalog offered; recall@1/@5 per skill and overall, which
        skills take whose queries, and the pairs whose descriptions compete (docs/analysts/catalog-routing.md)."""
        query = RoutingQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        answer = catalog_routing_current(label=query.validated_data.get("label"))
        return Response(answer.report, status=200 if answer.ready else 202)
