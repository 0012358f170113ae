"""SKILL.md: parse leniently, judge strictly, write (SPEC §2, §10).

Pure Python, no Django. `parse_skill_md` accepts what real skills contain and reports spec
deviations as warnings; only these are errors (raised as `InvalidSkill`):
- the file is over the size limit, not UTF-8, or binary (contains NUL);
- there is no frontmatter (no opening `---`, or no closing `---`/`...` line), or the
  frontmatter is not `key: value` fields even when read line by line;
- `name` or `description` is missing, empty, or not text;
- the YAML is hostile: aliases that expand past MAX_YAML_NODES values, or nesting deeper
  than MAX_YAML_DEPTH levels (an alias bomb would otherwise cost exponential memory).

How the text is read:
- A UTF-8 BOM is skipped. CRLF and lone CR line endings are read as LF; `raw` keeps the exact
  decoded text (BOM and CRLF included, so `raw.encode()` gives back the input bytes) and
  `body` has its line endings normalised to "\\n".
- The frontmatter is loaded by PyYAML's SafeConstructor (plain data only; never the full
  Loader). Tags it does not know (`!!python/object/apply:...`, `!custom`) are not constructed:
  the value becomes null and a warning names the tag. Keys become text, YAML dates ISO
  strings, and every value is JSON-serialisable.
- When the whole frontmatter is not valid YAML, it is read key by key: each top-level
  `key:` line with the indented lines under it is loaded as YAML on its own; a block that
  still fails because of tabs is retried with the tabs as spaces, and one that fails anyway
  is read as the plain text after the first ": " (the common unquoted colon in a description).
  Each recovery is a warning naming the line, marked `fallback`: what is stored may not be what
  the author meant, so a publish refuses it unless the author accepts the reading (imports and
  syncs of existing folders take it as read).
- Duplicate keys: the last one wins (PyYAML's behaviour, also in the key-by-key reading), with
  a warning naming the key and both lines.
"""

from __future__ import annotations

import base64
import bisect
import datetime as dt
import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

try:
    # libyaml's event parser, with PyYAML's Python composer on top (the composer is where the
    # nesting bound lives): the pure-Python scanner is the slow part on large input.
    from yaml._yaml import CParser as _CParser
except ImportError:  # PyYAML built without libyaml
    _CParser = None  # type: ignore[assignment, misc]

from registry.errors import InvalidSkill
from registry.skillformat.bundle import DEFAULT_LIMITS, Limits
from registry.skillformat.requires import REQUIRES_KEY, Requirement, parse_requires, requires_line

NAME_MAX_CHARS = 64
DESCRIPTION_MAX_CHARS = 1024
COMPATIBILITY_MAX_CHARS = 500
# The one list of triggers. A skill's activation records how the runtime came to load it (SPEC
# §6.10; the runtime's `Trigger`); a SKILL.md's `triggers` may name the moments among them that
# the runtime acts on by itself (KNOWN_TRIGGERS).
ActivationTrigger = Literal[
    "forced",
    "read_skill",
    "task_match",
    "explicit_command",
    "tool_call_error",
    "turn_start",
    "force_include",
    "auto_invoke",
    "required",  # loaded because a skill loaded in the turn requires it (`metadata.requires`)
]
ACTIVATION_TRIGGERS: tuple[str, ...] = get_args(ActivationTrigger)
KNOWN_TRIGGERS = ("task_match", "explicit_command", "tool_call_error", "turn_start")

# Bounds for hostile YAML. Real frontmatter is a few levels deep and a few hundred values.
MAX_YAML_DEPTH = 50
MAX_YAML_NODES = 100_000
MAX_ISSUES = 100
# Field-by-field reading loads each field on its own; beyond this many fields (real skills
# have a dozen) values are taken as plain text, so hostile input cannot multiply the work.
MAX_FALLBACK_FIELDS = 1000

# Fields of the Agent Skills spec and of the seeds, plus the spellings people use for them
# (hyphen/underscore) and fields of Claude Code's skill format: no "unknown field" warning.
KNOWN_FIELDS = frozenset(
    {
        "name",
        "description",
        "license",
        "compatibility",
        "metadata",
        "allowed-tools",
        "allowed_tools",
        "version",
        "author",
        "created",
        "last_updated",
        "last-updated",
        "dependencies",
        "triggers",
        "tags",
        "tools",
        "tools_required",
        "tools-required",
        "enabled",
        "disable-model-invocation",
        "disable_model_invocation",
        "user-invocable",
        "user_invocable",
        "model",
        "argument-hint",
        "context",
        "agent",
        "hooks",
    }
)

# The Agent Skills spec's top-level fields: the only ones its reference validator accepts.
SPEC_FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
STRICT_CLIENTS = "strict clients such as the reference validator `agentskills validate` (skills-ref)"
# Fields outside the spec that change what this registry or Claude Code does with a skill, so
# moving them under `metadata` has a cost: the warning says which.
FIELDS_WITH_EFFECT = {
    "triggers": "This registry fires the skill by its triggers",
    "tags": "This registry matches requests to the skill by its tags",
    "enabled": "This registry reads it to switch the skill off",
    "disable-model-invocation": "Claude Code and this registry read it",
    "disable_model_invocation": "This registry reads it",
    "user-invocable": "Claude Code and this registry read it",
    "user_invocable": "This registry reads it",
    "model": "Claude Code reads it",
    "argument-hint": "Claude Code reads it",
    "context": "Claude Code reads it",
    "agent": "Claude Code reads it",
    "hooks": "Claude Code reads it",
}

# Registry fields read from `metadata` as well (text values), with the form shown in warnings.
METADATA_HOMES = {
    "tags": "pdf, forms",
    "triggers": "task_match explicit_command",
    "version": '"1.2.0"',
    "author": "Ada Lovelace",
}

_NAME_CHARS = re.compile(r"^[a-z0-9-]+$")
_NUMERIC_SAFE = 2**53  # larger integers lose precision in JSON consumers (and in SQLite's JSON)


@dataclass(frozen=True)
class Issue:
    level: str  # "error" | "warning"
    line: int  # 1-based line in the SKILL.md text; the key's line for a field, 1 for the whole file
    message: str
    field: str | None = None
    # A value read by the fallback (the frontmatter is not valid YAML): what is stored may not
    # be what the author meant, so a publish needs their explicit acceptance (imports do not).
    fallback: bool = False


@dataclass(frozen=True)
class ParsedSkill:
    raw: str  # exact decoded text, BOM and line endings included
    frontmatter: dict[str, Any]  # JSON-serialisable
    body: str  # Markdown after the closing fence, line endings normalised to "\n"
    body_line: int  # 1-based line where the body starts
    name: str
    description: str
    warnings: tuple[Issue, ...] = ()
    tags: list[str] = field(default_factory=list)
    triggers: list[str] = field(default_factory=list)
    # Union of `tools`, `tools_required` and `allowed-tools`, in that order, without repeats.
    tools: list[str] = field(default_factory=list)
    allowed_tools: list[str] = field(default_factory=list)
    version: str | None = None
    author: str | None = None
    enabled: bool = True
    metadata: dict[str, str] = field(default_factory=dict)
    license: str | None = None
    compatibility: str | None = None
    dependencies: list[str] = field(default_factory=list)
    disable_model_invocation: bool = False
    user_invocable: bool = True
    created: str | None = None
    last_updated: str | None = None
    # `metadata.requires`: the skills, tools and MCP servers it relies on (requires.py).
    requires: tuple[Requirement, ...] = ()
    # Frontmatter key -> 1-based line of that key in the SKILL.md text.
    field_lines: dict[str, int] = field(default_factory=dict)


# --- public API --------------------------------------------------------------------------


def parse_skill_md(
    data: bytes | str, *, folder_name: str | None = None, limits: Limits = DEFAULT_LIMITS
) -> ParsedSkill:
    """Parse a SKILL.md; raise InvalidSkill for errors, return warnings on the result.

    The exception's `line` is the first error's line, `fields` maps fields to messages, and
    `extra["issues"]` lists every error and warning found (as dicts).
    """
    parsed, issues = _analyse(data, folder_name=folder_name, limits=limits)
    errors = [issue for issue in issues if issue.level == "error"]
    if errors or parsed is None:
        raise InvalidSkill(
            " ".join(f"Line {issue.line}: {issue.message}" for issue in errors),
            line=errors[0].line if errors else 1,
            fields={issue.field: issue.message for issue in errors if issue.field},
            extra={"issues": [asdict(issue) for issue in issues]},
        )
    return parsed


def validate_skill_md(
    data: bytes | str, *, folder_name: str | None = None, limits: Limits = DEFAULT_LIMITS
) -> list[Issue]:
    """Every error and warning, sorted by line; never raises for content."""
    return _analyse(data, folder_name=folder_name, limits=limits)[1]


def read_skill_md(
    data: bytes | str, *, folder_name: str | None = None, limits: Limits = DEFAULT_LIMITS
) -> tuple[ParsedSkill | None, list[Issue]]:
    """The reading (None when the text has errors) and every error and warning, sorted by
    line; never raises for content. For checks that add rules of their own (publishing)."""
    return _analyse(data, folder_name=folder_name, limits=limits)


def render_skill_md(frontmatter: dict[str, Any], body: str) -> str:
    """A new SKILL.md from JSON-like frontmatter and a Markdown body.

    `parse_skill_md(render_skill_md(fm, body))` gives back `fm` and `body` for any frontmatter
    with string keys and JSON values (integers within ±2**53) and a body without "\\r" or NUL. Keys
    keep their order; multi-line strings are written as `|` blocks so they stay readable.
    """
    text = yaml.dump(
        frontmatter,
        Dumper=_FrontmatterDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1_000_000,
    )
    return f"---\n{text}---\n{body}"


# --- analysis ----------------------------------------------------------------------------


class _Report:
    def __init__(self) -> None:
        self.issues: list[Issue] = []

    def error(self, line: int, message: str, field: str | None = None) -> None:
        self.issues.append(Issue("error", line, message, field))

    def warn(self, line: int, message: str, field: str | None = None, *, fallback: bool = False) -> None:
        self.issues.append(Issue("warning", line, message, field, fallback))

    @property
    def has_errors(self) -> bool:
        return any(issue.level == "error" for issue in self.issues)

    def sorted(self) -> list[Issue]:
        """Issues by line; past MAX_ISSUES warnings, the rest are summed up in one (they are
        stored with every version and shown in editors, and hostile input can make thousands)."""
        issues = sorted(self.issues, key=lambda issue: issue.line)
        warnings = [issue for issue in issues if issue.level == "warning"]
        if len(warnings) <= MAX_ISSUES:
            return issues
        kept = set(map(id, warnings[:MAX_ISSUES]))
        shown = [issue for issue in issues if issue.level == "error" or id(issue) in kept]
        last_line = warnings[MAX_ISSUES].line
        # A fallback reading among the hidden ones must still stop a publish.
        fallback = any(issue.fallback for issue in warnings[MAX_ISSUES:])
        summary = f"{len(warnings) - MAX_ISSUES:,} more warnings are not shown."
        return shown + [Issue("warning", last_line, summary, fallback=fallback)]


class _Rejected(Exception):
    """The frontmatter is hostile (alias bomb, absurd nesting): an error, no recovery."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.message = message
        self.index = index  # in the YAML text being loaded
        self.line = 1  # in the file, set by _yaml_load which knows where that text starts


def _analyse(data: bytes | str, *, folder_name: str | None, limits: Limits) -> tuple[ParsedSkill | None, list[Issue]]:
    report = _Report()
    raw = _decode(data, limits=limits, report=report)
    if raw is None:
        return None, report.sorted()
    text = raw[1:] if raw.startswith("\ufeff") else raw
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    fences = _find_fences(lines, report)
    if fences is None:
        return None, report.sorted()
    opening, closing = fences  # 0-based line indexes
    try:
        frontmatter, key_lines, raw_scalars, flow_lines = _load_frontmatter(
            "\n".join(lines[opening + 1 : closing]), first_line=opening + 2, report=report
        )
    except _Rejected as exc:
        report.error(exc.line, exc.message)
        return None, report.sorted()
    if frontmatter is None:
        return None, report.sorted()
    fields = _Fields(frontmatter, key_lines, raw_scalars, fence_line=opening + 1, report=report)
    values = _field_values(fields, folder_name=folder_name, flow_lines=flow_lines)
    values["requires"] = _requires(values["metadata"], lines=lines, fields=fields, report=report)
    if raw.startswith("\ufeff"):
        report.warn(
            1,
            f"The file starts with a UTF-8 byte order mark (BOM): {STRICT_CLIENTS} expect `---` as the first bytes "
            "and reject it. To load everywhere, save it as UTF-8 without a BOM.",
        )
    issues = report.sorted()
    if values["name"] is None or values["description"] is None or report.has_errors:
        return None, issues
    parsed = ParsedSkill(
        raw=raw,
        frontmatter=frontmatter,
        body="\n".join(lines[closing + 1 :]),
        body_line=closing + 2,
        warnings=tuple(issues),
        field_lines=dict(key_lines),
        **values,
    )
    return parsed, issues


def _field_values(fields: _Fields, *, folder_name: str | None, flow_lines: dict[str | None, int]) -> dict[str, Any]:
    """ParsedSkill's fields read from the frontmatter. Every field is read (and reports its
    deviations) even when name or description is wrong, so an editor shows all problems at once."""
    name = fields.name(folder_name=folder_name)
    description = fields.description()
    metadata = fields.metadata()
    tools = fields.word_list("tools")
    tools_required = fields.word_list("tools_required", "tools-required")
    allowed_tools = fields.word_list("allowed-tools", "allowed_tools")
    # The registry's own fields have a spec-clean home under `metadata` (text values); a skill may
    # use either spelling, and lists from both are read.
    values = {
        "name": name,
        "description": description,
        "metadata": metadata,
        "tags": tag_list([*fields.text_list("tags"), *_comma_list(metadata.get("tags", ""))]),
        "triggers": fields.triggers(also=metadata.get("triggers", "")),
        "tools": _unique(tools + tools_required + allowed_tools + _split_tools(metadata.get("tools", ""))),
        "allowed_tools": allowed_tools,
        "version": fields.text("version", quiet=True) or metadata.get("version") or None,
        "author": fields.author() or metadata.get("author") or None,
        "enabled": fields.flag("enabled", default=True),
        "license": fields.text("license"),
        "compatibility": fields.compatibility(),
        "dependencies": fields.text_list("dependencies"),
        "disable_model_invocation": fields.flag("disable-model-invocation", "disable_model_invocation", default=False),
        "user_invocable": fields.flag("user-invocable", "user_invocable", default=True),
        "created": fields.text("created", quiet=True),
        "last_updated": fields.text("last_updated", "last-updated", quiet=True),
    }
    fields.portability(flow_lines)
    return values


def _requires(
    metadata: dict[str, str], *, lines: list[str], fields: _Fields, report: _Report
) -> tuple[Requirement, ...]:
    """`metadata.requires`, each malformed entry an error on its own line."""
    if REQUIRES_KEY not in metadata:
        return ()
    line = requires_line(lines, fields.line("metadata"))
    requirements, problems = parse_requires(metadata[REQUIRES_KEY], line=line, lines=lines)
    for problem in problems:
        if problem.level == "error":
            report.error(problem.line, problem.message, "metadata.requires")
        else:
            report.warn(problem.line, problem.message, "metadata.requires")
    return tuple(requirements)


def _decode(data: bytes | str, *, limits: Limits, report: _Report) -> str | None:
    if isinstance(data, str):
        try:
            encoded = data.encode("utf-8")
        except UnicodeEncodeError as exc:
            line = data.count("\n", 0, exc.start) + 1
            report.error(line, "SKILL.md contains characters that are not valid Unicode text (lone surrogates).")
            return None
    else:
        encoded = bytes(data)
    if len(encoded) > limits.skill_md_bytes:
        report.error(1, f"SKILL.md is {len(encoded):,} bytes; the limit is {limits.skill_md_bytes:,} bytes.")
        return None
    if isinstance(data, str):
        text = data
    else:
        try:
            text = encoded.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = encoded.count(b"\n", 0, exc.start) + 1
            report.error(
                line,
                f"SKILL.md is not UTF-8 text (byte 0x{encoded[exc.start]:02x} on line {line} is "
                "invalid); save it as UTF-8.",
            )
            return None
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        report.error(line, f"SKILL.md contains a NUL character (line {line}); it looks like a binary file, not text.")
        return None
    return text


def _find_fences(lines: list[str], report: _Report) -> tuple[int, int] | None:
    opening = 0
    while opening < len(lines) and not lines[opening].strip():
        opening += 1
    if opening == len(lines) or lines[opening].rstrip() != "---":
        report.error(
            1,
            "SKILL.md must start with YAML frontmatter: a `---` line, the fields (`name: ...`, "
            "`description: ...`), then another `---` line.",
        )
        return None
    if opening:
        report.warn(
            1,
            f"SKILL.md starts with {opening} blank line(s) before the opening `---`; "
            "other tools may not find the frontmatter.",
        )
    for closing in range(opening + 1, len(lines)):
        if lines[closing].rstrip() in ("---", "..."):
            return opening, closing
    report.error(
        opening + 1,
        f"The frontmatter opened by `---` on line {opening + 1} is never closed: "
        "add a `---` line after the last field.",
    )
    return None


class _LineMap:
    """File line numbers for character offsets in a piece of the SKILL.md text.

    Offsets (YAML marks) are used rather than the marks' own line numbers because YAML also
    counts NEL and U+2028 as line breaks, which the rest of the file does not.
    """

    def __init__(self, text: str, first_line: int) -> None:
        self.first_line = first_line
        self.newlines = [match.start() for match in re.finditer("\n", text)]

    def line(self, index: int) -> int:
        return self.first_line + bisect.bisect_left(self.newlines, index)


# --- YAML --------------------------------------------------------------------------------


_PARSER_BASES: tuple[type, ...] = (
    (_CParser,) if _CParser is not None else (yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser)
)


class _FrontmatterLoader(Composer, *_PARSER_BASES, SafeConstructor, Resolver):  # type: ignore[misc]
    """A safe loader (SafeConstructor: plain data only) that bounds nesting and alias
    expansion and never constructs unknown tags."""

    def __init__(self, stream: str) -> None:
        if _CParser is not None:
            _CParser.__init__(self, stream)
        else:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._depth = 0
        self.root: Node | None = None
        self.refused_tags: list[tuple[str, int]] = []  # (tag, index in the text)
        self.flow_indexes: list[int] = []  # where each `[...]` / `{...}` collection starts
        self.duplicates: list[tuple[str, int, int]] = []  # (key, first index, repeated index)

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        # The composer recurses once per level; refuse before Python's recursion limit does.
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _Rejected(
                    f"The frontmatter is nested more than {MAX_YAML_DEPTH} levels deep.",
                    self.peek_event().start_mark.index,
                )
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if isinstance(node, MappingNode | SequenceNode) and node.flow_style:
            self.flow_indexes.append(node.start_mark.index)
        return node

    def construct_document(self, node: Node) -> Any:
        _check_expansion(node, self.duplicates)
        self.root = node
        return super().construct_document(node)

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[str, Any]:  # type: ignore[override]
        # Keys become text here rather than afterwards: YAML's `1` and `true` are the same
        # Python dict key and would overwrite each other, and a list key would be unhashable.
        self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = _json_key(self.construct_object(key_node, deep=True))
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_refused(self, node: Node) -> None:
        self.refused_tags.append((node.tag, node.start_mark.index))
        return None


_FrontmatterLoader.add_constructor(None, _FrontmatterLoader.construct_refused)
# PyYAML resolves a lone "=" to the YAML 1.1 "value" type, which SafeLoader cannot build.
_FrontmatterLoader.add_constructor(  # type: ignore[type-var]
    "tag:yaml.org,2002:value", _FrontmatterLoader.construct_yaml_str
)


def _check_expansion(root: Node, duplicates: list[tuple[str, int, int]]) -> None:
    """Refuse documents whose aliases expand past MAX_YAML_NODES values or MAX_YAML_DEPTH levels.

    The composed graph shares aliased nodes, so this walk visits each node once and multiplies
    sizes up, finding a billion-laughs document in microseconds instead of expanding it.
    """
    measured: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded size, height)
    in_progress: set[int] = set()
    aliased = False  # a node reached twice: the document uses aliases

    def visit(node: Node, depth: int) -> tuple[int, int]:
        nonlocal aliased
        key = id(node)
        if key in measured:
            aliased = True
            size, height = measured[key]
        else:
            if key in in_progress:
                raise _Rejected("The frontmatter refers to itself through a YAML alias.", node.start_mark.index)
            if depth > MAX_YAML_DEPTH:
                raise _Rejected(
                    f"The frontmatter is nested more than {MAX_YAML_DEPTH} levels deep.", node.start_mark.index
                )
            in_progress.add(key)
            size, height = 1, 1
            if isinstance(node, SequenceNode):
                children: list[Node] = list(node.value)
            elif isinstance(node, MappingNode):
                children = [part for pair in node.value for part in pair]
                _note_duplicates(node, duplicates)
            else:
                children = []
            for child in children:
                child_size, child_height = visit(child, depth + 1)
                size += child_size
                height = max(height, child_height + 1)
                if size > MAX_YAML_NODES:
                    how = "expands to" if aliased else "has"
                    hint = " through YAML aliases (an alias bomb?)" if aliased else ""
                    raise _Rejected(
                        f"The frontmatter {how} more than {MAX_YAML_NODES:,} values{hint}.", node.start_mark.index
                    )
            in_progress.discard(key)
            measured[key] = (size, height)
        if depth + height > MAX_YAML_DEPTH + 1:
            raise _Rejected(f"The frontmatter is nested more than {MAX_YAML_DEPTH} levels deep.", node.start_mark.index)
        return size, height

    visit(root, 1)


def _note_duplicates(node: MappingNode, duplicates: list[tuple[str, int, int]]) -> None:
    first_seen: dict[str, int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue
        if key_node.value in first_seen:
            duplicates.append((key_node.value, first_seen[key_node.value], key_node.start_mark.index))
        else:
            first_seen[key_node.value] = key_node.start_mark.index


@dataclass
class _Loaded:
    data: Any
    root: Node | None
    lines: _LineMap
    issues: list[Issue]
    flow_lines: list[int]  # file lines where a flow-style collection starts


def _yaml_load(text: str, *, first_line: int) -> _Loaded:
    """Load one YAML document with the frontmatter loader; issues carry file line numbers.

    Raises _Rejected for hostile documents and yaml.YAMLError (or another library exception)
    for documents that are not valid YAML.
    """
    loader = _FrontmatterLoader(text)
    try:
        data = loader.get_single_data()
    except _Rejected as exc:
        exc.line = _LineMap(text, first_line).line(exc.index)
        raise
    finally:
        loader.dispose()
    lines = _LineMap(text, first_line)
    issues = []
    for tag, index in loader.refused_tags:
        shown = tag.replace("tag:yaml.org,2002:", "!!")
        issues.append(
            Issue(
                "warning",
                lines.line(index),
                f"The YAML tag `{shown}` is not allowed in a frontmatter; that value was ignored.",
            )
        )
    for key, first, again in loader.duplicates:
        issues.append(
            Issue(
                "warning",
                lines.line(again),
                f"`{key}` appears more than once (first on line {lines.line(first)}); the last value is used.",
                key,
            )
        )
    flow_lines = sorted({lines.line(index) for index in loader.flow_indexes})
    return _Loaded(data=data, root=loader.root, lines=lines, issues=issues, flow_lines=flow_lines)


_UNCLOSED = " is never closed: end it with "  # in _yaml_problem's problem of an unclosed bracket


def _yaml_problem(exc: BaseException, text: str, first_line: int) -> tuple[str, int]:
    """A readable description of a YAML failure, and the file line it happened on."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if isinstance(exc, yaml.reader.ReaderError):
        return (
            f"the character U+{exc.character:04X} is not allowed in YAML",
            _LineMap(text, first_line).line(exc.position),
        )
    problem = getattr(exc, "problem", None) or str(exc).split("\n")[0] or type(exc).__name__
    context, opened = getattr(exc, "context", None) or "", getattr(exc, "context_mark", None)
    if opened is not None and context.startswith("while parsing a flow "):
        # An unclosed `[` or `{`: the parser only notices lines later, where the next field
        # starts; the author needs the line the bracket is on.
        bracket = text[opened.index : opened.index + 1] or ("[" if "sequence" in context else "{")
        closer = "]" if bracket == "[" else "}"
        line = _LineMap(text, first_line).line(opened.index)
        return f"the `{bracket}` on line {line}{_UNCLOSED}`{closer}`", line
    if mark is None:
        return problem, first_line
    if text[mark.index : mark.index + 1] == "\t":
        problem = "YAML does not allow a tab here; indent with spaces"
    return problem, _LineMap(text, first_line).line(mark.index)


# (fields, each key's line, the source text of plain scalars, the first flow-style line under
# each key; the key None when the whole frontmatter is one flow mapping)
_Frontmatter = tuple[dict[str, Any] | None, dict[str, int], dict[str, str], dict[str | None, int]]


def _load_frontmatter(fm_text: str, *, first_line: int, report: _Report) -> _Frontmatter:
    """The frontmatter as a JSON-ready dict, each key's line, the source text of plain scalar
    values (so `version: 1.10` can be read as "1.10", not the float 1.1), and where flow style
    (`[a, b]`, `{k: v}`) is used, which strict clients refuse."""
    try:
        loaded = _yaml_load(fm_text, first_line=first_line)
    except _Rejected:
        raise
    except Exception as exc:  # noqa: BLE001 - hostile text can make PyYAML raise more than YAMLError
        # (ValueError for a 5,000-digit integer, for one); any failure means "read it by hand".
        problem, line = _yaml_problem(exc, fm_text, first_line)
        return _fallback(fm_text, first_line=first_line, report=report, reason=(problem, line))
    for issue in loaded.issues:
        report.issues.append(issue)
    if loaded.data is None:
        return {}, {}, {}, {}
    if not isinstance(loaded.data, dict):
        kind = "a list" if isinstance(loaded.data, list) else "plain text"
        return _fallback(
            fm_text, first_line=first_line, report=report, reason=(f"it is {kind}, not `key: value` fields", first_line)
        )
    key_lines: dict[str, int] = {}
    raw_scalars: dict[str, str] = {}
    if isinstance(loaded.root, MappingNode):
        for key_node, value_node in loaded.root.value:
            if not isinstance(key_node, ScalarNode):
                continue
            key_lines.setdefault(key_node.value, loaded.lines.line(key_node.start_mark.index))
            # Plain scalars have style None (PyYAML) or "" (libyaml).
            if isinstance(value_node, ScalarNode) and not value_node.style:
                raw_scalars[key_node.value] = value_node.value
    return _to_json_mapping(loaded.data), key_lines, raw_scalars, _flow_owners(loaded, key_lines)


def _flow_owners(loaded: _Loaded, key_lines: dict[str, int]) -> dict[str | None, int]:
    """The first flow-style line under each top-level key (block-style keys each start a line,
    so a flow collection belongs to the last key at or above it)."""
    if isinstance(loaded.root, MappingNode) and loaded.root.flow_style:
        return {None: loaded.lines.line(loaded.root.start_mark.index)}
    starts = sorted((line, key) for key, line in key_lines.items())
    lines = [line for line, _ in starts]
    owners: dict[str | None, int] = {}
    for flow_line in loaded.flow_lines:
        at = bisect.bisect_right(lines, flow_line) - 1
        if at >= 0:
            owners.setdefault(starts[at][1], flow_line)
    return owners


# A top-level `key:` line: the key, then a colon followed by whitespace or the end of the line.
_KEY_LINE = re.compile(r"""^(?P<key>"[^"]*"|'[^']*'|[^\s#:'"\-{}\[\]][^:]*?)[ \t]*:(?=[ \t]|$)(?P<rest>.*)$""")
_BLOCK_SCALAR = re.compile(r"^[|>][+-]?[0-9]?$")


def _fallback(fm_text: str, *, first_line: int, report: _Report, reason: tuple[str, int]) -> _Frontmatter:
    """Read the frontmatter key by key when it is not valid YAML as a whole."""
    blocks: list[tuple[str, int, list[str]]] = []  # (key, index of its line, its lines)
    flow_depth = 0  # open { or [ in the current block: a JSON-like value may span lines
    for index, row in enumerate(fm_text.split("\n")):
        match = _KEY_LINE.match(row) if flow_depth <= 0 else None
        if match:
            key = match.group("key").strip()
            if key[:1] in "\"'":
                key = key[1:-1]
            blocks.append((key, index, [row]))
            flow_depth = _bracket_balance(match.group("rest"))
        elif blocks and (flow_depth > 0 or not row.strip() or row[:1] in " \t-}]"):
            # Indented lines, list items and closing brackets belong to the field above.
            blocks[-1][2].append(row)
            flow_depth += _bracket_balance(row)
        elif row.strip() and not row.lstrip().startswith("#"):
            report.warn(
                first_line + index,
                f"This frontmatter line is not a `key: value` field and was ignored: {row[:60]!r}.",
                fallback=True,
            )
    problem, problem_line = reason
    if not blocks:
        report.error(problem_line, f"The frontmatter is not readable as `key: value` fields ({problem}).")
        return None, {}, {}, {}

    frontmatter: dict[str, Any] = {}
    key_lines: dict[str, int] = {}
    raw_scalars: dict[str, str] = {}
    flow_lines: dict[str | None, int] = {}
    specific_warnings = False
    if len(blocks) > MAX_FALLBACK_FIELDS:
        report.warn(
            first_line + blocks[MAX_FALLBACK_FIELDS][1],
            f"The frontmatter has {len(blocks):,} fields; past the first {MAX_FALLBACK_FIELDS:,}, values were "
            "read as plain text.",
            fallback=True,
        )
    for number, (key, index, block) in enumerate(blocks):
        line = first_line + index
        warning_line = line
        if number < MAX_FALLBACK_FIELDS:
            value, warning, warning_line = _read_block(key, block, first_line=line, report=report)
        else:
            value, warning = _plain_value(block), None
        if warning:
            specific_warnings = True
            report.warn(warning_line, warning, key, fallback=True)
        if key in frontmatter:
            report.warn(
                line, f"`{key}` appears more than once (first on line {key_lines[key]}); the last value is used.", key
            )
        else:
            key_lines[key] = line
        frontmatter[key] = value
        opening = _KEY_LINE.match(block[0])
        if opening and opening.group("rest").lstrip()[:1] in ("[", "{"):
            flow_lines.setdefault(key, line)
        if len(block) == 1 and isinstance(value, bool | int | float):
            raw_scalars[key] = re.split(r"\s+#", _plain_value(block) or "")[0]
    if not specific_warnings:
        report.warn(
            problem_line,
            f"The frontmatter is not valid YAML ({problem}); it was read field by field instead.",
            fallback=True,
        )
    return _to_json_mapping(frontmatter), key_lines, raw_scalars, flow_lines


def _bracket_balance(text: str) -> int:
    """Net open brackets in a line, ignoring quoted text (good enough for JSON-like values)."""
    balance, quote = 0, ""
    for char in text:
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "{[":
            balance += 1
        elif char in "}]":
            balance -= 1
        elif char == "#" and balance == 0:
            break
    return balance


def _read_block(key: str, block: list[str], *, first_line: int, report: _Report) -> tuple[Any, str | None, int]:
    """One top-level field: as YAML if it is valid on its own, else as plain text.

    Returns the value and, when it needed recovering, a warning saying how and the line it is
    about (the key's, or the line of a bracket that is never closed).
    """
    text = "\n".join(block)
    try:
        loaded = _yaml_load(text, first_line=first_line)
    except _Rejected:
        raise
    except Exception as exc:  # noqa: BLE001 - see _load_frontmatter
        problem, line = _yaml_problem(exc, text, first_line)
    else:
        if isinstance(loaded.data, dict) and len(loaded.data) == 1:
            report.issues.extend(loaded.issues)
            return next(iter(loaded.data.values())), None, first_line
        problem, line = "it is not a single `key: value` field", first_line

    if "\t" in text:
        # YAML forbids tabs for indentation, and editors insert them; read them as spaces.
        untabbed = "\n".join(
            re.sub(r"^[ \t]+", lambda m: m.group(0).replace("\t", "  "), re.sub(r"^([^:]*:)\t+", r"\1 ", row))
            for row in block
        )
        try:
            loaded = _yaml_load(untabbed, first_line=first_line)
        except _Rejected:
            raise
        except Exception:  # noqa: BLE001 - see _load_frontmatter
            pass
        else:
            if isinstance(loaded.data, dict) and len(loaded.data) == 1:
                report.issues.extend(loaded.issues)
                tab_line = next(first_line + n for n, row in enumerate(block) if "\t" in row)
                return (
                    next(iter(loaded.data.values())),
                    f"`{key}` uses a tab on line {tab_line}; YAML allows only spaces for indentation and "
                    "after the colon. It was read as if the tab were spaces.",
                    first_line,
                )

    value = _plain_value(block)
    hint = " Put the value in quotes to avoid this." if "mapping values" in problem else ""
    # An unclosed bracket takes the lines after it (other fields included) into this value.
    last = first_line + max(n for n, row in enumerate(block) if row.strip())
    lines = f"lines {first_line}-{last}" if last > first_line else f"line {first_line}"
    if _UNCLOSED in problem:  # said on the bracket's own line, which it names
        return value, f"`{key}` is not valid YAML: {problem}; its value ({lines}) was read as the plain text.", line
    return (
        value,
        f"`{key}` is not valid YAML ({problem}, line {line}); its value ({lines}) was read as the plain text "
        f"after the first ': '.{hint}",
        first_line,
    )


def _plain_value(block: list[str]) -> str | None:
    """The text after the first ': ' (and any indented lines under it), without YAML rules."""
    match = _KEY_LINE.match(block[0])
    rest = match.group("rest").strip() if match else ""
    continuation = [row.strip() for row in block[1:] if row.strip()]
    if _BLOCK_SCALAR.match(rest):
        value = ("\n" if rest.startswith("|") else " ").join(continuation)
    else:
        value = " ".join(([rest] if rest else []) + continuation)
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            decoded = json.loads(value)
        except ValueError:
            decoded = None
        value = decoded if isinstance(decoded, str) else value[1:-1]
    elif len(value) >= 2 and value[0] == value[-1] == "'":
        value = value[1:-1].replace("''", "'")
    return value or None


# --- JSON-ready values -------------------------------------------------------------------


def _to_json_mapping(mapping: dict[Any, Any]) -> dict[str, Any]:
    return {_json_key(key): _to_json(value) for key, value in mapping.items()}


def _to_json(value: Any) -> Any:
    # Depth is bounded by MAX_YAML_DEPTH, checked before construction.
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value if abs(value) <= _NUMERIC_SAFE else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return _to_json_mapping(value)
    if isinstance(value, set | frozenset):
        return [_to_json(item) for item in sorted(value, key=str)]
    if isinstance(value, list | tuple):
        return [_to_json(item) for item in value]
    return str(value)


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool):
        return json.dumps(key)
    if isinstance(key, dt.date | dt.datetime):
        return key.isoformat()
    return str(key)


# --- fields ------------------------------------------------------------------------------


class _Fields:
    """Typed, normalised reads of the frontmatter, each reporting its own deviations."""

    def __init__(
        self,
        frontmatter: dict[str, Any],
        key_lines: dict[str, int],
        raw_scalars: dict[str, str],
        *,
        fence_line: int,
        report: _Report,
    ) -> None:
        self.frontmatter = frontmatter
        self.key_lines = key_lines
        self.raw_scalars = raw_scalars
        self.fence_line = fence_line
        self.report = report

    def line(self, key: str) -> int:
        return self.key_lines.get(key, self.fence_line)

    def _get(self, *keys: str) -> tuple[str, Any]:
        for key in keys:
            if key in self.frontmatter:
                return key, self.frontmatter[key]
        return keys[0], None

    def _scalar_text(self, key: str, value: Any) -> str | None:
        """A scalar as text; a plain YAML scalar keeps its source spelling (1.10 stays "1.10")."""
        if isinstance(value, str):
            return value
        if isinstance(value, bool | int | float):
            return self.raw_scalars.get(key) or json.dumps(value)
        return None

    def _required_text(self, key: str) -> str | None:
        value = self.frontmatter.get(key)
        if value is None:
            if key in self.frontmatter:
                self.report.error(self.line(key), f"`{key}` is empty; it is required.", key)
            else:
                example = "my-skill" if key == "name" else "What the skill does and when to use it."
                self.report.error(
                    self.line(key), f"`{key}` is missing; add a line like `{key}: {example}` to the frontmatter.", key
                )
            return None
        text = self._scalar_text(key, value)
        if text is None:
            kind = "a list" if isinstance(value, list) else "a mapping"
            self.report.error(self.line(key), f"`{key}` must be text, not {kind}.", key)
            return None
        if not isinstance(value, str):
            self.report.warn(self.line(key), f"`{key}` is not text in YAML; it was read as '{text}'. Quote it.", key)
        if not text.strip():
            self.report.error(self.line(key), f"`{key}` is empty; it is required.", key)
            return None
        return text.strip()

    def name(self, *, folder_name: str | None) -> str | None:
        name = self._required_text("name")
        if name is None:
            return None
        line = self.line("name")
        if len(name) > NAME_MAX_CHARS:
            self.report.warn(
                line, f"`name` is {len(name)} characters; the spec allows at most {NAME_MAX_CHARS}.", "name"
            )
        if not _NAME_CHARS.match(name):
            odd = sorted({char for char in name if not re.match(r"[a-z0-9-]", char)})
            shown = ", ".join(repr(char) for char in odd[:10])
            self.report.warn(
                line, f"`name` '{name}' should use only lowercase letters, digits and hyphens (found {shown}).", "name"
            )
        if name.startswith("-") or name.endswith("-"):
            self.report.warn(line, f"`name` '{name}' should not start or end with a hyphen.", "name")
        if "--" in name:
            self.report.warn(line, f"`name` '{name}' should not contain two hyphens in a row.", "name")
        if folder_name is not None and name != folder_name:
            self.report.warn(line, f"`name` '{name}' differs from its folder name '{folder_name}'.", "name")
        return name

    def description(self) -> str | None:
        description = self._required_text("description")
        if description is not None and len(description) > DESCRIPTION_MAX_CHARS:
            self.report.warn(
                self.line("description"),
                f"`description` is {len(description):,} characters; the spec allows at most {DESCRIPTION_MAX_CHARS:,}.",
                "description",
            )
        return description

    def text(self, *keys: str, quiet: bool = False) -> str | None:
        """An optional text field; numbers and booleans are read as their text (silently if
        `quiet`, for fields like `version: 1.0` where a number is the natural spelling)."""
        key, value = self._get(*keys)
        if value is None:
            return None
        text = self._scalar_text(key, value)
        if text is None:
            self.report.warn(self.line(key), f"`{key}` should be text; it was ignored.", key)
        elif not isinstance(value, str) and not quiet:
            self.report.warn(self.line(key), f"`{key}` is not text in YAML; it was read as '{text}'.", key)
        return text

    def compatibility(self) -> str | None:
        text = self.text("compatibility")
        if text is not None and len(text) > COMPATIBILITY_MAX_CHARS:
            self.report.warn(
                self.line("compatibility"),
                f"`compatibility` is {len(text):,} characters; the spec allows at most {COMPATIBILITY_MAX_CHARS}.",
                "compatibility",
            )
        return text

    def author(self) -> str | None:
        key, value = self._get("author")
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            return value["name"]
        if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
            return ", ".join(value)
        return self.text("author", quiet=True)

    def flag(self, *keys: str, default: bool) -> bool:
        key, value = self._get(*keys)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        words = {
            "true": True,
            "yes": True,
            "on": True,
            "1": True,
            "false": False,
            "no": False,
            "off": False,
            "0": False,
        }
        text = str(value).strip().lower()
        if text in words:
            self.report.warn(
                self.line(key),
                f"`{key}` should be true or false; '{value}' was read as {str(words[text]).lower()}.",
                key,
            )
            return words[text]
        self.report.warn(
            self.line(key),
            f"`{key}` should be true or false; '{value}' was ignored (using {str(default).lower()}).",
            key,
        )
        return default

    def _list(self, keys: tuple[str, ...], split: Callable[[str], list[str]]) -> list[str]:
        key, value = self._get(*keys)
        if value is None:
            return []
        if isinstance(value, str):
            return _unique(split(value))
        if isinstance(value, bool | int | float):
            return _unique(split(self._scalar_text(key, value) or ""))
        if isinstance(value, dict):
            self.report.warn(self.line(key), f"`{key}` should be a list; its keys were used.", key)
            return _unique([item.strip() for item in value if item.strip()])
        items: list[str] = []
        dropped = 0
        for item in value:
            if isinstance(item, str | bool | int | float) and str(item).strip():
                items.append(item.strip() if isinstance(item, str) else json.dumps(item))
            elif item is not None:
                dropped += 1
        if dropped:
            self.report.warn(
                self.line(key),
                f"`{key}` should be a list of text; {dropped} item(s) that are lists or mappings were ignored.",
                key,
            )
        return _unique(items)

    def text_list(self, *keys: str) -> list[str]:
        """Tags, dependencies: a list, or one string with commas between items."""
        return self._list(keys, _comma_list)

    def word_list(self, *keys: str) -> list[str]:
        """Tools: a list, or one string with spaces or commas between items (`Bash(git add:*)` is one)."""
        return self._list(keys, _split_tools)

    def triggers(self, *, also: str) -> list[str]:
        """`triggers`, and `metadata.triggers` (`also`, its text), each warned about on its own line."""
        top = self._list(("triggers",), _trigger_words)
        nested = _trigger_words(also)
        for key, triggers in (("triggers", top), ("metadata", nested)):
            unknown = [trigger for trigger in triggers if trigger not in KNOWN_TRIGGERS]
            if unknown:
                where = "`triggers`" if key == "triggers" else "`metadata.triggers`"
                self.report.warn(
                    self.line(key),
                    f"{where} has value(s) this registry does not fire: "
                    f"{', '.join(unknown)} (known: {', '.join(KNOWN_TRIGGERS)}).",
                    key,
                )
        return _unique(top + nested)

    def metadata(self) -> dict[str, str]:
        value = self.frontmatter.get("metadata")
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.report.warn(
                self.line("metadata"),
                "`metadata` should be a map of text keys to text values; it was ignored.",
                "metadata",
            )
            return {}
        not_text = [key for key, item in value.items() if not isinstance(item, str)]
        if not_text:
            shown = ", ".join(f"`{key}`" for key in not_text[:5])
            self.report.warn(
                self.line("metadata"),
                f"`metadata` values should be text; the value(s) of {shown} were kept as JSON text.",
                "metadata",
            )
        return {
            key: item if isinstance(item, str) else json.dumps(item, ensure_ascii=False) for key, item in value.items()
        }

    def portability(self, flow_lines: dict[str | None, int]) -> None:
        """One warning per top-level field that strict clients refuse: a field outside the Agent
        Skills spec, or a spec field written in flow style. The skill is accepted either way."""
        if None in flow_lines:
            self.report.warn(
                flow_lines[None],
                f"The frontmatter is one YAML flow-style mapping (`{{...}}`): {STRICT_CLIENTS} reject it. "
                "To load everywhere, write one `key: value` per line.",
            )
        for key in self.frontmatter:
            if key not in SPEC_FIELDS:
                self.report.warn(self.line(key), _outside_spec(key), key)
            elif key in flow_lines and None not in flow_lines:
                how = (
                    "write it as space-separated text (`allowed-tools: Read Grep`)"
                    if key == "allowed-tools"
                    else "write one `key: value` or `- item` per line"
                )
                self.report.warn(
                    flow_lines[key],
                    f"`{key}` uses YAML flow style (`[...]` or `{{...}}`): {STRICT_CLIENTS} reject it. "
                    f"To load everywhere, {how}.",
                    key,
                )


def _outside_spec(key: str) -> str:
    """Why a top-level field outside the Agent Skills spec may not load elsewhere, and what to
    do. Never the words "YAML" or "tab": these notes are not parse problems."""
    rejected = f"{STRICT_CLIENTS} reject a skill with it"
    if key not in KNOWN_FIELDS:
        return (
            f"`{key}` is not a field this registry uses, nor an Agent Skills field; it is kept as is, but "
            f"{rejected}. To load everywhere, move it under `metadata` as text."
        )
    spec = f"`{key}` is not an Agent Skills field: {rejected}."
    if key in ("tools", "tools_required", "tools-required"):
        return (
            f"{spec} To load everywhere, write them as `metadata:` `tools: a b` (or in `allowed-tools`), read here too."
        )
    if key == "allowed_tools":
        return f"{spec} Spell it `allowed-tools` (with a hyphen) to load everywhere."
    if key in METADATA_HOMES:
        return (
            f"{spec} {FIELDS_WITH_EFFECT.get(key, 'This registry reads it')}; to load everywhere, write it under "
            f"`metadata:` as text (`{key}: {METADATA_HOMES[key]}`), read here too."
        )
    if key in FIELDS_WITH_EFFECT:
        return (
            f"{spec} {FIELDS_WITH_EFFECT[key]}; for a copy that loads everywhere, move it under `metadata` "
            "as text, where it is not read."
        )
    return f"{spec} To load everywhere, move it under `metadata` as text."


_TAG_QUOTES = "\"'"


def tag_list(items: Iterable[object]) -> list[str]:
    """Tags as people mean them, whichever way they were written: `[csv, data]`, `csv, data`,
    `["csv", "data"]` (a list under `metadata`, kept as JSON text) all give `csv` and `data`.
    Also applied to stored tags when shown, for versions published before tags were read so."""
    tags: list[str] = []
    for item in items:
        text = str(item).strip()
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1]
        for part in text.split(","):
            tag = part.strip().lstrip("[").rstrip("]").strip()
            if len(tag) >= 2 and tag[0] == tag[-1] and tag[0] in _TAG_QUOTES:
                tag = tag[1:-1].strip()
            if tag:
                tags.append(tag)
    return _unique(tags)


def _comma_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _trigger_words(text: str) -> list[str]:
    return re.split(r"[\s,]+", text.strip()) if text.strip() else []


def _split_tools(text: str) -> list[str]:
    """Split on spaces and commas outside parentheses: `Read, Bash(git add:*)` is two tools."""
    tools: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(depth - 1, 0)
        if depth == 0 and (char.isspace() or char == ","):
            if current:
                tools.append("".join(current))
                current = []
            continue
        current.append(char)
    if current:
        tools.append("".join(current))
    return tools


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


# --- writing -----------------------------------------------------------------------------


class _FrontmatterDumper(yaml.SafeDumper):
    pass


def _represent_text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # Characters YAML reads as line breaks or drops (NEL, LS, PS, BOM) only survive escaped,
    # which only the double-quoted style does. Other multi-line text reads best as a | block;
    # PyYAML falls back to quoting by itself when a block cannot hold the text exactly.
    if any(char in value for char in "\x85\u2028\u2029\ufeff\r"):
        style = '"'
    elif "\n" in value:
        style = "|"
    else:
        style = None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_FrontmatterDumper.add_representer(str, _represent_text)
