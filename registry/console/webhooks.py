"""Webhooks in the console (admins, or anyone whose role has `webhooks:write`): the hooks with
their latest deliveries, create (the secret shown once) and delete with confirmation. Writes go
through `registry.services.webhooks`, audited with the console as the channel."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.cache import never_cache

from registry.console.access import console_view
from registry.console.errors import form_add_domain_error, on_domain_error
from registry.errors import ApplicationError
from registry.models import TokenScope, WebhookEvent
from registry.selectors.webhooks import RECENT_DELIVERIES, webhook_get, webhook_rows
from registry.services.audit import Actor
from registry.services.webhooks import SECRET_MAX, URL_MAX, webhook_create, webhook_delete

WRITE = TokenScope.WEBHOOKS_WRITE.value


class WebhookCreateForm(forms.Form):
    url = forms.CharField(max_length=URL_MAX)
    events = forms.MultipleChoiceField(choices=WebhookEvent.choices)
    secret = forms.CharField(max_length=SECRET_MAX, required=False, strip=False)


# How often the page asks for its deliveries again while one is unfinished.
POLL_EVERY = "2s"


def _page(request, *, form: WebhookCreateForm | None = None, new_webhook=None, secret: str = "", status: int = 200):
    rows = webhook_rows()
    polling = any(row.unfinished for row in rows)
    if request.htmx and request.method == "GET":
        # The poll: the hooks and their deliveries; 286 once none is unfinished, so htmx stops asking.
        context = {"rows": rows, "recent_count": RECENT_DELIVERIES, "polling": polling, "poll_every": POLL_EVERY}
        return render(request, "registry/webhooks/list.html#hooks", context, status=200 if polling else 286)
    context = {
        "rows": rows,
        "polling": polling,
        "poll_every": POLL_EVERY,
        # The URL hint says what this server accepts (webhook_url_check reads the same setting).
        "private_allowed": settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES,
        "recent_count": RECENT_DELIVERIES,
        "form": form,
        "event_choices": WebhookEvent.values,
        "chosen_events": (form["events"].value() or []) if form is not None else WebhookEvent.values,
        "new_webhook": new_webhook,
        "secret": secret,
    }
    return render(request, "registry/webhooks/list.html", context, status=status)


@never_cache  # the answer to a create holds the secret: no browser or proxy may keep it
@console_view(scope=WRITE)
def webhook_list(request):
    """GET: the hooks and their latest deliveries. POST: create one and show its secret, this once."""
    if request.method != "POST":
        return _page(request)
    form = WebhookCreateForm(request.POST)
    if not form.is_valid():
        return _page(request, form=form, status=400)
    on_domain_error(request, lambda error: _refused(request, form, error))
    webhook, secret = webhook_create(
        url=form.cleaned_data["url"],
        events=form.cleaned_data["events"],
        secret=form.cleaned_data["secret"] or None,
        actor=Actor(user=request.user, via="console"),
    )
    messages.success(request, f"Created a webhook to {webhook.url}.")
    return _page(request, new_webhook=webhook, secret=secret, status=201)


def _refused(request, form: WebhookCreateForm, error: ApplicationError):
    """The form again, each problem beside its field."""
    form_add_domain_error(form, error)
    return _page(request, form=form, status=error.status)


@console_view(scope=WRITE)
def webhook_delete_view(request, webhook_id: int):
    """GET or POST without `confirm`: what deleting does, and a Confirm button. POST with it: delete."""
    webhook = webhook_get(webhook_id=webhook_id)  # NotFound: the 404 page
    if request.method != "POST" or request.POST.get("confirm") != "1":
        return render(request, "registry/webhooks/delete_confirm.html", {"webhook": webhook})
    webhook_delete(webhook=webhook, actor=Actor(user=request.user, via="console"))
    messages.success(request, f"Deleted the webhook to {webhook.url}: nothing more is sent to it.")
    return redirect(reverse("webhook-list"))


urlpatterns = [
    path("webhooks/", webhook_list, name="webhook-list"),
    path("webhooks/<int:webhook_id>/delete/", webhook_delete_view, name="webhook-delete"),
]
