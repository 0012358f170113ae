"""Console pages (server-rendered templates, htmx for liveness). Every page requires login.

One module per area (dashboard, skills, rules, analytics, playground, tokens, audit); each has
its own `urlpatterns`, gathered in `registry.console.urls`. Views stay thin: they parse input,
call one selector or service, and render (STYLE.md).
"""
