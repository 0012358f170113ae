"""resolve(): what an agent needs for one turn, in one cached call (SPEC §4, seeds 002/003/004).

- the effective, enabled skills (precedence applied) at a label: with `label`, skills that carry
  it are read at that version and the others at their latest (so a skill nobody has labelled yet
  is still offered); without a label, `production` where it exists, else latest — the same rule as
  `GET /skills/{name}`;
- force-include rules applied: every enabled rule whose pattern matches the query (RE2,
  case-insensitive) fires, in priority order; its skills are listed first and kept even over
  budget, and its instruction is returned for the end of the system prompt;
- the lazy skills prompt block (seed 003's `## Skills (mandatory)` + `<available_skills>`);
- one strong ETag over all of it.

Caching has two layers, both keyed by the registry generation, which every write bumps in its
own transaction: a per-process snapshot of the skills, their match index and the compiled rules
(rebuilt once per generation), and the finished result in the Django cache keyed by generation
and inputs. A publish, label move, enable/disable or rule change is therefore visible to the
next call, in every process, without deleting any key (selectors/generation.py says how a
process learns the current generation).
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from xml.sax.saxutils import escape

from django.conf import settings
from django.core.cache import cache

from registry.errors import ApplicationError
from registry.matching import Match, MatchIndex, find_skills, match
from registry.models import ForceIncludeRule
from registry.patterns import compile_pattern, pattern_search
from registry.selectors.generation import change_listener, current_generation
from registry.selectors.memo import GenerationMemo
from registry.selectors.skills import (
    EffectiveSkill,
    effective_skills,
    skill_catalog_cache_clear,
    skill_md_raw_cache_clear,
)

# seed 003, verbatim: the lazy-loading instruction that precedes the skill list.
SKILLS_INSTRUCTION = """## Skills (mandatory)

Before replying: scan available skills below.
- If exactly one skill clearly applies: read its SKILL.md with `read_skill`, then follow it.
- If multiple could apply: choose the most specific one, then read/follow it.
- If none clearly apply: do not read any SKILL.md.

Constraints: never read more than one skill up front; only read after selecting.

Available skills:"""

MATCH_QUERY_MAX_CHARS = 2000  # matching cost grows with query words; the start says what it is about
CACHE_TIMEOUT = 600
CONTEXT_TEXT_FIELDS = ("taskDescription", "task_description", "command", "toolName", "tool_name", "error")


# --- plain data --------------------------------------------------------------------------


@dataclass(frozen=True)
class RuleEntry:
    id: int
    name: str
    pattern: str
    skills: tuple[str, ...]
    tools: tuple[str, ...]
    instruction: str
    auto_invoke: dict[str, Any] | None
    priority: int


@dataclass(frozen=True)
class FiredRule:
    id: int
    name: str
    why: str
    skills: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    instruction: str | None = None
    auto_invoke: dict[str, Any] | None = None  # `{{query}}` is substituted at use time (seed 004)
    priority: int = 0


@dataclass(frozen=True)
class ResolvedSkill:
    """An effective skill as offered for one turn: why it is there and how it is listed."""

    skill: EffectiveSkill
    score: float = 0.0
    reasons: tuple[str, ...] = ()
    forced_by: tuple[str, ...] = ()  # "forced_skill" and/or the names of fired rules
    described: bool = True  # false when the budget dropped its description from the prompt block


@dataclass(frozen=True)
class PromptBlock:
    text: str
    included: tuple[str, ...]  # skill names in the block, in order
    described: frozenset[str]  # names whose description is in the block
    total: int  # eligible skills before budgets

    @property
    def truncated(self) -> bool:
        return len(self.included) < self.total or len(self.described) < len(self.included)


@dataclass(frozen=True)
class ResolveResult:
    skills: tuple[ResolvedSkill, ...]
    prompt_block: str
    instructions: tuple[str, ...]
    fired_rules: tuple[FiredRule, ...]
    etag: str
    label: str | None = None
    forced_skill: str | None = None
    total_skills: int = 0
    warnings: tuple[str, ...] = ()
    generation: int = 0
    complete: bool = True  # false when the time budget left rules unchecked: never cached

    def as_dict(self) -> dict[str, Any]:
        body = _content(self)
        body.update(etag=self.etag, generation=self.generation)
        return body


def _content(result: ResolveResult) -> dict[str, Any]:
    """Everything the ETag covers (the representation minus the ETag and generation)."""
    included = len(result.skills)
    described = sum(1 for s in result.skills if s.described)
    return {
        "skills": [
            {
                "name": s.skill.name,
                "version": s.skill.version,
                "fingerprint": s.skill.fingerprint,
                "description": s.skill.description,
                "tags": list(s.skill.tags),
                "triggers": list(s.skill.triggers),
                "tools": list(s.skill.tools),
                "source": s.skill.source,
                "score": s.score,
                "reasons": list(s.reasons),
                "forced_by": list(s.forced_by),
                "described": s.described,
            }
            for s in result.skills
        ],
        "prompt_block": result.prompt_block,
        "instructions": list(result.instructions),
        "fired_rules": [
            {
                "id": r.id,
                "name": r.name,
                "why": r.why,
                "skills": list(r.skills),
                "tools": list(r.tools),
                "instruction": r.instruction,
                "auto_invoke": r.auto_invoke,
                "priority": r.priority,
            }
            for r in result.fired_rules
        ],
        "label": result.label,
        "forced_skill": result.forced_skill,
        "truncated": {
            "included": included,
            "total": result.total_skills,
            "described": described,
            "truncated": included < result.total_skills or described < included,
        },
        "warnings": list(result.warnings),
    }


def strong_etag(payload: Any) -> str:
    encoded = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return f'"{hashlib.sha256(encoded).hexdigest()}"'


# --- the prompt block --------------------------------------------------------------------


def _skill_xml(name: str, description: str | None) -> str:
    lines = ["<skill>", f"  <name>{escape(name)}</name>"]
    if description is not None:
        lines.append(f"  <description>{escape(' '.join(description.split()))}</description>")
    lines.append("</skill>")
    return "\n".join(lines)


def _truncation_note(included: int, total: int, described: int) -> str:
    note = f"Skills truncated: included {included} of {total}"
    if described < included:
        note += f" (descriptions omitted for {included - described}; `read_skill` shows any of them)"
    return note + "."


def render_prompt_block(
    skills: Sequence[Any], *, max_skills: int | None = None, max_chars: int | None = None, forced: Iterable[str] = ()
) -> PromptBlock:
    """seed 003's lazy block: the `## Skills (mandatory)` instruction and `<available_skills>`.

    `skills` must be ordered most relevant first (anything with `name` and `description`).
    Budgets: at most `max_skills` entries and `max_chars` characters. Over budget, the most
    relevant are kept; descriptions are dropped from the least relevant before any skill is
    dropped, and the block says `Skills truncated: included X of Y`. Skills named in `forced`
    (fired rules, a forced skill) are always listed, even when that breaks the budget.
    """
    max_skills = settings.MAX_SKILLS_IN_PROMPT if max_skills is None else max_skills
    max_chars = settings.MAX_PROMPT_CHARS if max_chars is None else max_chars
    forced_names = set(forced)
    total = len(skills)
    if not total:
        return PromptBlock(text="", included=(), described=frozenset(), total=0)
    # Forced skills first (they are never dropped), then the rest by relevance, up to max_skills.
    must = [s for s in skills if s.name in forced_names]
    rest = [s for s in skills if s.name not in forced_names][: max(max_skills - len(must), 0)]
    chosen = must + rest

    full = [_skill_xml(s.name, s.description) for s in chosen]
    short = [_skill_xml(s.name, None) for s in chosen]
    frame = len(SKILLS_INSTRUCTION) + len("\n<available_skills>\n") + len("\n</available_skills>")

    def size(count: int, described: int) -> int:
        entries = sum(len(x) for x in full[:described]) + sum(len(x) for x in short[described:count])
        note = 0 if (count == total and described == count) else 1 + len(_truncation_note(count, total, described))
        return frame + entries + max(count - 1, 0) + note  # newlines between entries

    count = len(chosen)
    described = count
    if size(count, described) > max_chars:
        # Drop whole skills (never forced ones) only while even the names alone do not fit ...
        while count > len(must) and size(count, 0) > max_chars:
            count -= 1
        # ... then give descriptions back, most relevant first, while they fit.
        described = 0
        while described < count and size(count, described + 1) <= max_chars:
            described += 1
    entries = full[:described] + short[described:count]
    parts = [SKILLS_INSTRUCTION, "<available_skills>", *entries, "</available_skills>"]
    if count < total or described < count:
        parts.append(_truncation_note(count, total, described))
    return PromptBlock(
        text="\n".join(parts),
        included=tuple(s.name for s in chosen[:count]),
        described=frozenset(s.name for s in chosen[:described]),
        total=total,
    )


def prompt_block(
    skills: Sequence[Any], max_skills: int | None = None, max_chars: int | None = None, forced: Iterable[str] = ()
) -> str:
    return render_prompt_block(skills, max_skills=max_skills, max_chars=max_chars, forced=forced).text


# --- the snapshot: skills, index and rules of one generation -------------------------------


@dataclass
class Snapshot:
    generation: int
    label: str | None
    skills: tuple[EffectiveSkill, ...]
    by_name: dict[str, EffectiveSkill]
    index: MatchIndex
    rules: tuple[tuple[RuleEntry, Any], ...]  # (rule, compiled pattern)
    rule_warnings: tuple[str, ...] = ()


_SNAPSHOTS: GenerationMemo[Snapshot] = GenerationMemo(maxsize=8)


def _build_snapshot(generation: int, label: str | None) -> Snapshot:
    skills = effective_skills(label=label)
    rules = []
    warnings = []
    for rule in ForceIncludeRule.objects.filter(enabled=True).order_by("-priority", "name"):
        try:
            compiled = compile_pattern(rule.pattern)
        except ApplicationError as exc:
            # Stored before a limit was lowered, or written around the service: skip, say so.
            warnings.append(f"Rule '{rule.name}' is skipped: {exc.detail}")
            continue
        rules.append(
            (
                RuleEntry(
                    id=rule.pk,
                    name=rule.name,
                    pattern=rule.pattern,
                    skills=tuple(rule.skills or ()),
                    tools=tuple(rule.tools or ()),
                    instruction=rule.instruction or "",
                    auto_invoke=rule.auto_invoke or None,
                    priority=rule.priority,
                ),
                compiled,
            )
        )
    return Snapshot(
        generation=generation,
        label=label,
        skills=tuple(skills),
        by_name={s.name: s for s in skills},
        index=MatchIndex([s for s in skills if s.model_invocable]),
        rules=tuple(rules),
        rule_warnings=tuple(warnings),
    )


def registry_snapshot(*, label: str | None = None, generation: int | None = None) -> Snapshot:
    """The skills, match index and compiled rules as of `generation` (built once per process)."""
    generation = current_generation() if generation is None else generation
    found = _SNAPSHOTS.get((generation, label))
    if found is not None:
        return found
    snapshot = _build_snapshot(generation, label)  # two threads may build it at once: same result
    _SNAPSHOTS.put((generation, label), snapshot)
    return snapshot


def snapshots_clear() -> None:
    _SNAPSHOTS.clear()


# --- rules -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RulesFired:
    fired: list[FiredRule]
    unchecked: tuple[str, ...] = ()  # rules the time budget left out, highest priority first


def rules_fire(query: str, rules: Sequence[tuple[RuleEntry, Any]], *, deadline: float | None = None) -> RulesFired:
    """The rules whose pattern matches `query`, in priority order, each with why it fired.

    Past `deadline` (time.monotonic()) the rest are not matched: a rule saved before the pattern
    probe existed, or a machine too busy to keep up, cannot make one resolve run on and on."""
    fired: list[FiredRule] = []
    for index, (rule, compiled) in enumerate(rules):
        if deadline is not None and time.monotonic() > deadline:
            return RulesFired(fired, tuple(entry.name for entry, _ in rules[index:]))
        found = pattern_search(compiled, query)
        if found is None:
            continue
        shown = found.text if len(found.text) <= 80 else found.text[:77] + "..."
        # Written as a person reads a regex (/…/), not as a Python repr, which doubles backslashes.
        why = (
            f'pattern /{rule.pattern}/ matched "{shown}" at characters {found.start}-{found.end} of the query'
            if found.text
            else f"pattern /{rule.pattern}/ matched (empty match at character {found.start})"
        )
        fired.append(
            FiredRule(
                id=rule.id,
                name=rule.name,
                why=why,
                skills=rule.skills,
                tools=rule.tools,
                instruction=rule.instruction or None,
                auto_invoke=rule.auto_invoke,
                priority=rule.priority,
            )
        )
    return RulesFired(fired)


# --- resolve -----------------------------------------------------------------------------


def _match_text(query: str, context: Mapping[str, Any] | None) -> str:
    extra = [str(context[k]) for k in CONTEXT_TEXT_FIELDS if context and isinstance(context.get(k), str | int | float)]
    return " ".join([query, *extra])[:MATCH_QUERY_MAX_CHARS]


# Part of every cache key. Generations only grow in a live database, but a test database rolled
# back between tests (or a restored backup) repeats them: `registry_caches_reset()` moves to a
# fresh namespace so results computed for another state can never be served.
_NAMESPACE = {"token": "0"}


def registry_caches_reset() -> None:
    """Forget every cached snapshot, raw SKILL.md and resolve result (tests; after a DB restore)."""
    snapshots_clear()
    skill_md_raw_cache_clear()
    skill_catalog_cache_clear()
    change_listener.close()
    _NAMESPACE["token"] = uuid.uuid4().hex[:12]


def cache_namespace() -> str:
    return _NAMESPACE["token"]


def _cache_key(generation: int, inputs: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()
    return f"resolve:{_NAMESPACE['token']}:{generation}:{digest}"


def resolve(
    *,
    query: str = "",
    label: str | None = None,
    forced_skill: str | None = None,
    context: Mapping[str, Any] | None = None,
    max_skills: int | None = None,
    max_chars: int | None = None,
    use_cache: bool = True,
) -> ResolveResult:
    """The skills, prompt block, rule instructions and fired rules for one agent turn (cached)."""
    max_skills = settings.MAX_SKILLS_IN_PROMPT if max_skills is None else max_skills
    max_chars = settings.MAX_PROMPT_CHARS if max_chars is None else max_chars
    generation = current_generation()
    inputs = {
        "query": query,
        "label": label,
        "forced_skill": forced_skill,
        "context": dict(context or {}),
        "max_skills": max_skills,
        "max_chars": max_chars,
    }
    key = _cache_key(generation, inputs)
    if use_cache:
        cached = cache.get(key)
        if cached is not None:
            return cached
    result = _resolve(
        generation=generation,
        query=query,
        label=label,
        forced_skill=forced_skill,
        context=context,
        max_skills=max_skills,
        max_chars=max_chars,
    )
    if use_cache and result.complete:
        cache.set(key, result, CACHE_TIMEOUT)
    return result


def _resolve(
    *,
    generation: int,
    query: str,
    label: str | None,
    forced_skill: str | None,
    context: Mapping[str, Any] | None,
    max_skills: int,
    max_chars: int,
) -> ResolveResult:
    started = time.monotonic()
    snapshot = registry_snapshot(label=label, generation=generation)
    warnings = list(snapshot.rule_warnings)
    matched = rules_fire(query, snapshot.rules, deadline=started + settings.RESOLVE_MAX_SECONDS)
    fired = matched.fired
    if matched.unchecked:
        shown = ", ".join(f"'{name}'" for name in matched.unchecked[:10])
        more = f" and {len(matched.unchecked) - 10} more" if len(matched.unchecked) > 10 else ""
        warnings.append(
            f"Rule matching stopped after {settings.RESOLVE_MAX_SECONDS:g} s (RESOLVE_MAX_SECONDS); "
            f"not checked: {shown}{more}."
        )

    # Forced first: the forced skill, then fired rules' skills in rule priority order.
    forced_by: dict[str, list[str]] = {}
    if forced_skill:
        if forced_skill in snapshot.by_name:
            forced_by.setdefault(forced_skill, []).append("forced_skill")
        else:
            warnings.append(f"The forced skill '{forced_skill}' is not an enabled skill.")
            forced_skill = None
    for rule in fired:
        for name in rule.skills:
            if name in snapshot.by_name:
                forced_by.setdefault(name, []).append(rule.name)
            else:
                warnings.append(f"Rule '{rule.name}' names the skill '{name}', which is not an enabled skill.")

    matches = {m.skill.name: m for m in match(_match_text(query, context), snapshot.index)} if query or context else {}
    ordered: list[EffectiveSkill] = [snapshot.by_name[name] for name in forced_by]
    ordered += [m.skill for m in matches.values() if m.skill.name not in forced_by]
    ordered += [s for s in snapshot.skills if s.model_invocable and s.name not in forced_by and s.name not in matches]

    block = render_prompt_block(ordered, max_skills=max_skills, max_chars=max_chars, forced=forced_by)
    included = set(block.included)
    skills = tuple(
        ResolvedSkill(
            skill=s,
            score=matches[s.name].score if s.name in matches else 0.0,
            reasons=tuple(matches[s.name].reasons) if s.name in matches else (),
            forced_by=tuple(forced_by.get(s.name, ())),
            described=s.name in block.described,
        )
        for s in ordered
        if s.name in included
    )
    instructions = tuple(rule.instruction for rule in fired if rule.instruction)
    result = ResolveResult(
        skills=skills,
        prompt_block=block.text,
        instructions=instructions,
        fired_rules=tuple(fired),
        etag="",
        label=label,
        forced_skill=forced_skill,
        total_skills=block.total,
        warnings=tuple(dict.fromkeys(warnings)),
        generation=generation,
        complete=not matched.unchecked,
    )
    return _with_etag(result)


def _with_etag(result: ResolveResult) -> ResolveResult:
    return replace(result, etag=strong_etag(_content(result)))


def rules_test(*, query: str, label: str | None = None) -> ResolveResult:
    """Which rules fire for `query` and why, and exactly what the agent would then be given."""
    return resolve(query=query, label=label)


# --- reads for the runtime and the API ----------------------------------------------------


def skills_match(*, query: str, label: str | None = None, limit: int | None = None) -> list[Match]:
    """Ranked effective skills for `query` (Match.skill is an EffectiveSkill)."""
    snapshot = registry_snapshot(label=label)
    return match(query[:MATCH_QUERY_MAX_CHARS], snapshot.index, limit=limit)


def skills_find(*, trigger: str, context: Mapping[str, Any] | None = None, label: str | None = None) -> list[Match]:
    """seed 001 findSkills over the effective skills (Match.skill is an EffectiveSkill)."""
    return find_skills(trigger, context, registry_snapshot(label=label).skills)
