"""The dashboard: counts, recent publishes, and the skills working best and worst (from analytics)."""

from __future__ import annotations

from datetime import timedelta

from django.shortcuts import render
from django.urls import path
from django.utils import timezone

from registry import selectors
from registry.console.access import console_view
from registry.selectors import analytics
from registry.services.usage import usage_offers_roll_up


@console_view()
def home(request):
    usage_offers_roll_up()  # the lists count every turn finished so far
    last_30_days = analytics.AnalyticsFilter(date_from=timezone.now().date() - timedelta(days=29))
    table = analytics.skill_analytics(filters=last_30_days)  # one read for both rankings
    return render(
        request,
        "registry/home.html",
        {
            "stats": selectors.dashboard_stats(),
            "usage_events": analytics.usage_event_count(),
            "rankings": analytics.skill_rankings(table, limit=5),
        },
    )


urlpatterns = [
    path("", home, name="home"),
]
