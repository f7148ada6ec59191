"""The SDK against a real `sundial serve`: register and get fired, sync and async results,
a retried attempt, a repeated webhook-id, logs, cancel, graceful deregistration, shards,
a child receiving its parent's output, a do-not-retry failure."""
from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any, Dict, List

import pytest

from conftest import Api, post_raw, wait_for
from sundial import Defer, Executor, FailNoRetry
from sundial.signing import signature_header

FAST_RETRY = {"policy": "retry", "max_retries": 3, "backoff": {"kind": "fixed", "base_ms": 100, "jitter": False}}


def make(api: Api, unique, **kw: Any) -> "tuple[Executor, Dict[str, Any]]":  # type: ignore[no-untyped-def]
    app = api.app(unique("app"))
    ex = Executor(secrets=[app["secret"]], scheduler_urls=[api.base], app_id=app["id"], log_flush_interval=0.1, **kw)
    return ex, app


def executors_of(api: Api, app_id: str) -> List[Dict[str, Any]]:
    return api("GET", f"/api/v1/apps/{app_id}/executors", expect=(200,))["items"]


def test_register_and_get_fired_sync(api: Api, unique, serve_executor) -> None:  # type: ignore[no-untyped-def]
    ex, app = make(api, unique)

    @ex.handler("sdk.echo")
    def echo(ctx):  # type: ignore[no-untyped-def]
        return {"echo": ctx.params, "attempt": ctx.attempt, "shard": [ctx.shard.index, ctx.shard.total]}

    serve_executor(ex)
    assert ex.executor_id and ex.executor_id.startswith("exe")
    (row,) = executors_of(api, app["id"])
    assert row["id"] == ex.executor_id and row["state"] == "online" and row["handlers"] == ["sdk.echo"]
    job = api.job(app["id"], unique("echo"), "sdk.echo")
    run = api.wait_run(api.trigger(job["id"], {"x": 1}))
    assert run["state"] == "succeeded", run
    assert run["output"] == {"echo": {"x": 1}, "attempt": 1, "shard": [0, 1]}


def test_async_results_by_handler_choice_and_by_time_budget(api: Api, unique, serve_executor) -> None:  # type: ignore[no-untyped-def]
    ex, app = make(api, unique, sync_budget=0.2)
    later: List[Any] = []

    @ex.handler("sdk.async", mode="async")
    def always_async(ctx):  # type: ignore[no-untyped-def]
        return {"mode": "async"}

    @ex.handler("sdk.slow")
    def slow(ctx):  # type: ignore[no-untyped-def]
        time.sleep(1.0)  # past the 0.2 s budget: 202, then the callback
        return {"mode": "budget"}

    @ex.handler("sdk.defer")
    def defer(ctx):  # type: ignore[no-untyped-def]
        later.append(ctx)
        return Defer

    serve_executor(ex)
    for handler, output in (("sdk.async", {"mode": "async"}), ("sdk.slow", {"mode": "budget"})):
        job = api.job(app["id"], unique("async"), handler)
        run = api.wait_run(api.trigger(job["id"]))
        assert run["state"] == "succeeded" and run["output"] == output, run
    job = api.job(app["id"], unique("defer"), "sdk.defer")
    run_id = api.trigger(job["id"])
    ctx = wait_for("the deferred delivery", lambda: later[0] if later else None)
    assert api.run(run_id)["state"] == "running"
    assert ctx.succeed({"mode": "deferred"})
    run = api.wait_run(run_id)
    assert run["state"] == "succeeded" and run["output"] == {"mode": "deferred"}, run


def test_a_retried_attempt(api: Api, unique, serve_executor) -> None:  # type: ignore[no-untyped-def]
    ex, app = make(api, unique)
    attempts: List[int] = []

    @ex.handler("sdk.flaky")
    def flaky(ctx):  # type: ignore[no-untyped-def]
        attempts.append(ctx.attempt)
        if ctx.attempt == 1:
            raise RuntimeError("first attempt fails")
        return {"attempt": ctx.attempt}

    serve_executor(ex)
    job = api.job(app["id"], unique("flaky"), "sdk.flaky", failure=FAST_RETRY)
    run = api.wait_run(api.trigger(job["id"]))
    assert run["state"] == "succeeded" and run["output"] == {"attempt": 2} and attempts == [1, 2], run
    assert run["attempt"] == 2


def test_do_not_retry_and_payload_mismatch(api: Api, unique, serve_executor) -> None:  # type: ignore[no-untyped-def]
    ex, app = make(api, unique)
    calls: List[int] = []

    @dataclasses.dataclass
    class Resize:
        width: int
        height: int = 10

    @ex.handler("sdk.refuse")
    def refuse(ctx):  # type: ignore[no-untyped-def]
        calls.append(ctx.attempt)
        raise FailNoRetry("this input can never work")

    @ex.handler("sdk.typed", payload=Resize)  # Resize is local: its annotation cannot be resolved
    def typed(p: Resize, ctx):  # type: ignore[no-untyped-def]
        return {"area": p.width * p.height}

    serve_executor(ex)
    job = api.job(app["id"], unique("refuse"), "sdk.refuse", failure=FAST_RETRY)
    run = api.wait_run(api.trigger(job["id"]))
    assert run["state"] == "failed" and run["attempt"] == 1 and calls == [1], run
    assert "this input can never work" in (run.get("message") or "")
    time.sleep(0.5)  # no retry comes
    assert calls == [1] and api.run(run["id"])["attempt"] == 1

    job = api.job(app["id"], unique("typed"), "sdk.typed", failure=FAST_RETRY)
    ok = api.wait_run(api.trigger(job["id"], {"width": 3}))
    assert ok["state"] == "succeeded" and ok["output"] == {"area": 30}, ok
    bad = api.wait_run(api.trigger(job["id"], {"width": "wide"}))
    assert bad["state"] == "failed" and bad["attempt"] == 1, bad
    assert "do not match Resize" in bad["message"] and "width" in bad["message"], bad["message"]


def test_a_repeated_webhook_id_is_answered_from_memory(api: Api, unique, serve_executor) -> None:  # type: ignore[no-untyped-def]
    ex, app = make(api, unique)
    received: List[Any] = []
    calls: List[str] = []
    original = ex.handle

    def recording(method, path, headers, body):  # type: ignore[no-untyped-def]
        response = original(method, path, headers, body)
        if method == "POST" and not path.endswith("/cancel"):
            received.append((dict(headers), body, response))
        return response

    ex.handle = recording  # type: ignore[method-assign]

    @ex.handler("sdk.once")
    def once(ctx):  # type: ignore[no-untyped-def]
        calls.append(ctx.webhook_id)
        return {"calls": len(calls)}

    server = serve_executor(ex)
    job = api.job(app["id"], unique("once"), "sdk.once")
    run = api.wait_run(api.trigger(job["id"]))
    assert run["state"] == "succeeded"
    headers, body, first = received[0]
    # Sundial's own signed request, replayed as a node taking over would send it again.
    status, payload = post_raw(server.url, {k: v for k, v in headers.items() if k.startswith(("webhook-", "sundial-", "content-type"))}, body)
    assert (status, payload) == (first.status, first.payload) == (200, {"status": "succeeded", "output": {"calls": 1}})
    assert len(calls) == 1


def test_logs_and_progress_reach_the_run(api: Api, unique, serve_executor) -> None:  # type: ignore[no-untyped-def]
    ex, app = make(api, unique)

    @ex.handler("sdk.logs")
    def logs(ctx):  # type: ignore[no-untyped-def]
        ctx.log("starting")
        ctx.progress("half way", 0.5)
        ctx.warn("careful")
        return 1

    serve_executor(ex)
    job = api.job(app["id"], unique("logs"), "sdk.logs")
    run = api.wait_run(api.trigger(job["id"]))
    assert run["state"] == "succeeded"
    lines = [(line["level"], line["message"]) for line in run["logs"]]
    assert ("info", "starting") in lines and ("info", "progress 50%: half way") in lines and ("warn", "careful") in lines, lines


def test_cancel_reaches_the_handler(api: Api, unique, serve_executor) -> None:  # type: ignore[no-untyped-def]
    ex, app = make(api, unique)
    started = threading.Event()
    stopped: List[bool] = []

    @ex.handler("sdk.long", mode="async")
    def long(ctx):  # type: ignore[no-untyped-def]
        started.set()
        stopped.append(ctx.cancelled.wait(15))
        return {"cancelled": ctx.cancelled.is_set()}

    serve_executor(ex)
    job = api.job(app["id"], unique("long"), "sdk.long")
    run_id = api.trigger(job["id"])
    assert started.wait(10)
    assert run_id in ex.running_runs()
    api("POST", f"/api/v1/runs/{run_id}/cancel", {})
    wait_for("the cancel to reach the handler", lambda: stopped, 10)
    assert stopped == [True]
    assert api.wait_run(run_id)["state"] == "cancelled"


def test_cancel_reaches_a_synchronous_handler_still_running(api: Api, unique, serve_executor) -> None:  # type: ignore[no-untyped-def]
    # The delivery's HTTP exchange stays open while the handler runs: Sundial has stored no
    # address for the attempt yet, and must still send the cancel to this executor.
    ex, app = make(api, unique)
    started = threading.Event()
    stopped: List[bool] = []

    @ex.handler("sdk.held", mode="sync")
    def held(ctx):  # type: ignore[no-untyped-def]
        started.set()
        stopped.append(ctx.cancelled.wait(15))
        return {"cancelled": ctx.cancelled.is_set()}

    serve_executor(ex)
    job = api.job(app["id"], unique("held"), "sdk.held")
    run_id = api.trigger(job["id"])
    assert started.wait(10)
    assert api("GET", f"/api/v1/runs/{run_id}")["state"] == "dispatching"
    api("POST", f"/api/v1/runs/{run_id}/cancel", {})
    wait_for("the cancel to reach the synchronous handler", lambda: stopped, 10)
    assert stopped == [True]
    assert api.wait_run(run_id)["state"] == "cancelled"


def test_graceful_deregistration(api: Api, unique, serve_executor) -> None:  # type: ignore[no-untyped-def]
    ex, app = make(api, unique)
    release = threading.Event()
    started = threading.Event()

    @ex.handler("sdk.busy", mode="async")
    def busy(ctx):  # type: ignore[no-untyped-def]
        started.set()
        release.wait(10)
        return {"finished": True}

    server = serve_executor(ex, register=True)
    job = api.job(app["id"], unique("busy"), "sdk.busy")
    run_id = api.trigger(job["id"])
    assert started.wait(10)
    done: List[bool] = []
    stopper = threading.Thread(target=lambda: done.append(ex.shutdown(grace=10)))
    stopper.start()
    wait_for("draining", lambda: ex.draining)
    # A new delivery while draining: 503 executor_offline.
    body = b'{"run_id":"run_x","job_id":"job_x","job":"x","handler":"sdk.busy","params":null,"attempt":1,' \
           b'"scheduled_at":"2026-01-01T00:00:00.000Z","trigger":"manual","shard":{"index":0,"total":1}}'
    ts = int(time.time())
    status, payload = post_raw(server.url, {
        "content-type": "application/json", "webhook-id": "msg_run_x_0_1", "webhook-timestamp": str(ts),
        "webhook-signature": signature_header(ex.secrets, "msg_run_x_0_1", ts, body)}, body)
    assert (status, payload["code"]) == (503, "executor_offline")
    release.set()
    stopper.join(15)
    assert done == [True]
    run = api.wait_run(run_id)  # the run in progress finished and reported before deregistering
    assert run["state"] == "succeeded" and run["output"] == {"finished": True}, run
    assert executors_of(api, app["id"]) == [] or all(e["state"] != "online" for e in executors_of(api, app["id"]))


def test_shards(api: Api, unique, serve_executor) -> None:  # type: ignore[no-untyped-def]
    app = api.app(unique("shards"))
    seen: List[Any] = []
    lock = threading.Lock()
    for _ in range(2):
        ex = Executor(secrets=[app["secret"]], scheduler_urls=[api.base], app_id=app["id"])

        @ex.handler("sdk.shard")
        def shard(ctx):  # type: ignore[no-untyped-def]
            with lock:
                seen.append((ctx.shard.index, ctx.shard.total, ctx.webhook_id))
            return {"index": ctx.shard.index}

        serve_executor(ex)
    job = api.job(app["id"], unique("shard"), "sdk.shard", route="sharding")
    run_id = api.trigger(job["id"])
    run = api.wait_run(run_id)
    assert run["state"] == "succeeded", run
    assert sorted(s[:2] for s in seen) == [(0, 2), (1, 2)]
    assert sorted(s[2] for s in seen) == [f"msg_{run_id}_0_1", f"msg_{run_id}_1_1"]


def test_a_child_receives_its_parents_output(api: Api, unique, serve_executor) -> None:  # type: ignore[no-untyped-def]
    ex, app = make(api, unique)
    children: List[Any] = []

    @ex.handler("sdk.extract")
    def extract(ctx):  # type: ignore[no-untyped-def]
        return {"rows": 3, "day": ctx.params.get("day")}

    @ex.handler("sdk.load")
    def load(ctx):  # type: ignore[no-untyped-def]
        children.append(ctx)
        return {"loaded": ctx.parent_output["rows"]}

    serve_executor(ex)
    child = api.job(app["id"], unique("load"), "sdk.load", params={"target": "warehouse"})
    parent = api.job(app["id"], unique("extract"), "sdk.extract", children=[child["id"]])
    parent_run = api.wait_run(api.trigger(parent["id"], {"day": "2026-11-25"}))
    assert parent_run["state"] == "succeeded"
    ctx = wait_for("the child run", lambda: children[0] if children else None)
    assert ctx.trigger == "parent" and ctx.parent.run_id == parent_run["id"]
    assert ctx.parent_output == {"rows": 3, "day": "2026-11-25"}
    assert ctx.chain_params == {"day": "2026-11-25"}
    assert ctx.params == {"target": "warehouse", "day": "2026-11-25"}
    child_runs = api("GET", f"/api/v1/runs?job_id={child['id']}", expect=(200,))["items"]
    assert api.wait_run(child_runs[0]["id"])["output"] == {"loaded": 3}


def test_a_retired_handler_is_410(api: Api, unique, serve_executor) -> None:  # type: ignore[no-untyped-def]
    ex, app = make(api, unique)

    @ex.handler("sdk.old")
    def old(ctx):  # type: ignore[no-untyped-def]
        return 1

    serve_executor(ex)
    ex.retire("sdk.old")
    job = api.job(app["id"], unique("old"), "sdk.old", failure={"policy": "retry", "max_retries": 0})
    run = api.wait_run(api.trigger(job["id"]))
    assert run["state"] == "failed" and "retired handler" in run["message"], run
    # Every executor asked answered 410 handler_retired: Sundial stopped the job.
    assert api("GET", f"/api/v1/jobs/{job['id']}", expect=(200,))["state"] == "stopped"
