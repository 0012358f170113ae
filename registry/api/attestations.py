"""Signed releases over HTTP: a version's attestation (a DSSE envelope of its in-toto statement)
and the registry's public keys at `/.well-known/skill-registry/keys.json`, readable by anyone:
a verifier needs nothing but that document and the bytes it downloaded."""

from __future__ import annotations

import hashlib
import json

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from registry.api import serializers as s
from registry.api.base import ApiView, RawApiView, raw_response
from registry.api.schema import errors
from registry.api.skills import NAME_PATH, READ
from registry.errors import NotFound
from registry.selectors.attestations import signing_keys_document, version_attestation


class AttestationQuerySerializer(s.VersionsQuerySerializer):
    signer = serializers.ChoiceField(
        choices=["registry", "publisher"],
        required=False,
        default="registry",
        help_text="`registry` (default): the registry's statement. `publisher`: the statement the publisher "
        "signed (404 when they did not).",
    )


class EnvelopeSerializer(serializers.Serializer):
    payloadType = serializers.CharField(help_text="application/vnd.in-toto+json")  # noqa: N815 (DSSE's name)
    payload = serializers.CharField(help_text="Base64 of the in-toto Statement v1 (canonical JSON).")
    signatures = serializers.ListField(
        child=serializers.DictField(), help_text="{keyid, sig}: Ed25519 over DSSE's PAE(payloadType, payload)."
    )


@NAME_PATH
class VersionAttestationApi(ApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="skills_versions_attestation",
        parameters=[AttestationQuerySerializer],
        responses={200: EnvelopeSerializer, **errors(400, 401, 403, 404)},
        summary="The signed release statement of a version (a DSSE envelope).",
        description="Subjects: the canonical archive (`NAME.zip`, the discovery index's zip) and every file "
        "(`NAME/PATH`) by sha256. Predicate (https://skill-registry.dev/attestation/release/v1): skill, version, "
        "publisher, publishedAt, source (console, api, cli, import), scan verdict once known, the publisher's "
        "signature when there is one. Verify with the keys at /.well-known/skill-registry/keys.json.",
    )
    def get(self, request, name: str, number: int):
        skill, version, params = self.version_and_params(name, number, AttestationQuerySerializer)
        attestation = version_attestation(version=version)
        if params["signer"] == "publisher":
            if attestation.publisher_envelope is None:
                raise NotFound(f"{skill.name} v{number} was not signed by its publisher.")
            return Response(attestation.publisher_envelope)
        return Response(attestation.envelope)


class SigningKeysApi(RawApiView):
    """Anonymous, like the discovery index: public keys are for everyone."""

    authentication_classes: list = []
    permission_classes: list = []

    @extend_schema(
        operation_id="signing_keys",
        auth=[],
        tags=["attestations"],
        responses={(200, "application/json"): OpenApiResponse(OpenApiTypes.OBJECT), **errors()},
        summary="The registry's release-signing public keys, with their ids and validity (no token needed).",
    )
    def get(self, request):
        content = json.dumps(signing_keys_document(), separators=(",", ":")).encode("utf-8")
        etag = f'"{hashlib.sha256(content).hexdigest()}"'
        return raw_response(request, content, etag, "application/json", cache_control="public, no-cache")
