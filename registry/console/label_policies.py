"""Label policies in the console: everyone who reads skills sees which labels are protected and
how (a refused move links here); admins (`policies:write`) set and remove them. Writes go through
`registry.services.label_policies`, the same services the API calls."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import path, reverse

from registry.console.access import console_view
from registry.console.errors import on_domain_error
from registry.console.inputs import form_number
from registry.errors import ApplicationError
from registry.models import TokenScope
from registry.roles import ADMIN, ANALYST, AUTHOR
from registry.selectors.label_policies import label_policy_get, label_policy_list
from registry.services.audit import Actor
from registry.services.label_policies import SCAN_MAX_VERDICTS, label_policy_delete, label_policy_set
from registry.services.labels import label_name_check
from registry.templatetags.console import duration_text

READ, WRITE = TokenScope.SKILLS_READ.value, TokenScope.POLICIES_WRITE.value
ROLE_CHOICES = (ADMIN, AUTHOR, ANALYST)


def _page(request, *, values: dict | None = None, errors: dict | None = None, status: int = 200):
    editing = label_policy_get(label=request.GET.get("edit", "")) if request.GET.get("edit") else None
    context = {
        "policies": label_policy_list(),
        "role_choices": ROLE_CHOICES,
        "agent_models": settings.AGENT_MODELS,  # what require_eval.model may name
        "scan_verdicts": SCAN_MAX_VERDICTS,
        "values": values if values is not None else _values_of(editing),
        "errors": errors or {},
    }
    return render(request, "registry/labels/policies.html", context, status=status)


def _values_of(policy) -> dict:
    """The form's fields for `policy` (an empty form for None: a new `production` policy)."""
    if policy is None:
        return {"label": "production", "roles": ["admin"], "not_worse": False, "rollback_window": "7d"}
    evidence, guard = policy.require_eval or {}, policy.guard or {}
    return {
        "label": policy.label,
        "roles": policy.roles,
        "model": evidence.get("model", ""),
        "min_task_rate": _shown(evidence.get("min_task_rate")),
        "min_trigger_f1": _shown(evidence.get("min_trigger_f1")),
        "not_worse": bool(evidence.get("not_worse")),
        "min_n": _shown(guard.get("min_n")),
        "p_worse": _shown(guard.get("p_worse")),
        "rollback_window": duration_text(policy.rollback_window),
        "new_capabilities": policy.new_capabilities == "admin",
        "require_publisher_signature": policy.require_publisher_signature,
        "max_verdict": (policy.require_scan or {}).get("max_verdict", ""),
    }


def _shown(value) -> str:
    return "" if value is None else f"{value:g}"


@console_view(scope=READ)
def label_policies(request):
    return _page(request)


@console_view(scope=WRITE)
def label_policy_save(request):
    """Create or replace the policy the form describes; problems come back beside their field."""
    if request.method != "POST":
        return redirect(reverse("label-policies"))
    post = request.POST
    values = {name: post.get(name, "") for name in ("label", "model", "min_task_rate", "min_trigger_f1")}
    values |= {"min_n": post.get("min_n", ""), "p_worse": post.get("p_worse", "")}
    values |= {"rollback_window": post.get("rollback_window", ""), "max_verdict": post.get("max_verdict", "")}
    values |= {"roles": post.getlist("roles"), "not_worse": post.get("not_worse") == "1"}
    values |= {"new_capabilities": post.get("new_capabilities") == "admin"}
    values |= {"require_publisher_signature": post.get("require_publisher_signature") == "1"}
    on_domain_error(request, lambda error: _page(request, values=values, errors=_errors(error), status=error.status))
    label = label_name_check(values["label"].strip())
    require_eval = None
    if values["model"].strip():
        require_eval = {
            "model": values["model"],
            "min_task_rate": form_number(values["min_task_rate"], field="require_eval.min_task_rate"),
            "min_trigger_f1": form_number(values["min_trigger_f1"], field="require_eval.min_trigger_f1"),
            "not_worse": values["not_worse"],
        }
    guard = None
    if values["min_n"].strip() or values["p_worse"].strip():
        guard = {
            "min_n": form_number(values["min_n"], field="guard.min_n", whole=True),
            "p_worse": form_number(values["p_worse"], field="guard.p_worse"),
        }
    label_policy_set(
        label=label,
        roles=values["roles"],
        require_eval=require_eval,
        guard=guard,
        rollback_window=values["rollback_window"].strip() or None,
        new_capabilities="admin" if values["new_capabilities"] else None,
        require_publisher_signature=values["require_publisher_signature"],
        require_scan={"max_verdict": values["max_verdict"]} if values["max_verdict"] else None,
        actor=Actor(user=request.user, via="console"),
    )
    messages.success(request, f"Saved the policy of {label}.")
    return redirect(reverse("label-policies"))


def _errors(error: ApplicationError) -> dict[str, str]:
    """Problems by form field (`require_eval.min_task_rate` is the `min_task_rate` box)."""
    errors = {field.rsplit(".", 1)[-1]: str(problem) for field, problem in error.fields.items()}
    errors["form"] = error.detail
    return errors


@console_view(scope=WRITE)
def label_policy_remove(request, label: str):
    if request.method != "POST":
        return redirect(reverse("label-policies"))
    label_policy_delete(label=label, actor=Actor(user=request.user, via="console"))
    messages.success(request, f"Removed the policy of {label}: it moves freely again.")
    return redirect(reverse("label-policies"))


urlpatterns = [
    path("labels/policies/", label_policies, name="label-policies"),
    path("labels/policies/save/", label_policy_save, name="label-policy-save"),
    path("labels/policies/<str:label>/remove/", label_policy_remove, name="label-policy-remove"),
]
