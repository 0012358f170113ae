"""The catalog's routing report in the console (analysts and authors): recall, the per-skill
table, confusions and overlapping descriptions with the terms they share. The same service the
API calls (`catalog_routing_current`); docs/analysts/catalog-routing.md says how to read it."""

from __future__ import annotations

from django import forms
from django.shortcuts import render
from django.urls import path

from registry.console.access import console_view
from registry.roles import ANY_ROLE
from registry.services.catalog_routing import catalog_routing_current
from registry.services.labels import LABEL_NAME


class RoutingForm(forms.Form):
    label = forms.RegexField(
        required=False,
        regex=LABEL_NAME,
        max_length=36,
        error_messages={"invalid": "Label names are 1-36 characters of a-z, 0-9, '_', '.' and '-'."},
    )


@console_view(scope=ANY_ROLE)
def catalog_routing(request):
    form = RoutingForm(request.GET)
    if not form.is_valid():
        return render(request, "registry/catalog/routing.html", {"form": form, "report": None}, status=400)
    answer = catalog_routing_current(label=form.cleaned_data.get("label") or None)
    return render(
        request, "registry/catalog/routing.html", {"form": form, "report": answer.report, "ready": answer.ready}
    )


urlpatterns = [
    path("catalog/routing/", catalog_routing, name="catalog-routing"),
]
