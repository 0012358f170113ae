"""gunicorn's configuration file (`gunicorn -c config/gunicorn.py`, see Procfile).

gunicorn names itself in a `Server` header on every response, and has had no setting to stop
it since version 22. The name and version only tell a scanner which exploits to try, so the
header is left out of the lines gunicorn writes before the application's headers."""

from gunicorn.http.wsgi import Response

_default_headers = Response.default_headers


def _default_headers_without_server(self: Response) -> list[str]:
    return [line for line in _default_headers(self) if not line.startswith("Server:")]


Response.default_headers = _default_headers_without_server  # type: ignore[method-assign]
