"""Who may open a console page: one decorator for every view, one context processor for
templates, both answering from the role → scope table in `registry.roles`."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render

from registry import selectors
from registry.console.errors import domain_error_response
from registry.errors import ApplicationError
from registry.roles import ROLE_SCOPES, user_roles


def console_view(*, scope: str | None = None, role: str | None = None) -> Callable:
    """Login required (302 to /login/); with `scope`, a user whose role lacks it gets 403; with
    `role`, a user who does not hold that role (the users page: admins). A domain error the view
    lets through is answered in one place (registry/console/errors.py).

    An account without any role may do nothing, so every console page answers it with the page
    that says so and names the admins who can grant one (403, but for the dashboard it lands on).

    Write views name the scope the API would ask for (`skills:write`, `rules:write`, ...), so an
    analyst is refused in the console exactly where a token of theirs would be refused."""

    def decorate(view: Callable) -> Callable:
        @wraps(view)
        def guarded(request, *args, **kwargs):
            roles = user_roles(request.user)
            if not roles:
                # The page a login lands on (LOGIN_REDIRECT_URL) answers 200: it is where the account
                # is sent, not a page it asked for and is refused.
                landing = request.resolver_match is not None and request.resolver_match.url_name == "home"
                return no_role_page(request, status=200 if landing else 403)
            if scope is not None and scope not in user_scopes(request.user):
                raise PermissionDenied(f"Your role does not allow {scope}.")
            if role is not None and role not in roles:
                raise PermissionDenied(f"This page is for the {role} role.")  # 403.html knows the admin one
            try:
                return view(request, *args, **kwargs)
            except ApplicationError as error:
                return domain_error_response(request, error)

        return login_required(guarded)

    return decorate


def no_role_page(request, *, status: int):
    """What an account without a role sees instead of pages it may not use: that it has no role,
    and the admins who can grant one."""
    return render(request, "registry/no_role.html", {"admins": selectors.account_admins()}, status=status)


def user_scopes(user) -> set[str]:
    return {str(scope) for role in user_roles(user) for scope in ROLE_SCOPES[role]}


def console_context(request) -> dict:
    """`user_scopes` (e.g. `{% if "skills:write" in user_scopes %}`) and `user_role` for templates."""
    roles = user_roles(request.user)
    return {
        "user_scopes": user_scopes(request.user),
        "user_role": next((role for role in ("admin", "author", "analyst") if role in roles), ""),
    }
