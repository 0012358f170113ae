from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from registry import console
from registry.api import errors
from registry.health import healthz

# JSON `{"error", "detail"}` under /api/, Django's HTML pages elsewhere.
handler400 = errors.bad_request
handler403 = errors.permission_denied
handler404 = errors.page_not_found
handler500 = errors.server_error

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("login/", auth_views.LoginView.as_view(template_name="registration/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/v1/agent/", include("agents.urls")),
    path("api/v1/", include("registry.api.urls")),
    path("", console.home, name="home"),
]
