"""The console's model checks (linked from the catalog's routing page): recent checks and the
start form (authors and admins), one check's skills with the regressed first, and the drift
watch's banner with its dismissal. The services the API and the CLI call."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import path, reverse

from agents.evals.model_check import model_check_current, model_check_start, watch_enabled
from agents.evals.model_check_api import ModelCheckInputSerializer, model_check_detail
from agents.turns.playground import model_choices
from registry.console.access import console_view, user_scopes
from registry.console.errors import flash_back, next_url, on_domain_error
from registry.console.inputs import uuid_or_none
from registry.errors import ApplicationError
from registry.models import ModelCheck
from registry.selectors.model_checks import model_check_get, model_checks_recent
from registry.services.audit import Actor
from registry.services.model_checks import catalog_drift_dismiss

READ, RUN = "skills:read", "agent:run"
FORM_FIELDS = ("label", "candidate_model", "current_model", "repeat")
POLL_EVERY = "2s"


def _page_context(request, **extra: Any) -> dict[str, Any]:
    return {
        "checks": model_checks_recent(limit=30),
        "models": model_choices(),
        "may_run": RUN in user_scopes(request.user),
        "watch_enabled": watch_enabled(),
        "form": {"label": "production", "repeat": "1"},
        "errors": {},
        **extra,
    }


@console_view(scope=READ)
def model_checks_page(request):
    return render(request, "agents/evals/model_checks.html", _page_context(request))


@console_view(scope=RUN)
def model_check_start_view(request):
    if request.method != "POST":
        return redirect(reverse("model-checks"))
    form = {name: request.POST.get(name, "").strip() for name in FORM_FIELDS}

    def refused(errors: dict[str, str], status: int = 400) -> HttpResponse:
        context = _page_context(request, form=form, errors=errors)
        return render(request, "agents/evals/model_checks.html", context, status=status)

    given = QueryDict(mutable=True)  # a form's strings, as the API's serializer reads a form post
    given.update({name: value for name, value in form.items() if value})
    body = ModelCheckInputSerializer(data=given)
    if not body.is_valid():
        return refused({name: " ".join(map(str, problems)) for name, problems in body.errors.items()})
    on_domain_error(request, lambda error: refused(_form_errors(error), error.status))
    check = model_check_start(actor=Actor(user=request.user, via="console"), **body.start_arguments())
    return redirect(reverse("model-check", args=[check.pk]))


def _form_errors(error: ApplicationError) -> dict[str, str]:
    named = {field: error.detail for field in error.fields if field in FORM_FIELDS}
    return named or {"form": error.detail}


def _check(check_id: str) -> ModelCheck:
    parsed = uuid_or_none(check_id)
    if parsed is None:
        raise Http404("No such model check.")
    return model_check_current(check=model_check_get(check_id=parsed))  # NotFound: the 404 page


def _check_context(request, check: ModelCheck) -> dict[str, Any]:
    detail = model_check_detail(check)
    progress = detail["progress"]
    return {
        "check": check,
        "detail": detail,
        "finished": check.is_finished,
        "percent": round(100 * progress["runs_done"] / progress["runs"]) if progress["runs"] else 100,
        "poll_every": POLL_EVERY,
        "may_run": RUN in user_scopes(request.user),
    }


@console_view(scope=READ)
def model_check_page(request, check_id: str):
    check = _check(check_id)
    context = _check_context(request, check)
    if request.htmx:  # the poll: 286 once it ended, so htmx stops asking
        return render(request, "agents/evals/model_check.html#live", context, status=286 if check.is_finished else 200)
    return render(request, "agents/evals/model_check.html", context)


@console_view(scope=RUN)
def drift_dismiss(request, check_id: str):
    check = _check(check_id)
    back = reverse("model-check", args=[check.pk])
    if request.method == "POST":
        on_domain_error(request, lambda error: flash_back(request, f"Not dismissed: {error.detail}", default=back))
        catalog_drift_dismiss(check=check, actor=Actor(user=request.user, via="console"))
    return redirect(next_url(request, back))


urlpatterns = [
    path("catalog/model-checks/", model_checks_page, name="model-checks"),
    path("catalog/model-checks/start", model_check_start_view, name="model-check-start"),
    path("catalog/model-checks/<str:check_id>/", model_check_page, name="model-check"),
    path("catalog/model-checks/<str:check_id>/dismiss", drift_dismiss, name="model-check-dismiss"),
]
