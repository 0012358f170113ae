"""What a model change would break: every skill served at a label runs its eval suite (trigger and
task cases) on the current model and on a candidate, as ordinary eval runs grouped by a model
check (registry/models/model_checks.py), and the report says per skill whether the candidate is
worse beyond chance. The drift watch is the same with one side: AGENT_MODEL now against each
skill's last accepted run, on beat's CATALOG_WATCH_CRON.

A check ends when its runs have: `model_checks_advance` stores the report of every check whose
runs all ended. The worker's reaper calls it every round; the API, the console and the CLI call
it before they read a check, so a reader never waits for the reaper."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from agents.evals.runner import eval_run_queue
from agents.turns.services import agent_model_check, agent_turn_label_check
from registry.errors import ApplicationError
from registry.models import ModelCheck, ModelCheckKind, ModelCheckSide, eval_run_turns
from registry.readmodel.snapshot import registry_snapshot
from registry.selectors.evals import eval_suite_revision
from registry.selectors.model_checks import model_checks_unfinished
from registry.selectors.skills import skill_get
from registry.services.audit import SYSTEM, Actor
from registry.services.evals import MAX_REPEAT
from registry.services.model_checks import model_check_create, model_check_finish, model_check_run_add

WATCH_LABEL = "production"


@dataclass(frozen=True)
class ServedSkill:
    name: str
    version: int
    cases: int


def _model_field(field: str, model: str | None) -> str:
    """The model checked as agent_model_check checks a turn's, its 400 naming `field`."""
    try:
        return agent_model_check(model=model)
    except ApplicationError as error:
        raise ApplicationError(error.detail, fields={field: error.fields.get("model", "")}, extra=error.extra) from None


def _repeat_check(repeat: Any) -> int:
    if not isinstance(repeat, int) or isinstance(repeat, bool) or not 1 <= repeat <= MAX_REPEAT:
        raise ApplicationError(f"repeat must be 1-{MAX_REPEAT}.", fields={"repeat": f"1 to {MAX_REPEAT}"})
    return repeat


def served_skills(*, label: str) -> list[ServedSkill]:
    """The skills an agent gets at `label`, at the version it gets, with their suites' case counts."""
    found = []
    for skill in sorted(registry_snapshot(label=label).skills, key=lambda s: s.name):
        revision = eval_suite_revision(skill=skill_get(name=skill.name))
        found.append(ServedSkill(name=skill.name, version=skill.version, cases=len(revision.cases) if revision else 0))
    return found


def model_check_start(
    *,
    label: Any,
    candidate_model: str | None,
    current_model: str | None = None,
    repeat: Any = 1,
    actor: Actor = SYSTEM,
) -> ModelCheck:
    """Queue a check of `candidate_model` against `current_model` (default AGENT_MODEL): two eval
    runs per served skill with cases; skills without are listed as no evidence. One transaction:
    the quotas refuse the whole check or none of it."""
    chosen_label = agent_turn_label_check(label=label)
    if chosen_label is None:
        raise ApplicationError("Name the label whose skills to check.", fields={"label": "required"})
    if not (candidate_model or "").strip():
        raise ApplicationError("Name the candidate model.", fields={"candidate_model": "required"})
    candidate = _model_field("candidate_model", candidate_model)
    current = _model_field("current_model", current_model)
    sides = ((ModelCheckSide.CURRENT, current), (ModelCheckSide.CANDIDATE, candidate))
    return _check_queue(
        kind=ModelCheckKind.CHECK, label=chosen_label, sides=sides, repeat=_repeat_check(repeat), actor=actor
    )


def catalog_watch_start() -> ModelCheck:
    """The drift watch's round: production's suites on AGENT_MODEL, compared when they end. While
    an earlier round still runs (a slow model, a short schedule), that one is the answer."""
    going = model_checks_unfinished().filter(kind=ModelCheckKind.WATCH).first()
    if going is not None:
        return going
    sides = ((ModelCheckSide.CURRENT, agent_model_check(model=None)),)
    return _check_queue(kind=ModelCheckKind.WATCH, label=WATCH_LABEL, sides=sides, repeat=1, actor=SYSTEM)


def _check_queue(*, kind: str, label: str, sides: tuple[tuple[str, str], ...], repeat: int, actor: Actor) -> ModelCheck:
    skills = served_skills(label=label)
    measured = [skill for skill in skills if skill.cases]
    turns = sum(eval_run_turns(cases=skill.cases, repeat=repeat, baseline=False) for skill in measured) * len(sides)
    # The runs are created as the system's so that each is not counted against the author's
    # EVAL_MAX_ACTIVE_RUNS_PER_USER as it is made (the check was admitted as a whole); then they
    # are the author's, and count while they go on.
    for_runs = Actor(via=f"model check by {actor.user_or_none or actor.via}")
    with transaction.atomic():
        check = model_check_create(
            kind=kind,
            label=label,
            current_model=sides[0][1],
            candidate_model=sides[1][1] if len(sides) > 1 else "",
            repeat=repeat,
            skills=[{"name": s.name, "version": s.version, "cases": s.cases} for s in skills],
            turns=turns,
            actor=actor,
        )
        for skill in measured:
            for side, model in sides:
                run = eval_run_queue(
                    skill_name=skill.name, version=skill.version, model=model, repeat=repeat, actor=for_runs
                )
                model_check_run_add(check=check, run=run, side=side, user=actor.user_or_none)
        if not measured:
            transaction.on_commit(lambda: model_check_finish(check_id=check.pk))
    return check


def model_checks_advance() -> int:
    """Store the report of every check whose runs have all ended; how many it stored."""
    return sum(model_check_finish(check_id=pk) for pk in model_checks_unfinished().values_list("pk", flat=True))


def model_check_current(*, check: ModelCheck) -> ModelCheck:
    """`check`, finished first if its runs have ended (what a reader should see)."""
    if not check.is_finished and model_check_finish(check_id=check.pk):
        check.refresh_from_db()
    return check


def watch_enabled() -> bool:
    return bool(settings.CATALOG_WATCH_CRON)
