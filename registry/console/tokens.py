"""API tokens in the console: the list, create (the secret shown once), revoke with confirmation.

Who sees and manages which tokens is `registry.roles.token_access`: admins every token, authors
their own, analysts read their own. Writes go through `registry.services.tokens`, audited with
the console as the channel.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.cache import never_cache

from registry import selectors
from registry.console.access import console_view
from registry.console.errors import form_add_domain_error, on_domain_error
from registry.errors import ApplicationError
from registry.models import ApiToken, TokenScope
from registry.roles import ANY_ROLE, token_access
from registry.selectors.attestations import publisher_key_get_for_user, publisher_keys_for_user
from registry.services.attestations import publisher_key_add, publisher_key_revoke
from registry.services.audit import Actor
from registry.services.tokens import NAME_MAX, api_token_create, api_token_revoke

SCOPE_HELP = {
    TokenScope.SKILLS_READ: "read skills, versions, files and resolve",
    TokenScope.SKILLS_WRITE: "publish versions, move labels, enable and disable",
    TokenScope.RULES_WRITE: "create, change and delete force-include rules",
    TokenScope.USAGE_WRITE: "report usage events (POST /usage)",
    TokenScope.ANALYTICS_READ: "read the analytics API",
    TokenScope.AGENT_RUN: "run agent turns",
    TokenScope.WEBHOOKS_WRITE: "manage webhooks and read their deliveries (admins only)",
    TokenScope.POLICIES_WRITE: "set and remove label policies (admins only)",
}


class TokenCreateForm(forms.Form):
    name = forms.CharField(max_length=NAME_MAX)
    owner = forms.CharField(required=False, max_length=150)
    scopes = forms.MultipleChoiceField(choices=[(scope.value, scope.value) for scope in TokenScope])


def _actor(request) -> Actor:
    return Actor(user=request.user, via="console")


def _page(
    request,
    *,
    form: TokenCreateForm | None = None,
    new_token=None,
    secret: str = "",
    status: int = 200,
    key_values: dict | None = None,
    key_errors: dict | None = None,
):
    access = token_access(request.user)
    context = {
        "rows": selectors.api_tokens_for_user(user=request.user),
        "access": access,
        "form": form,
        "scope_choices": [(scope.value, SCOPE_HELP[scope]) for scope in TokenScope],
        "chosen_scopes": (form["scopes"].value() or []) if form is not None else _asked_scopes(request),
        # A link may fill the form in (the Connect page's "create one with ..."): `?name=&scopes=`.
        "asked_name": request.GET.get("name", "")[:NAME_MAX] if form is None else "",
        # Only an admin picks the owner; the list holds the accounts a token could act for.
        "owners": selectors.account_list(active_only=True) if access.see_all and access.manage else [],
        "owner": (form.data.get("owner") if form is not None else "") or request.user.get_username(),
        "new_token": new_token,
        "secret": secret,
        "publisher_keys": publisher_keys_for_user(user=request.user),
        "key_values": key_values or {},
        "key_errors": key_errors or {},
    }
    return render(request, "registry/tokens/list.html", context, status=status)


def _asked_scopes(request) -> list[str]:
    """The scopes a link asks to tick (`?scopes=skills:read&scopes=usage:write`), known ones only;
    skills:read when it asks for none."""
    asked = [scope for scope in request.GET.getlist("scopes") if scope in TokenScope.values]
    return asked or [TokenScope.SKILLS_READ.value]


@never_cache  # the answer to a create holds the secret: no browser or proxy may keep it
@console_view(scope=ANY_ROLE)
def token_list(request):
    """GET: the tokens this user may see. POST: create one and show its secret, this once."""
    if request.method != "POST":
        return _page(request)
    access = token_access(request.user)
    if not access.manage:
        raise PermissionDenied("Your role does not allow creating API tokens.")
    form = TokenCreateForm(request.POST)
    if not form.is_valid():
        return _page(request, form=form, status=400)
    owner = form.cleaned_data["owner"] or request.user.get_username()
    if owner != request.user.get_username() and not access.see_all:
        raise PermissionDenied("You can create tokens only for yourself.")
    on_domain_error(request, lambda error: _refused(request, form, error))
    token, secret = api_token_create(
        name=form.cleaned_data["name"], username=owner, scopes=form.cleaned_data["scopes"], actor=_actor(request)
    )
    messages.success(request, f"Created token {token.name} for {owner}.")
    return _page(request, new_token=token, secret=secret, status=201)


def _refused(request, form: TokenCreateForm, error: ApplicationError):
    """The form again, each problem beside its field."""
    form_add_domain_error(form, error, renamed={"user": "owner"})  # the service's name for the owner
    messages.error(request, f"No token created: {error.detail}")
    return _page(request, form=form, status=error.status)


def _revocable_token(request, token_id: int) -> ApiToken:
    """The token, if this user may revoke it (`registry.roles.TokenAccess`): 404 for a token they
    cannot see (another owner's, for anyone but an admin)."""
    return selectors.api_token_get_for_user(user=request.user, token_id=token_id)  # NotFound: the 404 page


@console_view(scope=ANY_ROLE)
def token_revoke(request, token_id: int):
    """GET or POST without `confirm`: what revoking does, and a Confirm button. POST with it: revoke."""
    token = _revocable_token(request, token_id)
    if token.revoked_at is not None:
        messages.info(request, f"Token {token.name} was already revoked.")
        return redirect(reverse("token-list"))
    if request.method != "POST" or request.POST.get("confirm") != "1":
        return render(request, "registry/tokens/revoke_confirm.html", {"token": token})
    api_token_revoke(name=token.name, actor=_actor(request))
    messages.success(request, f"Revoked token {token.name}: requests with it now get 401.")
    return redirect(reverse("token-list"))


# Signing keys are for those who publish.
@console_view(scope=TokenScope.SKILLS_WRITE.value)
def publisher_key_add_view(request):
    """POST: register one of the user's Ed25519 public keys; problems beside their field."""
    if request.method != "POST":
        return redirect(reverse("token-list") + "#signing-keys")
    values = {"key_name": request.POST.get("key_name", ""), "public_key": request.POST.get("public_key", "")}

    def refused(error: ApplicationError):
        # A problem with a field is shown beside it (the service's `name` is the form's `key_name`);
        # anything else above the form.
        errors = {
            ("key_name" if field == "name" else field): str(problem) for field, problem in error.fields.items()
        } or {"form": error.detail}
        return _page(request, key_values=values, key_errors=errors, status=error.status)

    on_domain_error(request, refused)
    key = publisher_key_add(
        user=request.user, name=values["key_name"], public_key=values["public_key"], actor=_actor(request)
    )
    messages.success(request, f"Added signing key {key.name} ({key.keyid}).")
    return redirect(reverse("token-list") + "#signing-keys")


@console_view(scope=TokenScope.SKILLS_WRITE.value)
def publisher_key_revoke_view(request, key_id: int):
    if request.method != "POST":
        return redirect(reverse("token-list") + "#signing-keys")
    key = publisher_key_get_for_user(user=request.user, key_id=key_id)
    publisher_key_revoke(key=key, actor=_actor(request))
    messages.success(request, f"Revoked signing key {key.name}: new signatures by it are refused.")
    return redirect(reverse("token-list") + "#signing-keys")


urlpatterns = [
    path("tokens/", token_list, name="token-list"),
    path("tokens/keys/", publisher_key_add_view, name="publisher-key-add"),
    path("tokens/keys/<int:key_id>/revoke/", publisher_key_revoke_view, name="publisher-key-revoke"),
    path("tokens/<int:token_id>/revoke/", token_revoke, name="token-revoke"),
]
