"""The executor: verifies deliveries, runs handlers by name, answers Sundial (protocol 1).

Framework-free: :meth:`Executor.handle` takes (method, path, headers, body) and returns a
:class:`Response`; the WSGI, ASGI, Flask, FastAPI and standard-library adapters call it.
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import inspect
import json
import logging
import threading
import time
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple, TypeVar, Union

from ._calls import SchedulerCalls, SchedulerUnavailable
from .context import Context
from .errors import Fail, PayloadError
from .payload import parse_payload
from .signing import TOLERANCE_SECS, SignatureError, decode_secret, verify

log = logging.getLogger("sundial")

__all__ = ["Executor", "Response", "Defer", "PROTOCOL_VERSION"]

#: The wire protocol this SDK speaks (sdks/PROTOCOL.md).
PROTOCOL_VERSION = 1

F = TypeVar("F", bound=Callable[..., Any])


class _DeferType:
    """Returned by a handler: answer ``202`` now; the handler (or anything holding the
    context) reports the result later with ``ctx.succeed(...)`` / ``ctx.fail(...)``."""

    _instance: Optional["_DeferType"] = None

    def __new__(cls) -> "_DeferType":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "sundial.Defer"


#: Return this from a handler to answer 202 and report the result later.
Defer = _DeferType()


class Response(NamedTuple):
    """An HTTP answer: status, JSON body bytes (or empty), headers."""

    status: int
    body: bytes
    headers: List[Tuple[str, str]]

    @staticmethod
    def json(status: int, payload: Any) -> "Response":
        data = b"" if payload is None else json.dumps(payload, separators=(",", ":")).encode()
        headers = [("content-type", "application/json")] if data else []
        return Response(status, data, headers + [("content-length", str(len(data)))])

    @property
    def payload(self) -> Any:
        return json.loads(self.body) if self.body else None


ACCEPTED = Response.json(202, {"status": "accepted"})


@dataclass
class _Handler:
    name: str
    fn: Callable[..., Any]
    payload: Any
    mode: str
    budget: Optional[float]
    arity: int
    is_coroutine: bool


@dataclass
class _Run:
    ctx: Context
    handler: _Handler
    done: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    answer: Optional[Dict[str, Any]] = None  # the result, once the handler returned
    deferred: bool = False  # 202 was given: the result goes by callback
    reported: bool = False  # the callback was sent (or is being sent)


@dataclass
class _Seen:
    expires: float
    ready: threading.Event = field(default_factory=threading.Event)
    response: Optional[Response] = None
    run: Optional[_Run] = None


def _lower(headers: Union[Mapping[str, str], Sequence[Tuple[str, str]]]) -> Dict[str, str]:
    items = headers.items() if isinstance(headers, Mapping) else headers
    return {str(k).lower(): str(v) for k, v in items}


def _result_answer(status: str, output: Any = None, message: Optional[str] = None, retry: Optional[bool] = None) -> Dict[str, Any]:
    answer: Dict[str, Any] = {"status": status}
    if output is not None:
        answer["output"] = output
    if message:
        answer["message"] = message
    if retry is False:
        answer["retry"] = False
    return answer


class Executor:
    """A Sundial executor.

    ``secrets``: the app's signing secrets (``whsec_…``; several during a rotation: deliveries
    verify with any, calls to Sundial are signed with all). ``scheduler_urls``: Sundial nodes
    (any live one is used) for registration, heartbeats, result callbacks and logs; ``app_id``
    names the app in those calls. ``address``: the URL Sundial delivers to (what
    :meth:`start` registers; the standard-library server fills it in when not given).

    ``sync_budget``: seconds a delivery's HTTP answer waits for a handler in ``auto`` mode;
    a handler still running then is answered ``202`` and its result goes by the signed
    callback. ``repeat_wait``: how long a repeated ``webhook-id`` waits for the first
    delivery's answer before it is answered ``202`` (the result then goes by callback).
    ``dedupe_ttl`` (≥ 600 s) and ``dedupe_max`` bound the memory of answers per ``webhook-id``.
    """

    def __init__(
        self,
        secrets: Union[str, Sequence[str]],
        scheduler_urls: Union[str, Sequence[str]] = (),
        app_id: str = "",
        *,
        address: Optional[str] = None,
        name: Optional[str] = None,
        tags: Optional[Sequence[str]] = None,
        metadata: Optional[Dict[str, Any]] = None,
        sync_budget: float = 20.0,
        repeat_wait: Optional[float] = None,
        dedupe_ttl: float = 600.0,
        dedupe_max: int = 10_000,
        tolerance: int = TOLERANCE_SECS,
        max_body: int = 4 << 20,
        log_flush_interval: float = 0.5,
        callback_deadline: float = 900.0,
        http_timeout: float = 10.0,
    ) -> None:
        self.secrets: List[str] = [secrets] if isinstance(secrets, str) else list(secrets)
        if not self.secrets:
            raise ValueError("give at least one signing secret (whsec_…)")
        for s in self.secrets:
            decode_secret(s)
        urls = [u for u in scheduler_urls.split(",")] if isinstance(scheduler_urls, str) else list(scheduler_urls)
        if dedupe_ttl < 600:
            raise ValueError("dedupe_ttl must be at least 600 seconds (a redelivery can come 5 minutes late)")
        self.app_id = app_id
        self.address = address
        self.name = name
        self.tags = list(tags) if tags else None
        self.metadata = metadata
        self.sync_budget = sync_budget
        self.repeat_wait = sync_budget if repeat_wait is None else repeat_wait
        self.dedupe_ttl = dedupe_ttl
        self.dedupe_max = dedupe_max
        self.tolerance = tolerance
        self.max_body = max_body
        self.log_flush_interval = log_flush_interval
        self.callback_deadline = callback_deadline
        self.calls = SchedulerCalls(urls, self.secrets, app_id, timeout=http_timeout)
        self.executor_id: Optional[str] = None
        self.heartbeat_interval = 3.0
        self.metadata_interval = 30.0
        self._handlers: Dict[str, _Handler] = {}
        self._retired: "set[str]" = set()
        self._seen: "collections.OrderedDict[str, _Seen]" = collections.OrderedDict()
        self._running: Dict[str, _Run] = {}
        self._cancels: "collections.OrderedDict[str, float]" = collections.OrderedDict()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._draining = False
        self._stopped = threading.Event()
        self._started = False
        self._dirty: "set[Context]" = set()
        self._dirty_cond = threading.Condition()
        self._threads: List[threading.Thread] = []

    # -- declaring handlers --------------------------------------------------------------
    def handler(
        self,
        name: str,
        *,
        payload: Any = None,
        mode: str = "auto",
        budget: Optional[float] = None,
    ) -> Callable[[F], F]:
        """Declare the handler ``name`` (the job's ``handler``).

        The function takes ``(ctx)``, or ``(payload, ctx)``: ``payload`` is the run's params
        parsed into ``payload=`` (a pydantic model, a dataclass, or any callable), or into the
        annotation of its first parameter; a mismatch fails the run (not retried) with a message
        naming the field. It returns the run's output (any JSON value), or :data:`Defer`; it
        raises :class:`FailNoRetry` to fail for good, anything else to fail (retry per the job).
        ``mode``: ``auto`` (answer in the HTTP response within ``budget`` seconds, else ``202`` +
        callback), ``sync`` (always in the response), ``async`` (always ``202`` + callback).
        ``async def`` handlers run on their own event loop in the run's thread.
        """
        if mode not in ("auto", "sync", "async"):
            raise ValueError("mode is 'auto', 'sync' or 'async'")

        def register(fn: F) -> F:
            params = [
                p
                for p in inspect.signature(fn).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
            tp = payload
            if tp is None and len(params) >= 2:
                try:
                    hints = typing.get_type_hints(fn)
                except Exception as exc:
                    if isinstance(params[0].annotation, str):
                        raise TypeError(
                            f"handler {name!r}: cannot resolve the annotation {params[0].annotation!r} of "
                            f"{params[0].name!r} ({exc}); define the type at module level or pass payload="
                        ) from None
                    hints = {}
                hinted = hints.get(params[0].name)
                if hinted is not None and hinted is not Any and isinstance(hinted, type) and hinted is not Context:
                    tp = hinted
            self._handlers[name] = _Handler(
                name, fn, tp, mode, budget, min(len(params), 2), inspect.iscoroutinefunction(fn)
            )
            self._retired.discard(name)
            return fn

        return register

    def retire(self, name: str) -> None:
        """Stop serving ``name``: its deliveries are answered ``410 handler_retired``."""
        self._retired.add(name)

    @property
    def handlers(self) -> List[str]:
        return [n for n in self._handlers if n not in self._retired]

    # -- the HTTP entry point ------------------------------------------------------------
    def handle(
        self, method: str, path: str, headers: Union[Mapping[str, str], Sequence[Tuple[str, str]]], body: bytes
    ) -> Response:
        """Answer one HTTP request: ``POST <path>`` a delivery, ``POST <path>/cancel`` a cancel,
        ``GET`` a health answer."""
        h = _lower(headers)
        if method.upper() in ("GET", "HEAD"):
            return Response.json(200, {"status": "draining" if self._draining else "ok", "handlers": self.handlers})
        if method.upper() != "POST":
            return Response.json(405, {"code": "method_not_allowed", "message": "POST deliveries here"})
        if len(body) > self.max_body:
            return Response.json(413, {"code": "too_large", "message": f"at most {self.max_body} bytes"})
        if path.rstrip("/").endswith("/cancel"):
            return self.handle_cancel(h, body)
        return self.handle_delivery(h, body)

    def _verify(self, h: Dict[str, str], body: bytes) -> Optional[Response]:
        try:
            verify(self.secrets, h, body, tolerance=self.tolerance)
        except SignatureError as exc:
            return Response.json(401, {"code": exc.code, "message": exc.message})
        return None

    def handle_delivery(self, headers: Union[Mapping[str, str], Sequence[Tuple[str, str]]], body: bytes) -> Response:
        h = _lower(headers)
        refused = self._verify(h, body)
        if refused:
            return refused
        msg_id = h["webhook-id"]
        now = time.monotonic()
        with self._lock:
            self._forget(now)
            seen = self._seen.get(msg_id)
            first = seen is None
            if first:
                if self._draining:
                    return Response.json(503, {"code": "executor_offline", "message": "this executor is shutting down"})
                seen = self._seen[msg_id] = _Seen(expires=now + self.dedupe_ttl)
        assert seen is not None
        if not first:
            return self._repeat(seen)
        try:
            response = self._accept(seen, h, body)
        except BaseException:
            response = Response.json(500, {"code": "internal", "message": "the executor failed to take the delivery"})
            log.exception("taking delivery %s", msg_id)
        seen.response = response
        seen.ready.set()
        return response

    def _repeat(self, seen: _Seen) -> Response:
        """A repeated webhook-id: the first answer (waiting for it a while), or 202 with the
        result going by callback."""
        if seen.ready.wait(self.repeat_wait) and seen.response is not None:
            return seen.response
        run = seen.run
        if run is not None:
            with run.lock:
                if run.answer is None:
                    run.deferred = True
                    return ACCEPTED
            return self._answer_response(run.answer)
        return ACCEPTED

    def _forget(self, now: float) -> None:
        while self._seen:
            oldest = next(iter(self._seen.values()))
            if oldest.expires > now and len(self._seen) <= self.dedupe_max:
                break
            self._seen.popitem(last=False)
        while self._cancels and next(iter(self._cancels.values())) <= now:
            self._cancels.popitem(last=False)

    def _accept(self, seen: _Seen, h: Dict[str, str], body: bytes) -> Response:
        try:
            delivery = json.loads(body)
            if not isinstance(delivery, dict) or "run_id" not in delivery:
                raise ValueError("not a delivery object")
        except ValueError as exc:
            return Response.json(400, {"code": "bad_delivery", "message": f"the body is not a Sundial delivery: {exc}"})
        name = delivery.get("handler")
        handler = self._handlers.get(name) if isinstance(name, str) else None
        if handler is None or name in self._retired:
            return Response.json(410, {"code": "handler_retired", "message": f"this executor does not serve handler {name!r}"})
        ctx = Context(self, delivery, h)
        run = _Run(ctx, handler)
        seen.run = run
        with self._lock:
            if ctx.key in self._cancels:
                ctx.cancelled.set()
            self._running[ctx.key] = run
        if handler.mode == "async":
            run.deferred = True
        thread = threading.Thread(target=self._execute, args=(run,), name=f"sundial-run-{ctx.run_id}", daemon=True)
        thread.start()
        if handler.mode == "async":
            return ACCEPTED
        budget = None if handler.mode == "sync" else (handler.budget if handler.budget is not None else self.sync_budget)
        run.done.wait(budget)
        with run.lock:
            if run.answer is None:
                run.deferred = True
                return ACCEPTED
            return self._answer_response(run.answer)

    @staticmethod
    def _answer_response(answer: Dict[str, Any]) -> Response:
        if answer.get("status") == "deferred":
            return ACCEPTED
        return Response.json(200, answer)

    # -- running a handler ---------------------------------------------------------------
    def _call_handler(self, run: _Run) -> Any:
        ctx, handler = run.ctx, run.handler
        ctx.payload = parse_payload(handler.payload, ctx.params)
        if handler.arity >= 2:
            result = handler.fn(ctx.payload, ctx)
        elif handler.arity == 1:
            result = handler.fn(ctx)
        else:
            result = handler.fn()
        if inspect.isawaitable(result):
            async def wait() -> Any:
                return await result

            result = asyncio.run(wait())
        return result

    def _execute(self, run: _Run) -> None:
        ctx = run.ctx
        try:
            try:
                output = self._call_handler(run)
                if output is Defer:
                    answer = {"status": "deferred"}
                else:
                    json.dumps(output)  # an output that is not JSON fails the run here
                    answer = _result_answer("succeeded", output)
            except PayloadError as exc:
                ctx.log(exc.message, "error")
                answer = _result_answer("failed", None, exc.message, retry=False)
            except Fail as exc:
                answer = _result_answer("failed", exc.output, exc.message, retry=exc.retry)
            except (TypeError, ValueError) as exc:
                answer = _result_answer("failed", None, f"{type(exc).__name__}: {exc}")
                log.exception("run %s attempt %s failed", ctx.run_id, ctx.attempt)
            except BaseException as exc:
                answer = _result_answer("failed", None, f"{type(exc).__name__}: {exc}")
                log.exception("run %s attempt %s failed", ctx.run_id, ctx.attempt)
            self._flush_logs(ctx)
            with run.lock:
                run.answer = answer
                callback = run.deferred and answer.get("status") != "deferred" and not run.reported
                if callback:
                    run.reported = True
            run.done.set()
            if callback:
                self._report(ctx, answer)
        finally:
            if run.answer is None or run.answer.get("status") != "deferred":
                self._finished(ctx)

    def _finished(self, ctx: Context) -> None:
        with self._lock:
            self._running.pop(ctx.key, None)
            self._idle.notify_all()

    # -- results reported later ------------------------------------------------------------
    def report(
        self, ctx: Context, status: str = "succeeded", output: Any = None, message: Optional[str] = None,
        retry: Optional[bool] = None,
    ) -> bool:
        """Report a deferred run's result (after the handler returned :data:`Defer`)."""
        ok = self._report(ctx, _result_answer(status, output, message, retry))
        self._finished(ctx)
        return ok

    def _report(self, ctx: Context, answer: Dict[str, Any]) -> bool:
        """The signed result callback, retried on network errors and 5xx until
        ``callback_deadline``. True if Sundial took it."""
        self._flush_logs(ctx)
        body: Dict[str, Any] = {"attempt": ctx.attempt, "shard": ctx.shard.index, **answer}
        deadline = time.monotonic() + self.callback_deadline
        delays = [0.0, 0.25, 0.5, 1, 2, 5, 10, 30]
        n = 0
        while True:
            try:
                status, payload = self.calls.post(f"/api/v1/runs/{ctx.run_id}/result", body)
            except SchedulerUnavailable as exc:
                status, payload = 0, str(exc)
            if 200 <= status < 300:
                return True
            if status == 413 and body.get("status") == "succeeded":
                body = {
                    "attempt": ctx.attempt, "shard": ctx.shard.index, "status": "failed",
                    "message": "the handler's output is larger than the server's max_output_bytes",
                }
                continue
            if status and status != 429:
                log.error("result of run %s attempt %s refused: %s %s", ctx.run_id, ctx.attempt, status, payload)
                return False
            delay = delays[min(n, len(delays) - 1)]
            n += 1
            if time.monotonic() + delay > deadline:
                log.error("result of run %s attempt %s not delivered: %s", ctx.run_id, ctx.attempt, payload)
                return False
            time.sleep(delay)

    # -- logs ------------------------------------------------------------------------------
    def _logs_pending(self, ctx: Context) -> None:
        with self._dirty_cond:
            self._dirty.add(ctx)
            self._dirty_cond.notify()

    def _flush_logs(self, ctx: Context) -> None:
        lines = ctx._take_lines()
        with self._dirty_cond:
            self._dirty.discard(ctx)
        for line in lines:
            log.log(
                {"debug": logging.DEBUG, "warn": logging.WARNING, "error": logging.ERROR}.get(line["level"], logging.INFO),
                "run %s attempt %s: %s", ctx.run_id, ctx.attempt, line["message"],
            )
        if not lines or not self.calls.urls:
            return
        for i in range(0, len(lines), 1000):
            chunk = lines[i : i + 1000]
            try:
                status, payload = self.calls.post(
                    f"/api/v1/runs/{ctx.run_id}/logs", {"attempt": ctx.attempt, "shard": ctx.shard.index, "lines": chunk}
                )
                if status >= 300:
                    log.warning("logs of run %s refused: %s %s", ctx.run_id, status, payload)
            except SchedulerUnavailable as exc:
                log.warning("logs of run %s not sent: %s", ctx.run_id, exc)

    def _log_flusher(self) -> None:
        while not self._stopped.is_set():
            with self._dirty_cond:
                self._dirty_cond.wait(self.log_flush_interval)
                dirty = list(self._dirty)
            for ctx in dirty:
                self._flush_logs(ctx)
            self._stopped.wait(self.log_flush_interval)

    # -- cancels ---------------------------------------------------------------------------
    def handle_cancel(self, headers: Union[Mapping[str, str], Sequence[Tuple[str, str]]], body: bytes) -> Response:
        h = _lower(headers)
        refused = self._verify(h, body)
        if refused:
            return refused
        try:
            c = json.loads(body)
            key = f"{c['run_id']}/{int(c.get('shard') or 0)}/{int(c['attempt'])}"
        except (ValueError, KeyError, TypeError):
            return Response.json(400, {"code": "bad_cancel", "message": "expected {run_id, attempt, shard?}"})
        with self._lock:
            run = self._running.get(key)
            if run is None:  # not here (yet): remember it for a delivery still on its way
                self._cancels[key] = time.monotonic() + self.dedupe_ttl
        if run is not None:
            run.ctx.cancelled.set()
            log.info("cancel for run %s attempt %s reached its handler", c["run_id"], c["attempt"])
        return Response.json(200, {"cancelled": run is not None})

    # -- lifecycle: register, heartbeat, drain, deregister ----------------------------------
    def running_runs(self) -> List[str]:
        with self._lock:
            return sorted({r.ctx.run_id for r in self._running.values()})

    def start(self, address: Optional[str] = None) -> None:
        """Register with Sundial (if ``scheduler_urls`` are set) and start heartbeats and the
        log sender. Raises :class:`RegistrationError` if Sundial refuses the registration; if no
        node answers, keeps trying in the background."""
        if address:
            self.address = address
        if self._started:
            return
        self._started = True
        self._draining = False
        self._stopped.clear()
        self._spawn(self._log_flusher, "sundial-logs")
        if self.calls.urls:
            if not self.address:
                raise ValueError("give the executor's address (the URL Sundial delivers to) to register")
            if not self.app_id:
                raise ValueError("give app_id to register (the app whose secret signs the calls)")
            try:
                self._register()
            except SchedulerUnavailable as exc:
                log.warning("no scheduler answered the registration (%s); retrying in the background", exc)
            self._spawn(self._heartbeats, "sundial-heartbeat")

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        t = threading.Thread(target=target, name=name, daemon=True)
        t.start()
        self._threads.append(t)

    def _register(self) -> None:
        body: Dict[str, Any] = {"address": self.address, "handlers": self.handlers}
        if self.name:
            body["name"] = self.name
        if self.tags:
            body["tags"] = self.tags
        if self.metadata is not None:
            body["metadata"] = self.metadata
        status, payload = self.calls.post("/api/v1/executors/register", body)
        if status != 200 or not isinstance(payload, dict):
            raise RegistrationError(status, payload)
        self.executor_id = payload["executor_id"]
        self.heartbeat_interval = max(0.2, payload.get("heartbeat_interval_ms", 3000) / 1000)
        self.metadata_interval = payload.get("metadata_interval_ms", 30000) / 1000
        log.info("registered as %s (%s) with handlers %s", self.executor_id, self.address, self.handlers)

    def _heartbeats(self) -> None:
        last_metadata = time.monotonic()
        while not self._stopped.wait(self.heartbeat_interval):
            try:
                if self.executor_id is None:
                    self._register()
                    continue
                runs = self.running_runs()
                body: Dict[str, Any] = {"executor_id": self.executor_id, "running": len(runs), "running_runs": runs}
                if self.metadata is not None and time.monotonic() - last_metadata >= self.metadata_interval:
                    body["metadata"] = self.metadata
                    last_metadata = time.monotonic()
                status, payload = self.calls.post("/api/v1/executors/heartbeat", body)
                if status == 404:  # forgotten (deleted, or a store that lost it): register again
                    self.executor_id = None
                    self._register()
                elif status >= 300:
                    log.warning("heartbeat refused: %s %s", status, payload)
            except SchedulerUnavailable as exc:
                log.warning("heartbeat: no scheduler answered (%s)", exc)
            except RegistrationError as exc:
                log.error("registration refused: %s", exc)
            except Exception:
                log.exception("heartbeat")

    def drain(self) -> None:
        """Answer new deliveries ``503 executor_offline`` (repeats still get their answer)."""
        self._draining = True

    @property
    def draining(self) -> bool:
        return self._draining

    def shutdown(self, grace: float = 30.0) -> bool:
        """Drain, wait up to ``grace`` seconds for the runs in progress (their results and logs
        are sent), then deregister and stop heartbeats. True if every run finished."""
        self.drain()
        with self._idle:
            finished = self._idle.wait_for(lambda: not self._running, timeout=grace)
        self._stopped.set()
        with self._dirty_cond:
            self._dirty_cond.notify_all()
        for t in self._threads:
            t.join(timeout=5)
        self._threads = []
        if self.executor_id and self.calls.urls:
            try:
                status, payload = self.calls.post("/api/v1/executors/deregister", {"executor_id": self.executor_id})
                if status >= 300:
                    log.warning("deregister refused: %s %s", status, payload)
                else:
                    log.info("deregistered %s", self.executor_id)
            except SchedulerUnavailable as exc:
                log.warning("deregister: no scheduler answered (%s)", exc)
        self.executor_id = None
        self._started = False
        return bool(finished)

    @contextlib.contextmanager
    def running(self, address: Optional[str] = None, grace: float = 30.0) -> Iterator["Executor"]:
        """``with ex.running(address): …`` — start, then shut down gracefully."""
        self.start(address)
        try:
            yield self
        finally:
            self.shutdown(grace)

    # -- adapters --------------------------------------------------------------------------
    def wsgi_app(self) -> Callable[..., Any]:
        """A WSGI application serving deliveries at any path (``…/cancel`` for cancels)."""
        from .wsgi import wsgi_app

        return wsgi_app(self)

    def asgi_app(self, *, lifespan: bool = True) -> Callable[..., Any]:
        """An ASGI application; with ``lifespan`` it starts (registers) on startup and shuts
        down gracefully on shutdown."""
        from .asgi import asgi_app

        return asgi_app(self, lifespan=lifespan)

    def serve(self, host: str = "0.0.0.0", port: int = 9000, *, address: Optional[str] = None) -> None:
        """Serve with the standard library until SIGINT/SIGTERM, then shut down gracefully."""
        from .server import serve

        serve(self, host, port, address=address)


class RegistrationError(Exception):
    """Sundial refused the registration (a wrong secret or app id, a bad address, a quota)."""

    def __init__(self, status: int, payload: Any) -> None:
        self.status = status
        self.payload = payload
        code = payload.get("code") if isinstance(payload, dict) else None
        message = payload.get("message") if isinstance(payload, dict) else payload
        super().__init__(f"HTTP {status} {code}: {message}")
