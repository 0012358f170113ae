"""The production URLconf plus `/bench/bare/<name>`: a plain Django view that returns the same
SKILL.md bytes (held in memory) through the same middleware, as the yardstick for the API.
Bench-only: production URLconfs never include it."""

from __future__ import annotations

import hashlib

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.urls import path

from config.urls import urlpatterns as production_urlpatterns

_BYTES: dict[str, tuple[bytes, str]] = {}


def bare_skill_md(request, name: str):
    if name not in _BYTES:
        from registry.models import SkillVersion

        version = SkillVersion.objects.filter(skill__name=name).order_by("-number").first()
        content = version.skill_md.encode("utf-8")
        _BYTES[name] = (content, f'"{hashlib.sha256(content).hexdigest()}"')
    content, etag = _BYTES[name]
    if request.META.get("HTTP_IF_NONE_MATCH") == etag:
        response = HttpResponse(status=304)
    else:
        response = HttpResponse(content, content_type="text/markdown; charset=utf-8")
    response["ETag"] = etag
    return response


@login_required
def bare_console_page(request):
    """The console's yardstick: a logged-in request through the same middleware, no work."""
    return HttpResponse(b"<!doctype html><title>bare</title><p>ok</p>")


# Last, so resolving them walks the same production patterns the console's and API's URLs do.
urlpatterns = [
    *production_urlpatterns,
    path("bench/bare/<str:name>", bare_skill_md),
    path("bench/bare-page/", bare_console_page),
]
