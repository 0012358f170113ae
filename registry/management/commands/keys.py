"""`python manage.py keys list` / `keys rotate` / `keys expire KEYID` / `keys attest-missing`: the
registry's release-signing keys (registry/services/attestations.py)."""

from __future__ import annotations

from django.core.management.base import CommandError, CommandParser
from django.utils.dateparse import parse_datetime

from registry.errors import ApplicationError
from registry.management.base import RegistryCommand
from registry.management.table import text_table
from registry.selectors.attestations import signing_keys_document
from registry.services.attestations import (
    signing_key_current,
    signing_key_expire,
    signing_key_rotate,
    versions_attest_missing,
)
from registry.services.audit import Actor


class Command(RegistryCommand):
    help = "List, rotate or expire the registry's release-signing keys; sign versions published before signing."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        sub.add_parser("list", help="Every key: id, valid from, valid until, expires (what keys.json publishes).")
        sub.add_parser(
            "rotate", help="Make a new signing key; the old one stops signing and still verifies what it signed."
        )
        expire = sub.add_parser("expire", help="Stop trusting a rotated-out key (it may have leaked).")
        expire.add_argument("keyid", help="SHA256:... as `keys list` shows it")
        expire.add_argument("--at", help="ISO 8601 time (default: now)")
        sub.add_parser("attest-missing", help="Sign every version published before the registry signed releases.")

    def handle(self, *args, action: str, **options) -> None:
        actor = Actor(via="cli")
        try:
            if action == "list":
                signing_key_current()  # the first key is made here when nothing was signed yet
                self._list()
            elif action == "rotate":
                row = signing_key_rotate(actor=actor)
                self.stdout.write(f"New signing key {row.keyid}, endorsed by {row.endorsed_by}.")
            elif action == "expire":
                at = parse_datetime(options["at"]) if options["at"] else None
                if options["at"] and at is None:
                    raise CommandError(f"--at {options['at']!r} is not an ISO 8601 time.")
                row = signing_key_expire(keyid=options["keyid"], at=at, actor=actor)
                self.stdout.write(f"{row.keyid} expires at {row.expires_at}.")
            else:
                count = versions_attest_missing()
                self.stdout.write(f"Signed {count} versions.")
        except ApplicationError as exc:
            raise CommandError(exc.detail) from exc

    def _list(self) -> None:
        document = signing_keys_document()
        table = [("KEY", "VALID FROM", "VALID UNTIL", "EXPIRES", "ENDORSED BY")]
        table += [
            (
                key["keyid"],
                key["valid_from"],
                key["valid_until"] or "(signing)",
                key["expires"] or "-",
                (key["endorsed_by"] or {}).get("keyid", "-"),
            )
            for key in document["keys"]
        ]
        for line in text_table(table):
            self.stdout.write(line)
