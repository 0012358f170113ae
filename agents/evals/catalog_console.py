"""Catalog eval runs in the console (docs/analysts/catalog-routing.md): the runs and the form that
starts one (authors and admins: `agent:run`), and a run's page, which fills in live: the
confusion matrix of only the skills in some confusion, and the collisions with both
descriptions side by side and the turns behind each. Reads and writes through the API's
selectors and runner; analysts read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import path, reverse

from agents.evals import catalog_runner
from agents.evals.catalog_api import CatalogRunInputSerializer, catalog_run_detail
from agents.turns.playground import model_choices
from registry.console.access import console_view, user_scopes
from registry.console.errors import flash_back, on_domain_error
from registry.console.inputs import uuid_or_none
from registry.models import CatalogEvalRun
from registry.selectors import catalog_evals as selectors
from registry.selectors.versions import label_names_in_use
from registry.services.audit import Actor
from registry.services.evals import MAX_REPEAT

READ, RUN = "skills:read", "agent:run"
POLL_EVERY = "1s"
RUNS_SHOWN = 20
FIELDS = ("label", "model", "repeat")


@dataclass
class CatalogRunInput:
    label: str = ""
    model: str = ""
    repeat: str = "1"

    @classmethod
    def from_post(cls, post) -> CatalogRunInput:
        return cls(
            label=post.get("label", "").strip(),
            model=post.get("model", "").strip(),
            repeat=post.get("repeat", "1").strip() or "1",
        )

    def api_input(self) -> QueryDict:
        body = QueryDict(mutable=True)
        body.update({"label": self.label, "model": self.model, "repeat": self.repeat})
        return body


def _runs_context(request, form: CatalogRunInput, errors: dict[str, str]) -> dict[str, Any]:
    return {
        "runs": selectors.catalog_eval_runs_recent(limit=RUNS_SHOWN),
        "may_run": RUN in user_scopes(request.user),
        "form": form,
        "errors": errors,
        "fields": FIELDS,
        "models": model_choices(),
        "label_names": label_names_in_use(),
        "max_repeat": MAX_REPEAT,
        "max_active_runs": settings.EVAL_MAX_ACTIVE_RUNS_PER_USER,
        "max_queued_turns": f"{settings.EVAL_MAX_QUEUED_TURNS:,}",
    }


@console_view(scope=READ)
def catalog_evals_page(request):
    return render(request, "agents/evals/catalog.html", _runs_context(request, CatalogRunInput(), {}))


@console_view(scope=RUN)
def catalog_eval_start(request):
    if request.method != "POST":
        return redirect(reverse("catalog-evals"))
    form = CatalogRunInput.from_post(request.POST)

    def refused(problems: dict[str, str], status: int = 400) -> HttpResponse:
        return render(request, "agents/evals/catalog.html", _runs_context(request, form, problems), status=status)

    body = CatalogRunInputSerializer(data=form.api_input())
    if not body.is_valid():
        return refused({name: " ".join(map(str, problems)) for name, problems in body.errors.items()})
    on_domain_error(request, lambda error: refused({_field(error): error.detail}, error.status))
    run = catalog_runner.catalog_eval_run_queue(actor=Actor(user=request.user, via="console"), **body.queue_arguments())
    return redirect(reverse("catalog-eval-run", args=[run.pk]))


def _field(error) -> str:
    named = next(iter(error.fields or {}), "")
    return named if named in FIELDS else "run"


def _run(run_id: str) -> CatalogEvalRun:
    parsed = uuid_or_none(run_id)
    if parsed is None:
        raise Http404("No such catalog eval run.")
    return selectors.catalog_eval_run_get(run_id=parsed)  # NotFound: the 404 page


@console_view(scope=READ)
def catalog_eval_run_page(request, run_id: str):
    """The run; its htmx poll gets the live part, and 286 once the run has ended so polling stops."""
    run = _run(run_id)
    detail = catalog_run_detail(run)
    progress = detail["progress"]
    context = {
        "run": run,
        "detail": detail,
        "grid": selectors.catalog_eval_grid(detail),
        "finished": run.is_finished,
        "percent": round(100 * progress["done"] / progress["total"]) if progress["total"] else 0,
        "poll_every": POLL_EVERY,
        "may_run": RUN in user_scopes(request.user),
    }
    if request.htmx:
        status = 286 if run.is_finished else 200
        return render(request, "agents/evals/catalog_run.html#live", context, status=status)
    return render(request, "agents/evals/catalog_run.html", context)


@console_view(scope=RUN)
def catalog_eval_run_cancel(request, run_id: str):
    run = _run(run_id)
    back = reverse("catalog-eval-run", args=[run.pk])
    if request.method == "POST":
        on_domain_error(request, lambda error: flash_back(request, f"Not cancelled: {error.detail}", default=back))
        catalog_runner.catalog_eval_run_cancel(run=run, actor=Actor(user=request.user, via="console"))
        messages.info(request, "Cancelled: the cases not yet graded will not run.")
    return redirect(back)


urlpatterns = [
    path("catalog/evals/", catalog_evals_page, name="catalog-evals"),
    path("catalog/evals/runs/", catalog_eval_start, name="catalog-eval-start"),
    path("catalog/evals/runs/<str:run_id>/", catalog_eval_run_page, name="catalog-eval-run"),
    path("catalog/evals/runs/<str:run_id>/cancel/", catalog_eval_run_cancel, name="catalog-eval-run-cancel"),
]
