"""Force-include rule patterns (seed 004, SPEC §3): untrusted regexes run on a linear-time engine.

Patterns come from whoever holds `rules:write` and are matched against every user query, so a
catastrophic-backtracking pattern such as `(a+)+$` must not be able to stall a turn. RE2
(google-re2) guarantees time linear in the query length and refuses the features that would
need backtracking (backreferences, lookaround), which we turn into messages a rule author can act
on. Queries are cut to a bounded length before matching, and compiled programs are memory-capped.

Linear is not the same as cheap, though. RE2 runs a lazily built DFA whose state cache is
bounded by the program's memory; patterns with large counted repetitions inside alternations,
such as `(?s)(?:a{0,999}b0|a{0,999}b1|...)`, need more states than fit, so RE2 falls back to
simulating the NFA — time proportional to query length *times* program size: one such rule can
stall a resolve for seconds (docs/benchmarks/index.md). No static rule separates those patterns from
useful ones, so `pattern_check` measures instead: before a rule is saved its pattern is run
against worst-case queries of the full matching length built from its own characters (the DFA
blows up on long runs of what the repetitions accept), and refused if one takes longer than
RULE_PATTERN_PROBE_MS of CPU time. Resolve keeps a total time budget on top (selectors/resolve.py).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import re2
from django.conf import settings

from registry.errors import InvalidPattern

# RE2's own default is 8 MiB; a rule has no business needing more than a couple.
_MAX_PROGRAM_MEMORY = 2 * 1024 * 1024

# RE2 error text -> what a person should do about it. Checked in order, first hit wins.
_EXPLANATIONS: tuple[tuple[str, str], ...] = (
    ("invalid escape sequence: \\1", "backreferences"),
    ("invalid escape sequence: \\", "escape"),
    ("invalid perl operator: (?=", "lookahead"),
    ("invalid perl operator: (?!", "lookahead"),
    ("invalid perl operator: (?<=", "lookbehind"),
    ("invalid perl operator: (?<!", "lookbehind"),
    ("invalid perl operator: (?>", "atomic"),
    ("invalid named capture group", "named"),
    ("pattern too large", "too_large"),
    ("bad repetition operator", "repetition"),
    ("invalid repetition size", "repetition_size"),
    ("missing )", "parens"),
    ("unexpected )", "parens"),
    ("missing ]", "brackets"),
)

_MESSAGES = {
    "backreferences": "Backreferences such as \\1 are not supported: rule patterns run on RE2, a linear-time "
    "regex engine, so they cannot stall a turn. Repeat the group instead.",
    "escape": "The pattern uses an escape sequence RE2 does not support (backreferences like \\1..\\9 "
    "included). Escape literal characters with a single backslash, e.g. \\. or \\(.",
    "lookahead": "Lookahead ((?=...) and (?!...)) is not supported: rule patterns run on RE2, a linear-time "
    "regex engine. Match the text itself, or use two rules.",
    "lookbehind": "Lookbehind ((?<=...) and (?<!...)) is not supported: rule patterns run on RE2, a "
    "linear-time regex engine. Match the text itself instead.",
    "atomic": "Atomic groups (?>...) are not supported by RE2; a plain group (?:...) works the same on a "
    "linear-time engine.",
    "named": "Named groups must be written (?P<name>...) with a name of letters, digits and underscores.",
    "too_large": "The pattern compiles to a program that is too large; simplify it (fewer or smaller "
    "counted repetitions such as {1000}).",
    "repetition": "A repetition operator (*, +, ?, {n}) is applied to nothing or to another repetition; "
    "escape it if you mean the literal character.",
    "repetition_size": "A counted repetition {n} or {n,m} is over RE2's limit of 1000.",
    "parens": "The pattern's parentheses do not balance.",
    "brackets": "A character class [...] is not closed.",
}


@dataclass(frozen=True)
class RuleMatch:
    start: int
    end: int
    text: str


def query_max_chars() -> int:
    return int(settings.RULE_QUERY_MAX_CHARS)


def _options() -> re2.Options:
    options = re2.Options()
    options.case_sensitive = False  # SPEC §3: matched case-insensitively against the query
    options.max_mem = _MAX_PROGRAM_MEMORY
    options.log_errors = False  # RE2 would otherwise print every rejected pattern to stderr
    return options


def _explain(error: str) -> str:
    for needle, key in _EXPLANATIONS:
        if needle in error:
            return _MESSAGES[key]
    return "RE2 cannot compile it."


def compile_pattern(pattern: str):
    """Compile an untrusted rule pattern with RE2, case-insensitively, or raise InvalidPattern.

    The error names the field (`pattern`) and says why, so the rule editor can show it in place.
    """
    if not isinstance(pattern, str) or not pattern.strip():
        raise InvalidPattern(
            "The pattern is empty; give a regular expression to match against the query.",
            fields={"pattern": "required"},
        )
    limit = settings.RULE_PATTERN_MAX_LENGTH
    if len(pattern) > limit:
        raise InvalidPattern(
            f"The pattern is {len(pattern)} characters long; the limit is {limit}.",
            fields={"pattern": f"at most {limit} characters"},
        )
    if "\x00" in pattern:
        raise InvalidPattern("The pattern contains a NUL character.", fields={"pattern": "contains NUL"})
    return _compile_cached(pattern)


@functools.lru_cache(maxsize=4096)
def _compile_cached(pattern: str):
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        raw = exc.args[0] if exc.args else exc
        error = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        message = f"Invalid pattern: {_explain(error)} (RE2 says: {error})"
        raise InvalidPattern(message, fields={"pattern": message}) from None


def pattern_search(compiled, query: str) -> RuleMatch | None:
    """The first match of a compiled rule pattern in `query` (cut to the bounded length), or None."""
    bounded = query[: query_max_chars()]
    found = compiled.search(bounded)
    if found is None:
        return None
    start, end = found.span()
    return RuleMatch(start=start, end=end, text=bounded[start:end])


# --- the cost probe ------------------------------------------------------------------------

_REGEX_SYNTAX = set("()[]{}|\\?*+^$.-,:=!<>")
_PROBE_ALPHABET_MAX = 48  # distinct characters of a pattern used to build probe queries
_ALWAYS_PROBED = "a0 é\n"
# Short runs first, their cost scaled to the full length: a hopeless pattern shows it within a
# few milliseconds instead of spending seconds on the full-length query.
_PROBE_STEPS = (100, 1000)


def _probe_queries(pattern: str, length: int) -> list[tuple[str, str]]:
    """(description, query) pairs: long runs of each character the pattern names (and a few
    common ones), the pattern's characters in turn, and its literal text repeated."""
    literal = "".join(char for char in pattern if char not in _REGEX_SYNTAX) or "a"
    alphabet = list(dict.fromkeys(literal.lower() + _ALWAYS_PROBED))[:_PROBE_ALPHABET_MAX]
    queries = [(f"{char!r} repeated", char) for char in alphabet]
    queries.append(("its characters in turn", "".join(alphabet)))
    queries.append(("its literal text repeated", literal))
    return [(what, (unit * (length // len(unit) + 1))[:length]) for what, unit in queries]


def _cpu_ms(compiled, query: str) -> float:
    # CPU time of this thread, not wall time: on a busy machine a cheap pattern stays cheap.
    started = time.thread_time()
    compiled.search(query)
    return (time.thread_time() - started) * 1000


def pattern_check(pattern: str):
    """Compile a rule pattern *and* refuse it when matching is too slow: the check rules run
    before they are saved (the rule services call it; resolve only compiles)."""
    compiled = compile_pattern(pattern)
    budget = float(settings.RULE_PATTERN_PROBE_MS)
    length = query_max_chars()
    for what, query in _probe_queries(pattern, length):
        for size in [*(size for size in _PROBE_STEPS if size < length), length]:
            projected = _cpu_ms(compiled, query[:size]) * length / size
            if projected > budget:
                # The first search on a new kind of input also builds DFA states, once: a cheap
                # pattern is fast the second time; a hopeless one (its state cache thrashing) is not.
                projected = min(projected, _cpu_ms(compiled, query[:size]) * length / size)
            if projected > budget:
                break
        if projected > budget:
            message = (
                f"The pattern is too slow to match: on a {length:,}-character query made of {what} it needs "
                f"about {projected:,.0f} ms of CPU time (the limit is {budget:,.0f} ms per rule and query). "
                "Large counted repetitions such as {0,999}, especially inside alternatives, are the usual "
                "cause: use + or * or a much smaller count."
            )
            raise InvalidPattern(message, fields={"pattern": "too slow on a worst-case query"})
    return compiled
