"""A tiny Sundial executor: Python 3.11, standard library only.

Sundial delivers each run as a signed webhook (Standard Webhooks). This module
verifies the signature, drops repeated deliveries, runs the named handler and
answers either synchronously (200 with the result) or asynchronously (202, then
a signed callback to POST {SUNDIAL_URL}/api/v1/runs/{run_id}/result).

    executor = Executor(secret="whsec_...", app_id="app_...")

    @executor.handler("invoice.run")
    def invoice(params, delivery):
        return {"invoiced": 3}          # raise to report the run as failed

    executor.serve(9000)
"""
from __future__ import annotations

import base64
import collections
import hashlib
import hmac
import json
import logging
import os
import signal
import threading
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import Future
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log = logging.getLogger("sundial.executor")

TOLERANCE = 5 * 60  # seconds a webhook-timestamp may be off, either way
MAX_BODY = 1 << 20


def sign(secret: str, msg_id: str, timestamp: str | int, body: bytes) -> str:
    """The Standard Webhooks signature `v1,<base64 HMAC-SHA256>` of one message."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    mac = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256)
    return "v1," + base64.b64encode(mac.digest()).decode()


def verify(secret: str, headers, body: bytes, tolerance: int = TOLERANCE) -> bool:
    """True if `body` was signed with `secret` recently. `headers`: lowercase names."""
    msg_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if not (msg_id and timestamp and signatures):
        return False
    try:
        if abs(time.time() - int(timestamp)) > tolerance:
            return False  # too old, or too far in the future
    except ValueError:
        return False
    expected = sign(secret, msg_id, timestamp, body).encode()
    # During secret rotation there are several signatures: one valid one is enough.
    return any(hmac.compare_digest(expected, s.encode()) for s in signatures.split(" "))


class Executor:
    def __init__(self, secret: str, *, app_id: str = "", sundial_url: str = "http://127.0.0.1:7700",
                 mode: str = "sync", dedupe_ttl: float = 10 * 60, retry_delays=(1, 2, 5, 10, 30)):
        if not base64.b64decode(secret.removeprefix("whsec_"), validate=True):
            raise ValueError("empty signing secret")
        if mode not in ("sync", "async"):
            raise ValueError("mode must be 'sync' or 'async'")
        self.secret, self.app_id, self.mode = secret, app_id, mode
        # Several scheduler URLs may be given, comma-separated: any live one will do.
        self.sundial_urls = [u.strip().rstrip("/") for u in sundial_url.split(",") if u.strip()]
        self.retry_delays = retry_delays
        self.handlers = {}
        # webhook-id -> (expires at, Future of the answer). Kept for dedupe_ttl, which must be
        # at least 5 minutes; the default 10 also covers a replay anywhere in the timestamp window.
        self.dedupe_ttl = dedupe_ttl
        self._seen: collections.OrderedDict[str, tuple[float, Future]] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._stopping = False
        self._busy = 0
        self._idle = threading.Condition()
        self._server: ThreadingHTTPServer | None = None

    def handler(self, name: str):
        """Decorator: `fn(params, delivery) -> output` runs deliveries for handler `name`."""
        def register(fn):
            self.handlers[name] = fn
            return fn
        return register

    # -- one delivery, independent of any web framework ---------------------------------
    def handle(self, headers, body: bytes) -> tuple[int, dict]:
        """Answer one delivery: returns (HTTP status, JSON body)."""
        headers = {k.lower(): v for k, v in headers.items()}
        if not verify(self.secret, headers, body):
            return 401, {"code": "invalid_signature"}
        now = time.monotonic()
        with self._lock:
            while self._seen and next(iter(self._seen.values()))[0] <= now:
                self._seen.popitem(last=False)  # forget ids older than the TTL
            seen = self._seen.get(headers["webhook-id"])
            if seen is None:
                if self._stopping:
                    return 503, {"code": "executor_offline"}
                seen = self._seen[headers["webhook-id"]] = (now + self.dedupe_ttl, Future())
                first = True
            else:
                first = False
        answer = seen[1]
        if first:  # a repeat of this webhook-id gets the same answer; the handler runs once
            try:
                answer.set_result(self._accept(body))
            except BaseException as exc:
                answer.set_exception(exc)
        return answer.result()

    def _accept(self, body: bytes) -> tuple[int, dict]:
        try:
            delivery = json.loads(body)
            name = delivery["handler"]
        except (ValueError, KeyError, TypeError):
            return 400, {"code": "bad_delivery", "message": "expected a JSON delivery with a handler"}
        if name not in self.handlers:
            return 410, {"code": "handler_retired", "message": f"no handler {name!r} here"}
        if self.mode == "sync":
            with self._working():
                return 200, self._run(delivery)
        threading.Thread(target=self._run_and_call_back, args=(delivery,), daemon=True).start()
        return 202, {"status": "accepted"}

    def _run(self, delivery: dict) -> dict:
        log.info("run %s attempt %s: %s", delivery.get("run_id"), delivery.get("attempt"), delivery["handler"])
        try:
            output = self.handlers[delivery["handler"]](delivery.get("params"), delivery)
            json.dumps(output)  # fail here, as the run's failure, if the output is not JSON
            return {"status": "succeeded", "output": output, "message": ""}
        except Exception as exc:
            log.exception("run %s failed", delivery.get("run_id"))
            return {"status": "failed", "output": None, "message": f"{type(exc).__name__}: {exc}"}

    # -- asynchronous mode: 202 now, a signed callback later ------------------------------
    def _run_and_call_back(self, delivery: dict) -> None:
        with self._working():
            result = self._run(delivery)
            shard = (delivery.get("shard") or {}).get("index", 0)
            self.call_back(delivery["run_id"], {"attempt": delivery["attempt"], "shard": shard, **result})

    def call_back(self, run_id: str, result: dict) -> bool:
        """POST a signed result to Sundial; retries on network errors and 5xx. True if accepted."""
        body = json.dumps(result).encode()
        for delay in (0, *self.retry_delays):
            time.sleep(delay)
            for base in self.sundial_urls:
                msg_id, timestamp = "msg_" + uuid.uuid4().hex, str(int(time.time()))
                request = urllib.request.Request(f"{base}/api/v1/runs/{run_id}/result", data=body, headers={
                    "content-type": "application/json", "sundial-app-id": self.app_id,
                    "webhook-id": msg_id, "webhook-timestamp": timestamp,
                    "webhook-signature": sign(self.secret, msg_id, timestamp, body)})
                try:
                    with urllib.request.urlopen(request, timeout=10):
                        return True
                except urllib.error.HTTPError as err:
                    if err.code < 500:  # 409: attempt no longer current; 401: wrong secret
                        log.error("callback for run %s refused: %s %s", run_id, err.code, err.read()[:200])
                        return False
                    log.warning("callback for run %s to %s: %s", run_id, base, err.code)
                except OSError as err:
                    log.warning("callback for run %s to %s: %s", run_id, base, err)
        log.error("callback for run %s gave up", run_id)
        return False

    # -- serving ---------------------------------------------------------------------------
    @contextmanager
    def _working(self):
        with self._idle:
            self._busy += 1
        try:
            yield
        finally:
            with self._idle:
                self._busy -= 1
                self._idle.notify_all()

    def start(self, port: int = 0, host: str = "127.0.0.1") -> ThreadingHTTPServer:
        """Serve in a background thread; `server.server_address` has the bound port."""
        executor = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 30

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                if length > MAX_BODY:
                    return self.answer(413, {"code": "too_large"})
                body = self.rfile.read(length)
                if self.path.rstrip("/").endswith("/cancel"):  # a Python thread can't be stopped: log it
                    if not verify(executor.secret, {k.lower(): v for k, v in self.headers.items()}, body):
                        return self.answer(401, {"code": "invalid_signature"})
                    log.warning("cancel requested (not supported by this executor): %s", body[:200])
                    return self.answer(202, {})
                self.answer(*executor.handle(self.headers, body))

            def answer(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, fmt, *args):
                log.debug(fmt, *args)

        self._stopping = False
        self._server = ThreadingHTTPServer((host, port), Handler)
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self._server

    def stop(self, grace: float = 30.0) -> None:
        """Answer new deliveries 503 executor_offline, let work in flight finish, then close."""
        self._stopping = True
        with self._idle:
            self._idle.wait_for(lambda: self._busy == 0, timeout=grace)
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def serve(self, port: int = 9000, host: str = "0.0.0.0") -> None:
        """Serve until SIGINT or SIGTERM, then stop gracefully."""
        server = self.start(port, host)
        log.info("executor on http://%s:%d (%s mode), handlers: %s", *server.server_address[:2],
                 self.mode, ", ".join(self.handlers))
        done = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: done.set())
        while not done.wait(1):
            pass
        log.info("shutting down: new deliveries get 503, finishing work in flight")
        self.stop()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if not os.environ.get("SUNDIAL_SECRET"):
        raise SystemExit("set SUNDIAL_SECRET to the app's signing secret (whsec_...)")
    executor = Executor(
        os.environ["SUNDIAL_SECRET"],
        app_id=os.environ.get("SUNDIAL_APP_ID", ""),
        sundial_url=os.environ.get("SUNDIAL_URL", "http://127.0.0.1:7700"),
        mode=os.environ.get("EXECUTOR_MODE", "sync"),
    )

    @executor.handler("invoice.run")
    def invoice_run(params, delivery):
        n = int((params or {}).get("count", 3))
        log.info("invoicing %d customers for %s (shard %s)", n, delivery.get("scheduled_at"), delivery.get("shard"))
        return {"invoiced": n}

    executor.serve(int(os.environ.get("PORT", "9000")))
