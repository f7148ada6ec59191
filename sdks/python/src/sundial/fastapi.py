"""FastAPI helper (FastAPI is not a dependency of sundial-sdk: install it yourself)."""
from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, AsyncIterator, Optional

from .asgi import _POOL, handle_asgi

if TYPE_CHECKING:  # pragma: no cover
    from .executor import Executor

__all__ = ["router", "lifespan"]


def router(executor: "Executor", prefix: str = "/sundial") -> Any:
    """A FastAPI ``APIRouter``: ``POST {prefix}/`` deliveries, ``POST {prefix}/cancel`` cancels.
    ``app.include_router(router(ex))`` and ``FastAPI(lifespan=sundial.fastapi.lifespan(ex))``."""
    from fastapi import APIRouter, Request
    from fastapi.responses import Response

    r = APIRouter(prefix=prefix)

    async def _answer(request: Request) -> Response:
        body = await request.body()
        res = await handle_asgi(executor, request.method, request.url.path, list(request.headers.items()), body)
        return Response(content=res.body, status_code=res.status, headers=dict(res.headers))

    # Annotations are strings here (PEP 563) naming local imports: give FastAPI the classes.
    _answer.__annotations__ = {"request": Request, "return": Response}

    r.add_api_route("/", _answer, methods=["POST", "GET"], include_in_schema=False)
    r.add_api_route("/cancel", _answer, methods=["POST"], include_in_schema=False)
    return r


def lifespan(executor: "Executor", address: Optional[str] = None, grace: float = 30.0) -> Any:
    """A FastAPI/Starlette lifespan: register on startup, drain and deregister on shutdown."""

    @contextlib.asynccontextmanager
    async def span(app: Any) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(_POOL, executor.start, address)
        try:
            yield
        finally:
            await loop.run_in_executor(_POOL, executor.shutdown, grace)

    return span
