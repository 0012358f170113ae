"""System checks (`manage.py check`, run by migrate and runserver): say at start-up when
run_skill cannot run scripts, or runs them unconfined, rather than at the first turn."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Warning, register

from agents.runtime.sandbox import Isolation, sandbox_problem


@register()
def run_skill_sandbox_check(app_configs: Any, **kwargs: Any) -> list[Warning]:
    isolation = Isolation(settings.RUN_SKILL_SANDBOX)
    if isolation is Isolation.NONE:
        return [
            Warning(
                "RUN_SKILL_SANDBOX=none: skill scripts run unconfined as the worker's user.",
                hint="Install bubblewrap and unset RUN_SKILL_SANDBOX unless every skill author is trusted.",
                id="agents.W002",
            )
        ]
    problem = sandbox_problem(isolation)
    if problem:
        return [Warning(problem, hint="run_skill and code skills will refuse to run scripts.", id="agents.W001")]
    return []
