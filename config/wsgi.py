import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# A web process serves /mcp: import what it answers with now rather than in its first request
# (registry/mcp/views.py leaves it out of the URLs' imports for the processes that never serve it).
import registry.mcp.server  # noqa: E402, F401
