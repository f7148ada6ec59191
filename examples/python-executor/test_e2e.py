"""End to end against the real `sundial` binary: its deliveries must verify with the
third-party `standardwebhooks` package, and the example executor's signed async
callbacks must be accepted by Sundial. Everything runs on 127.0.0.1; every server
(Sundial, the receiver, the executor) is stopped, also when a test fails.

    cargo build -p sundial
    SUNDIAL_BIN=target/debug/sundial python -m pytest -q examples/python-executor
"""
import json
import os
import queue
import secrets
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from standardwebhooks.webhooks import Webhook

from executor import Executor

REPO = Path(__file__).resolve().parents[2]
SUNDIAL_BIN = Path(os.environ.get("SUNDIAL_BIN") or REPO / "target" / "debug" / "sundial")
if not SUNDIAL_BIN.is_absolute():
    SUNDIAL_BIN = REPO / SUNDIAL_BIN
BANNER = "Sundial listening on http://"
POLL = 0.05  # seconds between polls; never sleep longer than this


def wait_for(what, predicate, timeout):
    """Poll `predicate` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(POLL)


def call(base, method, path, key, body=None, expect=(200, 201)):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method, headers={
        "authorization": f"Bearer {key}", "content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            status, payload = resp.status, resp.read()
    except urllib.error.HTTPError as err:
        status, payload = err.code, err.read()
    assert status in expect, f"{method} {path}: HTTP {status} {payload[:500]!r}"
    return json.loads(payload) if payload else None


# -- the real binary -------------------------------------------------------------------------
class Sundial:
    def __init__(self, data_dir: Path):
        if not SUNDIAL_BIN.exists():
            pytest.fail(f"{SUNDIAL_BIN} not found: run `cargo build -p sundial` first "
                        "(or point SUNDIAL_BIN at the binary)")
        self.operator_key = "sk_" + secrets.token_urlsafe(32)
        self.stderr_path = data_dir / "stderr.log"
        self._stderr = open(self.stderr_path, "wb")
        env = {**os.environ, "SUNDIAL_ADMIN_KEY": self.operator_key, "SUNDIAL_LOG": "warn"}
        self.proc = subprocess.Popen(
            [str(SUNDIAL_BIN), "serve", "--data-dir", str(data_dir / "data"), "--listen", "127.0.0.1:0"],
            env=env, stdout=subprocess.PIPE, stderr=self._stderr, stdin=subprocess.DEVNULL, text=True)
        self.stdout: list[str] = []
        lines: queue.Queue = queue.Queue()

        def drain():  # keep reading so the pipe never fills; None marks the end
            for line in self.proc.stdout:
                self.stdout.append(line)
                lines.put(line)
            lines.put(None)

        threading.Thread(target=drain, daemon=True).start()
        deadline = time.monotonic() + 30
        self.base = None
        while self.base is None:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.stop()
                pytest.fail(f"no `{BANNER}…` line within 30 s; stdout: {self.stdout!r}")
            if line is None:
                code = self.proc.wait()
                pytest.fail(f"sundial exited with {code} before listening; stderr:\n{self.stderr()}")
            if line.startswith(BANNER):
                self.base = line.strip().removeprefix("Sundial listening on ").rstrip("/")

    def stderr(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")[-4000:]

    def stop(self, timeout: float = 20) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                pytest.fail(f"sundial did not stop within {timeout} s of SIGTERM; stderr:\n{self.stderr()}")
        self._stderr.close()
        return self.proc.returncode


@pytest.fixture(scope="module")
def sundial(tmp_path_factory):
    server = Sundial(tmp_path_factory.mktemp("sundial"))
    try:
        yield server
    finally:
        code = server.stop()
    assert code == 0, f"sundial exited with {code} after SIGTERM; stderr:\n{server.stderr()}"


@pytest.fixture(scope="module")
def tenant_key(sundial):
    tenant = call(sundial.base, "POST", "/api/v1/tenants", sundial.operator_key, {"name": "py-e2e"})
    return tenant["admin_key"]


# -- a receiver that checks every delivery with `standardwebhooks` ----------------------------
class Receiver:
    """Answers every delivery `200 {"status": "succeeded", "output": {"py": true}}` and records
    (headers, body, True or the verification exception). The secret is set once the app exists."""

    def __init__(self):
        self.secret = None
        self.deliveries: list[tuple[dict, bytes, object]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    Webhook(receiver.secret).verify(body, headers)
                    verified = True
                except Exception as exc:  # recorded, asserted by the test
                    verified = exc
                with receiver._lock:
                    receiver.deliveries.append((headers, body, verified))
                data = json.dumps({"status": "succeeded", "output": {"py": True}}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, args=(POLL,), daemon=True).start()

    def of_job(self, job_id):
        with self._lock:
            return [d for d in self.deliveries if json.loads(d[1]).get("job_id") == job_id]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def sync_app(sundial, tenant_key):
    receiver = Receiver()
    try:
        app = call(sundial.base, "POST", "/api/v1/apps", tenant_key, {"name": "py", "endpoints": [receiver.url]})
        assert app["secret"].startswith("whsec_")
        receiver.secret = app["secret"]
        yield receiver
    finally:
        receiver.stop()


def run_of(sundial, key, run_id):
    return call(sundial.base, "GET", f"/api/v1/runs/{run_id}", key, expect=(200,))


def assert_verified(delivery):
    headers, body, verified = delivery
    assert verified is True, f"standardwebhooks refused a delivery: {verified!r}; headers {headers}, body {body!r}"


# -- A: synchronous answer -----------------------------------------------------------------
def test_sync_delivery_verifies_with_standardwebhooks(sundial, tenant_key, sync_app):
    job = call(sundial.base, "POST", "/api/v1/jobs", tenant_key, {
        "name": "py-sync", "app": "py", "handler": "py.run", "schedule": {"kind": "manual"}})
    run = call(sundial.base, "POST", f"/api/v1/jobs/{job['id']}/trigger", tenant_key, {"params": {"x": 1}})
    run_id = run["id"]

    final = wait_for(f"run {run_id} to succeed", lambda: (
        r if (r := run_of(sundial, tenant_key, run_id))["state"] in ("succeeded", "failed", "dead") else None), 15)
    assert final["state"] == "succeeded", final
    assert final["output"] == {"py": True}, final

    deliveries = [d for d in sync_app.of_job(job["id"]) if d[0].get("sundial-run-id") == run_id]
    assert len(deliveries) == 1, deliveries
    assert_verified(deliveries[0])
    headers, body, _ = deliveries[0]
    assert headers["webhook-id"] == f"msg_{run_id}_0_1"
    assert headers["sundial-run-id"] == run_id
    assert headers["sundial-attempt"] == "1"
    payload = json.loads(body)
    assert payload["params"] == {"x": 1}
    assert payload["handler"] == "py.run"
    assert payload["run_id"] == run_id and payload["attempt"] == 1


# -- B: the example executor in async mode: 202, then a signed callback -----------------------
def test_async_executor_callback_is_accepted(sundial, tenant_key):
    # The executor needs the app's secret, the app the executor's URL: create, start, then point.
    app = call(sundial.base, "POST", "/api/v1/apps", tenant_key, {"name": "py-async"})
    executor = Executor(app["secret"], app_id=app["id"], sundial_url=sundial.base, mode="async")
    seen = []

    @executor.handler("py.double")
    def double(params, delivery):
        seen.append(delivery)
        return {"doubled": params["x"] * 2}

    server = executor.start(port=0)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        call(sundial.base, "PATCH", f"/api/v1/apps/{app['id']}", tenant_key, {"endpoints": [url]}, expect=(200,))
        job = call(sundial.base, "POST", "/api/v1/jobs", tenant_key, {
            "name": "py-async", "app": "py-async", "handler": "py.double", "schedule": {"kind": "manual"}})
        run = call(sundial.base, "POST", f"/api/v1/jobs/{job['id']}/trigger", tenant_key, {"params": {"x": 21}})
        run_id = run["id"]
        final = wait_for(f"run {run_id} to finish", lambda: (
            r if (r := run_of(sundial, tenant_key, run_id))["state"] in ("succeeded", "failed", "dead") else None), 15)
        assert final["state"] == "succeeded", final
        assert final["output"] == {"doubled": 42}, final
        assert [d["run_id"] for d in seen] == [run_id]
    finally:
        executor.stop(grace=5)


# -- C: fixed rate: anchor + k·every ---------------------------------------------------------
# Without an anchor Sundial anchors the grid at the job's creation instant, milliseconds
# included, so fires are one second apart but not on whole seconds; with a whole-second
# anchor they land on whole seconds.
@pytest.mark.parametrize("anchor", [None, "2020-01-01T00:00:00Z"], ids=["default-anchor", "whole-second-anchor"])
def test_fixed_rate_deliveries_verify_and_keep_the_grid(sundial, tenant_key, sync_app, anchor):
    schedule = {"kind": "fixed_rate", "every_ms": 1000}
    if anchor:
        schedule["anchor"] = anchor
    job = call(sundial.base, "POST", "/api/v1/jobs", tenant_key, {
        "name": f"py-rate-{'anchored' if anchor else 'default'}", "app": "py", "handler": "py.tick",
        "schedule": schedule})
    try:
        deliveries = wait_for("3 fixed-rate deliveries", lambda: (
            d if len(d := sync_app.of_job(job["id"])) >= 3 else None), 6)
    finally:
        call(sundial.base, "POST", f"/api/v1/jobs/{job['id']}/stop", tenant_key, {}, expect=(200, 204))

    for d in deliveries:
        assert_verified(d)
    ids = [h["webhook-id"] for h, _, _ in deliveries]
    assert len(set(ids)) == len(ids), ids

    def instant(text):
        return datetime.fromisoformat(text.replace("Z", "+00:00"))

    stored_anchor = instant(job["schedule"]["anchor"])
    if anchor:
        assert stored_anchor == instant(anchor)
    raw = [h["sundial-scheduled-at"] for h, _, _ in deliveries]
    times = sorted(instant(t) for t in raw)
    gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:])]
    assert gaps == [1.0] * len(gaps), raw
    offsets = [(t - stored_anchor).total_seconds() for t in times]
    assert all(o >= 0 and o == int(o) for o in offsets), (job["schedule"]["anchor"], raw)
    if anchor:
        assert all(t.microsecond == 0 for t in times), f"not whole seconds: {raw}"


# -- D: the README's tiny executor, as written ----------------------------------------------------
def test_the_readme_tiny_executor_runs_a_job(sundial, tenant_key):
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = call(sundial.base, "POST", "/api/v1/apps", tenant_key,
               {"name": "tiny", "endpoints": [f"http://127.0.0.1:{port}/"]})
    env = dict(os.environ, SUNDIAL_SECRET=app["secret"], PORT=str(port))
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("tiny.py"))], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for("tiny.py to listen", lambda: socket.socket().connect_ex(("127.0.0.1", port)) == 0, 10)
        job = call(sundial.base, "POST", "/api/v1/jobs", tenant_key, {
            "name": "tiny-job", "app": "tiny", "handler": "hello", "schedule": {"kind": "manual"}})
        run = call(sundial.base, "POST", f"/api/v1/jobs/{job['id']}/trigger", tenant_key, {"params": {"to": "world"}})
        done = wait_for("the run to succeed",
                        lambda: (r := run_of(sundial, tenant_key, run["id"]))["state"] == "succeeded" and r, 15)
        assert done["output"] == {"echo": {"to": "world"}}
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    assert "hello({'to': 'world'})" in out
