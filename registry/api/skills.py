"""`/api/v1/skills...`: list, create, read (JSON, raw SKILL.md, files, zip), versions, diff, labels."""

from __future__ import annotations

import base64
import binascii
import hashlib
from urllib.parse import quote

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import parsers, status
from rest_framework.response import Response

from registry import selectors
from registry.api import fastpath
from registry.api import serializers as s
from registry.api.base import ApiView, RawApiView, SafeJSONParser, ZipParser, if_none_match, not_modified, raw_response
from registry.api.schema import Responses, errors
from registry.errors import ApplicationError, InvalidBundle, NotFound
from registry.models import Skill, SkillSource, SkillVersion
from registry.readmodel.rollouts import subject_of
from registry.services.labels import LABEL_NAME, label_delete, label_move, label_name_check
from registry.services.rollouts import label_rollout_abort, label_rollout_set
from registry.services.rules import SKILL_REFERENCE
from registry.services.skills import registry_limits, skill_set_enabled, skill_version_publish
from registry.skillformat.bundle import Bundle, bundle_from_parts, read_zip
from registry.skillformat.media_types import file_content_type

READ, WRITE = "skills:read", "skills:write"

# Path parameters of every `/skills/{name}...` view (set on the class, so on each of its methods).
NAME_PATH = extend_schema(
    parameters=[
        OpenApiParameter(
            "name",
            OpenApiTypes.STR,
            OpenApiParameter.PATH,
            pattern=SKILL_REFERENCE.pattern,
            description="The skill's name: letters, digits, '-', '_' and '.', at most 128 (no skill has another).",
        )
    ]
)
LABEL_PATH = extend_schema(
    parameters=[
        OpenApiParameter(
            "label",
            OpenApiTypes.STR,
            OpenApiParameter.PATH,
            pattern=LABEL_NAME.pattern,
            description="A label name. `latest` is implicit (always the newest version): it cannot be set or removed.",
        )
    ]
)


def _bundle_from_json(data: dict) -> Bundle:
    files, links = [], []
    for position, item in enumerate(data.get("files") or []):
        if ("link" in item) == ("content_base64" in item):
            raise InvalidBundle(
                f"files[{position}] ({item['path']!r}) needs either content_base64 or link, not both or neither.",
                fields={f"files[{position}]": "content_base64 or link"},
            )
        if "link" in item:
            links.append((item["path"], item["link"]))
            continue
        try:
            content = base64.b64decode(item["content_base64"], validate=True)
        except (binascii.Error, ValueError):
            raise ApplicationError(
                f"files[{position}].content_base64 is not valid base64.",
                fields={f"files[{position}].content_base64": "invalid base64"},
            ) from None
        files.append((item["path"], content, item.get("executable", False)))
    return bundle_from_parts(data["skill_md"].encode("utf-8"), files, links=links, limits=registry_limits())


def _read_upload(request) -> tuple[Bundle, dict]:
    """The bundle and options from a JSON, multipart (`bundle` field) or raw zip request."""
    # Checked whatever the body, as the schema lists them on every upload; only a zip body uses them.
    query = s.SkillUploadOptionsSerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    data = request.data
    if not isinstance(data, dict):
        raise ApplicationError(
            "The body must be a JSON object with at least `skill_md`, a multipart form with a "
            "`bundle` zip, or an application/zip body.",
            fields={"skill_md": "required"},
        )
    if request.content_type.startswith(ZipParser.media_type):  # options come from the query string
        # DRF skips the parser for an empty body; an empty zip is still a (bad) zip.
        return read_zip(data.get("bundle_bytes", b""), limits=registry_limits()), dict(query.validated_data)
    if request.content_type.startswith("multipart/"):
        upload = s.SkillUploadInputSerializer(data=data)
        upload.is_valid(raise_exception=True)
        options = dict(upload.validated_data)
        return read_zip(options.pop("bundle"), limits=registry_limits()), options
    body = s.SkillPublishInputSerializer(data=data)
    body.is_valid(raise_exception=True)
    options = dict(body.validated_data)
    return _bundle_from_json(options), options


SKILLREG_USER_AGENT = "skill-registry-client/"


def publish_channel(request) -> str:
    """`cli` for skillreg (its User-Agent), `api` for any other caller."""
    agent = request.META.get("HTTP_USER_AGENT", "")
    return "cli" if agent.startswith(SKILLREG_USER_AGENT) else "api"


def _publish(view: ApiView, *, expected_name: str | None, default_source: str, create: bool = False) -> Response:
    bundle, options = _read_upload(view.request)
    result = skill_version_publish(
        bundle=bundle,
        source=options.get("source") or default_source,
        message=options.get("message") or "",
        base_version=options.get("base_version"),
        expected_name=expected_name,
        accept_lenient=options.get("accept_lenient", False),
        create=create,
        actor=view.actor(),
        channel=publish_channel(view.request),
        publisher_signature=options.get("signature"),
    )
    return Response(
        s.PublishResultSerializer(result).data,
        status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
    )


UPLOAD_PARSERS = [SafeJSONParser, parsers.MultiPartParser, ZipParser]
PUBLISH_REQUEST = {
    "application/json": s.SkillPublishInputSerializer,
    "multipart/form-data": s.SkillUploadInputSerializer,
    "application/zip": OpenApiTypes.BINARY,
}
# Options of an application/zip body (JSON and multipart bodies carry them in the body).
PUBLISH_PARAMETERS = [s.SkillUploadOptionsSerializer]
PUBLISH_RESPONSES: Responses = {
    201: OpenApiResponse(s.PublishResultSerializer, description="A new version was created."),
    200: OpenApiResponse(s.PublishResultSerializer, description="Identical to the newest version: nothing created."),
    **errors(400, 401, 403, 409, 413, 415),
}


def _upload_limit() -> int:
    # A JSON body carries files as base64 (4/3 of their size); a zip is at most the bundle limit.
    return settings.SKILL_BUNDLE_MAX_BYTES * 4 // 3 + 2 * 1024 * 1024


class PublishingApi(ApiView):
    """Lists on GET, publishes on POST: a body up to a bundle's size, as JSON or a zip."""

    required_scopes = {"GET": READ, "POST": WRITE}
    parser_classes = UPLOAD_PARSERS

    @property
    def max_body_bytes(self) -> int:  # type: ignore[override]
        return _upload_limit()


class SkillListCreateApi(PublishingApi):
    @extend_schema(
        operation_id="skills_list",
        parameters=[s.SkillListQuerySerializer],
        responses={200: s.SkillSummarySerializer(many=True), **errors(400, 401, 403)},
        summary="List skills (metadata only), precedence applied.",
    )
    def get(self, request):
        query = s.SkillListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        rows = selectors.skill_catalog(**query.validated_data)
        return self.paginated(rows, lambda row: s.SkillSummarySerializer(row).data)

    @extend_schema(
        operation_id="skills_create",
        parameters=PUBLISH_PARAMETERS,
        request=PUBLISH_REQUEST,
        responses={
            201: OpenApiResponse(s.PublishResultSerializer, description="The skill was created: its version 1."),
            (409, "application/json"): OpenApiResponse(
                s.ErrorSerializer,
                description="`name_taken`: the source has a skill of that name (the body names it and its "
                "`latest_version`); publish a new version with `POST /skills/{name}/versions` and `base_version`.",
            ),
            **errors(400, 401, 403, 413, 415),
        },
        summary="Create a skill from SKILL.md text or a zip (never a new version of an existing one).",
    )
    def post(self, request):
        return _publish(self, expected_name=None, default_source=SkillSource.USER, create=True)


VERSION_PARAMETERS = [s.SkillVersionQuerySerializer]


def _served(view: ApiView, name: str) -> tuple[Skill, SkillVersion]:
    """The skill a read names and the version it gets: `version`, else its `label`'s (production
    by default), the canary when a rollout sends this read's subject there."""
    skill, query = view.skill_and_params(name, s.SkillVersionQuerySerializer)
    return skill, view.served_version(skill, query)


def _skill_md_response(request, content: bytes, etag: str, version: int) -> HttpResponse:
    return raw_response(request, content, etag, "text/markdown; charset=utf-8", extra={"X-Skill-Version": str(version)})


def _raw_read_responses(media_type: str, body) -> Responses:
    """A read of raw bytes: the bytes, or 304 when If-None-Match names their ETag."""
    return {
        (200, media_type): body,
        304: OpenApiResponse(description="If-None-Match matched the ETag."),
        **errors(400, 401, 403, 404),
    }


@NAME_PATH
class SkillDetailApi(ApiView):
    required_scopes = {"GET": READ, "PATCH": WRITE}

    @extend_schema(
        operation_id="skills_retrieve",
        parameters=VERSION_PARAMETERS,
        responses={200: s.SkillDetailSerializer, **errors(400, 401, 403, 404)},
        summary="A skill at a label or version (default: production if set, else latest).",
    )
    def get(self, request, name: str):
        skill, version = _served(self, name)
        detail = s.SkillDetailSerializer(selectors.skill_version_detail(skill=skill, version=version)).data
        return Response(detail, headers={"X-Skill-Version": str(version.number)})

    @extend_schema(
        operation_id="skills_partial_update",
        request=s.SkillPatchInputSerializer,
        responses={200: s.SkillSummarySerializer, **errors(400, 401, 403, 404, 413, 415)},
        summary="Enable or disable a skill.",
    )
    def patch(self, request, name: str):
        skill, body = self.skill_and_params(name, s.SkillPatchInputSerializer, body=True)
        skill = skill_set_enabled(skill=skill, enabled=body["enabled"], actor=self.actor())
        rows = [r for r in selectors.skill_catalog(source=skill.source) if r.skill.pk == skill.pk]
        return Response(s.SkillSummarySerializer(rows[0]).data)


@NAME_PATH
class SkillMarkdownApi(RawApiView):
    required_scopes = {"GET": READ}

    def dispatch(self, request, *args, **kwargs):
        # The hot path (bearer token, cached bytes) skips DRF; everything else goes through it.
        if request.method in ("GET", "HEAD"):
            answer = self._fast(request, kwargs.get("name", ""))
            if answer is not None:
                return answer
        return super().dispatch(request, *args, **kwargs)

    @staticmethod
    def _fast(request, name: str) -> HttpResponse | None:
        params = fastpath.version_params(request)
        if params is None or any(ord(char) < 32 for char in name):
            return None
        found = fastpath.bearer_generation(request, READ)
        if found is None:
            return None
        generation, token_id = found
        subject = subject_of(given=params.pop("subject", None), token=token_id)
        try:
            raw = selectors.skill_md_raw(name=name, generation=generation, subject=subject, **params)
        except ApplicationError:
            return None  # the DRF path answers with the proper JSON error
        return _skill_md_response(request, raw.content, raw.etag, raw.version)

    @extend_schema(
        operation_id="skills_skill_md",
        parameters=VERSION_PARAMETERS,
        responses=_raw_read_responses(
            "text/markdown", OpenApiResponse(OpenApiTypes.STR, description="The exact bytes.")
        ),
        summary="The raw SKILL.md (strong ETag; 304 on If-None-Match, GET and HEAD).",
    )
    def get(self, request, name: str):
        query = s.SkillVersionQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        raw = selectors.skill_md_raw(
            name=name,
            source=query.validated_data.get("source"),
            label=query.validated_data.get("label"),
            number=query.validated_data.get("version"),
            subject=self.subject(query.validated_data),
        )
        return _skill_md_response(request, raw.content, raw.etag, raw.version)


# Types a browser would run or render as a page: never served inline from our origin.
_ACTIVE_TYPES = {
    "text/html",
    "image/svg+xml",
    "application/xhtml+xml",
    "text/xml",
    "application/xml",
    "text/javascript",
    "application/javascript",
}


@NAME_PATH
class SkillFileApi(RawApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="skills_file",
        parameters=VERSION_PARAMETERS,
        responses=_raw_read_responses("application/octet-stream", OpenApiResponse(OpenApiTypes.BINARY)),
        summary="One bundled file, with a content type from its name.",
    )
    def get(self, request, name: str, path: str):
        skill, version = _served(self, name)
        if path == "SKILL.md":
            content = version.skill_md.encode("utf-8")
            return _skill_md_response(request, content, f'"{hashlib.sha256(content).hexdigest()}"', version.number)
        item = selectors.version_file(version, path)
        content = bytes(item.blob.content)
        content_type = file_content_type(path, content)
        extra = {"Content-Security-Policy": "default-src 'none'; sandbox", "X-Skill-Version": str(version.number)}
        if item.link:
            # The bytes are the target's (stored so at publish); the header says it was a link.
            extra["X-Skill-Link-Target"] = quote(item.link, safe="/")  # percent-encoded: paths may be UTF-8
        if content_type.split(";")[0] in _ACTIVE_TYPES:
            # An uploaded page or SVG must not run with the console's cookies on our origin.
            extra["Content-Disposition"] = f'attachment; filename="{path.rsplit("/", 1)[-1]}"'
        return raw_response(request, content, f'"{item.blob_id}"', content_type, extra=extra)


@NAME_PATH
class SkillBundleApi(RawApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="skills_bundle_zip",
        parameters=VERSION_PARAMETERS,
        responses=_raw_read_responses("application/zip", OpenApiResponse(OpenApiTypes.BINARY)),
        summary="The whole skill folder as a zip (byte-identical files, modes kept).",
    )
    def get(self, request, name: str):
        skill, version = _served(self, name)
        known = selectors.bundle_zip_etag(skill=skill, version=version)
        if known and if_none_match(request, known):
            return not_modified(known, extra={"X-Skill-Version": str(version.number)})
        bundle = selectors.bundle_zip(skill=skill, version=version)
        filename = f"{skill.name}-v{version.number}.zip"
        return raw_response(
            request,
            bundle.content,
            bundle.etag,
            "application/zip",
            extra={"Content-Disposition": f'attachment; filename="{filename}"', "X-Skill-Version": str(version.number)},
        )


@NAME_PATH
class SkillVersionListApi(PublishingApi):
    @extend_schema(
        operation_id="skills_versions_list",
        parameters=[s.VersionsQuerySerializer],
        responses={200: s.VersionSummarySerializer(many=True), **errors(400, 401, 403, 404)},
        summary="A skill's versions, newest first.",
    )
    def get(self, request, name: str):
        skill, _ = self.skill_and_params(name, s.VersionsQuerySerializer)
        rows = selectors.skill_version_rows(skill)
        return self.paginated(rows, lambda row: s.VersionSummarySerializer(row).data)

    @extend_schema(
        operation_id="skills_versions_publish",
        parameters=PUBLISH_PARAMETERS,
        request=PUBLISH_REQUEST,
        responses={**PUBLISH_RESPONSES, **errors(404)},
        summary="Publish a new version (201), or nothing when identical to the newest (200).",
    )
    def post(self, request, name: str):
        try:
            default_source: str = selectors.skill_get(name=name).source
        except NotFound:
            default_source = SkillSource.USER
        if default_source == SkillSource.BUNDLED:
            # An edit to a bundled skill becomes a user skill that shadows it; the bundled one
            # stays what the skills/ folder says.
            default_source = SkillSource.USER
        return _publish(self, expected_name=name, default_source=default_source)


@NAME_PATH
class SkillVersionDetailApi(ApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="skills_versions_retrieve",
        parameters=[s.VersionsQuerySerializer],
        responses={200: s.SkillDetailSerializer, **errors(400, 401, 403, 404)},
        summary="One version of a skill.",
    )
    def get(self, request, name: str, number: int):
        skill, version, _ = self.version_and_params(name, number, s.VersionsQuerySerializer)
        return Response(s.SkillDetailSerializer(selectors.skill_version_detail(skill=skill, version=version)).data)


def _version_ref(skill: Skill, ref: str | None) -> SkillVersion | None:
    if ref is None:
        return None
    if ref.isdigit():
        return selectors.skill_version_for(skill=skill, number=int(ref))
    return selectors.skill_version_for(skill=skill, label=ref)  # DiffQuerySerializer checked its syntax


@NAME_PATH
class SkillDiffApi(ApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="skills_diff",
        parameters=[s.DiffQuerySerializer],
        responses={200: s.DiffSerializer, **errors(400, 401, 403, 404)},
        summary="Unified diff of SKILL.md and the file changes between two versions.",
    )
    def get(self, request, name: str):
        skill, query = self.skill_and_params(name, s.DiffQuerySerializer)
        new = _version_ref(skill, query.get("to")) or selectors.skill_version_for(skill=skill, label="latest")
        old = _version_ref(skill, query.get("from"))
        if old is None and "from" not in query and new.number > 1:
            old = selectors.skill_version_for(skill=skill, number=new.number - 1)
        return Response(s.DiffSerializer(selectors.skill_version_diff(old=old, new=new)).data)


@NAME_PATH
class SkillLabelListApi(ApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="skills_labels_list",
        parameters=[s.LabelSourceQuerySerializer],
        responses={200: s.LabelListSerializer, **errors(400, 401, 403, 404)},
        summary="A skill's labels and their history (who moved what, when).",
    )
    def get(self, request, name: str):
        skill, _ = self.skill_and_params(name, s.LabelSourceQuerySerializer)
        return Response(s.LabelListSerializer(selectors.skill_label_state(skill)).data)


@NAME_PATH
@LABEL_PATH
class SkillLabelApi(ApiView):
    required_scopes = {"PUT": WRITE, "DELETE": WRITE}

    @extend_schema(
        operation_id="skills_labels_move",
        request=s.LabelMoveInputSerializer,
        responses={200: s.LabelSerializer, **errors(400, 401, 403, 404, 409, 413, 415)},
        summary="Point a label at a version, or with `weight` roll the version out to that share of subjects "
        "(atomic; recorded in the label history). A label policy may refuse moving, starting or raising: 403 "
        "for a role it does not name, 409 with the unmet eval checks.",
    )
    def put(self, request, name: str, label: str):
        skill, body = self.skill_and_params(name, s.LabelMoveInputSerializer, body=True)
        label_name_check(label)
        previous = selectors.skill_labels(skill).get(label)
        if body.get("weight") is None:
            moved = label_move(
                skill=skill,
                label=label,
                version_number=body["version"],
                actor=self.actor(),
                role=self.acting_role(),
                override_reason=body.get("override_reason"),
            )
        else:
            moved = label_rollout_set(
                skill=skill,
                label=label,
                version_number=body["version"],
                weight=body["weight"],
                actor=self.actor(),
                role=self.acting_role(),
                override_reason=body.get("override_reason"),
            )
        return Response(s.LabelSerializer(selectors.label_pointer(moved, skill=skill, previous_version=previous)).data)

    @extend_schema(
        operation_id="skills_labels_delete",
        parameters=[s.LabelDeleteQuerySerializer],
        responses={204: None, **errors(400, 401, 403, 404, 409)},
        summary="Remove a label. A label policy checks it as a move: 403 for a role it does not name; 409 when it "
        "asks for eval evidence, which a removal never has (an admin's `override_reason` removes it anyway).",
    )
    def delete(self, request, name: str, label: str):
        skill, query = self.skill_and_params(name, s.LabelDeleteQuerySerializer)
        label_delete(
            skill=skill,
            label=label,
            actor=self.actor(),
            role=self.acting_role(),
            override_reason=query.get("override_reason"),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


@NAME_PATH
@LABEL_PATH
class SkillLabelRolloutApi(ApiView):
    required_scopes = {"DELETE": WRITE}

    @extend_schema(
        operation_id="skills_labels_rollout_abort",
        parameters=[s.LabelSourceQuerySerializer],
        responses={200: s.LabelSerializer, **errors(400, 401, 403, 404)},
        summary="Abort a label's rollout: every subject reads the stable version again.",
    )
    def delete(self, request, name: str, label: str):
        skill, _ = self.skill_and_params(name, s.LabelSourceQuerySerializer)
        ended = label_rollout_abort(skill=skill, label=label, actor=self.actor())
        return Response(s.LabelSerializer(selectors.label_pointer(ended, skill=skill)).data)
