"""`python manage.py analytics rebuild [--since YYYY-MM-DD]`: recount the rollups from raw events."""

from __future__ import annotations

import datetime as dt
import time

from django.core.management.base import CommandError, CommandParser

from registry.management.base import RegistryCommand
from registry.services.audit import Actor
from registry.services.usage import usage_rollups_rebuild


def _day(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise CommandError(f"--since: '{text}' is not a date (YYYY-MM-DD).") from None


class Command(RegistryCommand):
    help = "Usage analytics maintenance. `rebuild` recounts the hourly and daily rollups from the raw events."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        rebuild = sub.add_parser(
            "rebuild", help="Recount the rollups from raw events (after an upgrade, a restore or a manual fix)."
        )
        rebuild.add_argument("--since", help="Only buckets from this UTC day on (YYYY-MM-DD); default: all.")

    def handle(self, *args, action: str, **options) -> None:
        since = _day(options["since"]) if options.get("since") else None
        started = time.perf_counter()
        read = usage_rollups_rebuild(since=since, actor=Actor(via="cli"))
        self.stdout.write(
            f"Rebuilt rollups {'since ' + since.isoformat() if since else 'from all events'}: "
            f"{read} events in {time.perf_counter() - started:.1f} s."
        )
