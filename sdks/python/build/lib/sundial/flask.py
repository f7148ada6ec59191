"""Flask helper (Flask is not a dependency of sundial-sdk: install it yourself)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .executor import Executor

__all__ = ["blueprint"]


def blueprint(executor: "Executor", name: str = "sundial", url_prefix: str = "/sundial") -> Any:
    """A Flask ``Blueprint``: ``POST {url_prefix}/`` deliveries, ``POST {url_prefix}/cancel``
    cancels. Register it, then ``executor.start("https://host{url_prefix}/")``."""
    from flask import Blueprint, Response, request

    bp = Blueprint(name, __name__, url_prefix=url_prefix)

    def _answer(path: str) -> Any:
        body = request.get_data(cache=False)
        r = executor.handle(request.method, path, list(request.headers.items()), body)
        return Response(r.body, status=r.status, headers=r.headers)

    def delivery() -> Any:
        return _answer(request.path)

    def cancel() -> Any:
        return _answer(request.path)

    bp.add_url_rule("/", "delivery", delivery, methods=["POST", "GET"], strict_slashes=False)
    bp.add_url_rule("/cancel", "cancel", cancel, methods=["POST"])

    return bp
