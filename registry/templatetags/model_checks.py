"""The drift watch's banner, for the pages authors and admins land on (dashboard, routing, model
checks): the newest watch found a skill worse than its last accepted run, and nobody dismissed it."""

from __future__ import annotations

from typing import Any

from django import template

from registry.roles import ROLE_SCOPES, user_roles
from registry.selectors.model_checks import catalog_drift_current

register = template.Library()
# Who sees it: whoever may act on it (authors and admins run evals); analysts read the reports.
SEES_DRIFT = "agent:run"
FIGURE_NAMES = {"trigger_f1": "trigger F1", "task_rate": "task rate"}


@register.inclusion_tag("registry/catalog/_drift_banner.html", takes_context=True)
def drift_banner(context) -> dict[str, Any]:
    request = context.get("request")
    user = getattr(request, "user", None)
    if not any(SEES_DRIFT in ROLE_SCOPES[role] for role in user_roles(user)):
        return {"drift": None}
    drift = catalog_drift_current()
    rows = (drift.report or {}).get("skills", []) if drift else []
    skills = [
        {"name": row["name"], "worse": ", ".join(FIGURE_NAMES.get(name, name) for name in row["worse_in"])}
        for row in rows
        if row["regressed"]
    ]
    return {"drift": drift, "skills": skills, "request": request, "csrf_token": context.get("csrf_token")}
