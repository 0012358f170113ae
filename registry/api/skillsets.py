"""`/api/v1/skillsets...`: publish a set version, read sets and versions, move, roll out and roll
back a set label (with each member's label of that name, in one transaction)."""

from __future__ import annotations

import codecs
import io
import json

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response

from registry.api.base import ApiView, SafeJSONParser
from registry.api.schema import errors
from registry.api.serializers import TextField, WholeNumberField
from registry.api.skills import LABEL_PATH
from registry.selectors.skillsets import (
    MemberChange,
    SkillsetDetail,
    SkillsetRow,
    skillset_detail,
    skillset_get,
    skillset_list,
    skillset_member_rows,
    skillset_version_get,
    skillset_versions_diff,
)
from registry.services.labels import LABEL_NAME
from registry.services.skillsets import (
    DESCRIPTION_MAX,
    NOTE_MAX,
    SKILLSET_NAME,
    skillset_label_delete,
    skillset_label_move,
    skillset_label_rollback,
    skillset_publish,
    skillset_rollout_abort,
    skillset_rollout_set,
)

READ, WRITE = "skills:read", "skills:write"

SKILLSET_PATH = extend_schema(
    parameters=[
        OpenApiParameter(
            "name",
            OpenApiTypes.STR,
            OpenApiParameter.PATH,
            pattern=SKILLSET_NAME.pattern,
            description="The skillset's name: lowercase letters, digits and inner hyphens, at most 64.",
        )
    ]
)


class NoRepeatedKeysJSONParser(SafeJSONParser):
    """A publish body where an object names a key twice is refused: `{"members": {"pdf": 1,
    "pdf": 2}}` would otherwise keep the last silently, and the author meant one of them."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        raw = stream.read()
        try:
            json.loads(codecs.decode(raw, encoding), object_pairs_hook=_refuse_repeats)
        except _RepeatedKey as repeated:
            raise exceptions.ValidationError(
                {"members": [f"Member '{repeated.key}' is listed twice: a skill is in a set once."]}
            ) from None
        except (ValueError, UnicodeDecodeError, LookupError, RecursionError):
            pass  # the strict parser below names what is wrong with it
        return super().parse(io.BytesIO(raw), media_type, parser_context)


class _RepeatedKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _refuse_repeats(pairs: list[tuple[str, object]]) -> dict:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _RepeatedKey(key)
        seen.add(key)
    return dict(pairs)


@extend_schema_field(
    {
        "oneOf": [
            {"type": "integer", "minimum": 1, "maximum": 2**31 - 1},
            {"type": "string", "pattern": LABEL_NAME.pattern.replace("^", "^(latest|").replace("$", ")$")},
        ],
        "description": "A version number, or a label (taken as it points at publish; `latest`: the newest).",
    }
)
class MemberRefField(serializers.Field):
    def to_internal_value(self, data):
        return data  # the service names the member a bad reference belongs to

    def to_representation(self, value):
        return value


class SkillsetPublishInputSerializer(serializers.Serializer):
    members = serializers.DictField(
        child=MemberRefField(),
        allow_empty=True,
        help_text="Member skill name -> version number or label. At most SKILLSET_MAX_MEMBERS (default 200).",
    )
    description = TextField(required=False, allow_blank=True, max_length=DESCRIPTION_MAX)
    note = TextField(required=False, allow_blank=True, max_length=NOTE_MAX, help_text="What this version changes.")


class MemberSerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.IntegerField()
    source = serializers.CharField(allow_null=True)
    missing = serializers.BooleanField(help_text="The member's skill version was deleted after publish.")
    disabled = serializers.BooleanField(help_text="The member's skill is disabled now.")


class SkillsetVersionHeadSerializer(serializers.Serializer):
    """A set version's number, who published it when, and why (`note`)."""

    number = serializers.IntegerField(source="version.number")
    note = serializers.CharField(source="version.note")
    created_at = serializers.DateTimeField(source="version.created_at")
    created_by = serializers.CharField(source="version.created_by", allow_null=True)


class SkillsetVersionSerializer(SkillsetVersionHeadSerializer):
    skillset = serializers.CharField(source="version.skillset.name")
    members = MemberSerializer(many=True)


class SkillsetLabelSerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.IntegerField(source="version.number")
    canary_version = serializers.IntegerField(source="canary_version.number", allow_null=True, default=None)
    weight = serializers.IntegerField()
    updated_at = serializers.DateTimeField()


class SkillsetSummarySerializer(serializers.Serializer):
    name = serializers.CharField(source="skillset.name")
    description = serializers.CharField(source="skillset.description")
    latest_version = serializers.IntegerField(source="skillset.latest_version")
    members = serializers.IntegerField(help_text="Members in the newest version.")
    labels = serializers.DictField(child=serializers.IntegerField(), help_text="Label -> version it holds.")


class SkillsetVersionRowSerializer(SkillsetVersionHeadSerializer):
    members = serializers.IntegerField()
    labels = serializers.ListField(child=serializers.CharField())


class SkillsetHistorySerializer(serializers.Serializer):
    label = serializers.CharField()
    kind = serializers.CharField()
    from_version = serializers.IntegerField(allow_null=True)
    to_version = serializers.IntegerField(allow_null=True)
    weight = serializers.IntegerField(allow_null=True)
    changed_by = serializers.CharField(allow_null=True)
    via = serializers.CharField()
    changed_at = serializers.DateTimeField()


class SkillsetDetailSerializer(serializers.Serializer):
    name = serializers.CharField(source="skillset.name")
    description = serializers.CharField(source="skillset.description")
    latest_version = serializers.IntegerField(source="skillset.latest_version")
    members = MemberSerializer(many=True, help_text="The newest version's members.")
    labels = SkillsetLabelSerializer(many=True)
    versions = SkillsetVersionRowSerializer(many=True)
    history = SkillsetHistorySerializer(many=True, help_text="Label changes, newest first (at most 50).")


class SkillsetMoveInputSerializer(serializers.Serializer):
    version = WholeNumberField(min_value=1, max_value=2**31 - 1)
    weight = WholeNumberField(
        required=False,
        min_value=0,
        max_value=100,
        help_text="Roll the set version out to this share (%) of subjects, the whole set per subject; "
        "without it the label moves (and any rollout ends).",
    )
    override_reason = TextField(
        required=False, max_length=1000, help_text="Admins only: move although a member's policy checks are unmet."
    )


class SkillsetLabelDeleteQuerySerializer(serializers.Serializer):
    override_reason = TextField(
        required=False, max_length=1000, help_text="Admins only: remove although a member's policy checks are unmet."
    )


class SkillsetRollbackInputSerializer(serializers.Serializer):
    override_reason = TextField(required=False, max_length=1000)


class SkillsetDiffQuerySerializer(serializers.Serializer):
    # `from` is a Python keyword, so it is declared through the class namespace.
    locals()["from"] = WholeNumberField(min_value=1, max_value=2**31 - 1, help_text="The older version.")
    to = WholeNumberField(min_value=1, max_value=2**31 - 1, required=False, help_text="Default: the newest.")


class MemberChangeSerializer(serializers.Serializer):
    name = serializers.CharField()
    change = serializers.ChoiceField(choices=["added", "removed", "changed", "same"])
    old = serializers.IntegerField(allow_null=True)
    new = serializers.IntegerField(allow_null=True)


def _version_body(skillset, number: int) -> dict:
    version = skillset_version_get(skillset=skillset, number=number)
    return SkillsetVersionSerializer({"version": version, "members": skillset_member_rows(version)}).data


def _detail_body(detail: SkillsetDetail) -> dict:
    return SkillsetDetailSerializer(detail).data


class SkillsetListApi(ApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="skillsets_list",
        responses={200: SkillsetSummarySerializer(many=True), **errors(401, 403)},
        summary="Every skillset, with its newest version's size and its labels.",
    )
    def get(self, request):
        rows: list[SkillsetRow] = skillset_list()
        return self.paginated(rows, lambda row: SkillsetSummarySerializer(row).data)


@SKILLSET_PATH
class SkillsetApi(ApiView):
    required_scopes = {"GET": READ, "PUT": WRITE}
    parser_classes = [NoRepeatedKeysJSONParser]

    @extend_schema(
        operation_id="skillsets_read",
        responses={200: SkillsetDetailSerializer, **errors(401, 403, 404)},
        summary="A skillset: its newest members, labels, versions and label history.",
    )
    def get(self, request, name: str):
        return Response(_detail_body(skillset_detail(skillset_get(name=name))))

    @extend_schema(
        operation_id="skillsets_publish",
        request=SkillsetPublishInputSerializer,
        responses={
            201: OpenApiResponse(SkillsetVersionSerializer, description="A new version was created."),
            200: OpenApiResponse(SkillsetVersionSerializer, description="The same members as the newest version."),
            **errors(400, 401, 403, 404, 413, 415),
        },
        summary="Publish the next version of a skillset (created on first publish) from its members, each a "
        "version number or a label taken as it points now. 400 naming the member: unknown, disabled, listed "
        "twice, or a bad reference; an empty set, too many members, or a name a skill has.",
    )
    def put(self, request, name: str):
        body = SkillsetPublishInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        version, created = skillset_publish(
            name=name,
            members=data["members"],
            description=data.get("description"),
            note=data.get("note", ""),
            actor=self.actor(),
        )
        return Response(
            _version_body(version.skillset, version.number),
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


@SKILLSET_PATH
class SkillsetVersionApi(ApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="skillsets_version_read",
        responses={200: SkillsetVersionSerializer, **errors(401, 403, 404)},
        summary="One skillset version: its members at their numbers, each marked missing (deleted since) or disabled.",
    )
    def get(self, request, name: str, number: int):
        return Response(_version_body(skillset_get(name=name), number))


@SKILLSET_PATH
class SkillsetDiffApi(ApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="skillsets_diff",
        parameters=[SkillsetDiffQuerySerializer],
        responses={200: MemberChangeSerializer(many=True), **errors(400, 401, 403, 404)},
        summary="Which members changed between two versions of a skillset (each member's own diff is "
        "GET /api/v1/skills/{member}/diff?from=&to=).",
    )
    def get(self, request, name: str):
        query = SkillsetDiffQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        skillset = skillset_get(name=name)
        old = skillset_version_get(skillset=skillset, number=query.validated_data["from"])
        new = skillset_version_get(skillset=skillset, number=query.validated_data.get("to", skillset.latest_version))
        changes: list[MemberChange] = skillset_versions_diff(old=old, new=new)
        return Response(MemberChangeSerializer(changes, many=True).data)


@SKILLSET_PATH
@LABEL_PATH
class SkillsetLabelApi(ApiView):
    required_scopes = {"PUT": WRITE, "DELETE": WRITE}

    @extend_schema(
        operation_id="skillsets_labels_move",
        request=SkillsetMoveInputSerializer,
        responses={200: SkillsetDetailSerializer, **errors(400, 401, 403, 404, 409, 413, 415)},
        summary="Move a skillset's label and, in the same transaction, each member's label of that name to "
        "its number in that version; with `weight`, roll the set version out to that share of subjects "
        "(all its new members or none per subject). Every member's label policy applies, all or nothing: "
        "a refusal (403 or 409) names the member (`member`) and the check.",
    )
    def put(self, request, name: str, label: str):
        body = SkillsetMoveInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        skillset = skillset_get(name=name)
        common = {"skillset": skillset, "label": label, "version_number": data["version"], "actor": self.actor()}
        common.update(role=self.acting_role(), override_reason=data.get("override_reason"))
        if data.get("weight") is None:
            skillset_label_move(**common)
        else:
            skillset_rollout_set(**common, weight=data["weight"])
        return Response(_detail_body(skillset_detail(skillset)))

    @extend_schema(
        operation_id="skillsets_labels_delete",
        parameters=[SkillsetLabelDeleteQuerySerializer],
        responses={204: None, **errors(400, 401, 403, 404, 409)},
        summary="Remove a skillset's label (consumers asking for the set at it get a 404); members' labels stay. "
        "Each member's label policy checks it as a removal of that member's label, all or nothing: a refusal "
        "(403 or 409) names the member (`member`); an admin's `override_reason` removes an eval-gated label.",
    )
    def delete(self, request, name: str, label: str):
        query = SkillsetLabelDeleteQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        skillset_label_delete(
            skillset=skillset_get(name=name),
            label=label,
            actor=self.actor(),
            role=self.acting_role(),
            override_reason=query.validated_data.get("override_reason"),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


@SKILLSET_PATH
@LABEL_PATH
class SkillsetLabelRolloutApi(ApiView):
    required_scopes = {"DELETE": WRITE}

    @extend_schema(
        operation_id="skillsets_labels_rollout_abort",
        responses={200: SkillsetDetailSerializer, **errors(400, 401, 403, 404)},
        summary="Abort a skillset label's rollout and its members' rollouts: every subject reads the stable set.",
    )
    def delete(self, request, name: str, label: str):
        skillset = skillset_get(name=name)
        skillset_rollout_abort(skillset=skillset, label=label, actor=self.actor())
        return Response(_detail_body(skillset_detail(skillset)))


@SKILLSET_PATH
@LABEL_PATH
class SkillsetLabelRollbackApi(ApiView):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        operation_id="skillsets_labels_rollback",
        request=SkillsetRollbackInputSerializer,
        responses={200: SkillsetDetailSerializer, **errors(400, 401, 403, 404, 409, 413, 415)},
        summary="Roll a skillset's label back, members and all: a running rollout ends; otherwise the label "
        "moves back to the version it held before its last move (each member's policy applies; its rollback "
        "window lets a recent version back). 409 when it has held its version since it was set.",
    )
    def post(self, request, name: str, label: str):
        body = SkillsetRollbackInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        skillset = skillset_get(name=name)
        skillset_label_rollback(
            skillset=skillset,
            label=label,
            actor=self.actor(),
            role=self.acting_role(),
            override_reason=body.validated_data.get("override_reason"),
        )
        return Response(_detail_body(skillset_detail(skillset)))
