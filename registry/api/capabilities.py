"""`/api/v1/skills/{name}/versions/{n}/capabilities`: what a version can do, read from its files
without running them, and (`against`) what it adds to and drops from another version."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from registry import selectors
from registry.api.base import ApiView
from registry.api.schema import errors
from registry.api.serializers import LabelField, TextField
from registry.api.skills import NAME_PATH, READ
from registry.models import Skill, SkillSource, SkillVersion
from registry.selectors.capabilities import version_capabilities, version_capabilities_diff
from registry.skillformat.capabilities import KINDS


class CapabilitiesQuerySerializer(serializers.Serializer):
    against = LabelField(
        help_text="A version number or label to compare with: the answer's `diff` lists what this version adds "
        "(`+`) and drops (`−`). Without it, no diff."
    )
    source = serializers.ChoiceField(choices=SkillSource.choices, required=False)


class CapabilitySerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=list(KINDS))
    value = TextField(help_text="A host, a program, `pypi:name`, a variable, a path, a server or a tool.")
    file = TextField(help_text="The file it was found in, relative to the skill's folder.")
    line = serializers.IntegerField(help_text="The 1-based line in that file.")
    excerpt = TextField(help_text="The line (or URL) it was read from, shortened.")


class SkippedFileSerializer(serializers.Serializer):
    file = TextField()
    reason = TextField()


class ManifestSerializer(serializers.Serializer):
    analyzer = serializers.IntegerField(help_text="Which version of the analysis produced it.")
    entries = CapabilitySerializer(many=True)
    skipped = SkippedFileSerializer(many=True, help_text="Files not read (too large, binary, out of budget).")
    truncated = serializers.BooleanField(help_text="The analysis ran out of its entry or time budget.")
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="Distinct values per kind.")


class PlaceSerializer(serializers.Serializer):
    file = TextField()
    line = serializers.IntegerField()


class CapabilityChangeSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=list(KINDS))
    value = TextField()
    places = PlaceSerializer(many=True, help_text="Where the version has it (the first 20).")
    text = TextField(help_text="As the console shows it: `+ network: api.example.com (scripts/sync.py:14)`.")
    gated = serializers.BooleanField(
        help_text="A network destination, command or credential read: what a `new_capabilities` policy gates."
    )


class CapabilityDiffSerializer(serializers.Serializer):
    against = serializers.IntegerField(help_text="The version compared with.")
    added = CapabilityChangeSerializer(many=True)
    removed = CapabilityChangeSerializer(many=True)


class CapabilitiesSerializer(serializers.Serializer):
    name = TextField()
    source = TextField()
    version = serializers.IntegerField()
    manifest = ManifestSerializer()
    diff = CapabilityDiffSerializer(allow_null=True, help_text="With `against` only.")


def _version_ref(skill: Skill, ref: str) -> SkillVersion:
    if ref.isdigit():
        return selectors.skill_version_for(skill=skill, number=int(ref))
    return selectors.skill_version_for(skill=skill, label=ref)


@NAME_PATH
class SkillVersionCapabilitiesApi(ApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="skills_versions_capabilities",
        parameters=[CapabilitiesQuerySerializer],
        responses={200: CapabilitiesSerializer, **errors(400, 401, 403, 404)},
        summary="What a version can do (network, commands, packages, env and credentials, writes, MCP, tools), "
        "each with file and line; with `against`, what it adds and drops.",
    )
    def get(self, request, name: str, number: int):
        skill, version, query = self.version_and_params(name, number, CapabilitiesQuerySerializer)
        manifest = version_capabilities(version)
        diff = None
        if query.get("against"):
            other = _version_ref(skill, query["against"])
            changes = version_capabilities_diff(old=other, new=version)
            diff = {
                "against": other.number,
                "added": [change.as_dict() for change in changes.added],
                "removed": [change.as_dict() for change in changes.removed],
            }
        body = {
            "name": skill.name,
            "source": skill.source,
            "version": version.number,
            "manifest": {**manifest.as_dict(), "counts": manifest.counts()},
            "diff": diff,
        }
        return Response(CapabilitiesSerializer(body).data)
