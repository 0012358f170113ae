"""`python manage.py tokens create NAME --user USER --scopes a,b` / `tokens list` / `tokens revoke NAME`."""

from __future__ import annotations

from datetime import datetime

from django.core.management.base import CommandError, CommandParser

from registry import selectors
from registry.errors import ApplicationError
from registry.management.base import RegistryCommand
from registry.management.table import text_table
from registry.models import TokenScope
from registry.services.audit import Actor
from registry.services.tokens import api_token_create, api_token_revoke


class Command(RegistryCommand):
    help = "Create, list or revoke API tokens. The secret is printed once and never stored."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        create = sub.add_parser("create", help="Create a token and print its secret once.")
        create.add_argument("name")
        create.add_argument("--user", required=True)
        create.add_argument("--scopes", required=True, help=f"Comma-separated: {', '.join(TokenScope.values)}")
        sub.add_parser("list", help="List tokens: name, user, scopes, created, last used, revoked (never the secret).")
        revoke = sub.add_parser("revoke", help="Revoke a token by name.")
        revoke.add_argument("name")

    def handle(self, *args, action: str, **options) -> None:
        actor = Actor(via="cli")
        try:
            if action == "create":
                scopes = [s.strip() for s in options["scopes"].split(",") if s.strip()]
                token, secret = api_token_create(
                    name=options["name"], username=options["user"], scopes=scopes, actor=actor
                )
                self.stderr.write(f"Token '{token.name}' for {token.user} with scopes {', '.join(token.scopes)}.")
                self.stderr.write("Copy the secret now; it is not shown again:")
                self.stdout.write(secret)
            elif action == "list":
                self._list()
            else:
                api_token_revoke(name=options["name"], actor=actor)
                self.stdout.write(f"Revoked '{options['name']}'.")
        except ApplicationError as exc:
            raise CommandError(exc.detail) from exc

    def _list(self) -> None:
        tokens = selectors.api_token_list()
        if not tokens:
            self.stdout.write(
                "No tokens. Create one with `python manage.py tokens create NAME --user USER --scopes ...`."
            )
            return
        table = [("NAME", "USER", "SCOPES", "CREATED", "LAST USED", "REVOKED")]
        table += [
            (
                token.name,
                token.user.get_username(),
                ",".join(token.scopes),
                _when(token.created_at),
                _when(token.last_used_at),
                _when(token.revoked_at),
            )
            for token in tokens
        ]
        for line in text_table(table):
            self.stdout.write(line)


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else "-"
