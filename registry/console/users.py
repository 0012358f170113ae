"""People and roles in the console (admins): every account with its role, last login, live tokens
and whether it is active; create one with a role and a password or a one-time set-password link;
change a role; deactivate (its tokens stop at once) or reactivate; a new set-password link.

Every write goes through `registry.services.accounts`, the services the `users` command calls,
audited with the console as the channel. The set-password page itself is Django's password-reset
confirmation, open to whoever holds the link.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.shortcuts import redirect, render
from django.urls import path, reverse, reverse_lazy
from django.views.decorators.cache import never_cache

from registry import selectors
from registry.console.access import console_view
from registry.console.errors import form_add_domain_error, on_domain_error
from registry.errors import ApplicationError
from registry.roles import ADMIN, ROLE_SCOPES
from registry.services.accounts import (
    PasswordLink,
    account_active_set,
    account_create,
    account_password_link,
    account_password_set,
    account_role_set,
)
from registry.services.audit import Actor

ROLE_HELP = {
    "admin": "everything, including people, tokens of anyone, webhooks and label policies",
    "author": "write skills, rules and labels; run the agent; read analytics",
    "analyst": "read skills, rules and analytics; writes nothing",
}

PASSWORD, LINK = "password", "link"


class UserCreateForm(forms.Form):
    username = forms.CharField(max_length=150)
    email = forms.CharField(max_length=254, required=False)
    role = forms.ChoiceField(choices=[(role, role) for role in ROLE_SCOPES])
    how = forms.ChoiceField(choices=[(PASSWORD, "initial password"), (LINK, "set-password link")], initial=LINK)
    password = forms.CharField(required=False, strip=False)

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("how") == PASSWORD and not cleaned.get("password"):
            self.add_error("password", "Give an initial password, or choose a set-password link.")
        return cleaned


def _actor(request) -> Actor:
    return Actor(user=request.user, via="console")


def password_link_url(request, link: PasswordLink) -> str:
    return request.build_absolute_uri(reverse("password-set", kwargs={"uidb64": link.uidb64, "token": link.token}))


def _page(request, *, form: UserCreateForm | None = None, link: str = "", link_for: str = "", status: int = 200):
    context = {
        "rows": selectors.account_list(),
        "form": form,
        "roles": [(role, ROLE_HELP[role]) for role in ROLE_SCOPES],
        "chosen_role": (form["role"].value() if form is not None else "") or "author",
        "chosen_how": (form["how"].value() if form is not None else "") or LINK,
        "link": link,
        "link_for": link_for,
        "link_days": max(1, settings.PASSWORD_RESET_TIMEOUT // 86400),
    }
    return render(request, "registry/users/list.html", context, status=status)


@never_cache  # an answer may hold a set-password link: no browser or proxy may keep it
@console_view(role=ADMIN)
def user_list(request):
    """GET: every account. POST: create one, and show its set-password link when it has one."""
    if request.method != "POST":
        return _page(request)
    form = UserCreateForm(request.POST)
    if not form.is_valid():
        return _page(request, form=form, status=400)
    on_domain_error(request, lambda error: _refused(request, form, error))
    data = form.cleaned_data
    user = account_create(
        username=data["username"].strip(),
        role=data["role"],
        email=data["email"],
        password=data["password"] if data["how"] == PASSWORD else None,
        actor=_actor(request),
    )
    name = user.get_username()
    if data["how"] == PASSWORD:
        messages.success(request, f"Created {name} ({data['role']}) with the password you gave.")
        return _page(request, status=201)
    link = password_link_url(request, account_password_link(username=name, actor=_actor(request)))
    messages.success(request, f"Created {name} ({data['role']}). Send them the link below to set their password.")
    return _page(request, link=link, link_for=name, status=201)


def _refused(request, form: UserCreateForm, error: ApplicationError):
    form_add_domain_error(form, error)
    messages.error(request, f"No user created: {error.detail}")
    return _page(request, form=form, status=error.status)


@console_view(role=ADMIN)
def user_role(request, user_id: int):
    """POST `role`: make it the account's only role. GET: back to the list."""
    user = selectors.account_get(user_id=user_id)
    if request.method != "POST":
        return redirect(reverse("user-list"))
    role = request.POST.get("role", "")
    account_role_set(username=user.get_username(), role=role, actor=_actor(request))
    messages.success(request, f"{user.get_username()} is now {role}.")
    return redirect(reverse("user-list"))


@console_view(role=ADMIN)
def user_active(request, user_id: int):
    """GET or POST without `confirm`: what (de)activating does, and a Confirm button. POST with it
    and `active` (0 or 1): do it."""
    user = selectors.account_get(user_id=user_id)
    row = next(row for row in selectors.account_list() if row.user.pk == user.pk)
    if request.method != "POST" or request.POST.get("confirm") != "1":
        return render(request, "registry/users/active_confirm.html", {"row": row, "activate": not user.is_active})
    active = request.POST.get("active") == "1"
    account_active_set(username=user.get_username(), active=active, actor=_actor(request))
    if active:
        messages.success(request, f"Reactivated {user.get_username()}: they can log in, and their tokens work again.")
    else:
        messages.success(
            request,
            f"Deactivated {user.get_username()}: they cannot log in, and requests with their tokens now get 401.",
        )
    return redirect(reverse("user-list"))


@never_cache
@console_view(role=ADMIN)
def user_password_link(request, user_id: int):
    """POST: a new one-time set-password link for the account (nothing changes until it is used)."""
    user = selectors.account_get(user_id=user_id)
    if request.method != "POST":
        return redirect(reverse("user-list"))
    link = password_link_url(request, account_password_link(username=user.get_username(), actor=_actor(request)))
    messages.success(request, f"A new set-password link for {user.get_username()}: it works once.")
    return _page(request, link=link, link_for=user.get_username())


class PasswordSetView(auth_views.PasswordResetConfirmView):
    """The page a set-password link opens: Django's password-reset confirmation (it checks the
    token, moves it out of the URL into the session, and sets the password with its form). The
    new password is audited as every account change is."""

    template_name = "registration/password_set.html"
    success_url = reverse_lazy("login")

    def form_valid(self, form):
        response = super().form_valid(form)
        account_password_set(user=form.user, actor=Actor(user=form.user, via="set-password link"))
        messages.success(self.request, "Your password is set. Log in with it.")
        return response


urlpatterns = [
    path("users/", user_list, name="user-list"),
    path("users/<int:user_id>/role/", user_role, name="user-role"),
    path("users/<int:user_id>/active/", user_active, name="user-active"),
    path("users/<int:user_id>/password-link/", user_password_link, name="user-password-link"),
    path("password/set/<uidb64>/<token>/", PasswordSetView.as_view(), name="password-set"),
]
