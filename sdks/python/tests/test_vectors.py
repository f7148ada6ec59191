"""The shared conformance vectors (sdks/vectors), through the SDK's verifier and its
framework-free entry point; one vector cross-checked with the third-party `standardwebhooks`."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from conftest import REPO, VECTORS
from sundial import Executor, FailNoRetry, SignatureError, sign, verify

SIGNING = json.loads((VECTORS / "signing.json").read_text(encoding="utf-8"))
DELIVERIES = json.loads((VECTORS / "deliveries.json").read_text(encoding="utf-8"))


def test_vectors_are_up_to_date() -> None:
    subprocess.run([sys.executable, str(VECTORS / "generate.py"), "--check"], check=True)


@pytest.mark.parametrize("case", SIGNING["sign"], ids=lambda c: c["name"])
def test_sign(case: dict) -> None:
    assert sign(case["secret"], case["id"], case["timestamp"], case["body"]) == case["signature"]


@pytest.mark.parametrize("case", SIGNING["verify"], ids=lambda c: c["name"])
def test_verify(case: dict) -> None:
    try:
        verify(case["secrets"], case["headers"], case["body"].encode("utf-8"), now=case["now"],
               tolerance=SIGNING["tolerance_secs"])
        error = None
    except SignatureError as exc:
        error = exc.code
    assert error == case["error"], case["description"]


def test_standardwebhooks_agrees_on_a_vector(monkeypatch: pytest.MonkeyPatch) -> None:
    """The third-party reference implementation verifies the same vectors."""
    good = next(c for c in SIGNING["verify"] if c["name"] == "good")
    rotation = next(c for c in SIGNING["verify"] if c["name"] == "rotation_old_secret")
    altered = next(c for c in SIGNING["verify"] if c["name"] == "altered_body")
    import standardwebhooks.webhooks as sw

    class Frozen:  # standardwebhooks reads the clock: freeze it at the vector's `now`
        @staticmethod
        def now(tz=None):  # type: ignore[no-untyped-def]
            import datetime as dt
            return dt.datetime.fromtimestamp(good["now"], tz=dt.timezone.utc)

        @staticmethod
        def fromtimestamp(*a, **k):  # type: ignore[no-untyped-def]
            import datetime as dt
            return dt.datetime.fromtimestamp(*a, **k)

    monkeypatch.setattr(sw, "datetime", Frozen, raising=False)
    for case in (good, rotation):
        Webhook(case["secrets"][0]).verify(case["body"], case["headers"])
    with pytest.raises(WebhookVerificationError):
        Webhook(altered["secrets"][0]).verify(altered["body"], altered["headers"])
    ref = SIGNING["sign"][0]
    assert Webhook(ref["secret"]).sign(ref["id"], __import__("datetime").datetime.fromtimestamp(
        ref["timestamp"]), ref["body"]) == ref["signature"]


def _executor(**kw) -> Executor:  # type: ignore[no-untyped-def]
    ex = Executor(secrets=[DELIVERIES["secret"]], tolerance=10**10, **kw)
    return ex


@pytest.mark.parametrize("item", DELIVERIES["deliveries"], ids=lambda d: d["name"])
def test_delivery_bodies_reach_the_context(item: dict) -> None:
    ex = _executor()
    seen = []

    handler = item["body"]["handler"] or "unused"

    @ex.handler(handler)
    def h(ctx):  # type: ignore[no-untyped-def]
        seen.append(ctx)
        return {"ok": True}

    r = ex.handle("POST", "/", item["headers"], item["raw_body"].encode("utf-8"))
    exp = item["expect"]
    if item["body"]["handler"] is None:
        assert r.status == 410 and r.payload == {"code": "handler_retired", "message": r.payload["message"]}
        return
    assert r.status == 200 and r.payload == {"status": "succeeded", "output": {"ok": True}}, r
    (ctx,) = seen
    assert (ctx.run_id, ctx.job_id, ctx.job, ctx.handler, ctx.attempt) == (
        exp["run_id"], exp["job_id"], exp["job"], exp["handler"], exp["attempt"])
    assert ctx.params == exp["params"] and ctx.trigger == exp["trigger"]
    assert (ctx.shard.index, ctx.shard.total) == (exp["shard"]["index"], exp["shard"]["total"])
    assert ctx.parent_output == exp["parent_output"]
    assert (ctx.parent.run_id if ctx.parent else None) == exp["parent_run_id"]
    assert ([vars(p) for p in ctx.parents] if ctx.parents is not None else None) == exp["parents"]
    assert ctx.chain_params == exp["chain_params"]
    assert ctx.scheduled_at is not None and ctx.scheduled_at_text == exp["scheduled_at"]
    assert ctx.webhook_id == item["headers"]["webhook-id"]


def test_replay_answered_from_memory() -> None:
    """deliveries.json `replay`: the same webhook-id twice, the handler runs once."""
    item = next(d for d in DELIVERIES["deliveries"] if d["name"] == DELIVERIES["replay"]["delivery"])
    ex = _executor()
    calls = []

    @ex.handler(item["body"]["handler"])
    def h(ctx):  # type: ignore[no-untyped-def]
        calls.append(ctx.run_id)
        return {"n": len(calls)}

    answers = [ex.handle("POST", "/", item["headers"], item["raw_body"].encode()) for _ in range(DELIVERIES["replay"]["times"])]
    assert len(calls) == DELIVERIES["replay"]["handler_calls"]
    assert all(a == answers[0] for a in answers) and answers[0].payload["output"] == {"n": 1}


def test_a_repeat_while_the_first_runs_waits_or_gets_202() -> None:
    item = DELIVERIES["deliveries"][0]
    ex = _executor(sync_budget=5, repeat_wait=0.1)
    release = threading.Event()

    @ex.handler(item["body"]["handler"])
    def h(ctx):  # type: ignore[no-untyped-def]
        release.wait(5)
        return 1

    first = []
    t = threading.Thread(target=lambda: first.append(ex.handle("POST", "/", item["headers"], item["raw_body"].encode())))
    t.start()
    time.sleep(0.2)
    repeat = ex.handle("POST", "/", item["headers"], item["raw_body"].encode())
    assert repeat.status == 202  # still running: the result will go by callback
    release.set()
    t.join()
    assert first[0].status == 200


def test_answers_the_server_understands() -> None:
    """The SDK's answers have the shapes deliveries.json lists."""
    by_name = {a["name"]: a for a in DELIVERIES["answers"]}
    item = DELIVERIES["deliveries"][0]
    body = item["raw_body"].encode()

    def answer(fn, **kw):  # type: ignore[no-untyped-def]
        ex = _executor(**kw)
        ex.handler(item["body"]["handler"])(fn)
        return ex.handle("POST", "/", item["headers"], body)

    r = answer(lambda ctx: {"rows": 3})
    assert (r.status, r.payload) == (200, by_name["succeeded_with_output"]["body"])

    def no_retry(ctx):  # type: ignore[no-untyped-def]
        raise FailNoRetry("invalid params: day is required")

    r = answer(no_retry)
    assert (r.status, r.payload) == (200, by_name["failed_do_not_retry"]["body"])

    def boom(ctx):  # type: ignore[no-untyped-def]
        raise RuntimeError("the upstream said 500")

    r = answer(boom)
    assert r.status == 200 and r.payload == {"status": "failed", "message": "RuntimeError: the upstream said 500"}
    assert "retry" not in r.payload

    r = answer(lambda ctx: time.sleep(0.5), sync_budget=0.05)
    assert (r.status, r.payload["status"]) == (202, "accepted")

    ex = _executor()
    r = ex.handle("POST", "/", item["headers"], body)  # no handler declared
    assert (r.status, r.payload["code"]) == (410, by_name["handler_retired"]["body"]["code"])

    ex = _executor()
    ex.handler(item["body"]["handler"])(lambda ctx: 1)
    ex.drain()
    r = ex.handle("POST", "/", item["headers"], body)
    assert (r.status, r.payload["code"]) == (503, by_name["executor_offline"]["body"]["code"])


def test_refusals_are_401_with_a_code() -> None:
    ex = _executor()
    ex.tolerance = 300
    item = DELIVERIES["deliveries"][0]
    r = ex.handle("POST", "/", item["headers"], item["raw_body"].encode())  # signed in 2025: stale now
    assert r.status == 401 and r.payload["code"] == "stale_timestamp"
    headers = dict(item["headers"])
    headers["webhook-timestamp"] = str(int(time.time()) + 3600)
    r = ex.handle("POST", "/", headers, item["raw_body"].encode())
    assert r.status == 401 and r.payload["code"] == "future_timestamp"
    headers["webhook-timestamp"] = str(int(time.time()))
    r = ex.handle("POST", "/", headers, item["raw_body"].encode())
    assert r.status == 401 and r.payload["code"] == "bad_signature"
    del headers["webhook-signature"]
    r = ex.handle("POST", "/", headers, item["raw_body"].encode())
    assert r.status == 401 and r.payload["code"] == "missing_header"
