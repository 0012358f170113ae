"""The audit log in the console: who did what, when, to which object, with before → after.

Filters (actor, object type, object, action, date range) are a plain GET form, live with htmx:
one view serves the page and, to htmx, its table fragment. What a role may read is decided in
`registry.selectors.audit_log_for_user`.
"""

from __future__ import annotations

from django import forms
from django.shortcuts import render
from django.urls import path
from django.utils.http import urlencode

from registry import selectors
from registry.console.access import console_view
from registry.roles import ADMIN_ONLY_AUDIT_OBJECTS, ANY_ROLE, audit_sees_accounts
from registry.selectors.audit import KNOWN_OBJECT_TYPES, NO_USER, AuditFilter

PAGE_SIZE = 50


class AuditFilterForm(forms.Form):
    actor = forms.CharField(required=False, max_length=150)
    object_type = forms.RegexField(required=False, regex=r"^[a-z_]{1,64}$", max_length=64)
    object = forms.CharField(required=False, max_length=255)
    action = forms.CharField(required=False, max_length=64)
    date_from = forms.DateField(required=False, input_formats=["%Y-%m-%d"])
    date_to = forms.DateField(required=False, input_formats=["%Y-%m-%d"])

    def clean(self):
        cleaned = super().clean()
        start, end = cleaned.get("date_from"), cleaned.get("date_to")
        if start and end and start > end:
            self.add_error("date_to", "The end date is before the start date.")
        return cleaned


@console_view(scope=ANY_ROLE)
def audit_list(request):
    form = AuditFilterForm(request.GET)
    valid = form.is_valid()  # a bad filter is named beside its field, the others still apply
    query = form.cleaned_data
    filters = AuditFilter(
        actor=(query.get("actor") or "").strip(),
        object_type=query.get("object_type") or "",
        object=(query.get("object") or "").strip(),
        action=(query.get("action") or "").strip(),
        date_from=query.get("date_from"),
        date_to=query.get("date_to") if "date_to" not in form.errors else None,
    )
    page = selectors.audit_page(user=request.user, filters=filters, page=request.GET.get("page"), per_page=PAGE_SIZE)
    params = {key: value for key, value in request.GET.items() if key != "page" and value}
    context = {
        "form": form,
        "page": page,
        "params": urlencode(params),
        "filtered": bool(params),
        "no_user": NO_USER,
        "object_types": [
            kind
            for kind in KNOWN_OBJECT_TYPES
            if audit_sees_accounts(request.user) or kind not in ADMIN_ONLY_AUDIT_OBJECTS
        ],
        "sees_accounts": audit_sees_accounts(request.user),
    }
    if request.htmx:
        # htmx swaps no 4xx answer, so a bad filter typed live is named inside the fragment.
        return render(request, "registry/audit/list.html#audit-table", context)
    return render(request, "registry/audit/list.html", context, status=200 if valid else 400)


urlpatterns = [
    path("audit/", audit_list, name="audit-list"),
]
