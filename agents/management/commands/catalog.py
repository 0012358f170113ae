"""`python manage.py catalog model-check --label L --candidate M [--current M] [--repeat N]
[--fail-on-regression]`: what a model change would break, for a team's CI. It queues the check
through the service the API calls, waits for the workers (as `skills eval` does), prints a table
of the skills, regressed first, and exits 1 when one regressed (with --fail-on-regression) or a
run failed."""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import CommandError, CommandParser

from agents.evals.model_check import model_check_current, model_check_start
from agents.evals.model_check_api import ModelCheckSerializer, model_check_detail
from registry.errors import ApplicationError
from registry.management.base import RegistryCommand
from registry.selectors.model_checks import model_check_get, model_check_progress
from registry.services.audit import Actor

CLI = Actor(via="cli")


class Command(RegistryCommand):
    help = "Catalog-wide evals. `model-check`: every served skill's suite on two models; exit 1 on a regression."

    def add_arguments(self, parser: CommandParser) -> None:
        commands = parser.add_subparsers(dest="command", required=True)
        check = commands.add_parser("model-check", help="What switching to a candidate model would break.")
        check.add_argument("--label", required=True, help="The label whose served skills are checked.")
        check.add_argument("--candidate", required=True, help="The model you would switch to (one of AGENT_MODELS).")
        check.add_argument("--current", help="The model you use now (default AGENT_MODEL).")
        check.add_argument("--repeat", type=int, default=1, help="Runs of each case on each model (default 1).")
        check.add_argument("--fail-on-regression", action="store_true", help="Exit 1 when a skill regressed.")
        check.add_argument("--timeout", type=float, default=3600, help="Seconds to wait (default 3600).")
        check.add_argument("--json", action="store_true", help="Print the report as JSON.")

    def handle(self, *args, **options) -> None:
        try:
            check = model_check_start(
                label=options["label"],
                candidate_model=options["candidate"],
                current_model=options["current"],
                repeat=options["repeat"],
                actor=CLI,
            )
        except ApplicationError as error:
            raise CommandError(
                f"{error.detail} ({', '.join(error.fields)})" if error.fields else error.detail
            ) from None
        self.stderr.write(
            f"model check {check.pk}: {check.label}, {check.current_model} -> {check.candidate_model}, "
            f"{len(check.skills)} skill(s) served"
        )
        check = self._wait(check, options["timeout"])
        detail = model_check_detail(check)
        self.stdout.write(json.dumps(ModelCheckSerializer(detail).data, indent=2) if options["json"] else table(detail))
        problems = []
        if check.status != "succeeded":
            problems.append(f"the check {check.status}: a run did not succeed")
        if options["fail_on_regression"] and check.regressed:
            problems.append(f"{check.regressed} skill(s) regressed on {check.candidate_model}")
        if problems:
            raise CommandError("; ".join(problems))

    def _wait(self, check, timeout: float):
        deadline, shown = time.monotonic() + timeout, -1
        while True:
            check = model_check_current(check=check)
            if check.is_finished:
                return check
            if time.monotonic() > deadline:
                raise CommandError(f"The check did not end within {timeout:.0f} s (is a worker running?).")
            progress = model_check_progress(check=check)
            if progress["runs_done"] != shown:
                shown = progress["runs_done"]
                self.stderr.write(f"  {shown}/{progress['runs']} eval runs done")
            time.sleep(0.5)
            check = model_check_get(check_id=check.pk)


def _figure(figure: dict[str, Any] | None) -> str:
    if figure is None:
        return "-"
    low, high = figure["interval"]
    return f"{figure['current']:.2f} -> {figure['candidate']:.2f} ({figure['delta']:+.2f} [{low:+.2f}, {high:+.2f}])"


def table(detail: dict[str, Any]) -> str:
    """The skills as rows, regressed first, then the threshold used."""
    rows = [("skill", "version", "verdict", "trigger F1", "task rate", "P(worse)")]
    for skill in detail["skills"]:
        verdict = "REGRESSED" if skill["regressed"] else "no evidence" if skill["evidence"] == "no evidence" else "ok"
        p_worse = "-" if skill["probability_worse"] is None else f"{skill['probability_worse']:.3f}"
        rows.append(
            (skill["name"], str(skill["version"]), verdict, _figure(skill["trigger_f1"]), _figure(skill["task_rate"]))
            + (p_worse,)
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    threshold = detail["threshold"] or {}
    lines.append("")
    lines.append(
        f"{detail['regressed']} regressed of {len(detail['skills'])} skill(s); status {detail['status']}; "
        f"regressed: P(worse) >= {threshold.get('p_worse')} ({threshold.get('detail', '')})"
    )
    return "\n".join(lines)
