"""Every bundled skill ships an eval suite (skills/<name>/evals/evals.json, imported by `skills
sync`) that passes: its trigger cases with the `offline` model, its task cases with `scripted`.
Run through real workers, and once through the CLI as a team's CI would."""

from __future__ import annotations

import io

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from agents.evals.runner import eval_run_queue
from registry.models import EvalRun, SkillFile
from registry.selectors.evals import eval_suite_cases
from registry.selectors.skills import skill_get
from registry.services.skills import skills_sync_bundled
from tests.agents.evals.test_evals_integration import WORKER_ENV
from tests.worker import WorkerProcess, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

BUNDLED = sorted(path.parent.name for path in settings.BUNDLED_SKILLS_DIR.glob("*/SKILL.md"))


@pytest.fixture(scope="module")
def worker(worker_exits, django_db_blocker):
    process = WorkerProcess(concurrency=2, extra_env={**WORKER_ENV, "EVAL_CONCURRENCY": "8"}).start()
    yield process
    worker_exits(process)


def test_every_bundled_skill_s_suite_passes_offline_triggers_and_scripted_tasks(worker):
    report = skills_sync_bundled()
    assert not report.failed, report.failed
    assert not SkillFile.objects.filter(path__startswith="evals/").exists()  # the suites are not skill files
    for name in BUNDLED:
        cases = eval_suite_cases(skill=skill_get(name=name))
        triggers = [case for case in cases if case["kind"] == "trigger"]
        assert len(triggers) >= 6 and sum(not case["should_trigger"] for case in triggers) * 2 >= len(triggers), name
        assert sum(case["kind"] == "task" for case in cases) >= 2, name

    offline = {name: eval_run_queue(skill_name=name, model="offline").pk for name in BUNDLED}
    scripted = {name: eval_run_queue(skill_name=name, model="scripted").pk for name in BUNDLED}
    try:
        wait_for(
            lambda: not EvalRun.objects.exclude(status__in=("succeeded", "failed", "cancelled")).exists(),
            message="every bundled suite's runs to end",
        )
    except AssertionError:
        raise AssertionError("runs did not end; worker output:\n" + worker.output()[-6000:]) from None

    for name in BUNDLED:
        by_offline, by_scripted = EvalRun.objects.get(pk=offline[name]), EvalRun.objects.get(pk=scripted[name])
        assert by_offline.status == by_scripted.status == "succeeded", name
        assert by_offline.summary["trigger"]["f1"] == 1.0, (name, by_offline.summary["trigger"])
        assert by_scripted.summary["task"]["rate"] == 1.0, (name, by_scripted.summary["task"])


def test_the_cli_prints_the_summary_and_fails_below_a_threshold(worker):
    skills_sync_bundled()
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "skills",
        "eval",
        "unit-conversion",
        "--model",
        "scripted",
        "--min-task-rate",
        "1",
        stdout=out,
        stderr=err,
    )
    assert "task      2 passed, 0 failed  rate 1.000" in out.getvalue()
    assert "with scripted, suite revision 1\n" in err.getvalue()  # the sync's suite: accepted as made

    # With `offline` the task cases' answers are the skill's steps, not the scripted ones.
    with pytest.raises(CommandError, match="task pass rate 0.000 is below 0.9"):
        call_command(
            "skills",
            "eval",
            "unit-conversion",
            "--version",
            "1",
            "--model",
            "offline",
            "--min-task-rate",
            "0.9",
            "--min-trigger-f1",
            "1",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
