"""A WSGI application for an executor (any WSGI server: gunicorn, waitress, wsgiref)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from .executor import Executor

__all__ = ["wsgi_app"]


def wsgi_app(executor: "Executor") -> Callable[..., Iterable[bytes]]:
    """``POST`` any path: a delivery; ``POST …/cancel``: a cancel. Registration is yours to
    start (``executor.start(address)``) since WSGI has no lifespan."""

    def app(environ: Dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > executor.max_body:
            start_response("413 Payload Too Large", [("content-type", "application/json")])
            return [b'{"code":"too_large"}']
        body = environ["wsgi.input"].read(length) if length else b""
        headers: List[Tuple[str, str]] = []
        for key, value in environ.items():
            if key.startswith("HTTP_"):
                headers.append((key[5:].replace("_", "-").lower(), value))
            elif key == "CONTENT_TYPE":
                headers.append(("content-type", value))
        path = (environ.get("SCRIPT_NAME") or "") + (environ.get("PATH_INFO") or "/")
        response = executor.handle(environ.get("REQUEST_METHOD", "GET"), path, headers, body)
        start_response(f"{response.status} {_REASONS.get(response.status, 'Status')}", response.headers)
        return [response.body]

    return app


_REASONS = {200: "OK", 202: "Accepted", 400: "Bad Request", 401: "Unauthorized", 405: "Method Not Allowed",
            410: "Gone", 413: "Payload Too Large", 500: "Internal Server Error", 503: "Service Unavailable"}
