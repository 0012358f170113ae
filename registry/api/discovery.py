"""`/.well-known/agent-skills/`: the Agent Skills discovery index (RFC v0.2.0) that `npx skills
add http://HOST` reads, and the artifacts it lists.

Off (404) unless `DISCOVERY_LABEL` names a label; then that label's skills are readable by
anyone, without a token. Nothing else is: these views alone skip authentication, and they serve
only what registry/selectors/discovery.py publishes.
"""

from __future__ import annotations

import hashlib
import json

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers

from registry.api.base import RawApiView, if_none_match, not_modified, raw_response
from registry.api.schema import errors
from registry.api.serializers import (
    ENTITLEMENT_KEYS,
    DiscoveryQuerySerializer,
    FlagField,
    LeftOutSerializer,
    entitlement_names,
)
from registry.errors import NotFound
from registry.readmodel.requirements import Entitlements
from registry.readmodel.rollouts import subject_of
from registry.selectors.attestations import version_attestation
from registry.selectors.discovery import (
    ARCHIVE_TYPE,
    DISCOVERY_SCHEMA,
    PUBLISHABLE_NAME,
    SKILL_MD_TYPE,
    discovery_artifact,
    discovery_index,
    discovery_left_out,
    discovery_target,
    publishable,
)

# Anyone may read these; each answer is revalidated with its ETag, as the label can move.
CACHE_CONTROL = "public, no-cache"


class DiscoveryEntrySerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The skill's name (the Agent Skills name rule).")
    type = serializers.ChoiceField(
        choices=[SKILL_MD_TYPE, ARCHIVE_TYPE],
        help_text="`skill-md`: `url` is the SKILL.md, the whole skill. `archive`: `url` is a zip of the skill "
        "folder, SKILL.md at its root, executable bits kept.",
    )
    description = serializers.CharField()
    url = serializers.CharField(help_text="The artifact's URL, relative to the index.")
    digest = serializers.RegexField(
        r"^sha256:[0-9a-f]{64}$", help_text="`sha256:<hex>` of exactly the bytes `url` serves."
    )
    version = serializers.CharField(help_text="The registry's version number of the skill that is served.")
    attestation = serializers.CharField(
        help_text="The served version's signed release statement (a DSSE envelope of an in-toto statement whose "
        "subjects include `digest`), relative to the index; the keys are at /.well-known/skill-registry/keys.json."
    )
    scan = serializers.DictField(
        help_text="The served version's security scan: `verdict` (clean, review, warn, malicious, error; null "
        "before its first scan ends) and `scanned_at`. An extension of the index; clients may ignore it."
    )


class DiscoveryIndexSerializer(serializers.Serializer):
    skills = DiscoveryEntrySerializer(many=True)
    left_out = LeftOutSerializer(
        many=True,
        required=False,
        help_text="With `?explain=true`: the skills `tools` / `mcp_servers` left out, each with the requirements "
        "it lacks and why. An extension of the index; clients may ignore it.",
    )

    def get_fields(self):
        fields = super().get_fields()
        fields["$schema"] = serializers.ChoiceField(choices=[DISCOVERY_SCHEMA])
        return fields


def _published_label() -> str:
    # Read at request time, like API_DOCS_PUBLIC, so tests and operators can change it live.
    label = settings.DISCOVERY_LABEL
    if not label:
        raise NotFound("The discovery index is off: set DISCOVERY_LABEL to the label to publish.")
    return label


NAME_PATH = OpenApiParameter(
    "name", OpenApiTypes.STR, OpenApiParameter.PATH, pattern=PUBLISHABLE_NAME.pattern, description="A listed skill."
)
SUBJECT = OpenApiParameter(
    "subject",
    OpenApiTypes.STR,
    OpenApiParameter.QUERY,
    required=False,
    description="Who reads, when the label has a rollout: the same subject always gets the same version "
    "(at most 200 characters; a longer one is a 400).",
)
SKILLSET = OpenApiParameter(
    "skillset",
    OpenApiTypes.STR,
    OpenApiParameter.QUERY,
    required=False,
    description="Only this skillset's members, at the numbers of the set's version at DISCOVERY_LABEL (404 naming "
    "an unknown set or one without that label). The index's `url`s carry it.",
)
OFF_OR_UNKNOWN = (
    "The index is off (`DISCOVERY_LABEL` unset), or the skill is not published at that label (with `skillset`: "
    "not a member of the set)."
)


def _skillset(request) -> str | None:
    query = DiscoveryQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data["skillset"]


class DiscoveryIndexQuerySerializer(serializers.Serializer):
    """The reader's entitlements, as comma-separated names (`?tools=Bash,Read&mcp_servers=github`;
    `?tools=` says it has none); a parameter left out is not checked."""

    tools = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="The tools the reader has, comma-separated: skills whose `tool:` requirements it does not meet "
        "are left out of the index.",
    )
    mcp_servers = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="The MCP servers the reader has, comma-separated: as `tools`, for `mcp:` requirements.",
    )
    explain = FlagField(
        required=False, default=False, help_text="Also list the skills left out, with why (`left_out`)."
    )

    def validate(self, attrs):
        for key in ENTITLEMENT_KEYS:
            if key in attrs:
                names = [name.strip() for name in attrs[key].split(",")] if attrs[key].strip() else []
                try:
                    attrs[key] = entitlement_names(names, field=key)
                except serializers.ValidationError as exc:
                    raise serializers.ValidationError({key: exc.detail}) from None
        return attrs


class DiscoveryApi(RawApiView):
    """Anonymous: no token is read, so none is needed and a bad one is not refused."""

    authentication_classes: list = []
    permission_classes: list = []

    def artifact(self, request, name: str, type: str):
        label = _published_label()
        subject, skillset = _subject(request), _skillset(request)
        target = None
        if publishable(name):
            target = discovery_target(label=label, name=name, type=type, subject=subject, skillset=skillset)
        if target is None:
            where = f" in skillset '{skillset}'" if skillset else ""
            raise NotFound(f"No skill '{name}' is published as {type}{where} at label '{label}'.")
        if target.known_digest and if_none_match(request, _etag(target.known_digest)):
            return not_modified(_etag(target.known_digest))
        found = discovery_artifact(target)
        extra = {"X-Skill-Version": str(found.version)}
        if type == ARCHIVE_TYPE:
            extra["Content-Disposition"] = f'attachment; filename="{name}-v{found.version}.zip"'
        return raw_response(
            request, found.content, _etag(found.digest), found.content_type, extra=extra, cache_control=CACHE_CONTROL
        )


def _subject(request) -> str | None:
    """The reader's rollout subject: the `subject` parameter (the index is read without a token,
    so a reader that names none gets every rollout's stable version). Over SUBJECT_MAX_CHARS is a 400."""
    query = DiscoveryQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return subject_of(given=query.validated_data.get("subject"))


def _etag(digest: str) -> str:
    return f'"{digest.removeprefix("sha256:")}"'


class DiscoveryIndexApi(DiscoveryApi):
    @extend_schema(
        operation_id="discovery_index",
        auth=[],
        tags=["discovery"],
        responses={
            200: DiscoveryIndexSerializer,
            304: OpenApiResponse(description="If-None-Match matched."),
            **errors(400, 404),
        },
        parameters=[SUBJECT, SKILLSET, DiscoveryIndexQuerySerializer],
        summary="The Agent Skills discovery index of DISCOVERY_LABEL's skills (no token needed).",
    )
    def get(self, request):
        label = _published_label()
        query = DiscoveryIndexQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        given = query.validated_data
        entitlements = Entitlements.of(tools=given.get("tools"), mcp_servers=given.get("mcp_servers"))
        subject, skillset = _subject(request), _skillset(request)
        body: dict = {
            "$schema": DISCOVERY_SCHEMA,
            "skills": [
                {
                    "name": entry.name,
                    "type": entry.type,
                    "description": entry.description,
                    "url": entry.url,
                    "digest": entry.digest,
                    "version": str(entry.version),
                    "attestation": entry.attestation,
                    "scan": entry.scan,
                }
                for entry in discovery_index(
                    label=label, subject=subject, skillset=skillset, entitlements=entitlements
                )
            ],
        }
        if given["explain"]:
            found = discovery_left_out(label=label, subject=subject, skillset=skillset, entitlements=entitlements)
            body["left_out"] = [entry.as_dict() for entry in found]
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        etag = f'"{hashlib.sha256(content).hexdigest()}"'
        return raw_response(request, content, etag, "application/json", cache_control=CACHE_CONTROL)


class DiscoverySkillMdApi(DiscoveryApi):
    @extend_schema(
        operation_id="discovery_skill_md",
        auth=[],
        tags=["discovery"],
        parameters=[NAME_PATH, SUBJECT, SKILLSET],
        responses={
            (200, "text/markdown"): OpenApiResponse(OpenApiTypes.STR),
            304: OpenApiResponse(description="If-None-Match matched."),
            **errors(400, 404),
        },
        summary="A published skill's SKILL.md, byte for byte (its ETag is its sha256).",
        description=OFF_OR_UNKNOWN,
    )
    def get(self, request, name: str):
        return self.artifact(request, name, SKILL_MD_TYPE)


class DiscoveryAttestationApi(DiscoveryApi):
    @extend_schema(
        operation_id="discovery_attestation",
        auth=[],
        tags=["discovery"],
        parameters=[NAME_PATH, SUBJECT, SKILLSET],
        responses={(200, "application/json"): OpenApiResponse(OpenApiTypes.OBJECT), **errors(400, 404)},
        summary="The signed release statement (DSSE envelope) of the version a published skill serves.",
        description=OFF_OR_UNKNOWN,
    )
    def get(self, request, name: str):
        label = _published_label()
        target = None
        if publishable(name):
            target = discovery_target(
                label=label, name=name, type=SKILL_MD_TYPE, subject=_subject(request), skillset=_skillset(request)
            )
        if target is None:
            raise NotFound(f"No skill '{name}' is published at label '{label}'.")
        content = json.dumps(version_attestation(version=target.version).envelope, separators=(",", ":")).encode()
        etag = f'"{hashlib.sha256(content).hexdigest()}"'
        extra = {"X-Skill-Version": str(target.version.number)}
        return raw_response(request, content, etag, "application/json", extra=extra, cache_control=CACHE_CONTROL)


class DiscoveryArchiveApi(DiscoveryApi):
    @extend_schema(
        operation_id="discovery_archive",
        auth=[],
        tags=["discovery"],
        parameters=[NAME_PATH, SUBJECT, SKILLSET],
        responses={
            (200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY),
            304: OpenApiResponse(description="If-None-Match matched."),
            **errors(400, 404),
        },
        summary="A published skill with more than SKILL.md, as a zip with SKILL.md at its root.",
        description=OFF_OR_UNKNOWN,
    )
    def get(self, request, name: str):
        return self.artifact(request, name, ARCHIVE_TYPE)
