from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from registry.api import attestations, discovery, errors
from registry.api.docs import ApiSchemaView, api_docs
from registry.api.health import healthz
from registry.console.login import ThrottledLoginView
from registry.mcp.views import McpApi

# JSON `{"error", "detail"}` under /api/, Django's HTML pages elsewhere.
handler400 = errors.bad_request
handler403 = errors.permission_denied
handler404 = errors.page_not_found
handler500 = errors.server_error

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    # The Agent Skills discovery index (`npx skills add http://HOST`): anonymous, off by default.
    path(".well-known/agent-skills/index.json", discovery.DiscoveryIndexApi.as_view(), name="discovery-index"),
    path(
        ".well-known/agent-skills/<str:name>/SKILL.md",
        discovery.DiscoverySkillMdApi.as_view(),
        name="discovery-skill-md",
    ),
    path(
        ".well-known/agent-skills/<str:name>.intoto.json",
        discovery.DiscoveryAttestationApi.as_view(),
        name="discovery-attestation",
    ),
    path(".well-known/agent-skills/<str:name>.zip", discovery.DiscoveryArchiveApi.as_view(), name="discovery-archive"),
    # The registry's release-signing public keys: anonymous, what every verifier starts from.
    path(".well-known/skill-registry/keys.json", attestations.SigningKeysApi.as_view(), name="signing-keys"),
    # Browsers and bookmarks ask for /favicon.ico whatever the page's <link rel="icon"> says.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # One login page for the console and the admin: the throttled one, with its 429 and Retry-After.
    path("admin/login/", RedirectView.as_view(pattern_name="login", query_string=True)),
    path("admin/", admin.site.urls),
    path("api/schema/", ApiSchemaView.as_view(), name="api-schema"),
    path("api/docs/", api_docs, name="api-docs"),
    path("api/v1/agent/", include("agents.urls")),
    path("api/v1/", include("agents.evals.urls")),
    path("api/v1/", include("registry.api.urls")),
    # MCP hosts: Streamable HTTP, the Skills Extension and the resolve tool (registry/mcp/).
    path("mcp", McpApi.as_view(), name="mcp"),
    path("", include("registry.console.urls")),
    # The console pages of the agents app: the registry knows nothing of turns.
    path("", include("agents.turns.playground")),
    path("", include("agents.turns.console")),
    path("", include("agents.evals.console")),
    path("", include("agents.evals.catalog_console")),
    path("", include("agents.evals.model_check_console")),
]
