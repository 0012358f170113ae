"""`/api/v1/skills/{name}/versions/{n}/scan`: a version's security scan (verdict and findings)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from registry.api import serializers as s
from registry.api.base import ApiView
from registry.api.schema import errors
from registry.api.serializers import TextField
from registry.api.skills import NAME_PATH, READ
from registry.models import ScanStatus, ScanVerdict
from registry.selectors.scans import scan_history, version_scan_state


class ScanFindingSerializer(serializers.Serializer):
    rule_id = TextField()
    severity = TextField(help_text="CRITICAL, HIGH, MEDIUM, LOW or INFO.")
    analyzer = TextField(help_text="The scanner's analyzer that reported it (static, behavioral, pipeline, ...).")
    category = TextField()
    title = TextField()
    file = TextField(help_text="The file's path in the bundle (SKILL.md included); empty for the skill as a whole.")
    line = serializers.IntegerField(allow_null=True)
    excerpt = TextField()
    explanation = TextField()


class ScanHistoryItemSerializer(serializers.Serializer):
    verdict = serializers.ChoiceField(choices=ScanVerdict.choices, allow_blank=True)
    status = serializers.ChoiceField(choices=ScanStatus.choices)
    trigger = TextField(help_text="publish or rescan.")
    scanner_version = TextField()
    rulepack_digest = TextField()
    queued_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class ScanSerializer(serializers.Serializer):
    verdict = serializers.ChoiceField(
        choices=ScanVerdict.choices,
        allow_null=True,
        help_text="The newest finished scan's verdict: clean, review (medium findings), warn (high), malicious "
        "(critical) or error (the scanner could not tell: see `reason`); null before the first scan ends.",
    )
    status = TextField(help_text="done, or not_scanned.")
    pending = serializers.BooleanField(help_text="A newer scan is queued or running.")
    reason = TextField(required=False, help_text="Why the verdict is `error`.")
    scanner_version = TextField(required=False)
    rulepack_digest = TextField(required=False, help_text="sha256 over the scanner's rule packs.")
    analyzers = serializers.ListField(child=TextField(), required=False)
    scanned_at = serializers.DateTimeField(required=False, allow_null=True)
    findings = ScanFindingSerializer(many=True, required=False)
    history = ScanHistoryItemSerializer(many=True, help_text="Every scan of the version, newest first.")


@NAME_PATH
class SkillVersionScanApi(ApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="skills_versions_scan",
        parameters=[s.VersionsQuerySerializer],
        responses={200: ScanSerializer, **errors(400, 401, 403, 404)},
        summary="The security scan of one version: verdict, findings and scan history.",
    )
    def get(self, request, name: str, number: int):
        _, version, _ = self.version_and_params(name, number, s.VersionsQuerySerializer)
        state = version_scan_state(version)
        state["history"] = ScanHistoryItemSerializer(scan_history(version), many=True).data
        return Response(state)
