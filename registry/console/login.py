"""Console login with throttling (registry/services/logins.py).

Two layers, so no login path gets around the throttle: the authentication backend refuses every
attempt for a locked username or IP and counts failures — whoever calls `authenticate()` (this
page, the Django admin's login, a test client's `login()`) — and the login page answers a locked
attempt with 429 and Retry-After instead of the usual "didn't match"."""

from __future__ import annotations

import math

from django.contrib.auth import views as auth_views
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied

from registry.services.logins import LoginAttempt, login_failure_record, login_retry_after, login_success_record


def _attempt(request, username) -> LoginAttempt:
    ip = request.META.get("REMOTE_ADDR", "") if request is not None else ""
    return LoginAttempt(username=str(username or ""), ip=ip)


class ThrottledModelBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        attempt = _attempt(request, username if username is not None else kwargs.get("username"))
        if login_retry_after(attempt=attempt) is not None:
            # PermissionDenied stops `authenticate()` at once: no other backend, no password check.
            raise PermissionDenied("Too many failed logins.")
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            retry_after = login_failure_record(attempt=attempt)
            if retry_after is not None and request is not None:
                request.login_retry_after = retry_after
        else:
            login_success_record(attempt=attempt)
        return user


class ThrottledLoginView(auth_views.LoginView):
    template_name = "registration/login.html"

    def post(self, request, *args, **kwargs):
        retry_after = login_retry_after(attempt=_attempt(request, request.POST.get("username")))
        if retry_after is not None:
            return self._locked(retry_after)
        response = super().post(request, *args, **kwargs)
        retry_after = getattr(request, "login_retry_after", None)
        return self._locked(retry_after) if retry_after is not None else response

    def _locked(self, retry_after: int):
        minutes = max(1, math.ceil(retry_after / 60))
        form = self.get_form_class()(self.request)  # blank: nothing typed is echoed back
        context = self.get_context_data(
            form=form,
            locked=f"Too many failed logins for this account or from this address. Try again in {minutes} "
            f"minute{'s' if minutes != 1 else ''}.",
        )
        response = self.render_to_response(context, status=429)
        response["Retry-After"] = str(retry_after)
        return response
