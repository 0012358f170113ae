"""`python manage.py skills eval NAME ...`: queue a run of the skill's eval suite, wait for the
workers to finish it, print the summary, and exit non-zero below the thresholds, for a team's CI.
The registry's `skills` command forwards `eval` to the `skills_eval` management command, whose
module (agents/management/commands/skills_eval.py) only names this one."""

from __future__ import annotations

import json
import time

from django.core.management.base import CommandError, CommandParser

from agents.evals.runner import eval_run_queue
from registry.errors import ApplicationError
from registry.management.base import RegistryCommand
from registry.selectors.evals import eval_run_get, eval_run_progress, eval_run_summary_current
from registry.services.audit import Actor

CLI = Actor(via="cli")


class Command(RegistryCommand):
    help = "Run a skill's eval suite on the workers, wait, print the summary; exit 1 below a threshold."

    def add_base_argument(self, parser, *args, **kwargs) -> None:
        if "--version" not in args:  # `--version N` chooses the skill's version here
            super().add_base_argument(parser, *args, **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        chosen = parser.add_mutually_exclusive_group()
        chosen.add_argument(
            "--version", type=int, dest="number", help="The version to run (default: production, else latest)."
        )
        chosen.add_argument("--label", help="Run the version this label points at.")
        parser.add_argument("--model", help="One of AGENT_MODELS (default AGENT_MODEL).")
        parser.add_argument("--repeat", type=int, default=1, help="Runs of each case (default 1).")
        parser.add_argument("--baseline", action="store_true", help="Also run every case without the skill.")
        parser.add_argument("--min-task-rate", type=float, help="Fail below this task pass rate (0-1).")
        parser.add_argument("--min-trigger-f1", type=float, help="Fail below this trigger F1 (0-1).")
        parser.add_argument("--timeout", type=float, default=3600, help="Seconds to wait for the run (default 3600).")
        parser.add_argument("--json", action="store_true", help="Print the summary as JSON.")

    def handle(self, *args, **options) -> None:
        try:
            run = eval_run_queue(
                skill_name=options["name"],
                version=options["number"],
                label=options["label"],
                model=options["model"],
                repeat=options["repeat"],
                baseline=options["baseline"],
                actor=CLI,
            )
        except ApplicationError as error:
            raise CommandError(error.detail) from error
        revision = run.suite_revision
        standing = "" if revision.accepted else " (proposed: eval gates do not count it until it is accepted)"
        self.stderr.write(
            f"eval run {run.pk}: {run.skill.name} v{run.version.number} with {run.model},"
            f" suite revision {revision.number}{standing}"
        )
        deadline = time.monotonic() + options["timeout"]
        shown = -1
        while not run.is_finished:
            if time.monotonic() > deadline:
                raise CommandError(f"The run did not end within {options['timeout']:.0f} s (is a worker running?).")
            progress = eval_run_progress(run=run)
            if progress["done"] != shown:
                shown = progress["done"]
                self.stderr.write(f"  {progress['done']}/{progress['total']} cases done")
            time.sleep(0.5)
            run = eval_run_get(run_id=run.pk)
        summary = eval_run_summary_current(run=run)
        self.stdout.write(json.dumps(summary, indent=2) if options["json"] else summary_text(run.status, summary))
        problems = threshold_problems(summary, options["min_task_rate"], options["min_trigger_f1"])
        if run.status != "succeeded":
            problems.insert(0, f"the run {run.status}{': ' + run.error if run.error else ''}")
        if problems:
            raise CommandError("; ".join(problems))


def summary_text(status: str, summary: dict) -> str:
    trigger, task = summary["trigger"], summary["task"]
    lines = [
        f"status    {status}",
        f"trigger   tp {trigger['tp']}  fp {trigger['fp']}  tn {trigger['tn']}  fn {trigger['fn']}  "
        f"precision {_shown(trigger['precision'])}  recall {_shown(trigger['recall'])}  f1 {_shown(trigger['f1'])}",
        f"task      {task['passed']} passed, {task['failed']} failed  rate {_shown(task['rate'])} "
        f"[{_shown(task['low'])}, {_shown(task['high'])}]",
    ]
    if summary.get("baseline"):
        base = summary["baseline"]
        lines.append(
            f"baseline  trigger f1 {_shown(base['trigger']['f1'])}  task rate {_shown(base['task']['rate'])} "
            "(without the skill)"
        )
    lines.append(f"tokens    {summary['tokens']}  cost {summary['cost']}  duration {summary['duration_ms']} ms")
    if summary.get("errors"):
        lines.append(f"errors    {summary['errors']} case(s) had a check that could not be graded")
    return "\n".join(lines)


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def threshold_problems(summary: dict, min_task_rate: float | None, min_trigger_f1: float | None) -> list[str]:
    """What is below the thresholds; a figure with nothing to measure (no cases of its kind) fails too."""
    problems = []
    rate, f1 = summary["task"]["rate"], summary["trigger"]["f1"]
    if min_task_rate is not None and (rate is None or rate < min_task_rate):
        problems.append(f"task pass rate {_shown(rate)} is below {min_task_rate}")
    if min_trigger_f1 is not None and (f1 is None or f1 < min_trigger_f1):
        problems.append(f"trigger F1 {_shown(f1)} is below {min_trigger_f1}")
    return problems
