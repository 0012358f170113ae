"""The one place a console view's domain errors become responses, as the DRF exception handler is
for the API: `console_view` catches `ApplicationError` around every view and answers here.

- A view that has a form to show again says so before it calls the service
  (`on_domain_error(request, lambda error: ...)`): the form comes back with the problem beside its
  field, under the error's status code.
- Otherwise `NotFound` is the 404 page, with the error's message.
- Anything else is a flash message and a redirect back to the page the form was on (its `next`
  field when that is one of our paths), or to the page itself.
"""

from __future__ import annotations

from collections.abc import Callable

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme

from registry.errors import ApplicationError, NotFound

ErrorResponder = Callable[[ApplicationError], HttpResponse]

_RESPONDER = "_console_domain_error_response"


def on_domain_error(request: HttpRequest, respond: ErrorResponder) -> None:
    """From here on, a domain error in this request is answered by `respond` (e.g. the form again
    with the problem beside its field) rather than a flash message."""
    setattr(request, _RESPONDER, respond)


def domain_error_response(request: HttpRequest, error: ApplicationError) -> HttpResponse:
    respond: ErrorResponder | None = getattr(request, _RESPONDER, None)
    if respond is not None:  # the view said how, around the service call that failed
        response = respond(error)
    elif isinstance(error, NotFound):
        raise Http404(error.detail)
    else:
        response = flash_back(request, error.detail, default=request.path)
    for name, value in error.headers().items():  # e.g. a limit's Retry-After, as the API sends it
        response[name] = value
    return response


def flash_back(request: HttpRequest, message: str, *, default: str) -> HttpResponse:
    """The message as an error flash, and a redirect to the page the form was on (`next_url`)."""
    messages.error(request, message)
    return redirect(next_url(request, default))


def form_add_domain_error(form: forms.Form, error: ApplicationError, *, renamed: dict[str, str] | None = None) -> None:
    """Each problem the service named beside its form field (`renamed` maps a service's field
    name to the form's); one the form has no field for, or an error naming none, at the top."""
    for field, problem in error.fields.items():
        field = (renamed or {}).get(field, field)
        form.add_error(field if field in form.fields else None, problem)
    if not error.fields:
        form.add_error(None, error.detail)


def next_url(request: HttpRequest, default: str) -> str:
    """Back to the page the form was on: only our own paths, never an address from elsewhere."""
    target = request.POST.get("next", "")
    # Django's own check: a path like `/\evil.example` is read by browsers as another host.
    ours = target.startswith("/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return target if ours else default
