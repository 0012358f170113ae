"""Force-include rule patterns (seed 004, SPEC §3): untrusted regexes run on a linear-time engine.

Patterns come from whoever holds `rules:write` and are matched against every user query, so a
catastrophic-backtracking pattern such as `(a+)+$` must not be able to stall a turn. RE2
(google-re2) guarantees time linear in the query length and refuses the features that would
need backtracking (backreferences, lookaround), which we turn into messages a rule author can act
on. Queries are cut to a bounded length before matching, and compiled programs are memory-capped.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import re2
from django.conf import settings

from registry.errors import InvalidPattern

# RE2's own default is 8 MiB; a rule has no business needing more than a couple.
_MAX_PROGRAM_MEMORY = 2 * 1024 * 1024
DEFAULT_QUERY_MAX_CHARS = 10_000

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
    return int(getattr(settings, "RULE_QUERY_MAX_CHARS", DEFAULT_QUERY_MAX_CHARS))


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
    limit = int(getattr(settings, "RULE_PATTERN_MAX_LENGTH", 1000))
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
