"""Force-include rules in the console (SPEC §7, seed 004): the list, the editor with the pattern
checked by RE2 as you type, enable/disable, delete with a confirmation step, and the tester.

Writes go through `registry.services.rules` (validated, audited, atomic) exactly as the API's do;
the tester calls `rules_test`, the resolve the API's `POST /rules/test` and `POST /resolve` run,
so what it shows is what an agent would be given.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse

from registry import selectors
from registry.api.serializers import RulesTestInputSerializer
from registry.console.access import console_view
from registry.console.errors import flash_back, next_url, on_domain_error
from registry.console.inputs import json_from_text, text_problem, whole_number
from registry.errors import ApplicationError
from registry.matching.fired_rule import QUERY_PLACEHOLDER, FiredRule
from registry.matching.patterns import pattern_check, pattern_search
from registry.models import ForceIncludeRule
from registry.selectors.resolve import rules_test
from registry.services.audit import Actor
from registry.services.rules import (
    INSTRUCTION_MAX,
    RULE_NAME_MAX,
    rule_create,
    rule_delete,
    rule_update,
)

READ, WRITE = "skills:read", "rules:write"
SAMPLE_MAX_CHARS = 2000  # the editor's "try it on" text: a query, not a document
_LIST_SEPARATORS = re.compile(r"[\s,]+")

# Service error fields -> the form field the message belongs next to.
_FIELD_FOR = {"auto_invoke": "auto_invoke_tool", "auto_invoke.tool": "auto_invoke_tool"}
_FIELD_FOR["auto_invoke.arguments"] = "auto_invoke_arguments"


def _actor(request) -> Actor:
    return Actor(user=request.user, via="console")


def _rule(rule_id: int) -> ForceIncludeRule:
    return selectors.rule_get(rule_id=rule_id)  # NotFound is the 404 page (console_view)


# --- list ----------------------------------------------------------------------------------


@console_view(scope=READ)
def rule_list(request):
    rows = selectors.rule_rows()
    context = {"rows": rows, "enabled_count": sum(1 for row in rows if row.rule.enabled)}
    return render(request, "registry/rules/list.html", context)


# --- editor --------------------------------------------------------------------------------


@dataclass
class RuleInput:
    """The editor's fields as typed (to show them again) and the values the service is given."""

    name: str = ""
    pattern: str = ""
    skills: list[str] = field(default_factory=list)
    tools: str = ""
    instruction: str = ""
    auto_invoke_tool: str = ""
    auto_invoke_arguments: str = ""
    priority: str = "0"
    enabled: bool = True
    errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_rule(cls, rule: ForceIncludeRule) -> RuleInput:
        auto_invoke = rule.auto_invoke or {}
        arguments = auto_invoke.get("arguments")
        return cls(
            name=rule.name,
            pattern=rule.pattern,
            skills=list(rule.skills),
            tools=", ".join(rule.tools),
            instruction=rule.instruction,
            auto_invoke_tool=auto_invoke.get("tool", ""),
            auto_invoke_arguments=json.dumps(arguments, indent=2, ensure_ascii=False) if arguments else "",
            priority=str(rule.priority),
            enabled=rule.enabled,
        )

    @classmethod
    def from_post(cls, post) -> RuleInput:
        picked = [name.strip() for name in post.getlist("skills") if name.strip()]
        typed = [name for name in _LIST_SEPARATORS.split(post.get("other_skills", "")) if name]
        return cls(
            name=post.get("name", ""),
            pattern=post.get("pattern", ""),
            skills=list(dict.fromkeys(picked + typed)),
            tools=post.get("tools", ""),
            instruction=post.get("instruction", "").replace("\r\n", "\n"),
            auto_invoke_tool=post.get("auto_invoke_tool", "").strip(),
            auto_invoke_arguments=post.get("auto_invoke_arguments", "").strip(),
            priority=post.get("priority", "0").strip(),
            enabled=post.get("enabled") == "on",
        )

    def service_values(self) -> dict[str, Any] | None:
        """What rule_create / rule_update take; None (and `errors` filled) for what the form
        itself can tell is wrong: a priority that is not a number, arguments that are not JSON."""
        priority = whole_number(self.priority)
        if priority is None:
            self.errors["priority"] = "The priority is a whole number; higher fires first."
        if problem := text_problem(self.instruction, what="instruction"):
            self.errors["instruction"] = problem
        auto_invoke = None
        if self.auto_invoke_arguments and not self.auto_invoke_tool:
            self.errors["auto_invoke_tool"] = "Name the tool that auto_invoke calls, or clear its arguments."
        elif self.auto_invoke_tool:
            arguments: Any = {}
            if self.auto_invoke_arguments:
                try:
                    arguments = json_from_text(self.auto_invoke_arguments, field="arguments", what="arguments")
                except ApplicationError as exc:
                    self.errors["auto_invoke_arguments"] = f"Not valid JSON: {exc.detail}"
            auto_invoke = {"tool": self.auto_invoke_tool, "arguments": arguments}
        if self.errors:
            return None
        return {
            "name": self.name,
            "pattern": self.pattern,
            "skills": self.skills,
            "tools": [name for name in _LIST_SEPARATORS.split(self.tools) if name],
            "instruction": self.instruction,
            "auto_invoke": auto_invoke,
            "priority": priority,
            "enabled": self.enabled,
        }

    def add_service_error(self, exc: ApplicationError) -> RuleInput:
        named = [_FIELD_FOR.get(key, key) for key in exc.fields] or ["form"]
        self.errors[named[0]] = exc.detail
        return self


@console_view(scope=WRITE)
def rule_new(request):
    form = RuleInput.from_post(request.POST) if request.method == "POST" else RuleInput()
    if request.method != "POST":
        return _render_editor(request, form, rule=None)
    values = form.service_values()
    if values is None:
        return _render_editor(request, form, rule=None, status=400)
    on_domain_error(
        request, lambda error: _render_editor(request, form.add_service_error(error), rule=None, status=error.status)
    )
    result = rule_create(actor=_actor(request), **values)
    messages.success(request, f"Created rule {result.rule.name}.")
    _flash_warnings(request, result.warnings)
    return redirect(reverse("rule-detail", args=[result.rule.pk]))


@console_view(scope=READ)
def rule_detail(request, rule_id: int):
    """GET: the rule's editor (for those who may write rules) or its fields read-only. POST: save."""
    if request.method == "POST":
        return rule_save(request, rule_id)
    rule = _rule(rule_id)
    return _render_editor(request, RuleInput.from_rule(rule), rule=rule)


@console_view(scope=WRITE)
def rule_save(request, rule_id: int):
    rule = _rule(rule_id)
    form = RuleInput.from_post(request.POST)
    values = form.service_values()
    if values is None:
        return _render_editor(request, form, rule=rule, status=400)
    on_domain_error(
        request, lambda error: _render_editor(request, form.add_service_error(error), rule=rule, status=error.status)
    )
    result = rule_update(rule=rule, actor=_actor(request), **values)
    messages.success(request, f"Saved rule {result.rule.name}.")
    _flash_warnings(request, result.warnings)
    return redirect(reverse("rule-detail", args=[rule.pk]))


def _flash_warnings(request, warnings: tuple[str, ...]) -> None:
    for warning in warnings[:5]:
        messages.warning(request, warning)


def _render_editor(request, form: RuleInput, *, rule: ForceIncludeRule | None, status: int = 200) -> HttpResponse:
    picked = set(form.skills)
    choices = selectors.rule_skill_choices()
    known = {choice.name for choice in choices}
    context = {
        "rule": rule,
        "form": form,
        # Picked skills first, so a rule's own skills are in view above a long registry.
        "choices": sorted(choices, key=lambda choice: choice.name not in picked),
        "unknown_skills": [name for name in form.skills if name not in known],
        "picked": picked,
        "check": _editor_check(form),
        "limits": {"name": RULE_NAME_MAX, "instruction": INSTRUCTION_MAX},
        "placeholder": QUERY_PLACEHOLDER,
    }
    return render(request, "registry/rules/edit.html", context, status=status)


def _editor_check(form: RuleInput) -> PatternResult | None:
    """The pattern's verdict under its field when the page loads (the same box the live check
    fills): the save's error when the save failed on the pattern."""
    if "pattern" in form.errors:
        return PatternResult(ok=False, message=form.errors["pattern"])
    return _pattern_result(form.pattern, "") if form.pattern else None


# --- the pattern, checked as you type -------------------------------------------------------


@dataclass(frozen=True)
class PatternResult:
    ok: bool
    message: str = ""
    sample: str = ""
    matched: str | None = None  # the sample's matched text ("" for an empty match), None: no match
    span: tuple[int, int] | None = None

    @property
    def before(self) -> str:
        return self.sample[: self.span[0]] if self.span else ""

    @property
    def after(self) -> str:
        return self.sample[self.span[1] :] if self.span else ""


def _pattern_result(pattern: str, sample: str) -> PatternResult:
    """RE2's verdict on a pattern, as the rule services would give it on save (the same compile
    and cost probe), and whether it matches the sample query."""
    try:
        compiled = pattern_check(pattern)
    except ApplicationError as exc:
        return PatternResult(ok=False, message=exc.detail)
    found = pattern_search(compiled, sample) if sample else None
    return PatternResult(
        ok=True,
        sample=sample,
        matched=found.text if found else None,
        span=(found.start, found.end) if found else None,
    )


@console_view(scope=WRITE)
def rule_pattern_check(request):
    """The editor's live check (htmx, as you type): RE2's message, or where the sample matches."""
    if request.method != "POST":
        return redirect(reverse("rule-new"))
    pattern = request.POST.get("pattern", "")
    sample = request.POST.get("sample", "")[:SAMPLE_MAX_CHARS]
    return render(request, "registry/rules/edit.html#pattern-check", {"check": _pattern_result(pattern, sample)})


# --- enable / disable, delete ----------------------------------------------------------------


@console_view(scope=WRITE)
def rule_enabled(request, rule_id: int):
    if request.method != "POST":
        return redirect(reverse("rule-detail", args=[rule_id]))
    rule = _rule(rule_id)
    enabled = request.POST.get("enabled") == "1"
    on_domain_error(
        request, lambda error: flash_back(request, f"Rule not changed: {error.detail}", default=reverse("rule-list"))
    )
    rule = rule_update(rule=rule, enabled=enabled, actor=_actor(request)).rule
    messages.success(request, f"{'Enabled' if enabled else 'Disabled'} rule {rule.name}.")
    return redirect(next_url(request, reverse("rule-list")))


@console_view(scope=WRITE)
def rule_remove(request, rule_id: int):
    """POST without `confirm`: the confirmation page; its Confirm button deletes."""
    rule = _rule(rule_id)
    if request.method != "POST" or request.POST.get("confirm") != "1":
        return render(request, "registry/rules/delete_confirm.html", {"rule": rule})
    rule_delete(rule=rule, actor=_actor(request))
    messages.success(request, f"Deleted rule {rule.name}.")
    return redirect(reverse("rule-list"))


# --- the tester ----------------------------------------------------------------------------


@dataclass(frozen=True)
class FiredRuleView:
    fired: FiredRule
    auto_invoke_call: dict[str, Any] | None
    arguments_json: str


@console_view(scope=READ)
def rule_tester(request):
    """Which rules fire for a query and why, the skills listed, the exact prompt block, the
    instructions, and the call each auto_invoke would make: `rules_test`, as the API answers it."""
    given = "query" in request.GET
    typed = {key: request.GET[key] for key in ("query", "label") if request.GET.get(key)}
    body = RulesTestInputSerializer(data={"query": "", **typed})  # the API's input rules, to the letter
    context: dict[str, Any] = {"query": typed.get("query", ""), "label": typed.get("label", ""), "given": given}
    if given and body.is_valid():
        query = body.validated_data["query"]
        result = rules_test(query=query, label=body.validated_data.get("label"))
        fired_ids = {rule.id for rule in result.fired_rules}
        context.update(
            result=result,
            fired=[_fired_view(rule, query) for rule in result.fired_rules],
            not_fired=[row.rule for row in selectors.rule_rows() if row.rule.pk not in fired_ids],
        )
    elif given:
        context["errors"] = {key: " ".join(str(e) for e in value) for key, value in body.errors.items()}
    template = "registry/rules/test.html#test-result" if request.htmx else "registry/rules/test.html"
    return render(request, template, context, status=400 if context.get("errors") else 200)


def _fired_view(rule: FiredRule, query: str) -> FiredRuleView:
    call = rule.auto_invoke_call(query)
    arguments = json.dumps(call["arguments"], indent=2, ensure_ascii=False) if call else ""
    return FiredRuleView(fired=rule, auto_invoke_call=call, arguments_json=arguments)


urlpatterns = [
    path("rules/", rule_list, name="rule-list"),
    path("rules/new/", rule_new, name="rule-new"),
    path("rules/test/", rule_tester, name="rule-test"),
    path("rules/check/", rule_pattern_check, name="rule-pattern-check"),
    path("rules/<int:rule_id>/", rule_detail, name="rule-detail"),
    path("rules/<int:rule_id>/enabled/", rule_enabled, name="rule-enabled"),
    path("rules/<int:rule_id>/delete/", rule_remove, name="rule-delete"),
]
