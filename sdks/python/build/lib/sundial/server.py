"""A standard-library server for an executor: ``ThreadingHTTPServer`` with a listen backlog
that fits bursts (the default backlog of 5 drops connections under a burst)."""
from __future__ import annotations

import logging
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, List, Optional, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from .executor import Executor

log = logging.getLogger("sundial")

__all__ = ["ExecutorServer", "make_server", "serve"]


class ExecutorServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` with ``request_queue_size`` 1024 and daemon threads."""

    request_queue_size = 1024
    daemon_threads = True
    allow_reuse_address = True

    @property
    def url(self) -> str:
        host, port = str(self.server_address[0]), int(self.server_address[1])
        host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        return f"http://{host}:{port}/"


def make_server(executor: "Executor", host: str = "127.0.0.1", port: int = 0) -> ExecutorServer:
    """A server for ``executor`` bound to ``host:port`` (port 0: any free port); not started."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 60

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            if length > executor.max_body:
                self._send(413, b'{"code":"too_large"}', [("content-type", "application/json")])
                self.close_connection = True
                return
            body = self.rfile.read(length) if length else b""
            response = executor.handle(self.command, self.path.split("?", 1)[0], list(self.headers.items()), body)
            self._send(response.status, response.body, response.headers)

        def _send(self, status: int, body: bytes, headers: List[Tuple[str, str]]) -> None:
            self.send_response(status)
            names = set()
            for k, v in headers:
                names.add(k.lower())
                self.send_header(k, v)
            if "content-length" not in names:
                self.send_header("content-length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_POST = _serve
        do_GET = _serve
        do_HEAD = _serve

        def log_message(self, format: str, *args: object) -> None:
            log.debug("%s " + format, self.address_string(), *args)

    return ExecutorServer((host, port), Handler)


def start_server(executor: "Executor", host: str = "127.0.0.1", port: int = 0, *, address: Optional[str] = None,
                 register: bool = True) -> ExecutorServer:
    """Serve in a background thread and start the executor (register, heartbeats); the address
    registered is ``address`` or the server's own URL. Stop with ``stop_server``."""
    server = make_server(executor, host, port)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True,
                     name="sundial-server").start()
    if register:
        executor.start(address or executor.address or server.url)
    return server


def stop_server(executor: "Executor", server: ExecutorServer, grace: float = 30.0) -> bool:
    """Shut down gracefully (503 to new deliveries, wait for runs, deregister), then close."""
    finished = executor.shutdown(grace)
    server.shutdown()
    server.server_close()
    return finished


def serve(executor: "Executor", host: str = "0.0.0.0", port: int = 9000, *, address: Optional[str] = None) -> None:
    """Serve until SIGINT or SIGTERM, then shut down gracefully."""
    server = start_server(executor, host, port, address=address)
    log.info("executor on %s, handlers: %s", executor.address, ", ".join(executor.handlers))
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    while not done.wait(1):
        pass
    log.info("shutting down: new deliveries get 503, finishing runs in progress")
    stop_server(executor, server)
