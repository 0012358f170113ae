"""`/api/v1/skills...`: list, create, read (JSON, raw SKILL.md, files, zip), versions, diff, labels."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import mimetypes
from urllib.parse import quote

from django.conf import settings
from django.core.cache import cache
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import parsers, status
from rest_framework.response import Response

from registry import selectors
from registry.api import fastpath
from registry.api import serializers as s
from registry.api.base import ApiView, RawApiView, SafeJSONParser, ZipParser, if_none_match, not_modified
from registry.api.schema import Responses, errors
from registry.bundle import Bundle, bundle_from_parts, read_zip, write_zip
from registry.errors import ApplicationError, InvalidBundle, NotFound
from registry.models import Label, LabelHistory, Skill, SkillFile, SkillSource, SkillVersion
from registry.selectors.resolve import cache_namespace
from registry.services.labels import LABEL_NAME, label_delete, label_move, label_name_check
from registry.services.rules import SKILL_REFERENCE
from registry.services.skills import PublishResult, registry_limits, skill_set_enabled, skill_version_publish

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


def _user(user) -> str | None:
    return user.get_username() if user is not None else None


def _issues(warnings) -> list[dict]:
    out = []
    for w in warnings:
        if isinstance(w, dict):
            out.append(
                {
                    "line": w.get("line"),
                    "message": w.get("message"),
                    "field": w.get("field"),
                    "level": w.get("level", "warning"),
                }
            )
        else:
            out.append({"line": w.line, "message": w.message, "field": w.field, "level": w.level})
    return out


def _skill_summary(row: selectors.CatalogRow) -> dict:
    version = row.version
    return {
        "name": row.skill.name,
        "source": row.skill.source,
        "enabled": row.skill.enabled,
        "effective": row.effective,
        "shadowed_by": row.shadowed_by,
        "version": version.number,
        "latest_version": row.skill.latest_version,
        "description": version.description,
        "tags": version.tags,
        "triggers": version.triggers,
        "tools": version.tools,
        "labels": row.labels,
        "fingerprint": version.fingerprint,
        "updated_at": row.skill.updated_at,
    }


def _version_detail(skill: Skill, version: SkillVersion) -> dict:
    labels = selectors.skill_labels(skill)
    winner = selectors.skill_winner([skill, *selectors.skill_others(skill)])
    others = selectors.skill_others(skill)
    files = version.files.all()
    return {
        "name": skill.name,
        "source": skill.source,
        "enabled": skill.enabled,
        "effective": winner == skill,
        "shadowed_by": winner.source if winner is not None and winner != skill and skill.enabled else None,
        "others": [{"source": o.source, "enabled": o.enabled, "latest_version": o.latest_version} for o in others],
        "version": version.number,
        "latest_version": skill.latest_version,
        "labels": labels,
        "version_labels": sorted(name for name, number in labels.items() if number == version.number),
        "description": version.description,
        "tags": version.tags,
        "triggers": version.triggers,
        "tools": version.tools,
        "frontmatter": version.frontmatter,
        "warnings": _issues(version.warnings),
        "fingerprint": version.fingerprint,
        "skill_md": version.skill_md,
        "files": [
            {"path": f.path, "size": f.size, "sha256": f.blob_id, "executable": f.executable, "link": f.link}
            for f in files
        ],
        "tokens": {"description": version.description_tokens, "body": version.body_tokens},
        "author": _user(version.author),
        "message": version.message,
        "created_at": version.created_at,
    }


def _publish_payload(result: PublishResult) -> dict:
    version = result.version
    return {
        "name": version.skill.name,
        "source": version.skill.source,
        "version": version.number,
        "created": result.created,
        "fingerprint": version.fingerprint,
        "warnings": _issues(result.warnings),
        "labels": sorted(Label.objects.filter(version=version).values_list("name", flat=True)),
        "message": version.message,
    }


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


def _publish(view: ApiView, *, expected_name: str | None, default_source: str) -> Response:
    bundle, options = _read_upload(view.request)
    result = skill_version_publish(
        bundle=bundle,
        source=options.get("source") or default_source,
        message=options.get("message") or "",
        base_version=options.get("base_version"),
        expected_name=expected_name,
        actor=view.actor(),
    )
    return Response(_publish_payload(result), status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


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


class SkillListCreateApi(ApiView):
    required_scopes = {"GET": READ, "POST": WRITE}
    parser_classes = UPLOAD_PARSERS

    @property
    def max_body_bytes(self) -> int:  # type: ignore[override]
        return _upload_limit()

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
        return self.paginated(rows, _skill_summary)

    @extend_schema(
        operation_id="skills_create",
        parameters=PUBLISH_PARAMETERS,
        request=PUBLISH_REQUEST,
        responses=PUBLISH_RESPONSES,
        summary="Create a skill (or publish its next version) from SKILL.md text or a zip.",
    )
    def post(self, request):
        return _publish(self, expected_name=None, default_source=SkillSource.USER)


def _version_query(request) -> dict:
    query = s.SkillVersionQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data


VERSION_PARAMETERS = [s.SkillVersionQuerySerializer]


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
        query = _version_query(request)
        skill = selectors.skill_get(name=name, source=query.get("source"))
        version = selectors.skill_version_for(skill=skill, label=query.get("label"), number=query.get("version"))
        return Response(_version_detail(skill, version))

    @extend_schema(
        operation_id="skills_partial_update",
        request=s.SkillPatchInputSerializer,
        responses={200: s.SkillSummarySerializer, **errors(400, 401, 403, 404, 413, 415)},
        summary="Enable or disable a skill.",
    )
    def patch(self, request, name: str):
        body = s.SkillPatchInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        skill = selectors.skill_get(name=name, source=body.validated_data.get("source"))
        skill = skill_set_enabled(skill=skill, enabled=body.validated_data["enabled"], actor=self.actor())
        rows = [r for r in selectors.skill_catalog(source=skill.source) if r.skill.pk == skill.pk]
        return Response(_skill_summary(rows[0]))


def _raw_response(request, content: bytes, etag: str, content_type: str, *, extra: dict | None = None) -> HttpResponse:
    if if_none_match(request, etag):
        return not_modified(etag)
    response = HttpResponse(b"" if request.method == "HEAD" else content, content_type=content_type)
    response["ETag"] = etag
    response["Content-Length"] = str(len(content))
    response["Cache-Control"] = "private, no-cache"
    for key, value in (extra or {}).items():
        response[key] = value
    return response


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
        generation = fastpath.bearer_generation(request, READ)
        if generation is None:
            return None
        try:
            raw = selectors.skill_md_raw(name=name, generation=generation, **params)
        except ApplicationError:
            return None  # the DRF path answers with the proper JSON error
        return _raw_response(
            request, raw.content, raw.etag, "text/markdown; charset=utf-8", extra={"X-Skill-Version": str(raw.version)}
        )

    @extend_schema(
        operation_id="skills_skill_md",
        parameters=VERSION_PARAMETERS,
        responses={
            (200, "text/markdown"): OpenApiResponse(OpenApiTypes.STR, description="The exact bytes."),
            304: OpenApiResponse(description="If-None-Match matched the ETag."),
            **errors(400, 401, 403, 404),
        },
        summary="The raw SKILL.md (strong ETag; 304 on If-None-Match, GET and HEAD).",
    )
    def get(self, request, name: str):
        query = _version_query(request)
        raw = selectors.skill_md_raw(
            name=name, source=query.get("source"), label=query.get("label"), number=query.get("version")
        )
        return _raw_response(
            request, raw.content, raw.etag, "text/markdown; charset=utf-8", extra={"X-Skill-Version": str(raw.version)}
        )


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
_TEXT_TYPES = {
    ".md": "text/markdown",
    ".py": "text/x-python",
    ".sh": "text/x-shellscript",
    ".txt": "text/plain",
    ".json": "application/json",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".csv": "text/csv",
    ".js": "text/javascript",
    ".ts": "text/plain",
    ".rb": "text/plain",
    ".go": "text/plain",
    ".rs": "text/plain",
    ".sql": "text/plain",
}


def _content_type(path: str, content: bytes) -> str:
    suffix = "." + path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    guessed = _TEXT_TYPES.get(suffix) or mimetypes.guess_type(path, strict=False)[0] or "application/octet-stream"
    is_text = guessed.startswith("text/") or guessed in ("application/json", "application/yaml", "application/toml")
    if guessed == "application/octet-stream" and b"\x00" not in content[:8192]:
        try:
            content.decode("utf-8")
            guessed, is_text = "text/plain", True
        except UnicodeDecodeError:
            pass
    return f"{guessed}; charset=utf-8" if is_text else guessed


@NAME_PATH
class SkillFileApi(RawApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="skills_file",
        parameters=VERSION_PARAMETERS,
        responses={
            (200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY),
            304: OpenApiResponse(description="If-None-Match matched."),
            **errors(400, 401, 403, 404),
        },
        summary="One bundled file, with a content type from its name.",
    )
    def get(self, request, name: str, path: str):
        query = _version_query(request)
        skill = selectors.skill_get(name=name, source=query.get("source"))
        version = selectors.skill_version_for(skill=skill, label=query.get("label"), number=query.get("version"))
        if path == "SKILL.md":
            content = version.skill_md.encode("utf-8")
            return _raw_response(
                request, content, f'"{hashlib.sha256(content).hexdigest()}"', "text/markdown; charset=utf-8"
            )
        item = SkillFile.objects.filter(version=version, path=path).select_related("blob").first()
        if item is None:
            raise NotFound(f"'{skill.name}' v{version.number} has no file '{path}'.")
        content = bytes(item.blob.content)
        content_type = _content_type(path, content)
        extra = {"Content-Security-Policy": "default-src 'none'; sandbox", "X-Skill-Version": str(version.number)}
        if item.link:
            # The bytes are the target's (stored so at publish); the header says it was a link.
            extra["X-Skill-Link-Target"] = quote(item.link, safe="/")  # percent-encoded: paths may be UTF-8
        if content_type.split(";")[0] in _ACTIVE_TYPES:
            # An uploaded page or SVG must not run with the console's cookies on our origin.
            extra["Content-Disposition"] = f'attachment; filename="{path.rsplit("/", 1)[-1]}"'
        return _raw_response(request, content, f'"{item.blob_id}"', content_type, extra=extra)


@NAME_PATH
class SkillBundleApi(RawApiView):
    required_scopes = {"GET": READ}

    @extend_schema(
        operation_id="skills_bundle_zip",
        parameters=VERSION_PARAMETERS,
        responses={
            (200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY),
            304: OpenApiResponse(description="If-None-Match matched."),
            **errors(400, 401, 403, 404),
        },
        summary="The whole skill folder as a zip (byte-identical files, modes kept).",
    )
    def get(self, request, name: str):
        query = _version_query(request)
        skill = selectors.skill_get(name=name, source=query.get("source"))
        version = selectors.skill_version_for(skill=skill, label=query.get("label"), number=query.get("version"))
        # Versions are immutable, so the zip's digest can be remembered per version.
        digest_key = f"bundle-zip-sha:{cache_namespace()}:{version.pk}:{skill.name}"
        known = cache.get(digest_key)
        if known and if_none_match(request, known):
            return not_modified(known)
        content = write_zip(selectors.version_bundle(version), prefix=skill.name)
        etag = f'"{hashlib.sha256(content).hexdigest()}"'
        cache.set(digest_key, etag, 24 * 3600)
        filename = f"{skill.name}-v{version.number}.zip"
        return _raw_response(
            request,
            content,
            etag,
            "application/zip",
            extra={"Content-Disposition": f'attachment; filename="{filename}"'},
        )


@NAME_PATH
class SkillVersionListApi(ApiView):
    required_scopes = {"GET": READ, "POST": WRITE}
    parser_classes = UPLOAD_PARSERS

    @property
    def max_body_bytes(self) -> int:  # type: ignore[override]
        return _upload_limit()

    @extend_schema(
        operation_id="skills_versions_list",
        parameters=[s.VersionsQuerySerializer],
        responses={200: s.VersionSummarySerializer(many=True), **errors(400, 401, 403, 404)},
        summary="A skill's versions, newest first.",
    )
    def get(self, request, name: str):
        query = s.VersionsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        skill = selectors.skill_get(name=name, source=query.validated_data.get("source"))
        labels: dict[int, list[str]] = {}
        for label, number in skill.labels.values_list("name", "version__number"):
            labels.setdefault(number, []).append(label)
        versions = list(skill.versions.select_related("author").defer("skill_md", "frontmatter").order_by("-number"))

        def render(version: SkillVersion) -> dict:
            return {
                "number": version.number,
                "fingerprint": version.fingerprint,
                "message": version.message,
                "author": _user(version.author),
                "created_at": version.created_at,
                "labels": sorted(labels.get(version.number, [])),
                "warnings": len(version.warnings or []),
                "description": version.description,
            }

        return self.paginated(versions, render)

    @extend_schema(
        operation_id="skills_versions_publish",
        parameters=PUBLISH_PARAMETERS,
        request=PUBLISH_REQUEST,
        responses={**PUBLISH_RESPONSES, **errors(404)},
        summary="Publish a new version (201), or nothing when identical to the newest (200).",
    )
    def post(self, request, name: str):
        existing = Skill.objects.filter(name=name)
        default_source: str = SkillSource.USER
        if existing.exists():
            default_source = selectors.skill_get(name=name).source
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
        query = s.VersionsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        skill = selectors.skill_get(name=name, source=query.validated_data.get("source"))
        return Response(_version_detail(skill, selectors.skill_version_for(skill=skill, number=number)))


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
        query = s.DiffQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        skill = selectors.skill_get(name=name, source=query.validated_data.get("source"))
        new = _version_ref(skill, query.validated_data.get("to")) or selectors.skill_version_for(
            skill=skill, label="latest"
        )
        old = _version_ref(skill, query.validated_data.get("from"))
        if old is None and "from" not in query.validated_data and new.number > 1:
            old = selectors.skill_version_for(skill=skill, number=new.number - 1)
        diff = selectors.skill_version_diff(old=old, new=new)
        return Response(
            {
                "name": skill.name,
                "source": skill.source,
                "from_version": old.number if old else None,
                "to_version": new.number,
                "skill_md_diff": diff.skill_md_diff,
                "files": [dataclasses.asdict(change) for change in diff.files],
                "unchanged_files": diff.unchanged_files,
            }
        )


def _label_payload(label: Label, skill: Skill, previous: int | None = None) -> dict:
    return {
        "skill": skill.name,
        "source": skill.source,
        "label": label.name,
        "version": label.version.number,
        "previous_version": previous,
        "updated_by": _user(label.updated_by),
        "updated_at": label.updated_at,
    }


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
        query = s.LabelSourceQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        skill = selectors.skill_get(name=name, source=query.validated_data.get("source"))
        labels = skill.labels.select_related("version", "updated_by")
        history = LabelHistory.objects.filter(skill=skill).select_related("changed_by")[:200]
        return Response(
            {
                "skill": skill.name,
                "source": skill.source,
                "labels": [_label_payload(label, skill) for label in labels],
                "history": [
                    {
                        "label": h.label,
                        "from_version": h.from_version,
                        "to_version": h.to_version,
                        "changed_by": _user(h.changed_by),
                        "changed_at": h.changed_at,
                    }
                    for h in history
                ],
            }
        )


@NAME_PATH
@LABEL_PATH
class SkillLabelApi(ApiView):
    required_scopes = {"PUT": WRITE, "DELETE": WRITE}

    @extend_schema(
        operation_id="skills_labels_move",
        request=s.LabelMoveInputSerializer,
        responses={200: s.LabelSerializer, **errors(400, 401, 403, 404, 413, 415)},
        summary="Point a label at a version (atomic; recorded in the label history).",
    )
    def put(self, request, name: str, label: str):
        body = s.LabelMoveInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        skill = selectors.skill_get(name=name, source=body.validated_data.get("source"))
        label_name_check(label)
        previous = skill.labels.filter(name=label).values_list("version__number", flat=True).first()
        moved = label_move(skill=skill, label=label, version_number=body.validated_data["version"], actor=self.actor())
        return Response(_label_payload(moved, skill, previous))

    @extend_schema(
        operation_id="skills_labels_delete",
        parameters=[s.LabelSourceQuerySerializer],
        responses={204: None, **errors(400, 401, 403, 404)},
        summary="Remove a label.",
    )
    def delete(self, request, name: str, label: str):
        query = s.LabelSourceQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        skill = selectors.skill_get(name=name, source=query.validated_data.get("source"))
        label_delete(skill=skill, label=label, actor=self.actor())
        return Response(status=status.HTTP_204_NO_CONTENT)
