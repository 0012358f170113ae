"""Console pages (server-rendered, htmx for liveness). Everything here requires login."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from registry import selectors


@login_required
def home(request):
    return render(request, "registry/home.html", {"stats": selectors.dashboard_stats()})
