"""resolve(): what an agent needs for one turn, in one cached call (SPEC §4, seeds 002/003/004).

- the effective, enabled skills (precedence applied) at a label: with `label`, only the skills
  that carry it, at that version (a forced skill without it is left out with a warning naming
  the label); without a label, `production` where it exists, else latest — the one rule of every
  read path (registry/readmodel/effective.py, `label_applied`);
- force-include rules applied: every enabled rule whose pattern matches the query (RE2,
  case-insensitive) fires, in priority order; its skills are listed first and kept even over
  budget, and its instruction is returned for the end of the system prompt;
- the lazy skills prompt block (seed 003's `## Skills (mandatory)` + `<available_skills>`);
- one strong ETag over all of it.

Which skills a request gets, and every cache, are the read model's (registry/readmodel/): a
per-process snapshot of the skills, their inverted index and the compiled rules, keyed by the
registry generation every write bumps in its own transaction (moved forward by what each write
changed, or rebuilt), and the finished result keyed by generation and inputs, in this process
(registry/readmodel/results.py says why not in the shared cache). A publish, label move,
enable/disable or rule change is therefore visible to the next call, in every process, without
deleting any key (readmodel/generation.py says how a process learns the current generation).

The answers are those of the straightforward matcher (every skill scored, every rule pattern
searched, the whole ranking sorted), which lives on in tests/registry/resolve_oracle.py as the
oracle of the property tests; registry/matching/index.py says how the work is kept small.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import json
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple
from xml.sax.saxutils import escape

from django.conf import settings

from registry.matching.fired_rule import FiredRule
from registry.matching.index import Ranking, rank_for_block
from registry.matching.patterns import pattern_search
from registry.matching.ranking import Match
from registry.matching.triggers import find_skills
from registry.models import SkillVersion
from registry.readmodel.generation import current_generation
from registry.readmodel.requirements import NO_ENTITLEMENTS, Entitlements, LeftOut, SnapshotRequirements
from registry.readmodel.results import ResultCache
from registry.readmodel.results import cache_namespace as cache_namespace
from registry.readmodel.results import registry_caches_reset as registry_caches_reset
from registry.readmodel.rollouts import canary_names, subject_of, subject_pins
from registry.readmodel.served import skill_lacks_label, skill_served, skill_version_of
from registry.readmodel.skill import EffectiveSkill
from registry.readmodel.skillsets import SkillsetServed, members_missing, skillset_served, skillset_snapshot
from registry.readmodel.snapshot import Pins, RuleEntry, Snapshot
from registry.readmodel.snapshot import registry_snapshot as registry_snapshot

# seed 003, verbatim: the lazy-loading instruction that precedes the skill list.
SKILLS_INSTRUCTION = """## Skills (mandatory)

Before replying: scan available skills below.
- If exactly one skill clearly applies: read its SKILL.md with `read_skill`, then follow it.
- If multiple could apply: choose the most specific one, then read/follow it.
- If none clearly apply: do not read any SKILL.md.

Constraints: never read more than one skill up front; only read after selecting.

Available skills:"""

MATCH_QUERY_MAX_CHARS = 2000  # matching cost grows with query words; the start says what it is about
CONTEXT_TEXT_FIELDS = ("taskDescription", "task_description", "command", "toolName", "tool_name", "error")


# --- plain data --------------------------------------------------------------------------


class ResolvedSkill(NamedTuple):
    """An effective skill as offered for one turn: why it is there and how it is listed. A named
    tuple, the cheapest record to make: a result makes one for each of up to 150 skills."""

    skill: EffectiveSkill
    score: float = 0.0
    reasons: tuple[str, ...] = ()
    forced_by: tuple[str, ...] = ()  # "forced_skill" and/or the names of fired rules
    described: bool = True  # false when the budget dropped its description from the prompt block
    canary: bool = False  # read at its label's rollout canary, not the stable version
    required_by: tuple[str, ...] = ()  # the offered skills whose `metadata.requires` brought it


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
    label: str | None = None
    forced_skill: str | None = None
    total_skills: int = 0
    warnings: tuple[str, ...] = ()
    generation: int = 0
    complete: bool = True  # false when the time budget left rules unchecked: never cached
    skillset: SkillsetServed | None = None  # the set asked for, at the version served
    missing: tuple[str, ...] = ()  # its members that could not be served
    left_out: tuple[LeftOut, ...] = ()  # skills whose needs the consumer's entitlements do not meet
    explain: bool = False  # whether the answer lists `left_out`

    @functools.cached_property
    def content(self) -> bytes:
        """The API's answer without its `etag` and `generation` members: compact UTF-8 JSON, keys
        in the order served. Each skill's entry is two pieces encoded once and reused by every
        result they are in (`_skill_head`, `_skill_tail`): they are most of the ~80 KB, and
        encoding them afresh for every query cost more than finding the skills."""
        skills = ",".join(_skill_head(s.skill) + _skill_tail(s[1:]) for s in self.skills)
        around = _JSON.encode(_content_around_skills(self))
        return f'{{"skills":[{skills}],{around[1:]}'.encode()

    @functools.cached_property
    def etag(self) -> str:
        """A strong ETag: the sha256 of `content`, which is equal exactly when the content is
        (the same values always encode to the same bytes)."""
        return f'"{hashlib.sha256(self.content).hexdigest()}"'

    @functools.cached_property
    def body(self) -> bytes:
        """The API's answer (`content` with the ETag and generation), as sent."""
        return self.content[:-1] + f',"etag":{_JSON.encode(self.etag)},"generation":{self.generation}}}'.encode()

    def as_dict(self) -> dict[str, Any]:
        """`body` as Python values (the MCP tool's structured content)."""
        return json.loads(self.body)


# The API's encoding: compact, non-ASCII characters as themselves (DRF's JSON renderer's too).
_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def _skill_fields(skill: EffectiveSkill) -> dict[str, Any]:
    """A skill's fields in a result that are the same in every result it is in."""
    return {
        "name": skill.name,
        "version": skill.version,
        "fingerprint": skill.fingerprint,
        "description": skill.description,
        "tags": list(skill.tags),
        "triggers": list(skill.triggers),
        "tools": list(skill.tools),
        "source": skill.source,
    }


@functools.lru_cache(maxsize=32_768)
def _skill_head(skill: EffectiveSkill) -> str:
    """The start of a skill's entry: its unchanging fields, without the closing brace."""
    return _JSON.encode(_skill_fields(skill))[:-1]


@functools.lru_cache(maxsize=4_096)  # most skills in a result are unmatched: a handful of tails
def _skill_tail(fields: tuple[float, tuple[str, ...], tuple[str, ...], bool, bool, tuple[str, ...]]) -> str:
    """The rest of a skill's entry: why this result lists it and how."""
    score, reasons, forced_by, described, canary, required_by = fields
    tail = {
        "score": score,
        "reasons": list(reasons),
        "forced_by": list(forced_by),
        "described": described,
        "canary": canary,
        "required_by": list(required_by),
    }
    return "," + _JSON.encode(tail)[1:]


def _content_around_skills(result: ResolveResult) -> dict[str, Any]:
    included = len(result.skills)
    described = sum(1 for s in result.skills if s.described)
    explained = {"left_out": [entry.as_dict() for entry in result.left_out]} if result.explain else {}
    return {
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
        **explained,
        "skillset": _skillset_fields(result),
    }


def _skillset_fields(result: ResolveResult) -> dict[str, Any] | None:
    """Which set a result is, so a reader can check it got exactly one version's members."""
    served = result.skillset
    if served is None:
        return None
    return {
        "name": served.name,
        "label": served.label,
        "version": served.version,
        "canary": served.canary,
        "members": served.members,
        "missing": list(result.missing),
    }


# --- the prompt block --------------------------------------------------------------------


@functools.lru_cache(maxsize=32_768)  # a skill's entry is the same in every block it is in
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
    skills: Sequence[Any],
    *,
    max_skills: int | None = None,
    max_chars: int | None = None,
    forced: Iterable[str] = (),
    total: int | None = None,
) -> PromptBlock:
    """seed 003's lazy block: the `## Skills (mandatory)` instruction and `<available_skills>`.

    `skills` must be ordered most relevant first (anything with `name` and `description`).
    Budgets: at most `max_skills` entries and `max_chars` characters. Over budget, the most
    relevant are kept; descriptions are dropped from the least relevant before any skill is
    dropped, and the block says `Skills truncated: included X of Y`. Skills named in `forced`
    (fired rules, a forced skill) are always listed, even when that breaks the budget.
    `total` is the length of the whole ranking when `skills` is only its head (forced skills
    and at least `max_skills` others, as matching.index.rank_for_block gives).
    """
    max_skills = settings.MAX_SKILLS_IN_PROMPT if max_skills is None else max_skills
    max_chars = settings.MAX_PROMPT_CHARS if max_chars is None else max_chars
    forced_names = set(forced)
    total = len(skills) if total is None else total
    if not total:
        return PromptBlock(text="", included=(), described=frozenset(), total=0)
    # Forced skills first (they are never dropped), then the rest by relevance, up to max_skills.
    must = [s for s in skills if s.name in forced_names]
    rest = [s for s in skills if s.name not in forced_names][: max(max_skills - len(must), 0)]
    chosen = must + rest

    full = [_skill_xml(s.name, s.description) for s in chosen]
    short = [_skill_xml(s.name, None) for s in chosen]
    frame = len(SKILLS_INSTRUCTION) + len("\n<available_skills>\n") + len("\n</available_skills>")
    # Sizes of the first n entries, so each trial below costs O(1), not a sum over the block.
    full_sizes = list(itertools.accumulate((len(x) for x in full), initial=0))
    short_sizes = list(itertools.accumulate((len(x) for x in short), initial=0))

    def size(count: int, described: int) -> int:
        entries = full_sizes[described] + short_sizes[count] - short_sizes[described]
        note = 0 if (count == total and described == count) else 1 + len(_truncation_note(count, total, described))
        return frame + entries + max(count - 1, 0) + note  # newlines between entries

    count = len(chosen)
    described = count
    if size(count, described) > max_chars:
        # Drop whole skills (never forced ones) only while even the names alone do not fit ...
        if size(count, 0) > max_chars:
            fits = bisect.bisect_right(range(len(must), count + 1), max_chars, key=lambda n: size(n, 0))
            count = len(must) + max(fits - 1, 0)
        # ... then give descriptions back, most relevant first, while they fit. Both searches
        # bisect: a block grows with each skill or description added (the truncation note's
        # digits shrink by less than the shortest description adds; the note goes only with the
        # last description, and all of them did not fit).
        described = bisect.bisect_right(range(count + 1), max_chars, key=lambda n: size(count, n)) - 1
        described = max(described, 0)
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


# --- rules -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RulesFired:
    fired: list[FiredRule]
    unchecked: tuple[str, ...] = ()  # rules the time budget left out, highest priority first


def rules_fire(
    query: str,
    rules: Sequence[tuple[RuleEntry, Any]],
    *,
    candidates: Collection[int],
    deadline: float | None = None,
) -> RulesFired:
    """The rules whose pattern matches `query`, in priority order, each with why it fired.

    Rules whose ids are not in `candidates` (`RuleSet.candidates`) cannot match and are passed
    over. Past `deadline` (time.monotonic()) the rest are not matched: a rule saved before the
    pattern probe existed, or a machine too busy to keep up, cannot make one resolve run on and on."""
    fired: list[FiredRule] = []
    for index, (rule, compiled) in enumerate(rules):
        if rule.id not in candidates:
            continue
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

_RESULTS: ResultCache[ResolveResult] = ResultCache(maxsize=256)


def _match_text(query: str, context: Mapping[str, Any] | None) -> str:
    extra = [str(context[k]) for k in CONTEXT_TEXT_FIELDS if context and isinstance(context.get(k), str | int | float)]
    return " ".join([query, *extra])[:MATCH_QUERY_MAX_CHARS]


def resolve(
    *,
    query: str = "",
    label: str | None = None,
    forced_skill: str | None = None,
    context: Mapping[str, Any] | None = None,
    max_skills: int | None = None,
    max_chars: int | None = None,
    use_cache: bool = True,
    pins: Pins | None = None,
    skillset: str | None = None,
    explain: bool = False,
) -> ResolveResult:
    """The skills, prompt block, rule instructions and fired rules for one agent turn (cached);
    the skills named in `pins` at those versions, and those whose label has a rollout at the
    version `context.subject` gets (registry/readmodel/rollouts.py). The skills the offered ones
    require come with them; with `context.tools` or `context.mcp_servers` (lists of names), the
    skills needing a tool or server not listed are left out (with `explain`, listed with why).
    With `skillset`, exactly the set's members at the numbers of its version at `label` (for
    `context.subject` when the set's label has a rollout), whatever the members' own labels say
    (registry/readmodel/skillsets.py); NotFound naming the set or the label it lacks."""
    max_skills = settings.MAX_SKILLS_IN_PROMPT if max_skills is None else max_skills
    max_chars = settings.MAX_PROMPT_CHARS if max_chars is None else max_chars
    generation = current_generation()
    context = dict(context or {})
    subject = subject_of(given=context.pop("subject", None))
    entitlements = Entitlements.of(tools=context.pop("tools", None), mcp_servers=context.pop("mcp_servers", None))
    served = None
    if skillset is not None:
        # The set's members at its version's numbers, and no other skill: pins, never labels.
        served = skillset_served(name=skillset, label=label, subject=subject, generation=generation)
        pins = served.members
    else:
        # Keyed by the versions the subject reads, never the subject: subjects on one side share results.
        pins = subject_pins(label=label, subject=subject, pins=pins, generation=generation)
    inputs = {
        "query": query,
        "label": label,
        "forced_skill": forced_skill,
        "context": context,
        "max_skills": max_skills,
        "max_chars": max_chars,
        "pins": sorted((pins or {}).items()),
        "skillset": served and (served.name, served.version, served.canary),
        "entitlements": entitlements.key(),
        "explain": explain,
    }
    if use_cache:
        cached = _RESULTS.get(generation, inputs)
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
        pins=pins,
        skillset=served,
        entitlements=entitlements,
        explain=explain,
    )
    if use_cache and result.complete:
        _RESULTS.put(generation, inputs, result)
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
    snapshot: Snapshot | None = None,  # the registry's at `generation` unless given (tests build their own)
    pins: Pins | None = None,
    skillset: SkillsetServed | None = None,
    entitlements: Entitlements = NO_ENTITLEMENTS,
    explain: bool = False,
) -> ResolveResult:
    if skillset is not None:
        snapshot = skillset_snapshot(served=skillset, label=label, generation=generation)
        canaries = frozenset(snapshot.by_name) if skillset.canary else frozenset()
    else:
        if snapshot is None:
            snapshot = registry_snapshot(label=label, generation=generation, pins=pins)
        canaries = canary_names(label=label, pins=pins or {}, generation=generation)
    requirements = snapshot.requirements
    left_out = requirements.left_out(entitlements)
    matched = rules_fire_in_budget(query, snapshot)
    forced = forced_skills(snapshot, forced_skill=forced_skill, fired=matched.fired, left_out=left_out)
    ranking = rank_for_block(
        snapshot.index,
        _match_text(query, context) if query or context else None,
        forced=[snapshot.by_name[name] for name in forced.by],
        skills=snapshot.skills,
        limit=max_skills,
        excluded=left_out,
    )
    offered = required_offered(ranking, snapshot=snapshot, requirements=requirements, pulled_by=forced.by)
    return resolve_result(
        snapshot=snapshot,
        label=label,
        matched=matched,
        forced=forced,
        ranking=offered.ranking,
        max_skills=max_skills,
        max_chars=max_chars,
        canaries=canaries,
        skillset=skillset,
        required=offered,
        left_out=tuple(left_out[name] for name in sorted(left_out)),
        explain=explain,
    )


def resolve_in_snapshot(*, snapshot: Snapshot, query: str) -> ResolveResult:
    """What `resolve(query=query, label=snapshot.label)` answers at the snapshot's generation for
    a subject on every rollout's stable side, uncached: the catalog's routing report
    (registry/selectors/catalog_routing.py) asks it once per trigger case, each query once."""
    return _resolve(
        generation=snapshot.generation,
        query=query,
        label=snapshot.label,
        forced_skill=None,
        context=None,
        max_skills=settings.MAX_SKILLS_IN_PROMPT,
        max_chars=settings.MAX_PROMPT_CHARS,
        snapshot=snapshot,
    )


def rules_fire_in_budget(query: str, snapshot: Snapshot) -> RulesFired:
    """The snapshot's rules that fire for `query`, within RESOLVE_MAX_SECONDS. The budget starts
    here, not with the request: a snapshot built first (seconds at 10,000 skills) must not leave
    every rule unchecked in the first resolve after a change."""
    deadline = time.monotonic() + settings.RESOLVE_MAX_SECONDS
    return rules_fire(query, snapshot.rules, deadline=deadline, candidates=snapshot.rule_set.candidates(query))


@dataclass(frozen=True)
class ForcedSkills:
    """The skills listed first, whatever the budget: the forced skill, then fired rules' skills in
    rule priority order, each with who forced it."""

    by: dict[str, list[str]]  # skill name -> "forced_skill" and/or the names of fired rules
    forced_skill: str | None  # None when the one asked for is not an enabled skill
    warnings: tuple[str, ...]


def forced_skills(
    snapshot: Snapshot,
    *,
    forced_skill: str | None,
    fired: Sequence[FiredRule],
    left_out: Mapping[str, LeftOut] | None = None,
) -> ForcedSkills:
    """Who forces which skill; a skill the consumer's entitlements leave out (`left_out`) is not
    forced, and a warning says why."""
    by: dict[str, list[str]] = {}
    warnings = []
    left_out = left_out or {}
    if forced_skill:
        if forced_skill in snapshot.by_name and forced_skill not in left_out:
            by.setdefault(forced_skill, []).append("forced_skill")
        else:
            warnings.append(f"The forced skill '{forced_skill}' {_why_absent(forced_skill, snapshot, left_out)}.")
            forced_skill = None
    for rule in fired:
        for name in rule.skills:
            if name in snapshot.by_name and name not in left_out:
                by.setdefault(name, []).append(rule.name)
            else:
                why = _why_absent(name, snapshot, left_out)
                warnings.append(f"Rule '{rule.name}' names the skill '{name}', which {why}.")
    return ForcedSkills(by=by, forced_skill=forced_skill, warnings=tuple(warnings))


def _why_absent(name: str, snapshot: Snapshot, left_out: Mapping[str, LeftOut]) -> str:
    """Why a skill that a request forces is not in it: the consumer lacks what it needs, the
    skillset the request is limited to, the label it lacks, or it is not an enabled skill."""
    if name in left_out:
        return f"is left out: it {'; it '.join(left_out[name].reasons)}"
    if snapshot.skillset is not None:
        return f"is not a served member of the skillset '{snapshot.skillset}'"
    if skill_lacks_label(name=name, label=snapshot.label):
        return f"does not carry the label '{snapshot.label}'"
    return "is not an enabled skill"


@dataclass(frozen=True)
class RequiredOffered:
    """The ranking with the skills its chosen ones require placed after them, and who required each."""

    ranking: Ranking
    required_by: dict[str, tuple[str, ...]]
    warnings: tuple[tuple[str, str], ...] = ()  # (the skill it is about, the warning): said when that one is offered


def required_offered(
    ranking: Ranking, *, snapshot: Snapshot, requirements: SnapshotRequirements, pulled_by: Collection[str]
) -> RequiredOffered:
    """The skills that the chosen skills of `ranking` — forced (`pulled_by`) or matching the
    query — require, at the version each requirement names, placed right after the skill that
    requires them: ahead of every skill chosen for less, so the prompt budget keeps them when it
    keeps what requires them and drops them as it drops other skills. A skill the ranking lists
    further down moves up; a name is offered once, at the first version placed."""
    if not requirements.closure and not requirements.unserved:
        return RequiredOffered(ranking, {})
    placed: dict[str, EffectiveSkill] = {}
    ordered: list[Any] = []
    matches = dict(ranking.matches)
    required_by: dict[str, dict[str, None]] = {}
    warnings: list[tuple[str, str]] = []
    for skill in ranking.ordered:
        if skill.name in placed:
            continue
        placed[skill.name] = skill
        ordered.append(skill)
        if skill.name not in pulled_by and skill.name not in ranking.matches:
            continue
        unserved = requirements.unserved.get(skill.name, ())
        warnings += [(skill.name, f"Skill '{skill.name}': {entry}, which is not served.") for entry in unserved]
        for required in requirements.closure.get(skill.name, ()):
            name = required.skill.name
            held = placed.get(name)
            if held is None:
                placed[name] = required.skill
                ordered.append(required.skill)
                if name not in matches and (match := ranking.match_of(name)) is not None:
                    matches[name] = match  # it matches too, below the head: its score says so
            elif held.version != required.skill.version:
                warnings.append(
                    (
                        required.required_by,
                        f"Skill '{required.required_by}' requires {required.requirement}; '{name}' is offered at "
                        f"version {held.version}.",
                    )
                )
                continue
            required_by.setdefault(name, {})[required.required_by] = None
    # The whole ranking's count, not the head's: what every forced or matching skill brings.
    beyond: set[str] = set()
    for name in itertools.chain(pulled_by, ranking.matched) if requirements.beyond_listing else ():
        beyond.update(requirements.beyond_listing.get(name, ()))
    added = len(beyond.difference(pulled_by))
    return RequiredOffered(
        ranking=Ranking(ordered=ordered, matches=matches, total=ranking.total + added),
        required_by={name: tuple(by) for name, by in required_by.items()},
        warnings=tuple(warnings),
    )


def _unchecked_warning(unchecked: Sequence[str]) -> list[str]:
    if not unchecked:
        return []
    shown = ", ".join(f"'{name}'" for name in unchecked[:10])
    more = f" and {len(unchecked) - 10} more" if len(unchecked) > 10 else ""
    return [
        f"Rule matching stopped after {settings.RESOLVE_MAX_SECONDS:g} s (RESOLVE_MAX_SECONDS); "
        f"not checked: {shown}{more}."
    ]


def resolve_result(
    *,
    snapshot: Snapshot,
    label: str | None,
    matched: RulesFired,
    forced: ForcedSkills,
    ranking: Ranking,
    max_skills: int,
    max_chars: int,
    canaries: frozenset[str] = frozenset(),
    skillset: SkillsetServed | None = None,
    required: RequiredOffered | None = None,
    left_out: tuple[LeftOut, ...] = (),
    explain: bool = False,
) -> ResolveResult:
    """The result for a ranking: the prompt block over its head, and the skills that block lists
    (`canaries` read at their rollout's canary version, `required` saying which were required by
    which)."""
    required_by = required.required_by if required else {}
    block = render_prompt_block(
        ranking.ordered, max_skills=max_skills, max_chars=max_chars, forced=forced.by, total=ranking.total
    )
    included = set(block.included)
    matches = ranking.matches
    unmatched = Match(skill=None, score=0.0)
    skills = tuple(
        ResolvedSkill(
            s,
            (match := matches.get(s.name, unmatched)).score,
            tuple(match.reasons),
            tuple(forced.by.get(s.name, ())),
            s.name in block.described,
            s.name in canaries,
            tuple(name for name in required_by.get(s.name, ()) if name in included),
        )
        for s in ranking.ordered
        if s.name in included
    )
    missing = members_missing(skillset, snapshot) if skillset is not None else []
    warnings = [*snapshot.rule_warnings, *_unchecked_warning(matched.unchecked), *forced.warnings]
    warnings += [f"The skillset member '{name}' is missing or disabled; it is left out." for name in missing]
    warnings += [text for about, text in (required.warnings if required else ()) if about in included]
    return ResolveResult(
        skills=skills,
        prompt_block=block.text,
        instructions=tuple(rule.instruction for rule in matched.fired if rule.instruction),
        fired_rules=tuple(matched.fired),
        label=label,
        forced_skill=forced.forced_skill,
        total_skills=block.total,
        warnings=tuple(dict.fromkeys(warnings)),
        generation=snapshot.generation,
        complete=not matched.unchecked,
        skillset=skillset,
        missing=tuple(missing),
        left_out=left_out,
        explain=explain,
    )


def rules_test(*, query: str, label: str | None = None) -> ResolveResult:
    """Which rules fire for `query` and why, and exactly what the agent would then be given."""
    return resolve(query=query, label=label)


# --- reads for the runtime and the API ----------------------------------------------------


def skill_effective(*, name: str, label: str | None = None, pins: Pins | None = None) -> EffectiveSkill | None:
    """Which version of which skill a request at `label` (with `pins`) gets for `name`, or None:
    the read model's one answer (registry/readmodel/served.py), so a skill resolve offers always
    loads and one it hides never does."""
    return skill_served(name=name, label=label, pins=pins)


def skill_version_effective(*, name: str, label: str | None = None, pins: Pins | None = None) -> SkillVersion | None:
    """The stored version `skill_effective` names (SKILL.md text, files): what a forced skill or
    `read_skill` loads, with its skill (usage names the skill's source). One query."""
    return skill_version_of(skill_served(name=name, label=label, pins=pins))


def skills_match(
    *,
    query: str,
    label: str | None = None,
    limit: int | None = None,
    trigger: str | None = None,
    pins: Pins | None = None,
) -> list[Match]:
    """Ranked effective skills for `query` (Match.skill is an EffectiveSkill); with `trigger`,
    only the skills that declare it."""
    snapshot = registry_snapshot(label=label, pins=pins)
    text = query[:MATCH_QUERY_MAX_CHARS]

    def declares(skill: Any) -> bool:
        return trigger is None or trigger in skill.triggers

    return snapshot.index.top(text, limit=limit, where=declares)


def skills_find(
    *, trigger: str, context: Mapping[str, Any] | None = None, label: str | None = None, pins: Pins | None = None
) -> list[Match]:
    """seed 001 findSkills over the effective skills (Match.skill is an EffectiveSkill)."""
    candidates = registry_snapshot(label=label, pins=pins).by_trigger.get((trigger or "").strip().lower(), ())
    return find_skills(trigger, context, candidates)
