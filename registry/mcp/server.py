"""The MCP server behind `/mcp`: resources (`skill://` files), the Skills Extension
(`skills/list`, `skills/get`, `resources/directory/read`) and the `resolve` tool.

Built on the `mcp` package's low-level `Server`, which speaks both revisions a host may use:
2025-11-25 (`initialize`) and 2026-07-28 (`server/discover`, `_meta` on every request). Every
answer is read through `registry.mcp.catalog` or the resolve selector; handlers only translate.
The transport is stateless (no `Mcp-Session-Id`): any web worker answers any request, so a host
that initialized against one process is served by the next.

The label a request reads at comes from the endpoint's `?label=`; the view sets it for the one
request it serves (`mcp_serve`). So does the subject a label's rollout buckets by (`?subject=`,
else the token, as the REST reads pick it), which a request may override in its own `_meta`
(`io.skill-registry/subject`): a host serving many users reads each one's side of a rollout.

A host may say which tools and MCP servers it has (`io.skill-registry/tools`,
`io.skill-registry/mcp_servers`: lists of names) in a request's `_meta`, or once in its
capabilities, in the Skills extension's entry (2026-07-28 sends them with every request). Then
`skills/list` and `resources/list` leave out the skills whose `tool:` or `mcp:` requirements it
does not meet, naming them and why in the listing's `_meta` (`io.skill-registry/left_out`), and
the `resolve` tool reads them as `context.tools` / `context.mcp_servers` unless its arguments say.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
from collections.abc import MutableMapping, Sequence
from contextvars import ContextVar
from typing import Any, Literal

import anyio
import mcp_types as types
from asgiref.sync import sync_to_async
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from rest_framework.exceptions import ValidationError

from registry.api.serializers import ENTITLEMENTS_MAX_NAMES, ResolveInputSerializer, entitlement_names
from registry.errors import NotFound
from registry.mcp.catalog import (
    DIRECTORY_TYPE,
    LEFT_OUT_META,
    MCP_SERVERS_META,
    META_PREFIX,
    SKILL_MD,
    TOOLS_META,
    SkillCatalog,
    SkillEntry,
    file_uri,
    mcp_skill_catalog,
    mcp_skill_directory,
    mcp_skill_file,
    parse_uri,
    served_meta,
)
from registry.readmodel.requirements import Entitlements, LeftOut
from registry.readmodel.rollouts import SUBJECT_MAX_CHARS, subject_of
from registry.selectors.resolve import resolve
from registry.skillformat.media_types import file_content_type, path_content_type

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
SUBJECT_META = f"{META_PREFIX}subject"

# How long a host may treat a listing, entry or file as current. Short, because a label can move
# at any time; a stale file is caught anyway by its digest, which the host re-checks.
TTL_MS = 60_000
# Each token reads what its owner's role lets it read: never shareable between users.
CACHE_SCOPE: Literal["private"] = "private"
PAGE_SIZE = 200

_LABEL: ContextVar[str | None] = ContextVar("mcp_label", default=None)
_SUBJECT: ContextVar[str | None] = ContextVar("mcp_subject", default=None)
_SKILLSET: ContextVar[str | None] = ContextVar("mcp_skillset", default=None)


def _invalid(message: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message)


def _at_label() -> str:
    """Where a request reads, for its errors: with `?label=`, only the skills carrying the label
    are served."""
    label, skillset = _LABEL.get(), _SKILLSET.get()
    where = f" in skillset '{skillset}'" if skillset else ""
    return where + (f" at label '{label}'" if label else "")


def _cacheable(result: dict[str, Any]) -> dict[str, Any]:
    return {"resultType": "complete", **result, "ttlMs": TTL_MS, "cacheScope": CACHE_SCOPE}


# --- pages: a cursor is the last name of the page before, so pages hold as skills come and go ---


def _cursor_after(cursor: str | None) -> str | None:
    if cursor is None:
        return None
    try:
        after = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))["after"]
    except (ValueError, KeyError, TypeError, UnicodeEncodeError, binascii.Error):
        raise _invalid("The cursor is not one this server gave; start again without it.") from None
    if not isinstance(after, str):
        raise _invalid("The cursor is not one this server gave; start again without it.")
    return after


def _page(entries: Sequence[SkillEntry], cursor: str | None) -> tuple[Sequence[SkillEntry], str | None]:
    """The page after `cursor` of `entries` (sorted by name) and the cursor of the next, if any."""
    after = _cursor_after(cursor)
    if after is not None:
        entries = entries[bisect.bisect_right(entries, after, key=lambda entry: entry.name) :]
    page = entries[:PAGE_SIZE]
    if len(entries) <= PAGE_SIZE:
        return page, None
    return page, base64.urlsafe_b64encode(json.dumps({"after": page[-1].name}).encode()).decode("ascii")


def _subject(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The request's own subject (`_meta`), else the endpoint's. Held to `?subject=`'s rule (1 to
    SUBJECT_MAX_CHARS characters): a longer one is refused, not cut, since two subjects that
    share their first characters would otherwise read one side of a rollout."""
    given = (ctx.meta or {}).get(SUBJECT_META)
    if given is None:
        return _SUBJECT.get()
    rule = f"a string of 1 to {SUBJECT_MAX_CHARS} characters, as ?subject= is"
    if not isinstance(given, str) or not given:
        raise MCPError(INVALID_PARAMS, f"_meta[{SUBJECT_META!r}] must be {rule}.", data={"key": SUBJECT_META})
    if len(given) > SUBJECT_MAX_CHARS:
        raise MCPError(
            INVALID_PARAMS,
            f"_meta[{SUBJECT_META!r}] is {len(given)} characters; it must be {rule}.",
            data={"key": SUBJECT_META, "max_length": SUBJECT_MAX_CHARS},
        )
    return subject_of(given=given)


_ENTITLEMENT_META = {TOOLS_META: "tools", MCP_SERVERS_META: "mcp_servers"}


def _entitlement_lists(ctx: ServerRequestContext[Any, Any]) -> dict[str, list[str]]:
    """The host's tools and servers as resolve's context names them (`tools`, `mcp_servers`):
    each from the request's `_meta`, else from the Skills extension's entry of its capabilities;
    absent when neither says. Not a list of names: INVALID_PARAMS naming the key."""
    meta: dict[str, Any] = dict(ctx.meta or {})
    capabilities = ctx.session.client_capabilities
    settings = (capabilities.extensions or {}).get(SKILLS_EXTENSION) if capabilities else None
    settings = settings if isinstance(settings, dict) else {}
    found = {}
    for key, field in _ENTITLEMENT_META.items():
        if key in meta:
            where, given = f"_meta[{key!r}]", meta[key]
        elif key in settings:
            where, given = f"the Skills extension's capability {key!r}", settings[key]
        else:
            continue
        try:
            found[field] = entitlement_names(given, field=where)
        except ValidationError as exc:
            message = str(exc.detail[0]) if isinstance(exc.detail, list) else str(exc.detail)
            raise MCPError(INVALID_PARAMS, message, data={"key": key, "max_names": ENTITLEMENTS_MAX_NAMES}) from None
    return found


def _entitlements(ctx: ServerRequestContext[Any, Any]) -> Entitlements:
    return Entitlements.of(**_entitlement_lists(ctx))


def _listed(
    catalog: SkillCatalog, entries: Sequence[SkillEntry], ctx: ServerRequestContext[Any, Any]
) -> tuple[Sequence[SkillEntry], dict[str, LeftOut]]:
    """`entries` without the skills the host's tools and servers leave out, and those, by name."""
    left_out = catalog.left_out(_entitlements(ctx))
    if not left_out:
        return entries, {}
    return [entry for entry in entries if entry.name not in left_out], left_out


def _left_out_meta(left_out: dict[str, LeftOut], after: str | None, last: str | None) -> dict[str, Any]:
    """The listing page's `_meta`: the left-out skills whose names fall in its range of names
    (after the cursor's, up to its last; to the end on the last page), so a host paging through
    meets each once."""
    names = [name for name in sorted(left_out) if (after is None or name > after) and (last is None or name <= last)]
    return {"_meta": {LEFT_OUT_META: [left_out[name].as_dict() for name in names]}} if names else {}


async def _catalog(ctx: ServerRequestContext[Any, Any]) -> SkillCatalog:
    try:
        return await sync_to_async(mcp_skill_catalog)(
            label=_LABEL.get(), subject=_subject(ctx), skillset=_SKILLSET.get()
        )
    except NotFound as error:  # the view checked the set; its label was deleted since
        raise _invalid(error.detail) from None


async def _entry(ctx: ServerRequestContext[Any, Any], uri: str) -> tuple[SkillCatalog, SkillEntry, str] | None:
    """The catalogue, the served skill a `skill://` URI names and the path in it, or None."""
    parsed = parse_uri(uri)
    if parsed is None:
        return None
    catalog = await _catalog(ctx)
    entry = catalog.by_name.get(parsed[0])
    return None if entry is None else (catalog, entry, parsed[1])


# --- the Skills Extension ------------------------------------------------------------------


class GetSkillParams(types.RequestParams):
    uri: str


class ReadDirectoryParams(types.PaginatedRequestParams):
    uri: str


async def skills_list(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams) -> dict[str, Any]:
    catalog = await _catalog(ctx)
    listed, left_out = _listed(catalog, catalog.listed, ctx)
    page, next_cursor = _page(listed, params.cursor)
    result: dict[str, Any] = {"skills": [catalog.as_wire(entry) for entry in page]}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    last = page[-1].name if next_cursor is not None and page else None
    result.update(_left_out_meta(left_out, _cursor_after(params.cursor), last))
    return _cacheable(result)


async def skills_get(ctx: ServerRequestContext[Any, Any], params: GetSkillParams) -> dict[str, Any]:
    found = await _entry(ctx, params.uri)
    if found is None or found[2] != SKILL_MD:
        raise _invalid(f"No skill is served at {params.uri}{_at_label()}")
    catalog, entry, _ = found
    if (why := entry.over_limits) is not None:
        raise _invalid(f"{params.uri} is not served as a skill: {why}. Its files can still be read one by one.")
    return _cacheable({"skill": catalog.as_wire(entry)})


async def directory_read(ctx: ServerRequestContext[Any, Any], params: ReadDirectoryParams) -> dict[str, Any]:
    found = await _entry(ctx, params.uri)
    children = None if found is None else mcp_skill_directory(entry=found[1], path=found[2])
    if found is None or children is None:
        raise _invalid(f"{params.uri} is not a directory resource this server serves{_at_label()}")
    name = found[1].name
    return _cacheable(
        {
            "resources": [
                {
                    "uri": file_uri(name, child.path),
                    "name": child.path.rsplit("/", 1)[-1],
                    "mimeType": DIRECTORY_TYPE if child.is_directory else path_content_type(child.path),
                }
                for child in children
            ],
        }
    )


class SkillsExtension(Extension):
    """`io.modelcontextprotocol/skills` (stable text, against MCP 2026-07-28; served on 2025-11-25 too)."""

    identifier = SKILLS_EXTENSION

    def settings(self) -> dict[str, Any]:
        return {"directoryRead": True}

    def methods(self) -> tuple[MethodBinding, ...]:
        return (
            MethodBinding("skills/list", types.PaginatedRequestParams, skills_list),
            MethodBinding("skills/get", GetSkillParams, skills_get),
            MethodBinding("resources/directory/read", ReadDirectoryParams, directory_read),
        )


# --- resources: every file of every served skill, read byte-exact ------------------------------


async def resources_list(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    """One resource per skill, its SKILL.md; the other files are listed in its `skills/list` entry."""
    catalog = await _catalog(ctx)
    cursor = params.cursor if params else None
    entries, left_out = _listed(catalog, catalog.entries, ctx)
    page, next_cursor = _page(entries, cursor)
    last = page[-1].name if next_cursor is not None and page else None
    return types.ListResourcesResult(
        resources=[
            types.Resource(
                uri=entry.uri,
                name=entry.name,
                description=entry.description,
                mime_type="text/markdown",
                size=entry.files[0].size,
            )
            for entry in page
        ],
        next_cursor=next_cursor,
        ttl_ms=TTL_MS,
        cache_scope=CACHE_SCOPE,
        **_left_out_meta(left_out, _cursor_after(cursor), last),
    )


async def resource_read(
    ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    found = await _entry(ctx, params.uri)
    content = None
    if found is not None and found[2]:
        content = await sync_to_async(mcp_skill_file)(entry=found[1], path=found[2])
    if found is None or content is None:
        raise _invalid(f"No resource is served at {params.uri}{_at_label()}")
    catalog, entry, path = found
    mime_type = "text/markdown" if path == SKILL_MD else file_content_type(path, content).split(";")[0]
    # Which version of the skill these bytes are, as skills/list says of its entry.
    meta = served_meta(version=entry.version, canary=catalog.is_canary(entry))
    contents: types.TextResourceContents | types.BlobResourceContents
    try:
        # Text only when the text's UTF-8 is these exact bytes (valid UTF-8 always is); NUL marks binary.
        if b"\x00" in content:
            raise UnicodeDecodeError("utf-8", content, 0, 1, "NUL byte")
        contents = types.TextResourceContents(
            uri=params.uri, mime_type=mime_type, text=content.decode("utf-8"), _meta=meta
        )
    except UnicodeDecodeError:
        contents = types.BlobResourceContents(
            uri=params.uri, mime_type=mime_type, blob=base64.b64encode(content).decode("ascii"), _meta=meta
        )
    return types.ReadResourceResult(contents=[contents], ttl_ms=TTL_MS, cache_scope=CACHE_SCOPE)


# --- the resolve tool: POST /resolve, for a host deciding what applies to a turn ---------------

RESOLVE_TOOL = types.Tool(
    name="resolve",
    title="Resolve skills for a turn",
    description=(
        "Which skills, rule instructions and prompt block apply to one agent turn: the same answer as "
        "the registry's POST /api/v1/resolve (force-include rules included). Give the user's message as "
        "`query`; `label` defaults to the endpoint's ?label=."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The turn's text (the user's message)."},
            "label": {"type": ["string", "null"], "description": "Read skills at this label."},
            "skillset": {
                "type": ["string", "null"],
                "description": "Only this skillset's members, at its version's numbers; defaults to the endpoint's "
                "?skillset=.",
            },
            "forced_skill": {"type": ["string", "null"], "description": "A skill to include whatever matches."},
            "context": {
                "type": "object",
                "description": "toolName, error, taskDescription, command: what else the turn is about; tools "
                "and mcp_servers: what the host has (default: the request's _meta or the client's capabilities).",
                "properties": {
                    "tools": {"type": "array", "items": {"type": "string"}},
                    "mcp_servers": {"type": "array", "items": {"type": "string"}},
                },
                "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
            },
            "max_skills": {"type": ["integer", "null"], "minimum": 0},
            "max_chars": {"type": ["integer", "null"], "minimum": 0},
            "explain": {"type": "boolean", "description": "Also list the skills left out, with why."},
        },
        "additionalProperties": False,
    },
    annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
)


async def tools_list(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[RESOLVE_TOOL], ttl_ms=TTL_MS, cache_scope=CACHE_SCOPE)


def _resolve_answer(arguments: dict[str, Any]) -> types.CallToolResult:
    """The resolve API's input serializer and selector, so both give the same answer and refusals."""
    body = ResolveInputSerializer(data=arguments)
    if not body.is_valid():
        errors = json.dumps(body.errors, ensure_ascii=False)
        return types.CallToolResult(content=[types.TextContent(text=f"Invalid arguments: {errors}")], is_error=True)
    try:
        result = resolve(**body.validated_data)
    except NotFound as error:
        return types.CallToolResult(content=[types.TextContent(text=error.detail)], is_error=True)
    return types.CallToolResult(
        content=[types.TextContent(text=result.body.decode())], structured_content=result.as_dict()
    )


async def tool_call(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name != RESOLVE_TOOL.name:
        raise _invalid(f"Unknown tool {params.name!r}; this server has one tool, 'resolve'.")
    arguments = dict(params.arguments or {})
    unknown = sorted(set(arguments) - set(RESOLVE_TOOL.input_schema["properties"]))
    if unknown:
        text = f"Unknown arguments: {', '.join(unknown)}."
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
    if "label" not in arguments:
        arguments["label"] = _LABEL.get()
    if "skillset" not in arguments:
        arguments["skillset"] = _SKILLSET.get()
    # The side of a rollout is the subject's whose catalogue this is, unless the call names one.
    subject = _subject(ctx)
    context = arguments.get("context")
    if subject is not None and (context is None or isinstance(context, dict) and "subject" not in context):
        arguments["context"] = {**(context or {}), "subject": subject}
    entitlements = _entitlement_lists(ctx)
    if entitlements and (isinstance(arguments.get("context"), dict) or "context" not in arguments):
        arguments["context"] = {**entitlements, **(arguments.get("context") or {})}
    return await sync_to_async(_resolve_answer)(arguments)


class RegistryServer(Server[Any]):
    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        """The `initialize` answer (2025-11-25). Hosts written before the 2026-07-28 revision look
        for the extensions under `experimental`; those following the extension (its reference
        server, MCP Inspector 2.12) under `capabilities.extensions`. Both are announced: the first
        here, the second by `ExtensionsInHandshake`, since the SDK's 2025-11-25 schema drops the
        field."""
        experimental = {**self.extensions, **(experimental_capabilities or {})}
        return super().create_initialization_options(notification_options, experimental, extensions)


class ExtensionsInHandshake(ServerMiddleware[Any]):
    """Puts `capabilities.extensions` back into the `initialize` answer after the SDK shaped it to
    the 2025-11-25 schema, which has no such field but leaves capabilities open ("any server can
    define its own, additional capabilities")."""

    def __init__(self, server: Server[Any]) -> None:
        self.server = server

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, dict) and self.server.extensions:
            capabilities = result.get("capabilities")
            if isinstance(capabilities, dict):
                result["capabilities"] = {**capabilities, "extensions": dict(self.server.extensions)}
        return result


def _build_server() -> Server[Any]:
    server = RegistryServer(
        "skill-registry",
        version="1",
        title="Skill Registry",
        instructions=(
            "Agent skills from this registry: list them with skills/list (Skills Extension), read their "
            "files with resources/read, and call the `resolve` tool with the user's message to learn which "
            "skills and rule instructions apply to a turn."
        ),
        on_list_resources=resources_list,
        on_read_resource=resource_read,
        on_list_tools=tools_list,
        on_call_tool=tool_call,
    )
    # What `MCPServer(extensions=[...])` does with an extension's contributions; the low-level
    # server is used because skill files are read by URI, not through registered resources.
    extension = SkillsExtension()
    for binding in extension.methods():
        server.add_request_handler(binding.method, binding.params_type, binding.handler)
    server.extensions[extension.identifier] = extension.settings()
    server.middleware.append(ExtensionsInHandshake(server))
    return server


SERVER = _build_server()


class AsgiExchange:
    """One HTTP request handed to the transport as ASGI, and its response collected."""

    def __init__(self, body: bytes) -> None:
        self._body: bytes | None = body
        self._done = anyio.Event()
        self.status = 500
        self.headers: list[tuple[bytes, bytes]] = []
        self.content = bytearray()

    async def receive(self) -> dict[str, Any]:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self._done.wait()  # the client stays connected until the answer is complete
        return {"type": "http.disconnect"}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            self.content += message.get("body", b"")
            if not message.get("more_body", False):
                self._done.set()


async def mcp_serve(
    *, scope: dict[str, Any], body: bytes, label: str | None, subject: str | None, skillset: str | None = None
) -> AsgiExchange:
    """Serve one Streamable HTTP request (JSON responses, no session) at `label`, for `subject`
    unless the request names its own; with `skillset`, only that set's members."""
    _LABEL.set(label)
    _SUBJECT.set(subject)
    _SKILLSET.set(skillset)
    exchange = AsgiExchange(body)
    manager = StreamableHTTPSessionManager(app=SERVER, json_response=True, stateless=True)
    async with manager.run():
        await manager.handle_request(scope, exchange.receive, exchange.send)
    return exchange
