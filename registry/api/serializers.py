"""Explicit input and output serializers, one pair per operation (STYLE.md).

Inputs validate shape and bounds only; the services judge content (SKILL.md, patterns, labels).
Outputs are plain `Serializer`s over the dicts the views build, so the OpenAPI schema shows the
exact JSON shapes of SPEC §5.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import RegexValidator
from django.http import QueryDict
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from registry.models import LabelChange, SkillSource, UsageKind
from registry.readmodel.rollouts import SUBJECT_MAX_CHARS
from registry.services.labels import LABEL_NAME
from registry.services.rules import (
    INSTRUCTION_MAX,
    MAX_TARGETS,
    PRIORITY_RANGE,
    RULE_NAME_MAX,
    SKILL_REFERENCE,
    TOOL_NAME,
)


class FullMatchValidator(RegexValidator):
    """The whole value must match (Django's RegexValidator searches, so `$` would also match before
    a final newline). The OpenAPI schema shows the regex as the field's `pattern`."""

    def __call__(self, value):
        if not self.regex.fullmatch(str(value)):
            raise DjangoValidationError(self.message, code=self.code, params={"value": value})


# Input fields hold JSON bodies to the types the schema gives: DRF would also make "5" of the number
# 5, 0.0 of `false`, and false of "0" or "no". Query strings and multipart forms carry every value as
# text, so there numbers are parsed from it, and a flag is the word true or false.


def _from_form(field: serializers.Field) -> bool:
    return isinstance(getattr(field.root, "initial_data", None), QueryDict)


def _is_number(data) -> bool:
    return isinstance(data, int | float) and not isinstance(data, bool)


class TextField(serializers.CharField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class WholeNumberField(serializers.IntegerField):
    def to_internal_value(self, data):
        if not (_is_number(data) or _from_form(self)):
            self.fail("invalid")
        return super().to_internal_value(data)


class NumberField(serializers.FloatField):
    def to_internal_value(self, data):
        if not (_is_number(data) or _from_form(self)):
            self.fail("invalid")
        return super().to_internal_value(data)


# Dates people ask about or report: wide enough for any real event, narrow enough that a day
# added, a time zone applied or a range walked never overflows Python's date (9999-12-31 did).
EARLIEST_DAY, LATEST_DAY = dt.date(1970, 1, 1), dt.date(2999, 12, 31)
_DAY_RANGE = f"between {EARLIEST_DAY} and {LATEST_DAY}"


class DayField(serializers.DateField):
    def to_internal_value(self, value):
        day = super().to_internal_value(value)
        if not EARLIEST_DAY <= day <= LATEST_DAY:
            raise serializers.ValidationError(f"Give a day {_DAY_RANGE}.")
        return day


class MomentField(serializers.DateTimeField):
    def to_internal_value(self, value):
        # Range-check before DRF converts time zones, which is where year 9999 or 0001 overflows.
        try:
            parsed = parse_datetime(value) if isinstance(value, str) else None
        except ValueError:  # well formed but not a real time (month 13): DRF's own message says so
            parsed = None
        if parsed is not None and not EARLIEST_DAY <= parsed.date() <= LATEST_DAY:
            raise serializers.ValidationError(f"Give a time {_DAY_RANGE}.")
        return super().to_internal_value(value)


class FlagField(serializers.BooleanField):
    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        if _from_form(self) and isinstance(data, str) and data.lower() in ("true", "false"):
            return data.lower() == "true"
        self.fail("invalid", input=data)


def _text(**kwargs) -> serializers.CharField:
    return TextField(**kwargs)


class LabelField(TextField):
    """A label name: the syntax labels are created with (`latest` allowed where a label is read)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("max_length", 36)
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault(
            "validators",
            [FullMatchValidator(LABEL_NAME, "Label names are 1-36 characters of a-z, 0-9, '_', '.' and '-'.")],
        )
        super().__init__(**kwargs)


@extend_schema_field(OpenApiTypes.BYTE)
class Base64Field(TextField):
    """Base64 text; the view decodes it (strictly) and names the file that is not base64."""


@extend_schema_field({"type": "string", "format": "binary", "minLength": 1})
class UploadField(serializers.FileField):
    """A file part of a multipart body (spectacular would describe a FileField as a URL). Django
    drops an empty one, so it counts as not sent."""


def _names(pattern, what: str, **kwargs) -> serializers.ListField:
    """Skill or tool names, each checked with the pattern the services use."""
    name = _text(trim_whitespace=False, validators=[FullMatchValidator(pattern, f"Not a valid {what} name.")])
    return serializers.ListField(child=name, max_length=MAX_TARGETS, **kwargs)


# --- common outputs ----------------------------------------------------------------------


class PolicyCheckSerializer(serializers.Serializer):
    check = serializers.ChoiceField(
        choices=["role", "eval_run", "suite_accepted", "min_task_rate", "min_trigger_f1", "not_worse"],
        help_text="suite_accepted: the version's run is on a suite revision not accepted yet "
        "(wanted.suite_revision names it).",
    )
    wanted = serializers.JSONField(help_text="What the policy asks for.")
    got = serializers.JSONField(help_text="What the version has (null: nothing to measure).")
    run = _text(allow_null=True, help_text="The eval run the figure comes from (its id).")


class ErrorSerializer(serializers.Serializer):
    error = _text(help_text="Machine-readable code, e.g. invalid_skill, version_conflict, name_taken, forbidden.")
    detail = _text(help_text="What went wrong, for a person.")
    line = serializers.IntegerField(required=False, help_text="SKILL.md line of the first error.")
    fields = serializers.DictField(required=False, help_text="Field name -> problem.")
    scope = _text(required=False, help_text="The scope a 403 is missing.")
    latest_version = serializers.IntegerField(required=False, help_text="409: the newest version now.")
    name = _text(required=False, help_text="409 `name_taken`: the skill that has the name.")
    source = _text(required=False, help_text="409 `name_taken`: that skill's source.")
    member = _text(required=False, help_text="Skillsets: the member skill a refusal is about.")
    issues = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="A refused SKILL.md: every error and warning (`line`, `level`, `message`, `field`, `fallback`).",
    )
    read_as = serializers.DictField(
        required=False,
        help_text="`lenient_reading`: the frontmatter as it would be stored with `accept_lenient: true`.",
    )
    policy = _text(required=False, help_text="`policy`: the label whose policy refused the change.")
    roles = serializers.ListField(child=_text(), required=False, help_text="403 `policy`: the roles it allows.")
    unmet = PolicyCheckSerializer(many=True, required=False, help_text="409 `policy`: each unmet check.")


class IssueSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    message = _text()
    field = _text(allow_null=True, required=False)
    level = _text(required=False)
    fallback = serializers.BooleanField(
        required=False,
        help_text="A field that is not valid YAML, stored as the fallback read it (as text); see `accept_lenient`.",
    )


class FileEntrySerializer(serializers.Serializer):
    path = _text()
    size = serializers.IntegerField(help_text="For a link, the size of the file it leads to.")
    sha256 = _text(source="blob_id", help_text="For a link, the sha256 of the file it leads to.")
    executable = serializers.BooleanField()
    link = _text(allow_null=True, help_text="A symbolic link inside the skill: its target as written, else null.")


# --- skills ------------------------------------------------------------------------------


class SkillListQuerySerializer(serializers.Serializer):
    q = _text(
        required=False, max_length=500, allow_blank=True, help_text="Words that must appear (search as you type)."
    )
    tag = _text(required=False, max_length=100)
    trigger = _text(required=False, max_length=64)
    source = serializers.ChoiceField(choices=SkillSource.choices, required=False)
    enabled = FlagField(required=False, allow_null=True, default=None)
    label = LabelField(help_text="Only skills carrying this label, shown at its version.")
    shadowed = FlagField(
        required=False, default=False, help_text="Also list skills shadowed by a higher-priority source."
    )


class SkillSummarySerializer(serializers.Serializer):
    """Renders a `selectors.CatalogRow`."""

    name = _text(source="skill.name")
    source = _text(source="skill.source")
    enabled = serializers.BooleanField(source="skill.enabled")
    effective = serializers.BooleanField(help_text="This is the skill agents get for the name.")
    shadowed_by = _text(allow_null=True, help_text="Source of the skill that wins the name, when not this one.")
    version = serializers.IntegerField(
        source="version.number", help_text="Version shown (the label's, with ?label=, else latest)."
    )
    latest_version = serializers.IntegerField(source="skill.latest_version")
    description = _text(source="version.description")
    tags = serializers.ListField(child=_text(), source="version.tags")
    triggers = serializers.ListField(child=_text(), source="version.triggers")
    tools = serializers.ListField(child=_text(), source="version.tools")
    labels = serializers.DictField(child=serializers.IntegerField(), help_text="Label -> version number.")
    fingerprint = _text(source="version.fingerprint")
    updated_at = serializers.DateTimeField(source="skill.updated_at")


class SkillFileInputSerializer(serializers.Serializer):
    path = _text(max_length=1024, trim_whitespace=False)
    content_base64 = Base64Field(allow_blank=True, trim_whitespace=False, required=False)
    executable = FlagField(required=False, default=False)
    link = _text(
        required=False,
        max_length=1024,
        trim_whitespace=False,
        help_text="Instead of `content_base64`: a relative symbolic link to another file of the skill (`AGENTS.md`).",
    )


# Only `skills sync` writes the bundled source, from the repository's skills/ folder: a bundled
# skill changed over the API would be silently different from the files that claim to be it.
PUBLISH_SOURCES = [(SkillSource.USER.value, "User"), (SkillSource.WORKSPACE.value, "Workspace")]


class PublishSourceField(serializers.ChoiceField):
    default_error_messages = {
        "invalid_choice": "Publish as 'user' or 'workspace'; 'bundled' skills come only from the skills/ folder "
        "(`manage.py skills sync`)."
    }

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("help_text", "user (default) or workspace; bundled skills come from `skills sync`.")
        super().__init__(choices=PUBLISH_SOURCES, **kwargs)


ACCEPT_LENIENT_HELP = (
    "Publish a frontmatter that is not valid YAML as the fallback reads it (each such field as plain "
    "text). Without it such a SKILL.md is refused with 400 `lenient_reading`, naming the line, with "
    "`read_as` showing what would be stored; check that, then send it again with `true`."
)


class SkillPublishInputSerializer(serializers.Serializer):
    skill_md = _text(trim_whitespace=False, help_text="The exact SKILL.md text (frontmatter and body).")
    files = SkillFileInputSerializer(many=True, required=False, default=list)
    message = _text(required=False, allow_blank=True, default="", max_length=500)
    base_version = WholeNumberField(
        required=False,
        allow_null=True,
        default=None,
        min_value=0,
        max_value=2**31 - 1,
        help_text="The version this edit started from; stale -> 409.",
    )
    source = PublishSourceField(required=False, default=None, allow_null=True)
    accept_lenient = FlagField(required=False, default=False, help_text=ACCEPT_LENIENT_HELP)
    signature = serializers.DictField(
        required=False,
        allow_null=True,
        default=None,
        help_text="The publisher's signature: a DSSE envelope of an in-toto statement (predicateType "
        "https://skill-registry.dev/attestation/publisher/v1) whose subjects are every file's sha256, signed "
        "with an Ed25519 key the user registered (`skillreg push --sign KEY`). A bad one refuses the publish.",
    )


class SkillUploadOptionsSerializer(serializers.Serializer):
    """Options of a raw `application/zip` upload, given in the query string (and, in the same
    fields, of a multipart upload). A form has no null: leave a field out instead."""

    message = _text(required=False, allow_blank=True, default="", max_length=500)
    base_version = WholeNumberField(required=False, min_value=0, max_value=2**31 - 1)
    source = PublishSourceField(required=False)
    accept_lenient = FlagField(required=False, default=False, help_text=ACCEPT_LENIENT_HELP)


class SkillUploadInputSerializer(SkillUploadOptionsSerializer):
    """multipart/form-data: a zipped skill folder in `bundle`."""

    bundle = UploadField(help_text="A zip with SKILL.md at the top or inside one folder.")


class PublishResultSerializer(serializers.Serializer):
    """Renders a `services.skills.PublishResult`."""

    name = _text(source="version.skill.name")
    source = _text(source="version.skill.source")
    version = serializers.IntegerField(source="version.number")
    created = serializers.BooleanField(help_text="False when the content equals the newest version.")
    fingerprint = _text(source="version.fingerprint")
    warnings = IssueSerializer(many=True)
    labels = serializers.ListField(
        child=_text(), source="version.label_names", help_text="Labels pointing at this version."
    )
    message = _text(source="version.message")


class SkillVersionQuerySerializer(serializers.Serializer):
    # OpenAPI cannot say that two parameters exclude each other, so the help texts do.
    label = LabelField(help_text="Read the version this label points to (`latest` for the newest); not with `version`.")
    version = WholeNumberField(
        required=False, min_value=1, max_value=2**31 - 1, help_text="Read this version; not with `label`."
    )
    source = serializers.ChoiceField(
        choices=SkillSource.choices, required=False, help_text="Read this source's skill instead of the effective one."
    )
    subject = serializers.CharField(
        required=False,
        min_length=1,
        max_length=SUBJECT_MAX_CHARS,
        help_text="Who the read is for, when the label has a rollout: the same subject always gets the same "
        "version (default: the token). The `X-Skill-Version` header says which version was served.",
    )

    def validate(self, attrs):
        if attrs.get("label") and attrs.get("version"):
            raise serializers.ValidationError({"version": "Give either label or version, not both."})
        return attrs


class DiscoveryQuerySerializer(serializers.Serializer):
    subject = serializers.CharField(required=False, allow_blank=True, max_length=SUBJECT_MAX_CHARS)
    skillset = serializers.CharField(min_length=1, max_length=128, required=False, default=None)


class ShadowSerializer(serializers.Serializer):
    source = _text()
    enabled = serializers.BooleanField()
    latest_version = serializers.IntegerField()


class SkillDetailSerializer(serializers.Serializer):
    """Renders a `selectors.SkillVersionDetail`."""

    name = _text(source="skill.name")
    source = _text(source="skill.source")
    enabled = serializers.BooleanField(source="skill.enabled")
    effective = serializers.BooleanField()
    shadowed_by = _text(allow_null=True)
    others = ShadowSerializer(many=True, help_text="The same name in other sources.")
    version = serializers.IntegerField(source="version.number")
    latest_version = serializers.IntegerField(source="skill.latest_version")
    labels = serializers.DictField(child=serializers.IntegerField())
    version_labels = serializers.ListField(child=_text(), help_text="Labels pointing at the version shown.")
    description = _text(source="version.description")
    tags = serializers.ListField(child=_text(), source="version.tags")
    triggers = serializers.ListField(child=_text(), source="version.triggers")
    tools = serializers.ListField(child=_text(), source="version.tools")
    frontmatter = serializers.DictField(source="version.frontmatter")
    warnings = IssueSerializer(many=True)
    fingerprint = _text(source="version.fingerprint")
    skill_md = _text(source="version.skill_md")
    files = FileEntrySerializer(many=True)
    tokens = serializers.DictField(child=serializers.IntegerField())
    author = _text(allow_null=True)
    message = _text(source="version.message")
    created_at = serializers.DateTimeField(source="version.created_at")


class SkillPatchInputSerializer(serializers.Serializer):
    enabled = FlagField()
    source = serializers.ChoiceField(
        choices=SkillSource.choices, required=False, help_text="Which source's skill; default: the effective one."
    )


class VersionSummarySerializer(serializers.Serializer):
    """Renders a `selectors.VersionRow`."""

    number = serializers.IntegerField()
    fingerprint = _text()
    message = _text()
    author = _text(allow_null=True)
    created_at = serializers.DateTimeField()
    labels = serializers.ListField(child=_text())
    warnings = serializers.IntegerField(help_text="How many validation warnings it has.")
    description = _text()


class VersionsQuerySerializer(serializers.Serializer):
    source = serializers.ChoiceField(choices=SkillSource.choices, required=False)


class DiffQuerySerializer(serializers.Serializer):
    # `from` is a Python keyword, so it is declared through the class namespace.
    locals()["from"] = LabelField(help_text="Version number or label; default: to - 1.")
    to = LabelField(help_text="Version number or label; default: latest.")
    source = serializers.ChoiceField(choices=SkillSource.choices, required=False)


class FileChangeSerializer(serializers.Serializer):
    path = _text()
    change = serializers.ChoiceField(choices=["added", "removed", "modified", "mode"])
    size_before = serializers.IntegerField(allow_null=True)
    size_after = serializers.IntegerField(allow_null=True)
    executable_before = serializers.BooleanField(allow_null=True)
    executable_after = serializers.BooleanField(allow_null=True)
    link_before = _text(allow_null=True, help_text="The link's target before, when it was a link.")
    link_after = _text(allow_null=True, help_text="The link's target after, when it is a link.")
    diff = _text(allow_null=True, help_text="Unified diff for small text files.")


class DiffSerializer(serializers.Serializer):
    """Renders a `selectors.VersionDiff`."""

    name = _text(source="new.skill.name")
    source = _text(source="new.skill.source")
    from_version = serializers.IntegerField(source="old.number", allow_null=True)
    to_version = serializers.IntegerField(source="new.number")
    skill_md_diff = _text(help_text="Unified diff of SKILL.md.")
    files = FileChangeSerializer(many=True)
    unchanged_files = serializers.IntegerField()


class LabelMoveInputSerializer(serializers.Serializer):
    version = WholeNumberField(min_value=1, max_value=2**31 - 1)
    source = serializers.ChoiceField(choices=SkillSource.choices, required=False)
    weight = WholeNumberField(
        required=False,
        min_value=0,
        max_value=100,
        help_text="Roll `version` out to this share (%) of subjects, keeping the label on its stable version; "
        "without it the label moves (and any rollout ends).",
    )
    override_reason = _text(
        required=False,
        max_length=1000,
        help_text="Admins only: move the label although its policy's checks are unmet; audited with this "
        "reason and the unmet checks, and shown in the label history.",
    )


class LabelSourceQuerySerializer(serializers.Serializer):
    source = serializers.ChoiceField(choices=SkillSource.choices, required=False)


class LabelDeleteQuerySerializer(LabelSourceQuerySerializer):
    override_reason = _text(
        required=False,
        max_length=1000,
        help_text="Admins only: remove a label whose policy asks for eval evidence (a removal never has it); "
        "audited with this reason and shown in the label history.",
    )


class LabelSerializer(serializers.Serializer):
    """Renders a `selectors.LabelPointer`."""

    skill = _text()
    source = _text()
    label = _text()
    version = serializers.IntegerField()
    previous_version = serializers.IntegerField(allow_null=True, required=False)
    updated_by = _text(allow_null=True)
    updated_at = serializers.DateTimeField()
    canary_version = serializers.IntegerField(
        allow_null=True, help_text="The version a rollout sends `weight`% of subjects to."
    )
    weight = serializers.IntegerField(help_text="Share (%) of subjects reading the canary; 0 without a rollout.")
    rollout_started_at = serializers.DateTimeField(allow_null=True)
    rolled_back_at = serializers.DateTimeField(allow_null=True, help_text="When the guard set the weight to 0.")


class LabelHistorySerializer(serializers.Serializer):
    label = _text(help_text="Blank for a change of the skill's eval suite (the suite_* kinds).")
    kind = serializers.ChoiceField(
        choices=LabelChange.choices,
        help_text="suite_change: a suite revision accepted as made; suite_proposal: one the eval gates do not "
        "count until it is accepted; suite_accept: a proposal accepted.",
    )
    suite_revision = serializers.IntegerField(allow_null=True, help_text="Suite changes: the revision.")
    from_version = serializers.IntegerField(allow_null=True)
    to_version = serializers.IntegerField(allow_null=True)
    weight = serializers.IntegerField(
        allow_null=True, help_text="Rollouts: the percent of subjects sent to to_version."
    )
    reason = _text()
    unmet = PolicyCheckSerializer(many=True, allow_null=True, help_text="Overrides: the checks that were not met.")
    changed_by = _text(source="changed_by.username", allow_null=True)
    via = _text()
    changed_at = serializers.DateTimeField()


class LabelListSerializer(serializers.Serializer):
    """Renders a `selectors.SkillLabels`."""

    skill = _text(source="skill.name")
    source = _text(source="skill.source")
    labels = LabelSerializer(many=True)
    history = LabelHistorySerializer(many=True)


# --- rules -------------------------------------------------------------------------------


class AutoInvokeSerializer(serializers.Serializer):
    tool = _text()
    arguments = serializers.DictField(help_text="JSON object; `{{query}}` in strings is the user query.")


@extend_schema_field(
    {
        "nullable": True,
        "oneOf": [
            {"type": "object", "maxProperties": 0},
            {
                "type": "object",
                "properties": {
                    "tool": {"type": "string", "pattern": TOOL_NAME.pattern},
                    "arguments": {"type": "object", "nullable": True},
                },
                "required": ["tool"],
                "additionalProperties": False,
            },
        ],
    }
)
class AutoInvokeField(serializers.JSONField):
    """`{"tool", "arguments"}`, judged by the rules service (null and {} mean none); annotated so the
    schema shows the shape it accepts."""


class RuleInputSerializer(serializers.Serializer):
    """A rule must do something: name skills or tools, or give an instruction or an auto_invoke. Its
    name is unique, and its pattern must compile on RE2."""

    name = _text(max_length=RULE_NAME_MAX)
    pattern = _text(trim_whitespace=False, help_text="Regex (RE2 syntax), matched case-insensitively.")
    skills = _names(SKILL_REFERENCE, "skill", required=False, default=list)
    tools = _names(TOOL_NAME, "tool", required=False, default=list)
    instruction = _text(required=False, allow_blank=True, default="", max_length=INSTRUCTION_MAX)
    auto_invoke = AutoInvokeField(
        required=False,
        allow_null=True,
        default=None,
        help_text='{"tool": str, "arguments": {...}}; `{{query}}` in string arguments is the user query.',
    )
    priority = WholeNumberField(required=False, default=0, min_value=PRIORITY_RANGE[0], max_value=PRIORITY_RANGE[1])
    enabled = FlagField(required=False, default=True)


class RulePatchInputSerializer(serializers.Serializer):
    """Only the fields given change; the rule must still do something (see RuleInput)."""

    name = _text(max_length=RULE_NAME_MAX, required=False)
    pattern = _text(trim_whitespace=False, required=False)
    skills = _names(SKILL_REFERENCE, "skill", required=False)
    tools = _names(TOOL_NAME, "tool", required=False)
    instruction = _text(required=False, allow_blank=True, max_length=INSTRUCTION_MAX)
    auto_invoke = AutoInvokeField(required=False, allow_null=True)
    priority = WholeNumberField(required=False, min_value=PRIORITY_RANGE[0], max_value=PRIORITY_RANGE[1])
    enabled = FlagField(required=False)


class RuleSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = _text()
    pattern = _text()
    skills = serializers.ListField(child=_text())
    tools = serializers.ListField(child=_text())
    instruction = _text()
    auto_invoke = AutoInvokeSerializer(allow_null=True)
    priority = serializers.IntegerField()
    enabled = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    warnings = serializers.ListField(
        child=_text(), required=False, help_text="E.g. a named skill that does not exist yet (writes only)."
    )


# The user query of POST /rules/test and /resolve. JSON may spend 12 bytes on one character (an
# astral character as two \uXXXX escapes), which those views' body limits leave room for.
QUERY_MAX_CHARS = 100_000
QUERY_MAX_JSON_BYTES = QUERY_MAX_CHARS * 12


class RulesTestInputSerializer(serializers.Serializer):
    query = _text(max_length=QUERY_MAX_CHARS, allow_blank=True, trim_whitespace=False)
    label = LabelField()


class FiredRuleSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = _text()
    why = _text()
    skills = serializers.ListField(child=_text())
    tools = serializers.ListField(child=_text())
    instruction = _text(allow_null=True)
    auto_invoke = AutoInvokeSerializer(allow_null=True)
    priority = serializers.IntegerField()


class RulesTestSerializer(serializers.Serializer):
    fired = FiredRuleSerializer(many=True)
    skills = serializers.ListField(child=_text(), help_text="Skills listed to the agent, in order.")
    prompt_block = _text()
    instructions = serializers.ListField(child=_text())
    warnings = serializers.ListField(child=_text())


# --- match and resolve -------------------------------------------------------------------


class MatchQuerySerializer(serializers.Serializer):
    q = _text(max_length=10_000)
    label = LabelField()
    limit = WholeNumberField(required=False, default=20, min_value=1, max_value=500)


class MatchItemSerializer(serializers.Serializer):
    name = _text()
    version = serializers.IntegerField()
    description = _text()
    tags = serializers.ListField(child=_text())
    score = serializers.FloatField()
    reasons = serializers.ListField(child=_text())


class MatchSerializer(serializers.Serializer):
    query = _text()
    matches = MatchItemSerializer(many=True)


CONTEXT_MAX_FIELDS = 50
CONTEXT_TEXT_MAX = 20_000
# A consumer's entitlements: the tools and MCP servers it has (resolve's context, MCP's `_meta`,
# the discovery index's query).
ENTITLEMENT_KEYS = ("tools", "mcp_servers")
ENTITLEMENTS_MAX_NAMES = 500
ENTITLEMENT_NAME_MAX_CHARS = 200
_ENTITLEMENT_LIST = {
    "type": "array",
    "maxItems": ENTITLEMENTS_MAX_NAMES,
    "items": {"type": "string", "minLength": 1, "maxLength": ENTITLEMENT_NAME_MAX_CHARS},
}


def entitlement_names(value: Any, *, field: str) -> list[str]:
    """The tools or MCP servers a consumer says it has (`field` names where, in the error): a list
    of at most ENTITLEMENTS_MAX_NAMES names, each 1 to ENTITLEMENT_NAME_MAX_CHARS characters."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise serializers.ValidationError(f"'{field}' must be a list of strings (names).")
    if len(value) > ENTITLEMENTS_MAX_NAMES:
        raise serializers.ValidationError(
            f"'{field}' lists {len(value):,} names; at most {ENTITLEMENTS_MAX_NAMES} are allowed."
        )
    for item in value:
        if not item.strip() or len(item) > ENTITLEMENT_NAME_MAX_CHARS:
            raise serializers.ValidationError(
                f"'{field}' holds a name that is empty or over {ENTITLEMENT_NAME_MAX_CHARS} characters."
            )
    return value


@extend_schema_field(
    {
        "type": "object",
        "maxProperties": CONTEXT_MAX_FIELDS,
        "properties": {"tools": _ENTITLEMENT_LIST, "mcp_servers": _ENTITLEMENT_LIST},
        "additionalProperties": {
            "nullable": True,
            "oneOf": [{"type": "string", "maxLength": CONTEXT_TEXT_MAX}, {"type": "number"}, {"type": "boolean"}],
        },
    }
)
class ContextField(serializers.DictField):
    """seed 001's turn context: flat, with text, number or boolean values (checked in `validate_context`)."""


class ResolveInputSerializer(serializers.Serializer):
    query = _text(required=False, allow_blank=True, default="", max_length=QUERY_MAX_CHARS, trim_whitespace=False)
    label = LabelField(allow_null=True, default=None)
    forced_skill = _text(required=False, allow_null=True, allow_blank=True, default=None, max_length=128)
    context = ContextField(
        required=False,
        default=dict,
        help_text="seed 001 context: toolName, error, taskDescription, command; `subject` picks the side of "
        "each label rollout (the same subject always gets the same versions); `tools` and `mcp_servers` (lists "
        "of names) are what the consumer has: skills whose `tool:` or `mcp:` requirements they do not meet are "
        "left out (either list absent: not checked).",
    )
    max_skills = WholeNumberField(required=False, allow_null=True, default=None, min_value=0, max_value=10_000)
    max_chars = WholeNumberField(required=False, allow_null=True, default=None, min_value=0, max_value=10_000_000)
    skillset = _text(
        required=False,
        allow_null=True,
        default=None,
        max_length=128,
        help_text="Resolve within this skillset: exactly its members, at the numbers of the set's version at `label` "
        "(for `context.subject` when the set's label has a rollout), whatever the members' own labels say. "
        "404 for an unknown set or a label it does not carry.",
    )
    explain = FlagField(
        required=False,
        default=False,
        help_text="Also list the skills the consumer's tools and MCP servers left out, with why (`left_out`).",
    )

    def validate_context(self, value):
        if len(value) > CONTEXT_MAX_FIELDS:
            raise serializers.ValidationError(f"At most {CONTEXT_MAX_FIELDS} context fields.")
        for key in ENTITLEMENT_KEYS:
            if key in value:
                try:
                    entitlement_names(value[key], field=f"context.{key}")
                except serializers.ValidationError as exc:
                    raise serializers.ValidationError({key: exc.detail}) from None
        for key, item in value.items():
            if key in ENTITLEMENT_KEYS:
                continue
            if not isinstance(item, str | int | float | bool) and item is not None:
                raise serializers.ValidationError(f"'{key}' must be text, a number or a boolean.")
            if isinstance(item, str) and len(item) > CONTEXT_TEXT_MAX:
                raise serializers.ValidationError(f"'{key}' is over {CONTEXT_TEXT_MAX:,} characters.")
        # Refused, not cut: two subjects sharing their first characters would read one side of a rollout.
        subject = value.get("subject")
        if subject not in (None, "") and len(str(subject)) > SUBJECT_MAX_CHARS:
            raise serializers.ValidationError(
                {"subject": f"context.subject is {len(str(subject)):,} characters; at most {SUBJECT_MAX_CHARS}."}
            )
        return value


class ExplainQuerySerializer(serializers.Serializer):
    explain = FlagField(
        required=False,
        default=False,
        help_text="`?explain=true`: list what the consumer's tools and MCP servers left out, with why (as the "
        "body's `explain`).",
    )


class ResolvedSkillSerializer(serializers.Serializer):
    name = _text()
    version = serializers.IntegerField()
    fingerprint = _text()
    description = _text()
    tags = serializers.ListField(child=_text())
    triggers = serializers.ListField(child=_text())
    tools = serializers.ListField(child=_text())
    source = _text()
    score = serializers.FloatField()
    reasons = serializers.ListField(child=_text())
    forced_by = serializers.ListField(child=_text(), help_text='"forced_skill" and/or names of fired rules.')
    described = serializers.BooleanField(help_text="False when the budget left its description out.")
    canary = serializers.BooleanField(
        help_text="True when `version` is the canary of the label's rollout, given to `context.subject`."
    )
    required_by = serializers.ListField(
        child=_text(),
        help_text="The offered skills whose `metadata.requires` names this one (it is offered for them, at the "
        "request's label or the version the requirement pins); empty for a skill offered on its own.",
    )


class LeftOutSerializer(serializers.Serializer):
    name = _text()
    version = serializers.IntegerField()
    missing = serializers.ListField(child=_text(), help_text="The requirements not met, as written (`tool:Bash`).")
    reasons = serializers.ListField(child=_text())


class TruncationSerializer(serializers.Serializer):
    included = serializers.IntegerField()
    total = serializers.IntegerField()
    described = serializers.IntegerField()
    truncated = serializers.BooleanField()


class ResolvedSkillsetSerializer(serializers.Serializer):
    name = _text()
    label = _text()
    version = serializers.IntegerField(help_text="The set's version served (the canary one when `canary`).")
    canary = serializers.BooleanField(help_text="True when `version` is the canary of the set label's rollout.")
    members = serializers.DictField(
        child=serializers.IntegerField(), help_text="Every member of that version: skill name -> version number."
    )
    missing = serializers.ListField(child=_text(), help_text="Members deleted or disabled since: left out.")


class ResolveSerializer(serializers.Serializer):
    skills = ResolvedSkillSerializer(many=True)
    prompt_block = _text()
    instructions = serializers.ListField(child=_text())
    fired_rules = FiredRuleSerializer(many=True)
    etag = _text()
    label = _text(allow_null=True)
    forced_skill = _text(allow_null=True)
    truncated = TruncationSerializer()
    warnings = serializers.ListField(child=_text())
    generation = serializers.IntegerField()
    skillset = ResolvedSkillsetSerializer(allow_null=True, help_text="The skillset asked for; null without one.")
    left_out = LeftOutSerializer(
        many=True,
        required=False,
        help_text="With `explain`: the skills whose `tool:` or `mcp:` requirements (their own or those of a "
        "skill they require) `context.tools` / `context.mcp_servers` do not meet, by name.",
    )


# --- usage and analytics -----------------------------------------------------------------


_RATINGS: dict[str | int, int] = {"up": 1, "down": -1, "1": 1, "-1": -1, "+1": 1, 1: 1, -1: -1}


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "enum": [key for key in _RATINGS if isinstance(key, str)]},
            {"type": "integer", "enum": [key for key in _RATINGS if isinstance(key, int)]},
        ]
    }
)
class RatingField(serializers.Field):
    """Feedback rating: "up"/"down" or +1/-1."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, str | int) or data not in _RATINGS:
            raise serializers.ValidationError('Use "up" or "down" (or 1 / -1).')
        return _RATINGS[data]

    def to_representation(self, value):
        return value


class UsageEventInputSerializer(serializers.Serializer):
    event_id = _text(max_length=100, help_text="Client-chosen unique id; re-sending it never double-counts.")
    kind = serializers.ChoiceField(choices=UsageKind.choices)
    skill = _text(max_length=128)
    source = serializers.ChoiceField(
        choices=SkillSource.choices,
        required=False,
        allow_blank=True,
        default="",
        help_text="Which skill of that name (its source); by default the one the name resolves to when the "
        "event is stored (the effective skill).",
    )
    version = WholeNumberField(required=False, allow_null=True, min_value=1, max_value=2**31 - 1)
    trigger = _text(
        required=False,
        allow_blank=True,
        default="",
        max_length=32,
        help_text="Left empty on an executed, succeeded, failed or feedback event: the trigger of the load of "
        "the same skill, client_id and batch it follows (so is `model`).",
    )
    label = _text(
        required=False, allow_blank=True, default="", max_length=36, help_text="The label the skill was fetched by."
    )
    model = _text(required=False, allow_blank=True, default="", max_length=200, help_text="The LLM the agent used.")
    client_id = _text(required=False, allow_blank=True, default="", max_length=100)
    duration_ms = WholeNumberField(required=False, allow_null=True, min_value=0, max_value=2**31 - 1)
    tokens = WholeNumberField(required=False, allow_null=True, min_value=0, max_value=2**31 - 1)
    cost = NumberField(required=False, allow_null=True, min_value=0, max_value=1e9)
    rating = RatingField(required=False, allow_null=True, help_text="Required when `kind` is feedback.")
    at = MomentField(
        required=False, allow_null=True, help_text=f"When it happened (default: now), {_DAY_RANGE}; may be late."
    )

    def validate(self, attrs):
        if attrs["kind"] == UsageKind.FEEDBACK and attrs.get("rating") is None:
            raise serializers.ValidationError({"rating": "A feedback event needs a rating (up or down)."})
        return attrs


class UsageBatchInputSerializer(serializers.Serializer):
    events = UsageEventInputSerializer(many=True, allow_empty=False, max_length=1000)
    client_id = _text(
        required=False,
        allow_blank=True,
        default="",
        max_length=100,
        help_text="Default client id for events that do not name one.",
    )


class UsageBatchSerializer(serializers.Serializer):
    accepted = serializers.IntegerField()
    duplicates = serializers.IntegerField()
    duplicate_ids = serializers.ListField(child=_text())


_SKILL_SOURCE_HELP = (
    "Only the skill of that name in this source. Usage is kept per skill (name and source), so a skill that "
    "shadows another never counts its history; one skill's series and comparison default to the skill its "
    "name resolves to now."
)


class AnalyticsRangeSerializer(serializers.Serializer):
    # `from` is a Python keyword, so it is declared through the class namespace.
    locals()["from"] = DayField(required=False, help_text=f"First day (UTC), inclusive; not after `to`; {_DAY_RANGE}.")
    to = DayField(required=False, help_text=f"Last day (UTC), inclusive; {_DAY_RANGE}.")
    version = WholeNumberField(required=False, min_value=1, max_value=2**31 - 1)
    source = serializers.ChoiceField(choices=SkillSource.choices, required=False, help_text=_SKILL_SOURCE_HELP)

    def validate(self, attrs):
        return _date_range_in_order(attrs)


def _date_range_in_order(attrs: dict) -> dict:
    if attrs.get("from") and attrs.get("to") and attrs["from"] > attrs["to"]:
        raise serializers.ValidationError({"from": "must not be after 'to'."})
    return attrs


class AnalyticsQuerySerializer(AnalyticsRangeSerializer):
    label = LabelField(help_text="Only the version this label points to now, per skill.")
    skill = _text(required=False, max_length=128)
    trigger = _text(required=False, max_length=32, help_text="Only events with this trigger (e.g. read_skill).")
    model = _text(required=False, max_length=200, help_text="Only events from this model.")
    by_version = FlagField(required=False, default=False)
    by = serializers.ChoiceField(
        choices=["trigger", "model", "label"],
        required=False,
        help_text="Also split each row by trigger, model or the label events were recorded under.",
    )


class AnalyticsTimeseriesQuerySerializer(AnalyticsRangeSerializer):
    interval = serializers.ChoiceField(choices=["hour", "day", "week"], required=False, default="day")


class AnalyticsCompareQuerySerializer(serializers.Serializer):
    locals()["from"] = DayField(required=False, help_text=f"First day (UTC), inclusive; {_DAY_RANGE}.")
    to = DayField(required=False, help_text=f"Last day (UTC), inclusive; {_DAY_RANGE}.")
    a = WholeNumberField(min_value=1, max_value=2**31 - 1, help_text="The baseline version.")
    b = WholeNumberField(min_value=1, max_value=2**31 - 1, help_text="The version compared with it.")
    source = serializers.ChoiceField(choices=SkillSource.choices, required=False, help_text=_SKILL_SOURCE_HELP)

    def validate(self, attrs):
        return _date_range_in_order(attrs)


class AnalyticsFunnelQuerySerializer(AnalyticsRangeSerializer):
    skill = _text(required=False, max_length=128)


class AnalyticsFailingQuerySerializer(AnalyticsRangeSerializer):
    min_n = WholeNumberField(required=False, default=10, min_value=1, max_value=10**9)
    limit = WholeNumberField(required=False, default=10, min_value=1, max_value=500)


class SkillStatsSerializer(serializers.Serializer):
    skill = _text()
    source = _text(help_text="The skill's source; empty for a name no skill had when its events came.")
    version = serializers.IntegerField(allow_null=True)
    trigger = _text(required=False, help_text="With by=trigger.")
    model = _text(required=False, help_text="With by=model.")
    label = _text(required=False, help_text="With by=label: the label events were recorded under.")
    offered = serializers.IntegerField()
    loaded = serializers.IntegerField()
    executed = serializers.IntegerField()
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()
    feedback_up = serializers.IntegerField()
    feedback_down = serializers.IntegerField()
    n = serializers.IntegerField(help_text="succeeded + failed")
    success_rate = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True, help_text="95% Wilson interval, lower bound.")
    ci_high = serializers.FloatField(allow_null=True, help_text="95% Wilson interval, upper bound.")
    tokens = serializers.IntegerField(help_text="Sum over events that reported tokens.")
    duration_ms = serializers.IntegerField()
    cost = serializers.FloatField()
    avg_tokens = serializers.FloatField(allow_null=True, help_text="Per event that reported tokens, duration or cost.")
    avg_duration_ms = serializers.FloatField(allow_null=True)
    avg_cost = serializers.FloatField(allow_null=True)


class AnalyticsSerializer(serializers.Serializer):
    locals()["from"] = serializers.DateField(allow_null=True)
    to = serializers.DateField(allow_null=True)
    label = _text(allow_null=True)
    version = serializers.IntegerField(allow_null=True)
    skills = SkillStatsSerializer(many=True)


class SeriesPointSerializer(serializers.Serializer):
    bucket = serializers.DateTimeField(help_text="ISO start of the UTC bucket.")
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()
    n = serializers.IntegerField()
    success_rate = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)


class TimeseriesSerializer(serializers.Serializer):
    skill = _text()
    interval = _text()
    points = SeriesPointSerializer(many=True)


class DifferenceSerializer(serializers.Serializer):
    estimate = serializers.FloatField(allow_null=True, help_text="p_b − p_a")
    ci_low = serializers.FloatField(allow_null=True, help_text="Newcombe hybrid score interval (method 10), 95%.")
    ci_high = serializers.FloatField(allow_null=True)


class ComparisonSerializer(serializers.Serializer):
    skill = _text()
    a = SkillStatsSerializer()
    b = SkillStatsSerializer()
    difference = DifferenceSerializer()
    probability_b_better = serializers.FloatField(help_text="P(p_b > p_a), Beta(1+succeeded, 1+failed) posteriors.")
    min_n = serializers.IntegerField(help_text="Outcomes each version needs before the comparison is a finding.")
    decided = serializers.BooleanField(help_text="Both versions have min_n outcomes.")
    more_outcomes_needed = serializers.IntegerField(
        allow_null=True,
        help_text="Below min_n: more outcomes of each version that would decide it (min_n reached and the "
        "difference's interval leaving out 0) if the rates so far hold; null when decided or when no "
        "number would (equal rates, a version without outcomes).",
    )
    summary = _text(
        help_text='In words, e.g. "v3 beats v2 with 94% probability; +12 points [−3, +25], n = 41 and 57"; '
        "below min_n no verdict, but how many more outcomes would decide it."
    )


class FunnelSerializer(serializers.Serializer):
    offered = serializers.IntegerField()
    loaded = serializers.IntegerField()
    executed = serializers.IntegerField()
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()


class FailingSerializer(serializers.Serializer):
    min_n = serializers.IntegerField()
    skills = SkillStatsSerializer(many=True)
