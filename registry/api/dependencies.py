"""`/api/v1/skills/{name}/dependencies`: what a skill requires (`metadata.requires`), resolved —
the skills loaded with it at the versions a request at `label` gets, and the tools and MCP
servers its consumer must have."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from registry.api.base import ApiView
from registry.api.schema import errors
from registry.api.serializers import LabelField, TextField
from registry.api.skills import NAME_PATH, READ
from registry.errors import NotFound
from registry.readmodel.effective import requested_label
from registry.readmodel.rollouts import SUBJECT_MAX_CHARS
from registry.readmodel.served import label_missing_detail, skill_lacks_label
from registry.selectors.dependencies import DependencyClosure, dependency_closure


class DependenciesQuerySerializer(serializers.Serializer):
    label = LabelField(
        help_text="Resolve at this label (`latest` for the newest versions); default: `production` where a skill "
        "has it, else latest. An entry's own `@LABEL` or `@VERSION` wins over it."
    )
    subject = serializers.CharField(
        required=False,
        min_length=1,
        max_length=SUBJECT_MAX_CHARS,
        help_text="Who the read is for, when a label has a rollout (default: the token).",
    )


class RequirementSerializer(serializers.Serializer):
    kind = TextField(help_text="`skill`, `tool` or `mcp`.")
    name = TextField()
    label = TextField(allow_null=True, help_text="`skill:NAME@LABEL`: the label it is read at.")
    version = serializers.IntegerField(allow_null=True, help_text="`skill:NAME@VERSION`: the pinned version.")


class DependencySerializer(serializers.Serializer):
    name = TextField()
    version = serializers.IntegerField(allow_null=True, help_text="The version served; null when it is missing.")
    source = TextField(allow_null=True, help_text="The source of the skill served (null when missing).")
    fingerprint = TextField(allow_null=True, help_text="That version's bundle fingerprint (null when missing).")
    required_by = TextField(help_text="The skill whose `metadata.requires` named it.")
    requirement = TextField(help_text="The entry as written there (`skill:pdf-tools@production`).")
    why = TextField(help_text="`required by NAME`, as the agent trace says it.")
    depth = serializers.IntegerField(help_text="1 for the skill's own requirements, 2 for theirs, ...")
    missing = serializers.BooleanField(help_text="No skill of that name is served at that label or version.")


class NeededSerializer(serializers.Serializer):
    name = TextField()
    required_by = serializers.ListField(child=TextField())


class DependenciesSerializer(serializers.Serializer):
    name = TextField()
    version = serializers.IntegerField(help_text="The version of the skill itself the request gets.")
    label = TextField(help_text="The label it was resolved at.")
    requires = RequirementSerializer(many=True, help_text="The skill's own `metadata.requires`, parsed.")
    skills = DependencySerializer(many=True, help_text="Every required skill, directly or through others.")
    tools = NeededSerializer(many=True, help_text="Tools the skill or one it requires needs.")
    mcp_servers = NeededSerializer(many=True, help_text="MCP servers the skill or one it requires needs.")
    truncated = serializers.BooleanField(help_text="The closure was cut short (over 100 skills or 16 levels).")


def dependencies_body(closure: DependencyClosure, *, label: str) -> dict:
    root = closure.root
    assert root is not None
    return {
        "name": root.name,
        "version": root.version,
        "label": label,
        "requires": [requirement.as_dict() for requirement in root.requires],
        "skills": [
            {
                "name": dep.name,
                "version": dep.version,
                "source": dep.skill.source if dep.skill else None,
                "fingerprint": dep.skill.fingerprint if dep.skill else None,
                "required_by": dep.required_by,
                "requirement": str(dep.requirement),
                "why": dep.why,
                "depth": dep.depth,
                "missing": dep.missing,
            }
            for dep in closure.skills
        ],
        "tools": [{"name": n.name, "required_by": list(n.required_by)} for n in closure.needs if n.kind == "tool"],
        "mcp_servers": [{"name": n.name, "required_by": list(n.required_by)} for n in closure.needs if n.kind == "mcp"],
        "truncated": closure.truncated,
    }


@NAME_PATH
class SkillDependenciesApi(ApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="skills_dependencies",
        parameters=[DependenciesQuerySerializer],
        responses={200: DependenciesSerializer, **errors(400, 401, 403, 404)},
        summary="The skills this skill requires (`metadata.requires`), directly or through others, at the versions "
        "a request at `label` gets; and the tools and MCP servers they need. 404 when the skill is not served there.",
    )
    def get(self, request, name: str):
        skill, query = self.skill_and_params(name, DependenciesQuerySerializer)
        label = query.get("label")
        closure = dependency_closure(name=skill.name, label=label, subject=self.subject(query))
        if closure.root is None:
            raise NotFound(
                label_missing_detail(name=skill.name, label=label)
                if label and skill_lacks_label(name=skill.name, label=label)
                else f"'{skill.name}' is not served at {requested_label(label)} (disabled, or no version in effect)."
            )
        return Response(DependenciesSerializer(dependencies_body(closure, label=requested_label(label))).data)
