"""`python manage.py users create NAME --role ROLE [--password PW | --link URL]` / `users set-role NAME ROLE` /
`users deactivate NAME` / `users activate NAME` / `users password-link NAME --url URL` / `users list`: the services
the console's users page calls (registry/services/accounts.py)."""

from __future__ import annotations

import getpass

from django.core.management.base import CommandError, CommandParser
from django.urls import reverse

from registry import selectors
from registry.errors import ApplicationError
from registry.management.base import RegistryCommand
from registry.management.table import text_table
from registry.roles import ROLE_SCOPES
from registry.services.accounts import (
    PasswordLink,
    account_active_set,
    account_create,
    account_password_link,
    account_role_set,
)
from registry.services.audit import Actor

ROLES = ", ".join(ROLE_SCOPES)


class Command(RegistryCommand):
    help = f"Console accounts and their roles ({ROLES}). Every change is audited."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        create = sub.add_parser("create", help="Create an account with a role (asks for the password if not given).")
        create.add_argument("name")
        # Not `choices=`: a wrong role gets the same sentence as from the service, exit code 1.
        create.add_argument("--role", required=True, help=ROLES)
        create.add_argument("--password", help="Without it (or --link), the password is asked for twice (not echoed).")
        create.add_argument(
            "--link",
            metavar="URL",
            help="No password: print a one-time set-password link on this registry's URL (http://HOST:PORT/).",
        )
        set_role = sub.add_parser("set-role", help="Give an account a role (it replaces the one it had).")
        set_role.add_argument("name")
        set_role.add_argument("role", help=ROLES)
        for verb, what in (("deactivate", "cannot log in; its tokens are refused at once"), ("activate", "again")):
            sub.add_parser(verb, help=f"{verb.capitalize()} an account ({what}).").add_argument("name")
        link = sub.add_parser("password-link", help="Print a one-time link with which the account sets its password.")
        link.add_argument("name")
        link.add_argument("--url", required=True, help="This registry's URL, as its users open it (http://HOST:PORT/).")
        sub.add_parser("list", help="List accounts with their role, whether active, last login and live tokens.")

    def handle(self, *args, action: str, **options) -> None:
        actor = Actor(via="cli")
        try:
            if action == "create":
                password = options["password"]
                if options["link"] and password is not None:
                    raise CommandError("Give --password or --link, not both.")
                if password is None and not options["link"]:
                    password = _ask_password()
                user = account_create(username=options["name"], role=options["role"], password=password, actor=actor)
                self.stdout.write(f"Created {user.get_username()} ({options['role']}).")
                if options["link"]:
                    self._print_link(options["link"], user.get_username(), actor)
            elif action == "set-role":
                user = account_role_set(username=options["name"], role=options["role"], actor=actor)
                self.stdout.write(f"{user.get_username()} is now {options['role']}.")
            elif action in ("activate", "deactivate"):
                user = account_active_set(username=options["name"], active=action == "activate", actor=actor)
                self.stdout.write(f"{user.get_username()} is {'active' if user.is_active else 'deactivated'}.")
            elif action == "password-link":
                self._print_link(options["url"], options["name"], actor)
            else:
                self._list()
        except ApplicationError as exc:
            raise CommandError(exc.detail) from exc

    def _list(self) -> None:
        accounts = selectors.account_list()
        if not accounts:
            self.stdout.write("No accounts. Create one with `python manage.py users create NAME --role admin`.")
            return
        table = [("NAME", "ROLE", "ACTIVE", "LAST LOGIN", "TOKENS")]
        table += [
            (
                row.user.get_username(),
                ",".join(row.roles) or "-",
                "yes" if row.user.is_active else "no",
                row.user.last_login.strftime("%Y-%m-%d %H:%M UTC") if row.user.last_login else "-",
                str(row.live_tokens),
            )
            for row in accounts
        ]
        for line in text_table(table):
            self.stdout.write(line)

    def _print_link(self, base_url: str, username: str, actor: Actor) -> None:
        link = account_password_link(username=username, actor=actor)
        self.stdout.write(f"Set-password link for {username} (works once): {password_link(base_url, link)}")


def password_link(base_url: str, link: PasswordLink) -> str:
    return base_url.rstrip("/") + reverse("password-set", kwargs={"uidb64": link.uidb64, "token": link.token})


def _ask_password() -> str:
    password = getpass.getpass("Password: ")
    if password != getpass.getpass("Password (again): "):
        raise CommandError("The passwords do not match; nothing was created.")
    return password
