"""Bearer-token authentication and per-scope permissions for machine clients.

Every bearer request is checked by one answer, `api_token_grant` (registry/selectors/tokens.py):
the token is live, its owner active, and its scopes cut to what the owner's role grants now. The
SKILL.md fast path (fastpath.py) asks it too, without DRF around it. A request asks it once:
its scope checks read the grant its authentication got.
"""

from __future__ import annotations

from django.utils import timezone
from rest_framework import authentication, exceptions, permissions

from registry.models import ApiToken
from registry.roles import user_has_scope
from registry.selectors.tokens import TokenGrant, api_token_grant, api_token_with_owner
from registry.services.tokens import api_token_used

# The grant authentication checked, kept on the request for its scope checks: on the request,
# never on the ApiToken, which this process caches and shares between requests.
_REQUEST_GRANT = "_registry_token_grant"


def grant_used(grant: TokenGrant) -> None:
    """Record the use; the grant (cached for later requests) remembers it, so the next requests
    within the minute do not try to write again."""
    if api_token_used(token_id=grant.token_id, last_used_at=grant.last_used_at):
        grant.last_used_at = timezone.now()


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        keyword, _, secret = header.partition(" ")
        if keyword != self.keyword:
            return None
        secret = secret.strip()
        if not secret:
            raise exceptions.AuthenticationFailed("Empty bearer token.")
        found = api_token_grant(secret_hash=ApiToken.hash_secret(secret))
        token = api_token_with_owner(token_id=found[0].token_id) if found and found[0].user_active else None
        if found is None or token is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        grant_used(found[0])
        setattr(request, _REQUEST_GRANT, found[0])
        return (token.user, token)

    def authenticate_header(self, request):
        return self.keyword


def has_scope(request, scope: str) -> bool:
    """A console session has its user's role's scopes; a token has those of its scopes that its
    owner's role still grants, checked on every request (a demoted owner's token shrinks too)."""
    if isinstance(request.auth, ApiToken):
        grant = _request_grant(request)
        return grant is not None and scope in grant.scopes
    return user_has_scope(request.user, scope)


def _request_grant(request) -> TokenGrant | None:
    """The grant of the request's token, read once a request: the one authentication checked, or
    for a token set on the request otherwise (DRF's force_authenticate), read here and kept."""
    if not hasattr(request, _REQUEST_GRANT):
        found = api_token_grant(secret_hash=request.auth.secret_hash)
        setattr(request, _REQUEST_GRANT, found[0] if found else None)
    return getattr(request, _REQUEST_GRANT)


class ScopeRequired(exceptions.PermissionDenied):
    """403 that names the missing scope (the error body carries it as `scope`); with several,
    any one of which would do, the detail names them all and `scope` is the first."""

    def __init__(self, scope: str, *alternatives: str, why: str = "") -> None:
        if alternatives:
            shown = ", ".join(f"'{s}'" for s in (scope, *alternatives))
            detail = f"Requires one of the scopes {shown}{why}."
        else:
            detail = f"Requires the '{scope}' scope{why}."
        super().__init__(detail, code="forbidden")
        self.scope = scope


class ScopePermission(permissions.BasePermission):
    """Views declare `required_scopes = {"GET": "skills:read", "POST": "skills:write", ...}`; a
    tuple of scopes for a method means any one of them will do.

    HEAD is a GET without the body, so it needs GET's scope. OPTIONS describes the view's
    methods (their parameters and fields), so it needs the scope of at least one of them: a
    caller who may use none of them learns nothing about them.
    """

    message = "This token or account lacks the required scope."

    def has_permission(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return False  # DRF answers 401 (with WWW-Authenticate: Bearer), not 403
        required = {
            method: (scope,) if isinstance(scope, str) else tuple(scope)
            for method, scope in getattr(view, "required_scopes", {}).items()
        }
        if request.method == "OPTIONS":
            scopes = sorted(
                {scope for method, any_of in required.items() if method in view.allowed_methods for scope in any_of}
            )
        else:
            scopes = list(required.get("GET" if request.method == "HEAD" else request.method, ()))
        if not scopes or any(has_scope(request, scope) for scope in scopes):
            return True
        why = ""
        if isinstance(request.auth, ApiToken) and any(request.auth.has_scope(scope) for scope in scopes):
            why = " (the token has it, but its owner's role does not grant it)"
        raise ScopeRequired(*scopes, why=why)
