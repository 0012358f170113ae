"""`GET /match` and `POST /resolve`: what an agent asks the registry once per turn."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response

from registry.api import serializers as s
from registry.api.base import ApiView, raw_response
from registry.api.schema import errors
from registry.selectors.resolve import resolve, skills_match

READ = "skills:read"


class MatchApi(ApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="match",
        parameters=[s.MatchQuerySerializer],
        responses={200: s.MatchSerializer, **errors(400, 401, 403)},
        summary="Effective enabled skills ranked for a query, each score with its reasons.",
    )
    def get(self, request):
        query = s.MatchQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        q = query.validated_data["q"]
        found = skills_match(query=q, label=query.validated_data.get("label"), limit=query.validated_data["limit"])
        return Response(
            {
                "query": q,
                "matches": [
                    {
                        "name": m.skill.name,
                        "version": m.skill.version,
                        "description": m.skill.description,
                        "tags": list(m.skill.tags),
                        "score": m.score,
                        "reasons": m.reasons,
                    }
                    for m in found
                ],
            }
        )


class ResolveApi(ApiView):
    required_scopes = {"POST": READ}
    max_body_bytes = ApiView.max_body_bytes + s.QUERY_MAX_JSON_BYTES

    @extend_schema(
        operation_id="resolve",
        request=s.ResolveInputSerializer,
        parameters=[s.ExplainQuerySerializer],
        responses={
            200: s.ResolveSerializer,
            304: OpenApiResponse(description="If-None-Match matched."),
            **errors(400, 401, 403, 404, 413, 415),
        },
        summary="Skills, prompt block, rule instructions and fired rules for one turn, with one ETag.",
        description="With `skillset`, exactly that set's members at its version's numbers (404 naming an unknown "
        "set, or a label the set does not carry).",
    )
    def post(self, request):
        body = s.ResolveInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        flag = s.ExplainQuerySerializer(data=request.query_params)
        flag.is_valid(raise_exception=True)
        result = resolve(
            **{**body.validated_data, "explain": body.validated_data["explain"] or flag.validated_data["explain"]}
        )
        return raw_response(request, result.body, result.etag, "application/json")
