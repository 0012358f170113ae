"""`python manage.py users create NAME --role ROLE [--password PW]` / `users set-role NAME ROLE` / `users list`."""

from __future__ import annotations

import getpass

from django.core.management.base import BaseCommand, CommandError, CommandParser

from registry import selectors
from registry.errors import ApplicationError
from registry.management.table import text_table
from registry.roles import ROLE_SCOPES
from registry.services.accounts import account_create, account_role_set
from registry.services.audit import Actor

ROLES = ", ".join(ROLE_SCOPES)


class Command(BaseCommand):
    help = f"Console accounts and their roles ({ROLES}). Every change is audited."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        create = sub.add_parser("create", help="Create an account with a role (asks for the password if not given).")
        create.add_argument("name")
        # Not `choices=`: a wrong role gets the same sentence as from the service, exit code 1.
        create.add_argument("--role", required=True, help=ROLES)
        create.add_argument("--password", help="Without it, the password is asked for twice (not echoed).")
        set_role = sub.add_parser("set-role", help="Give an account a role (it replaces the one it had).")
        set_role.add_argument("name")
        set_role.add_argument("role", help=ROLES)
        sub.add_parser("list", help="List accounts with their role, whether active, and last login.")

    def handle(self, *args, action: str, **options) -> None:
        actor = Actor(via="cli")
        try:
            if action == "create":
                password = options["password"]
                if password is None:
                    password = _ask_password()
                user = account_create(username=options["name"], role=options["role"], password=password, actor=actor)
                self.stdout.write(f"Created {user.get_username()} ({options['role']}).")
            elif action == "set-role":
                user = account_role_set(username=options["name"], role=options["role"], actor=actor)
                self.stdout.write(f"{user.get_username()} is now {options['role']}.")
            else:
                self._list()
        except ApplicationError as exc:
            raise CommandError(exc.detail) from exc

    def _list(self) -> None:
        accounts = selectors.account_list()
        if not accounts:
            self.stdout.write("No accounts. Create one with `python manage.py users create NAME --role admin`.")
            return
        table = [("NAME", "ROLE", "ACTIVE", "LAST LOGIN")]
        table += [
            (
                row.user.get_username(),
                ",".join(row.roles) or "-",
                "yes" if row.user.is_active else "no",
                row.user.last_login.strftime("%Y-%m-%d %H:%M UTC") if row.user.last_login else "-",
            )
            for row in accounts
        ]
        for line in text_table(table):
            self.stdout.write(line)


def _ask_password() -> str:
    password = getpass.getpass("Password: ")
    if password != getpass.getpass("Password (again): "):
        raise CommandError("The passwords do not match; nothing was created.")
    return password
