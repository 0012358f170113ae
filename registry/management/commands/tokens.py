"""`python manage.py tokens create NAME --user USER --scopes a,b` / `tokens revoke NAME`."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from registry.errors import ApplicationError
from registry.models import TokenScope
from registry.services.audit import Actor
from registry.services.tokens import api_token_create, api_token_revoke


class Command(BaseCommand):
    help = "Create or revoke API tokens. The secret is printed once and never stored."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        create = sub.add_parser("create", help="Create a token and print its secret once.")
        create.add_argument("name")
        create.add_argument("--user", required=True)
        create.add_argument("--scopes", required=True, help=f"Comma-separated: {', '.join(TokenScope.values)}")
        revoke = sub.add_parser("revoke", help="Revoke a token by name.")
        revoke.add_argument("name")

    def handle(self, *args, action: str, name: str, **options) -> None:
        actor = Actor(via="cli")
        try:
            if action == "create":
                scopes = [s.strip() for s in options["scopes"].split(",") if s.strip()]
                token, secret = api_token_create(name=name, username=options["user"], scopes=scopes, actor=actor)
                self.stderr.write(f"Token '{token.name}' for {token.user} with scopes {', '.join(token.scopes)}.")
                self.stderr.write("Copy the secret now; it is not shown again:")
                self.stdout.write(secret)
            else:
                api_token_revoke(name=name, actor=actor)
                self.stdout.write(f"Revoked '{name}'.")
        except ApplicationError as exc:
            raise CommandError(exc.detail) from exc
