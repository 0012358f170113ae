"""Every console page: each area's module lists its own routes."""

from django.urls import include, path

urlpatterns = [
    path("", include("registry.console.dashboard")),
    path("", include("registry.console.analytics")),
    path("", include("registry.console.skills")),
    path("", include("registry.console.skillsets")),
    path("", include("registry.console.rules")),
    path("", include("registry.console.tokens")),
    path("", include("registry.console.users")),
    path("", include("registry.console.connect")),
    path("", include("registry.console.webhooks")),
    path("", include("registry.console.label_policies")),
    path("", include("registry.console.audit")),
    path("", include("registry.console.catalog_routing")),
]
