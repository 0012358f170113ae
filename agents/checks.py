"""System checks (`manage.py check`, run by migrate and runserver): say at start-up when
run_skill cannot run scripts, or runs them unconfined, rather than at the first turn; and the
model settings, refused at start-up (every process, from AgentsConfig.ready) when a turn could
not use them."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Warning, register
from django.core.exceptions import ImproperlyConfigured

from agents.model_strings import SCRIPTED, model_string_problem
from agents.runtime.cgroups import cgroup_problem
from agents.runtime.sandbox import Isolation, sandbox_problem

NO_CGROUP_HINT = (
    "Each run is still bounded per process (address space, file size, processes) and its files by its "
    "64 MB tmpfs, but not in total: run the worker as root or in a delegated cgroup (docs/operators/sandbox.md)."
)


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
    problem = run_skill_memory_problem()
    if problem:
        return [Warning(problem, hint=NO_CGROUP_HINT, id="agents.W003")]
    return []


def run_skill_memory_problem() -> str | None:
    """Why RUN_SKILL_MEMORY_BYTES cannot bound skill script runs on this machine, or None when
    it does; said by `manage.py check` and by the worker when it starts."""
    problem = cgroup_problem() if settings.RUN_SKILL_SANDBOX == Isolation.BWRAP else None
    if problem is None:
        return None
    return f"skill script runs get no memory cgroup, so RUN_SKILL_MEMORY_BYTES does not apply: {problem}"


def agent_model_settings_check() -> None:
    """Raise ImproperlyConfigured naming the setting when AGENT_MODEL, AGENT_MODELS or
    EVAL_JUDGE_MODEL names a model a turn may not use, or the judge is scripted while
    AGENT_ALLOW_SCRIPTED is off."""
    judge = [settings.EVAL_JUDGE_MODEL] if settings.EVAL_JUDGE_MODEL else []
    for name, models in (
        ("AGENT_MODEL", [settings.AGENT_MODEL]),
        ("AGENT_MODELS", settings.AGENT_MODELS),
        ("EVAL_JUDGE_MODEL", judge),
    ):
        for model in models:
            if problem := model_string_problem(model):
                raise ImproperlyConfigured(f"{name} names {model!r}, which a turn may not use: {problem}.")
    if settings.EVAL_JUDGE_MODEL.partition("/")[0] == SCRIPTED and not settings.AGENT_ALLOW_SCRIPTED:
        # A scripted judge grades as the suite's own script says: no evidence where that is refused.
        raise ImproperlyConfigured("EVAL_JUDGE_MODEL may be scripted only while AGENT_ALLOW_SCRIPTED is on.")
