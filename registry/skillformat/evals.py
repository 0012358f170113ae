"""An eval suite's cases as JSON: our format and skill-creator's two files read, its evals.json written.

Our format is `{"cases": [...]}` (docs/authors/evals.md). skill-creator keeps task evals in
`evals/evals.json` (`{"skill_name", "evals": [{"id", "prompt", "expected_output",
"expectations"}]}`) and trigger evals in a list of `{"query", "should_trigger"}`; each reads
into our cases: a task case whose natural-language expectations become `judge` checks, and
trigger cases. Plain data in and out, no database: services validate with it, and the bundled
skills' `evals/evals.json` are read by it too.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import re2

from registry.errors import ApplicationError

CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
KINDS = ("trigger", "task")
CHECKS = ("skill_loaded", "tool_called", "answer_matches", "answer_not_matches", "max_steps", "judge")
MAX_CASES = 500
MAX_TEXT = 20_000
# Where a skill folder keeps its suite, as skill-creator does.
EVALS_FOLDER = "evals/"
SUITE_PATH = EVALS_FOLDER + "evals.json"


class InvalidSuite(ApplicationError):
    code = "invalid_suite"


@functools.lru_cache(maxsize=1024)
def answer_pattern(pattern: str) -> Any:
    """An `answer_matches` / `answer_not_matches` pattern compiled with RE2: a suite's author
    writes it and a worker runs it on model output, so it runs in linear time as rule patterns
    do (registry/matching/patterns.py). Raises re2.error when RE2 cannot compile it."""
    options = re2.Options()
    options.max_mem = 2 * 1024 * 1024
    options.log_errors = False
    return re2.compile(pattern, options)


def _bad(index: int, case_id: Any, field: str, why: str) -> InvalidSuite:
    name = f"'{case_id}'" if isinstance(case_id, str) and case_id else f"#{index + 1}"
    return InvalidSuite(f"Case {name}: {field} {why}", fields={f"cases[{index}].{field}": why})


def suite_cases_read(document: Any) -> list[dict[str, Any]]:
    """The validated cases of a suite document in any of the three formats; InvalidSuite (a 400)
    naming the case and field otherwise."""
    if isinstance(document, list):
        return _validated(_from_trigger_list(document))
    if not isinstance(document, dict):
        raise InvalidSuite(
            'A suite is {"cases": [...]}, skill-creator\'s evals.json ({"evals": [...]}) or a list of '
            '{"query", "should_trigger"}.',
            fields={"cases": "required"},
        )
    if "cases" in document:
        if not isinstance(document["cases"], list):
            raise InvalidSuite("cases must be a list.", fields={"cases": "a list"})
        return _validated(document["cases"])
    if "evals" in document:
        return _validated(_from_skill_creator(document["evals"]))
    raise InvalidSuite('A suite needs "cases" (or skill-creator\'s "evals").', fields={"cases": "required"})


def _from_trigger_list(items: list[Any]) -> list[Any]:
    cases: list[Any] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise _bad(index, None, "query", "each item must be an object with query and should_trigger")
        cases.append({"id": f"trigger-{index + 1}", "kind": "trigger", **item})
    return cases


def _from_skill_creator(items: Any) -> list[Any]:
    if not isinstance(items, list):
        raise InvalidSuite("evals must be a list.", fields={"evals": "a list"})
    cases: list[Any] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise InvalidSuite(f"evals[{index}] must be an object.", fields={f"evals[{index}]": "an object"})
        expectations = item.get("expectations") or []
        if not isinstance(expectations, list) or not all(isinstance(text, str) for text in expectations):
            raise InvalidSuite(
                f"evals[{index}].expectations must be a list of statements.",
                fields={f"evals[{index}].expectations": "a list of strings"},
            )
        case: dict[str, Any] = {
            "id": f"eval-{item.get('id', index + 1)}",
            "kind": "task",
            "prompt": item.get("prompt"),
            "expect": [{"judge": text} for text in expectations],
        }
        if item.get("expected_output"):
            case["expected_output"] = item["expected_output"]
        cases.append(case)
    return cases


def _validated(cases: list[Any]) -> list[dict[str, Any]]:
    if len(cases) > MAX_CASES:
        raise InvalidSuite(f"A suite holds at most {MAX_CASES} cases.", fields={"cases": f"at most {MAX_CASES}"})
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for index, case in enumerate(cases):
        if not isinstance(case, dict):
            raise _bad(index, None, "case", "must be an object")
        case_id = case.get("id")
        if not isinstance(case_id, str) or not CASE_ID.match(case_id):
            raise _bad(index, case_id, "id", "must be 1-64 letters, digits, '_', '.' or '-'")
        if case_id in seen:
            raise _bad(index, case_id, "id", "is used by an earlier case")
        seen.add(case_id)
        kind = case.get("kind")
        if kind not in KINDS:
            raise _bad(index, case_id, "kind", "must be 'trigger' or 'task'")
        out.append(_trigger_case(index, case) if kind == "trigger" else _task_case(index, case))
    return out


def _text(index: int, case: dict[str, Any], field: str) -> str:
    value = case.get(field)
    if not isinstance(value, str) or not value.strip():
        raise _bad(index, case["id"], field, "is required (non-empty text)")
    if len(value) > MAX_TEXT:
        raise _bad(index, case["id"], field, f"is longer than {MAX_TEXT} characters")
    return value


def _script(index: int, case: dict[str, Any], field: str) -> list[dict[str, Any]] | None:
    script = case.get(field)
    if script is None:
        return None
    if not isinstance(script, list) or not all(isinstance(step, dict) for step in script):
        raise _bad(index, case["id"], field, "must be a list of steps (objects), as the scripted model takes")
    return script


def _trigger_case(index: int, case: dict[str, Any]) -> dict[str, Any]:
    unknown = set(case) - {"id", "kind", "query", "should_trigger", "script"}
    if unknown:
        raise _bad(index, case["id"], sorted(unknown)[0], "is not a field of a trigger case")
    if not isinstance(case.get("should_trigger"), bool):
        raise _bad(index, case["id"], "should_trigger", "must be true or false")
    out = {"id": case["id"], "kind": "trigger", "query": _text(index, case, "query")}
    out["should_trigger"] = case["should_trigger"]
    if (script := _script(index, case, "script")) is not None:
        out["script"] = script
    return out


def _task_case(index: int, case: dict[str, Any]) -> dict[str, Any]:
    unknown = set(case) - {"id", "kind", "prompt", "expect", "script", "judge_script", "expected_output"}
    if unknown:
        raise _bad(index, case["id"], sorted(unknown)[0], "is not a field of a task case")
    expect = case.get("expect", [])
    if not isinstance(expect, list) or not expect:
        raise _bad(index, case["id"], "expect", "must be a non-empty list of checks")
    out: dict[str, Any] = {"id": case["id"], "kind": "task", "prompt": _text(index, case, "prompt")}
    out["expect"] = [_check(index, case["id"], position, check) for position, check in enumerate(expect)]
    for field in ("script", "judge_script"):
        if (script := _script(index, case, field)) is not None:
            out[field] = script
    if isinstance(case.get("expected_output"), str):
        out["expected_output"] = case["expected_output"]
    return out


def _check(index: int, case_id: str, position: int, check: Any) -> dict[str, Any]:
    where = f"expect[{position}]"
    if not isinstance(check, dict) or len(check) != 1:
        raise _bad(index, case_id, where, f"must be an object with one of {', '.join(CHECKS)}")
    ((name, value),) = check.items()
    if name not in CHECKS:
        raise _bad(index, case_id, where, f"has unknown check '{str(name)[:40]}' (one of {', '.join(CHECKS)})")
    if name in ("skill_loaded", "judge") and not (isinstance(value, str) and value.strip()):
        raise _bad(index, case_id, f"{where}.{name}", "must be non-empty text")
    if name == "tool_called":
        if isinstance(value, str):
            value = {"name": value}
        if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
            raise _bad(index, case_id, f"{where}.tool_called", 'must be {"name": tool, "arguments"?: {...}}')
        if not isinstance(value.get("arguments", {}), dict):
            raise _bad(index, case_id, f"{where}.tool_called.arguments", "must be an object")
    if name in ("answer_matches", "answer_not_matches"):
        if not isinstance(value, str):
            raise _bad(index, case_id, f"{where}.{name}", "must be a regular expression")
        try:
            answer_pattern(value)
        except re2.error as error:
            raw = error.args[0] if error.args else error
            why = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
            raise _bad(index, case_id, f"{where}.{name}", f"is not a regular expression RE2 accepts: {why}") from None
    if name == "max_steps" and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise _bad(index, case_id, f"{where}.max_steps", "must be a whole number of at least 1")
    return {name: value}


def suite_as_skill_creator(*, skill_name: str, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """skill-creator's evals.json of the task cases: their `judge` checks are its expectations
    (the other checks have no place there; our own format keeps them)."""
    evals = []
    for number, case in enumerate((c for c in cases if c["kind"] == "task"), start=1):
        evals.append(
            {
                "id": number,
                "prompt": case["prompt"],
                "expected_output": case.get("expected_output", ""),
                "files": [],
                "expectations": [check["judge"] for check in case["expect"] if "judge" in check],
            }
        )
    return {"skill_name": skill_name, "evals": evals}
