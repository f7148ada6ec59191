"""An ASGI application for an executor (uvicorn, hypercorn, Starlette/FastAPI mounts)."""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Dict, List, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from .executor import Executor

__all__ = ["asgi_app"]

Scope = Dict[str, Any]
Receive = Callable[[], Awaitable[Dict[str, Any]]]
Send = Callable[[Dict[str, Any]], Awaitable[None]]

# Deliveries wait (up to the sync budget) for their handler: not on the event loop, and not in
# the loop's small default pool either.
_POOL = ThreadPoolExecutor(max_workers=256, thread_name_prefix="sundial-asgi")


async def handle_asgi(executor: "Executor", method: str, path: str, headers: List[Tuple[str, str]], body: bytes) -> Any:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_POOL, executor.handle, method, path, headers, body)


def asgi_app(executor: "Executor", *, lifespan: bool = True) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """``POST`` any path: a delivery; ``POST …/cancel``: a cancel. With ``lifespan``, startup
    registers (``executor.start()``; ``executor.address`` must be set) and shutdown drains and
    deregisters."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    try:
                        if lifespan:
                            await asyncio.get_running_loop().run_in_executor(_POOL, executor.start)
                        await send({"type": "lifespan.startup.complete"})
                    except Exception as exc:
                        await send({"type": "lifespan.startup.failed", "message": str(exc)})
                elif message["type"] == "lifespan.shutdown":
                    if lifespan:
                        await asyncio.get_running_loop().run_in_executor(_POOL, executor.shutdown)
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        chunks = []
        size = 0
        while True:
            message = await receive()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > executor.max_body:
                await _send(send, 413, b'{"code":"too_large"}', [("content-type", "application/json")])
                return
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope.get("headers", [])]
        path = (scope.get("root_path") or "") + scope.get("path", "/")
        response = await handle_asgi(executor, scope.get("method", "GET"), path, headers, b"".join(chunks))
        await _send(send, response.status, response.body, response.headers)

    return app


async def _send(send: Send, status: int, body: bytes, headers: List[Tuple[str, str]]) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]})
    await send({"type": "http.response.body", "body": body})
