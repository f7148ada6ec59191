"""Tests for the tiny executor, signing with the third-party `standardwebhooks`
package (what any other language's off-the-shelf library would send) and with a
hand-rolled signer. Everything runs on 127.0.0.1; every server is stopped."""
import base64
import hashlib
import hmac
import json
import os
import queue
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from standardwebhooks.webhooks import Webhook

from executor import Executor, sign, verify

SECRET = "whsec_" + base64.b64encode(os.urandom(32)).decode()
OTHER_SECRET = "whsec_" + base64.b64encode(os.urandom(32)).decode()


def delivery(handler="invoice.run", attempt=1, shard=(0, 1), params=None):
    return json.dumps({
        "run_id": "run_01", "job_id": "job_01", "job": "nightly-invoices", "handler": handler,
        "params": params if params is not None else {"count": 4}, "attempt": attempt,
        "scheduled_at": "2026-11-23T02:30:00.000+01:00", "trigger": "schedule",
        "shard": {"index": shard[0], "total": shard[1]},
    })


def library_headers(body, secret=SECRET, msg_id="msg_run_01_0_1", when=None):
    """Headers as the `standardwebhooks` package signs them."""
    when = when or datetime.now(timezone.utc)
    return {"webhook-id": msg_id, "webhook-timestamp": str(int(when.timestamp())),
            "webhook-signature": Webhook(secret).sign(msg_id, when, body)}


def hand_headers(body, secret=SECRET, msg_id="msg_run_01_0_1", timestamp=None):
    """Headers signed by hand, straight from the Standard Webhooks spec."""
    timestamp = str(timestamp if timestamp is not None else int(time.time()))
    key = base64.b64decode(secret.removeprefix("whsec_"))
    mac = hmac.new(key, f"{msg_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
    return {"webhook-id": msg_id, "webhook-timestamp": timestamp,
            "webhook-signature": "v1," + base64.b64encode(mac).decode()}


SIGNERS = {"standardwebhooks": library_headers, "hand-rolled": hand_headers}


def post(url, body, headers):
    all_headers = {"content-type": "application/json", "sundial-run-id": "run_01", "sundial-attempt": "1",
                   "sundial-scheduled-at": "2026-11-23T01:30:00.000Z", "sundial-shard": "0/1",
                   "sundial-app-id": "app_01", **headers}
    request = urllib.request.Request(url, data=body.encode(), headers=all_headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def wait_for(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


class Started:
    """An Executor serving on a free port, with an invoice.run handler that records its calls."""

    def __init__(self, **options):
        self.calls = []
        self.release = threading.Event()
        self.release.set()
        self.executor = Executor(SECRET, app_id="app_01", **options)

        @self.executor.handler("invoice.run")
        def invoice(params, d):
            self.calls.append(d)
            self.release.wait(5)
            return {"invoiced": params["count"]}

        @self.executor.handler("invoice.broken")
        def broken(params, d):
            self.calls.append(d)
            raise RuntimeError("ledger unavailable")

        server = self.executor.start(0, "127.0.0.1")
        self.url = "http://127.0.0.1:%d/hook" % server.server_address[1]

    def post(self, body, headers):
        return post(self.url, body, headers)


@pytest.fixture
def started():
    s = Started()
    yield s
    s.release.set()
    s.executor.stop(grace=2)


class FakeSundial:
    """A tiny stand-in for the scheduler's result endpoint: records callbacks,
    answers with the given statuses in turn (then 200)."""

    def __init__(self, statuses=()):
        self.callbacks = queue.Queue()
        statuses = list(statuses)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                fake.callbacks.put((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                status = statuses.pop(0) if statuses else 200
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def sundial():
    fake = FakeSundial()
    yield fake
    fake.stop()


# -- verification -----------------------------------------------------------------------

@pytest.mark.parametrize("signer", SIGNERS.values(), ids=SIGNERS.keys())
def test_valid_delivery_runs_the_handler_and_answers_200(started, signer):
    body = delivery()
    status, answer = started.post(body, signer(body))
    assert (status, answer) == (200, {"status": "succeeded", "output": {"invoiced": 4}, "message": ""})
    assert len(started.calls) == 1
    assert started.calls[0]["run_id"] == "run_01" and started.calls[0]["shard"] == {"index": 0, "total": 1}


@pytest.mark.parametrize("signer", SIGNERS.values(), ids=SIGNERS.keys())
def test_tampered_body_is_refused(started, signer):
    headers = signer(delivery())
    status, answer = started.post(delivery(params={"count": 4000}), headers)
    assert (status, answer["code"]) == (401, "invalid_signature")
    assert started.calls == []


@pytest.mark.parametrize("signer", SIGNERS.values(), ids=SIGNERS.keys())
def test_wrong_secret_is_refused(started, signer):
    body = delivery()
    assert started.post(body, signer(body, secret=OTHER_SECRET))[0] == 401
    assert started.calls == []


@pytest.mark.parametrize("minutes", [-6, 6], ids=["6 min old", "6 min ahead"])
def test_timestamp_outside_five_minutes_is_refused(started, minutes):
    body = delivery()
    when = datetime.now(timezone.utc) + timedelta(minutes=minutes)
    assert started.post(body, library_headers(body, when=when))[0] == 401
    assert started.post(body, hand_headers(body, timestamp=int(when.timestamp())))[0] == 401
    assert started.calls == []


def test_timestamp_within_five_minutes_is_accepted(started):
    body = delivery()
    when = datetime.now(timezone.utc) - timedelta(minutes=4)
    assert started.post(body, library_headers(body, when=when))[0] == 200


@pytest.mark.parametrize("missing", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_missing_header_is_refused(started, missing):
    body = delivery()
    headers = library_headers(body)
    del headers[missing]
    assert started.post(body, headers)[0] == 401
    assert started.calls == []


def test_malformed_timestamp_or_signature_is_refused(started):
    body = delivery()
    assert started.post(body, {**hand_headers(body), "webhook-timestamp": "soon"})[0] == 401
    assert started.post(body, {**hand_headers(body), "webhook-signature": "v1,bm9wZQ== garbage ü"})[0] == 401
    assert started.calls == []


def test_several_signatures_one_valid_is_accepted(started):
    """During secret rotation Sundial signs with the new and the old secret."""
    body = delivery()
    good = library_headers(body)
    stale = library_headers(body, secret=OTHER_SECRET)["webhook-signature"]
    headers = {**good, "webhook-signature": f"{stale} v2,bm90LXVzZWQ= {good['webhook-signature']}"}
    assert started.post(body, headers)[0] == 200
    assert len(started.calls) == 1


def test_several_signatures_none_valid_is_refused(started):
    body = delivery()
    a = library_headers(body, secret=OTHER_SECRET)["webhook-signature"]
    b = hand_headers(body, secret="whsec_" + base64.b64encode(b"x" * 32).decode())["webhook-signature"]
    assert started.post(body, {**library_headers(body), "webhook-signature": f"{a} {b}"})[0] == 401
    assert started.calls == []


def test_sign_and_verify_agree_with_standardwebhooks():
    body = delivery()
    ts = int(time.time())
    when = datetime.fromtimestamp(ts, timezone.utc)
    assert sign(SECRET, "msg_x", ts, body.encode()) == Webhook(SECRET).sign("msg_x", when, body)
    assert verify(SECRET, library_headers(body, msg_id="msg_x"), body.encode())
    headers = {"webhook-id": "msg_x", "webhook-timestamp": str(ts),
               "webhook-signature": sign(SECRET, "msg_x", ts, body.encode())}
    assert Webhook(SECRET).verify(body, headers) == json.loads(body)


# -- dedupe -----------------------------------------------------------------------------

def test_repeated_webhook_id_gets_the_same_answer_and_runs_once(started):
    body = delivery()
    first = started.post(body, library_headers(body))
    # A redelivery of the same attempt: same webhook-id, fresh timestamp and signature.
    again = started.post(body, hand_headers(body, timestamp=int(time.time()) + 1))
    assert first == again == (200, {"status": "succeeded", "output": {"invoiced": 4}, "message": ""})
    assert len(started.calls) == 1
    # The next attempt has a different webhook-id and runs.
    body2 = delivery(attempt=2)
    assert started.post(body2, library_headers(body2, msg_id="msg_run_01_0_2"))[0] == 200
    assert len(started.calls) == 2


def test_concurrent_repeats_run_the_handler_once(started):
    started.release.clear()  # hold the handler until both requests are in
    body = delivery()
    answers = []
    threads = [threading.Thread(target=lambda: answers.append(started.post(body, library_headers(body))))
               for _ in range(2)]
    for t in threads:
        t.start()
    assert wait_for(lambda: len(started.calls) == 1)
    started.release.set()
    for t in threads:
        t.join(5)
    assert len(answers) == 2 and answers[0] == answers[1] and answers[0][0] == 200
    assert len(started.calls) == 1


def test_seen_ids_are_forgotten_after_the_ttl():
    s = Started(dedupe_ttl=0)  # expire at once, to check that expiry happens
    try:
        body = delivery()
        assert s.post(body, library_headers(body))[0] == 200
        assert s.post(body, library_headers(body))[0] == 200
        assert len(s.calls) == 2
    finally:
        s.executor.stop(grace=2)


def test_refused_delivery_is_not_remembered(started):
    body = delivery()
    assert started.post(body, library_headers(body, secret=OTHER_SECRET))[0] == 401
    assert started.post(body, library_headers(body))[0] == 200
    assert len(started.calls) == 1


# -- answers ----------------------------------------------------------------------------

def test_unknown_handler_answers_410_handler_retired(started):
    body = delivery(handler="invoice.v1")
    status, answer = started.post(body, library_headers(body))
    assert (status, answer["code"]) == (410, "handler_retired")
    assert started.calls == []


def test_raising_handler_answers_failed(started):
    body = delivery(handler="invoice.broken")
    status, answer = started.post(body, library_headers(body))
    assert status == 200
    assert answer == {"status": "failed", "output": None, "message": "RuntimeError: ledger unavailable"}


def test_stopping_executor_answers_503_executor_offline(started):
    done = delivery(attempt=1)
    done_headers = library_headers(done, msg_id="msg_run_01_0_1")
    assert started.post(done, done_headers)[0] == 200
    started.release.clear()  # a run in flight keeps the executor draining
    running = delivery(attempt=2)
    runner = threading.Thread(target=lambda: started.post(running, library_headers(running, msg_id="msg_run_01_0_2")))
    runner.start()
    assert wait_for(lambda: len(started.calls) == 2)
    stopper = threading.Thread(target=started.executor.stop, kwargs={"grace": 5})
    stopper.start()
    assert wait_for(lambda: started.executor._stopping)
    new = delivery(attempt=3)
    assert started.post(new, library_headers(new, msg_id="msg_run_01_0_3")) == (503, {"code": "executor_offline"})
    # A repeat of a delivery already answered still gets that answer, not 503.
    assert started.post(done, library_headers(done, msg_id="msg_run_01_0_1"))[1]["status"] == "succeeded"
    started.release.set()
    runner.join(5)
    stopper.join(5)
    assert not stopper.is_alive() and len(started.calls) == 2


def test_cancel_is_verified(started):
    body = json.dumps({"run_id": "run_01", "attempt": 1})
    url = started.url + "/cancel"
    assert post(url, body, library_headers(body, msg_id="msg_cancel"))[0] == 202
    assert post(url, body, library_headers(body, msg_id="msg_cancel", secret=OTHER_SECRET))[0] == 401
    assert started.calls == []


# -- asynchronous mode ------------------------------------------------------------------

def test_async_answers_202_then_calls_back_signed(sundial):
    s = Started(mode="async", sundial_url=sundial.url)
    try:
        body = delivery(attempt=3, shard=(2, 4))
        status, _ = s.post(body, library_headers(body, msg_id="msg_run_01_2_3"))
        assert status == 202
        path, headers, callback = sundial.callbacks.get(timeout=5)
        assert path == "/api/v1/runs/run_01/result"
        assert headers["sundial-app-id"] == "app_01"
        assert headers["webhook-id"].startswith("msg_") and headers["webhook-id"] != "msg_run_01_2_3"
        result = Webhook(SECRET).verify(callback, headers)
        assert result == {"attempt": 3, "shard": 2, "status": "succeeded", "output": {"invoiced": 4},
                          "message": ""}
        # The repeat of the delivery gets 202 again, and neither runs nor calls back again.
        assert s.post(body, library_headers(body, msg_id="msg_run_01_2_3"))[0] == 202
        assert len(s.calls) == 1
    finally:
        s.executor.stop(grace=2)
    assert sundial.callbacks.empty()


def test_async_failure_is_called_back_as_failed(sundial):
    s = Started(mode="async", sundial_url=sundial.url)
    try:
        body = delivery(handler="invoice.broken")
        assert s.post(body, library_headers(body))[0] == 202
        _, headers, callback = sundial.callbacks.get(timeout=5)
        result = Webhook(SECRET).verify(callback, headers)
        assert (result["status"], result["attempt"], result["output"]) == ("failed", 1, None)
        assert "ledger unavailable" in result["message"]
    finally:
        s.executor.stop(grace=2)


def test_async_callback_retries_on_5xx_and_tries_other_schedulers():
    busy, gone = FakeSundial(statuses=[503]), FakeSundial()
    gone.stop()  # a scheduler node that is down: its port refuses connections
    s = Started(mode="async", sundial_url=f"{gone.url}, {busy.url}", retry_delays=(0.05,))
    try:
        body = delivery()
        assert s.post(body, library_headers(body))[0] == 202
        _, h1, first = busy.callbacks.get(timeout=5)   # round 1: node down, then 503
        _, h2, second = busy.callbacks.get(timeout=5)  # round 2: node down, then 200
        assert first == second
        assert Webhook(SECRET).verify(second, h2)["status"] == "succeeded"
        assert h1["webhook-id"] != h2["webhook-id"]  # each callback has a fresh id
        s.executor.stop(grace=2)
        assert busy.callbacks.empty()
    finally:
        s.executor.stop(grace=2)
        busy.stop()
