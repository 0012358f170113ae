"""Evals in the console: a skill's suite as an editable table, the run form, the run page that
fills in live, the compare view, and "Save as eval case" on a playground turn.

The suite is registry state and is read and replaced through the same selectors and services the
API uses (`GET|PUT /api/v1/skills/{name}/evals`): every save is a new suite revision, audited,
and a service's problem comes back beside the case and field it names. Runs dispatch agent turns,
so these pages live in the agents app, like the playground. Scopes are the API's: reading needs
`skills:read` (analysts), editing `skills:write`, starting or cancelling a run `agent:run`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.http import urlencode
from django_htmx.http import reswap, retarget

from agents.evals import runner as eval_runner
from agents.evals.api import RunInputSerializer
from agents.evals.cases import case_from_turn
from agents.turns import selectors as turn_selectors
from agents.turns.playground import _turn, model_choices
from registry import selectors
from registry.console.access import console_view, user_scopes
from registry.console.errors import flash_back, on_domain_error
from registry.console.inputs import json_from_bytes, json_from_text, text_problem, uuid_or_none, whole_number
from registry.errors import ApplicationError
from registry.models import EvalRun, Skill, eval_run_turns
from registry.roles import acting_role, user_roles
from registry.selectors import evals as eval_selectors
from registry.selectors import suite_reviews as review_selectors
from registry.selectors.versions import label_names_in_use, skill_version_numbers
from registry.services import evals as eval_services
from registry.services.audit import Actor
from registry.services.suite_reviews import eval_suite_revision_accept

READ, WRITE, RUN = "skills:read", "skills:write", "agent:run"
POLL_EVERY = "1s"
RUNS_SHOWN = 20
EXPORT_FORMATS = ("cases", "skill-creator")
KINDS = ("trigger", "task")
RUN_FIELDS = ("version", "label", "model", "repeat", "baseline")  # the run form's; others go above it
# A service names a bad case's field as `cases[3].expect[0]` or `cases.3.query`: the field is the
# first name after the case's index.
_CASE_FIELD = re.compile(r"cases[\[.](\d+)\]?\.?([a-z_]+)?")
EXPECT_EXAMPLE = '[{"skill_loaded": "…"}, {"answer_matches": "(?i)…"}, {"max_steps": 6}]'
SCRIPT_EXAMPLE = '[{"tool_calls": [{"name": "read_skill", "arguments": {"skill_name": "…"}}]}, {"content": "…"}]'


def _actor(request) -> Actor:
    return Actor(user=request.user, via="console")


def _role(request) -> str:
    """The role a suite change is made as: it decides whether the change is accepted as made."""
    return acting_role(user_roles(request.user))


# --- the suite ----------------------------------------------------------------------------


@dataclass
class CaseInput:
    """One case as the table's row form posts it; `case()` is the JSON the suite stores."""

    original_id: str = ""
    id: str = ""
    kind: str = "trigger"
    query: str = ""
    should_trigger: bool = True
    prompt: str = ""
    expect: str = ""
    script: str = ""
    revision: str = ""  # the suite revision the form was opened on (blank: the current one)
    errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_post(cls, post) -> CaseInput:
        return cls(
            original_id=post.get("original_id", "").strip(),
            id=post.get("id", "").strip(),
            kind=post.get("kind", "").strip(),
            query=post.get("query", ""),
            should_trigger=post.get("should_trigger") == "on",
            prompt=post.get("prompt", ""),
            expect=post.get("expect", "").strip(),
            script=post.get("script", "").strip(),
            revision=post.get("revision", "").strip()[:9],
        )

    @classmethod
    def from_case(cls, case: dict[str, Any]) -> CaseInput:
        return cls(
            original_id=str(case.get("id", "")),
            id=str(case.get("id", "")),
            kind=str(case.get("kind", "trigger")),
            query=str(case.get("query", "")),
            should_trigger=bool(case.get("should_trigger", True)),
            prompt=str(case.get("prompt", "")),
            expect=json.dumps(case["expect"], indent=1, ensure_ascii=False) if case.get("expect") else "",
            script=json.dumps(case["script"], indent=1, ensure_ascii=False) if case.get("script") else "",
        )

    def case(self) -> dict[str, Any] | None:
        """The case, or None with `errors` naming each field the form itself can judge."""
        self.errors = {}
        for name in ("id", "query", "prompt", "expect", "script"):
            if problem := text_problem(getattr(self, name), what=name):
                self.errors[name] = problem
        if not self.id:
            self.errors["id"] = "Give the case an id, e.g. t-review-pr."
        if self.kind not in KINDS:
            self.errors["kind"] = "Choose trigger or task."
        if self.errors:
            return None
        case: dict[str, Any]
        if self.kind == "trigger":
            case = {"id": self.id, "kind": "trigger", "query": self.query, "should_trigger": self.should_trigger}
            json_fields: tuple[str, ...] = ("script",)
        else:
            case = {"id": self.id, "kind": "task", "prompt": self.prompt}
            json_fields = ("expect", "script")
        # The form shows the script (the scripted model's steps) for both kinds: a field it shows
        # and this leaves out is dropped from the case on every save.
        for name in json_fields:
            text = getattr(self, name)
            if not text:
                continue
            try:
                case[name] = json_from_text(text, field=name, what=name)
            except ApplicationError as error:
                self.errors[name] = error.detail
        return None if self.errors else case


def _skill(name: str) -> Skill:
    return selectors.skill_get(name=name)  # NotFound: the 404 page


def _suite_cases(skill: Skill) -> tuple[list[dict[str, Any]], int]:
    """The suite's cases and revision number (0: no suite yet)."""
    revision = eval_selectors.eval_suite_revision(skill=skill)
    return (list(revision.cases), revision.number) if revision is not None else ([], 0)


def _suite_replace(request, skill: Skill, cases: list[dict[str, Any]]) -> int:
    """Save the cases as the suite's new revision, as `PUT /api/v1/skills/{name}/evals` does. The
    table's row form saves the whole list rather than one case by id: it renames cases in place,
    and adding a case under an id already in use must be refused, not replace that case."""
    revision = eval_services.eval_suite_replace(
        skill=skill, document={"cases": cases}, actor=_actor(request), role=_role(request)
    )
    return revision.number


def _field_of(error: ApplicationError, cases: list[dict[str, Any]]) -> tuple[str | None, str]:
    """The case id and form field a service's error names (`cases[2].query` → the third case's query)."""
    for name in error.fields or {}:
        found = _CASE_FIELD.match(str(name))
        if found:
            index = int(found.group(1))
            case_id = str(cases[index].get("id", "")) if index < len(cases) else None
            return case_id, found.group(2) or "id"
    return None, next(iter(error.fields or {}), "")


@console_view(scope=READ)
def suite_page(request, name: str):
    """GET: the suite, the run form and recent runs; `?edit=<id>` shows that case as a form and
    `?add=trigger|task` a new one (as a row fragment for htmx)."""
    skill = _skill(name)
    cases, revision = _suite_cases(skill)
    editing = None
    if WRITE in user_scopes(request.user):
        if request.GET.get("edit"):
            found = next((case for case in cases if str(case.get("id")) == request.GET["edit"]), None)
            if found is None:
                raise Http404("No such case in this suite.")
            editing = CaseInput.from_case(found)
        elif request.GET.get("add") in KINDS:
            editing = CaseInput(kind=request.GET["add"])
    if request.htmx and editing is not None:
        fragment = "case-form-row" if editing.original_id else "add-row"
        return render(request, f"agents/evals/suite.html#{fragment}", _suite_context(request, skill, editing=editing))
    return render(request, "agents/evals/suite.html", _suite_context(request, skill, editing=editing))


def _suite_context(
    request,
    skill,
    *,
    editing: CaseInput | None = None,
    import_error: str = "",
    run_form: RunInput | None = None,
    run_errors: dict[str, str] | None = None,
    saved: str = "",
) -> dict[str, Any]:
    scopes = user_scopes(request.user)
    cases, revision = _suite_cases(skill)
    may_run = RUN in scopes
    run_form = run_form or RunInput(model=settings.AGENT_MODEL, repeat="1")
    # The cost shown beside the form, for the repeats it was sent with (1 when they are not a number).
    repeat = whole_number(run_form.repeat) or 1
    return {
        "skill": skill,
        "cases": cases,
        "revision": revision,
        "trigger_count": sum(1 for case in cases if case.get("kind") == "trigger"),
        "task_count": sum(1 for case in cases if case.get("kind") == "task"),
        "editing": editing,
        "may_edit": WRITE in scopes,
        "may_run": may_run,
        "import_error": import_error,
        "runs": eval_selectors.eval_runs_of_skill(skill=skill, limit=RUNS_SHOWN),
        "run_form": run_form,
        "run_repeat": repeat,
        "run_turns": eval_run_turns(cases=len(cases), repeat=repeat, baseline=run_form.baseline),
        "max_active_runs": settings.EVAL_MAX_ACTIVE_RUNS_PER_USER,
        "max_queued_turns": f"{settings.EVAL_MAX_QUEUED_TURNS:,}",
        "run_errors": run_errors or {},
        "run_fields": RUN_FIELDS,
        "models": model_choices() if may_run else [],
        "versions": skill_version_numbers(name=skill.name),
        "label_names": label_names_in_use(),
        "saved": saved,
        "review": _suite_review(request, skill),
        "max_repeat": eval_services.MAX_REPEAT,
        "expect_example": EXPECT_EXAMPLE,
        "script_example": SCRIPT_EXAMPLE,
    }


def _suite_review(request, skill: Skill) -> dict[str, Any] | None:
    """The newest revision's standing when it is a proposal the eval gates do not count (None:
    accepted, or no suite): who proposed it, the revision they count instead, who may accept."""
    revision = eval_selectors.eval_suite_revision(skill=skill)
    if revision is None or revision.accepted:
        return None
    counted = review_selectors.eval_suite_accepted_revision(skill=skill)
    reviewers = review_selectors.suite_reviewers()
    return {
        "revision": revision,
        "counted": counted.number if counted else None,
        "labels": reviewers.labels if reviewers else (),
        "roles": sorted(reviewers.roles) if reviewers else [],
        "may_accept": WRITE in user_scopes(request.user) and review_selectors.suite_role_accepts(role=_role(request)),
    }


@console_view(scope=WRITE)
def suite_accept(request, name: str, number: int):
    """Accept a proposed suite revision, through the service `POST .../evals/revisions/{n}/accept` calls."""
    skill = _skill(name)
    suite_url = reverse("eval-suite", args=[skill.name])
    if request.method != "POST":
        return redirect(suite_url)
    on_domain_error(request, lambda error: flash_back(request, f"Not accepted: {error.detail}", default=suite_url))
    eval_suite_revision_accept(skill=skill, number=number, actor=_actor(request), role=_role(request))
    messages.success(
        request, f"Accepted suite revision {number}: the eval gates count runs on it, those made before too."
    )
    return redirect(suite_url)


def _suite_answer(request, skill, *, saved: str) -> HttpResponse:
    """After a save: the table again for htmx, else the page (a redirect, so a reload posts nothing)."""
    if request.htmx:  # the row form asked to replace its row: the whole table changes instead
        response = render(request, "agents/evals/suite.html#suite", _suite_context(request, skill, saved=saved))
        return reswap(retarget(response, "#suite"), "outerHTML")
    messages.success(request, saved)
    return redirect(reverse("eval-suite", args=[skill.name]))


def _case_refused(request, skill, form: CaseInput, *, status: int = 400) -> HttpResponse:
    """The row form again with each problem beside its field."""
    context = _suite_context(request, skill, editing=form)
    if request.htmx:
        fragment = "case-form-row" if form.original_id else "add-row"
        return render(request, f"agents/evals/suite.html#{fragment}", context, status=status)
    return render(request, "agents/evals/suite.html", context, status=status)


@console_view(scope=WRITE)
def case_save(request, name: str):
    """Add a case or replace one (by its original id): the whole suite is saved as a new revision,
    as `PUT /api/v1/skills/{name}/evals` saves it."""
    skill = _skill(name)
    if request.method != "POST":
        return redirect(reverse("eval-suite", args=[skill.name]))
    form = CaseInput.from_post(request.POST)
    case = form.case()
    if case is None:
        return _case_refused(request, skill, form)
    cases, _ = _suite_cases(skill)
    if form.original_id:
        index = next((i for i, known in enumerate(cases) if str(known.get("id")) == form.original_id), None)
        if index is None:
            form.errors["id"] = "This case is no longer in the suite (someone removed it); add it again."
            return _case_refused(request, skill, form, status=409)
        # Other cases may have changed since the form opened (only this one is replaced); this one
        # must not have, or someone's edit would be lost without a word.
        opened = _case_at(skill, revision=whole_number(form.revision), case_id=form.original_id)
        if opened is not None and opened != cases[index]:
            form.errors["id"] = (
                f"Someone changed case {form.original_id} since you opened it. Your text is kept here: "
                "open the case again to see theirs, then save yours over it if it should win."
            )
            return _case_refused(request, skill, form, status=409)
        # Fields the row form does not show (a task case's judge_script, expected_output) are kept.
        kept = {key: value for key, value in cases[index].items() if key not in _FORM_FIELDS}
        cases[index] = {**kept, **case} if cases[index].get("kind") == case["kind"] else case
    else:
        cases.append(case)

    def refused(error: ApplicationError) -> HttpResponse:
        # The message names the case and field; it goes beside that field when it is this case's.
        case_id, field_name = _field_of(error, cases)
        mine = case_id in (None, form.id) and field_name in _FORM_FIELDS
        form.errors[field_name if mine else "id"] = error.detail
        return _case_refused(request, skill, form, status=error.status)

    on_domain_error(request, refused)
    number = _suite_replace(request, skill, cases)
    verb = "Changed" if form.original_id else "Added"
    return _suite_answer(request, skill, saved=f"{verb} case {form.id}: suite revision {number}.")


_FORM_FIELDS = {"id", "kind", "query", "should_trigger", "prompt", "expect", "script"}


def _case_at(skill: Skill, *, revision: int | None, case_id: str) -> dict[str, Any] | None:
    """The case as the suite's revision `revision` held it (None: no such revision or case)."""
    stored = eval_selectors.eval_suite_revision(skill=skill, number=revision) if revision else None
    return next((case for case in stored.cases if case.get("id") == case_id), None) if stored else None


@console_view(scope=WRITE)
def case_delete(request, name: str):
    skill = _skill(name)
    if request.method != "POST":
        return redirect(reverse("eval-suite", args=[skill.name]))
    case_id = request.POST.get("id", "")
    revision = eval_services.eval_suite_case_delete(
        skill=skill, case_id=case_id, actor=_actor(request), role=_role(request)
    )
    return _suite_answer(request, skill, saved=f"Deleted case {case_id}: suite revision {revision.number}.")


MAX_IMPORT_BYTES = 2 * 1024 * 1024


@console_view(scope=WRITE)
def suite_import(request, name: str):
    """Replace the suite with an uploaded `evals.json`: ours (`{"cases": [...]}`) or
    skill-creator's (`{"evals": [...]}`), read by the same service as the API's import."""
    skill = _skill(name)
    if request.method != "POST":
        return redirect(reverse("eval-suite", args=[skill.name]))

    def refused(problem: str, status: int = 400) -> HttpResponse:
        context = _suite_context(request, skill, import_error=problem)
        return render(request, "agents/evals/suite.html", context, status=status)

    upload = request.FILES.get("evals_file")
    if upload is None:
        return refused("Choose an evals.json file.")
    if upload.size > MAX_IMPORT_BYTES:
        return refused(f"The file is over {MAX_IMPORT_BYTES // 1024 // 1024} MB.")
    # The file's problem, or the service's naming the case and the field ("Case 't-x': query is
    # required"), comes back on the page.
    on_domain_error(request, lambda error: refused(error.detail, error.status))
    document = json_from_bytes(upload.read(), field="evals_file", what="file")
    revision = eval_services.eval_suite_replace(
        skill=skill, document=document, actor=_actor(request), role=_role(request)
    )
    messages.success(
        request, f"Imported {len(revision.cases)} cases from {upload.name}: suite revision {revision.number}."
    )
    return redirect(reverse("eval-suite", args=[skill.name]))


@console_view(scope=READ)
def suite_export(request, name: str):
    """The suite as `evals.json` to keep in the skill's folder: ours, or `?format=skill-creator`."""
    skill = _skill(name)
    format = request.GET.get("format", "cases")
    if format not in EXPORT_FORMATS:
        raise Http404(f"No export format {format[:40]!r}.")
    document = (
        eval_selectors.eval_suite_skill_creator(skill=skill)
        if format == "skill-creator"
        else {"cases": eval_selectors.eval_suite_cases(skill=skill)}
    )
    response = HttpResponse(json.dumps(document, indent=2, ensure_ascii=False) + "\n", content_type="application/json")
    response["Content-Disposition"] = 'attachment; filename="evals.json"'
    return response


# --- runs ---------------------------------------------------------------------------------


@dataclass
class RunInput:
    target: str = "label"  # "version" or "label"
    version: str = ""
    label: str = ""
    model: str = ""
    repeat: str = "1"
    baseline: bool = False

    @classmethod
    def from_post(cls, post) -> RunInput:
        return cls(
            target=post.get("target", "label"),
            version=post.get("version", "").strip(),
            label=post.get("label", "").strip(),
            model=post.get("model", "").strip(),
            repeat=post.get("repeat", "1").strip() or "1",
            baseline=post.get("baseline") == "on",
        )

    def api_input(self) -> QueryDict:
        """The form as the API's run input: the version or the label, as the target radio says."""
        body = QueryDict(mutable=True)
        body.update({"model": self.model, "repeat": self.repeat, "baseline": "true" if self.baseline else "false"})
        if self.target == "version":
            body["version"] = self.version
        elif self.label:
            body["label"] = self.label
        return body


@console_view(scope=RUN)
def run_start(request, name: str):
    skill = _skill(name)
    if request.method != "POST":
        return redirect(reverse("eval-suite", args=[skill.name]))
    form = RunInput.from_post(request.POST)

    def refused(problems: dict[str, str], status: int = 400) -> HttpResponse:
        context = _suite_context(request, skill, run_form=form, run_errors=problems)
        return render(request, "agents/evals/suite.html", context, status=status)

    if form.target == "version" and not form.version:  # none given, the API would run production
        return refused({"version": "Choose a version."})
    # The API's input rules and the service's decide, so a problem reads as the API words it.
    body = RunInputSerializer(data=form.api_input())
    if not body.is_valid():
        return refused({name: " ".join(map(str, problems)) for name, problems in body.errors.items()})
    on_domain_error(request, lambda error: refused({_run_field(error): error.detail}, error.status))
    run = eval_runner.eval_run_queue(skill_name=skill.name, actor=_actor(request), **body.queue_arguments())
    return redirect(reverse("eval-run", args=[run.pk]))


def _run_field(error: ApplicationError) -> str:
    named = next(iter(error.fields or {}), "")
    return named if named in RUN_FIELDS else "run"


def _run(run_id: str) -> EvalRun:
    parsed = uuid_or_none(run_id)
    if parsed is None:
        raise Http404("No such eval run.")
    return eval_selectors.eval_run_get(run_id=parsed)  # NotFound: the 404 page


def _run_context(run: EvalRun) -> dict[str, Any]:
    detail = eval_selectors.eval_run_detail(run=run)
    progress = detail.progress
    return {
        "run": run,
        "progress": progress,
        "summary": detail.summary,
        "results": detail.results,
        "finished": run.is_finished,
        "percent": round(100 * progress["done"] / progress["total"]) if progress["total"] else 0,
        "poll_every": POLL_EVERY,
    }


@console_view(scope=READ)
def run_page(request, run_id: str):
    run = _run(run_id)
    earlier = [
        other
        for other in eval_selectors.eval_runs_of_skill(skill=run.skill, limit=RUNS_SHOWN)
        if other.created_at < run.created_at
    ]
    context = {
        **_run_context(run),
        "may_run": RUN in user_scopes(request.user),
        "previous": earlier[0] if earlier else None,
    }
    return render(request, "agents/evals/run.html", context)


@console_view(scope=READ)
def run_live(request, run_id: str):
    """The poll: progress, summary and cases; 286 once the run has ended, so htmx stops asking."""
    run = _run(run_id)
    if not request.htmx:
        return redirect(reverse("eval-run", args=[run.pk]))
    context = {**_run_context(run), "may_run": RUN in user_scopes(request.user)}
    return render(request, "agents/evals/run.html#live", context, status=286 if context["finished"] else 200)


@console_view(scope=RUN)
def run_cancel(request, run_id: str):
    run = _run(run_id)
    if request.method == "POST":
        back = reverse("eval-run", args=[run.pk])
        on_domain_error(request, lambda error: flash_back(request, f"Not cancelled: {error.detail}", default=back))
        eval_runner.eval_run_cancel(run=run, actor=_actor(request))
        messages.info(request, "Cancelled: the cases not yet graded will not run.")
    return redirect(reverse("eval-run", args=[run.pk]))


@console_view(scope=READ)
def run_compare(request):
    """Two runs side by side: `?a=&b=` (b is the one asked about: "is b better than a?")."""
    run_a, run_b = _run(request.GET.get("a", "")), _run(request.GET.get("b", ""))
    a, b = _run_context(run_a), _run_context(run_b)
    context = {
        "a": a,
        "b": b,
        "sides": [("a", a), ("b", b)],
        "comparison": eval_selectors.eval_runs_compare(a=run_a, b=run_b, results=(a["results"], b["results"])),
        "others": eval_selectors.eval_runs_of_skill(skill=run_a.skill, limit=RUNS_SHOWN),
    }
    return render(request, "agents/evals/compare.html", context)


# --- "Save as eval case" on a playground turn ----------------------------------------------


@console_view(scope=WRITE)
def turn_save_case(request, turn_id: str):
    """Add a case built from a playground turn to a skill's suite, then open it for editing."""
    if RUN not in user_scopes(request.user):  # the turn is read with the turn API's scope
        raise Http404("No such turn.")
    turn = _turn(request, turn_id)
    page = f"{reverse('playground')}?{urlencode({'turn': str(turn.pk)})}"
    if request.method != "POST":
        return redirect(page)
    skill_name = request.POST.get("skill", "").strip()
    kind = request.POST.get("kind", "")
    if kind not in KINDS or not skill_name or text_problem(skill_name, what="skill name"):
        return flash_back(request, "Choose a skill and whether the case is a trigger or a task case.", default=page)
    skill = _skill(skill_name)
    cases, _ = _suite_cases(skill)
    case = case_from_turn(
        turn=turn,
        skill=skill.name,
        kind=kind,
        events=turn_selectors.turn_trace_events(turn=turn),
        taken={str(known.get("id")) for known in cases},
    )
    on_domain_error(
        request, lambda error: flash_back(request, f"Not saved as an eval case: {error.detail}", default=page)
    )
    eval_services.eval_suite_case_save(skill=skill, case=case, actor=_actor(request), role=_role(request))
    messages.success(request, f"Saved as {kind} case {case['id']} in {skill.name}'s suite: check it and adjust.")
    return redirect(f"{reverse('eval-suite', args=[skill.name])}?{urlencode({'edit': case['id']})}#case-{case['id']}")


urlpatterns = [
    path("skills/<str:name>/evals/", suite_page, name="eval-suite"),
    path("skills/<str:name>/evals/cases/", case_save, name="eval-case-save"),
    path("skills/<str:name>/evals/cases/delete/", case_delete, name="eval-case-delete"),
    path("skills/<str:name>/evals/import/", suite_import, name="eval-suite-import"),
    path("skills/<str:name>/evals/revisions/<int:number>/accept/", suite_accept, name="eval-suite-accept"),
    path("skills/<str:name>/evals/evals.json", suite_export, name="eval-suite-export"),
    path("skills/<str:name>/evals/runs/", run_start, name="eval-run-start"),
    path("evals/runs/compare/", run_compare, name="eval-run-compare"),
    path("evals/runs/<str:run_id>/", run_page, name="eval-run"),
    path("evals/runs/<str:run_id>/live/", run_live, name="eval-run-live"),
    path("evals/runs/<str:run_id>/cancel/", run_cancel, name="eval-run-cancel"),
    path("playground/turns/<str:turn_id>/eval-case/", turn_save_case, name="playground-eval-case"),
]
