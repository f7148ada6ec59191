"""The JDK-only Java executor, compiled with `javac` into a temp dir and fired by a real
`sundial serve` (embedded SQLite, port 0) that these tests start. Everything runs on 127.0.0.1;
every process is stopped, also when a test fails.

    SUNDIAL_BIN=target/debug/sundial python -m pytest -q examples/java-executor
    (or examples/java-executor/test.sh from the repository root)
"""
import base64
import hashlib
import hmac
import json
import os
import queue
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VECTORS = REPO / "sdks" / "vectors" / "signing.json"
SUNDIAL_BIN = Path(os.environ.get("SUNDIAL_BIN") or REPO / "target" / "debug" / "sundial")
if not SUNDIAL_BIN.is_absolute():
    SUNDIAL_BIN = REPO / SUNDIAL_BIN
BANNER = "Sundial listening on http://"
POLL = 0.05


def wait_for(what, predicate, timeout):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(POLL)


def http(url, method="GET", body=None, headers=None, timeout=10):
    """(status, parsed JSON or None, raw bytes) of one request; never raises on an HTTP status."""
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as err:
        status, raw = err.code, err.read()
    return status, (json.loads(raw) if raw else None), raw


def call(base, method, path, key, body=None, expect=(200, 201)):
    status, payload, raw = http(base + path, method, body,
                                {"authorization": f"Bearer {key}", "content-type": "application/json"})
    assert status in expect, f"{method} {path}: HTTP {status} {raw[:500]!r}"
    return payload


def sign(secret, msg_id, timestamp, body: bytes):
    key = base64.b64decode(secret.removeprefix("whsec_"))
    mac = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the real binary ---------------------------------------------------------------------------
class Sundial:
    def __init__(self, data_dir: Path):
        if not SUNDIAL_BIN.exists():
            pytest.fail(f"{SUNDIAL_BIN} not found: run `cargo build -p sundial` first "
                        "(or point SUNDIAL_BIN at the binary)")
        self.operator_key = "sk_" + secrets.token_urlsafe(32)
        self.stderr_path = data_dir / "stderr.log"
        self._stderr = open(self.stderr_path, "wb")
        env = {**os.environ, "SUNDIAL_ADMIN_KEY": self.operator_key, "SUNDIAL_LOG": os.environ.get("SUNDIAL_LOG", "warn")}
        self.proc = subprocess.Popen(
            [str(SUNDIAL_BIN), "serve", "--data-dir", str(data_dir / "data"), "--listen", "127.0.0.1:0"],
            env=env, stdout=subprocess.PIPE, stderr=self._stderr, stdin=subprocess.DEVNULL, text=True)
        lines: queue.Queue = queue.Queue()

        def drain():
            for line in self.proc.stdout:
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
                pytest.fail(f"no `{BANNER}…` line within 30 s")
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
        self._stderr.close()
        return self.proc.returncode


# -- the Java executor -------------------------------------------------------------------------
class JavaExecutor:
    """`java -cp <classes> Executor` with its environment; its stdout lines are kept."""

    def __init__(self, classes: Path, env: dict):
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(
            [shutil.which("java") or "java", "-cp", str(classes), "Executor"],
            env={**{k: v for k, v in os.environ.items() if k != "ADDRESS"}, "BIND": "127.0.0.1", "PORT": "0", **env},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)

        def drain():
            for line in self.proc.stdout:
                with self._lock:
                    self.lines.append(line.rstrip("\n"))

        threading.Thread(target=drain, daemon=True).start()
        banner = self.wait_line("Java executor listening on http://", 30)
        self.url = banner.split("listening on ", 1)[1].split(" ", 1)[0]

    def output(self) -> str:
        with self._lock:
            return "\n".join(self.lines)

    def count(self, text) -> int:
        with self._lock:
            return sum(text in line for line in self.lines)

    def wait_line(self, text, timeout=15) -> str:
        def found():
            with self._lock:
                hit = next((line for line in self.lines if text in line), None)
            if hit is None and self.proc.poll() is not None:
                pytest.fail(f"the Java executor exited ({self.proc.returncode}) before printing {text!r}:\n"
                            f"{self.output()}")
            return hit
        return wait_for(f"the Java executor to print {text!r}; it printed:\n{self.output()}", found, timeout)

    def stop(self, timeout: float = 20):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    javac = shutil.which("javac")
    if javac is None:
        pytest.fail("javac not found: the Java example needs a JDK 17 (javac and java on PATH)")
    out = tmp_path_factory.mktemp("java-classes")
    sources = sorted(str(p) for p in HERE.glob("*.java"))
    done = subprocess.run([javac, "-Xlint:all", "-d", str(out), *sources],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"javac failed:\n{done.stdout}{done.stderr}"
    return out


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
    return call(sundial.base, "POST", "/api/v1/tenants", sundial.operator_key, {"name": "java-e2e"})["admin_key"]


@pytest.fixture(scope="module")
def app(sundial, tenant_key):
    """An app with no static endpoint: deliveries go to the executors that register."""
    created = call(sundial.base, "POST", "/api/v1/apps", tenant_key, {"name": "java"})
    assert created["secret"].startswith("whsec_")
    return created


@pytest.fixture(scope="module")
def executor(classes, sundial, app):
    proc = JavaExecutor(classes, {"SUNDIAL_URL": sundial.base, "SUNDIAL_SECRET": app["secret"],
                                  "SUNDIAL_APP_ID": app["id"]})
    try:
        proc.wait_line("registered as exe", 15)
        yield proc
    finally:
        proc.stop()


def executors_of(sundial, key, app):
    return call(sundial.base, "GET", f"/api/v1/apps/{app['id']}/executors", key, expect=(200,))["items"]


def job_for(sundial, key, app, handler):
    jobs = call(sundial.base, "GET", f"/api/v1/jobs?app={app['id']}&limit=200", key, expect=(200,))["items"]
    matching = [j for j in jobs if j.get("handler") == handler]
    assert matching, f"no job for handler {handler}: {jobs}"
    return matching[0]


def final_run(sundial, key, run_id, timeout=15):
    return wait_for(f"run {run_id} to end", lambda: (
        r if (r := call(sundial.base, "GET", f"/api/v1/runs/{run_id}", key, expect=(200,)))["state"]
        in ("succeeded", "failed", "dead", "cancelled") else None), timeout)


def delivery(handler="java.hello", params=None, run_id=None, attempt=1):
    """A delivery body shaped as Sundial sends it."""
    return json.dumps({
        "run_id": run_id or "run_" + secrets.token_hex(8), "job_id": "job_test", "job": "test",
        "handler": handler, "params": params if params is not None else {}, "attempt": attempt,
        "scheduled_at": "2026-01-01T00:00:00.000Z", "trigger": "manual", "shard": {"index": 0, "total": 1},
    }).encode()


def post_signed(url, secret, body: bytes, msg_id=None, timestamp=None, signature=None):
    msg_id = msg_id or "msg_" + secrets.token_hex(8)
    timestamp = str(int(time.time())) if timestamp is None else str(timestamp)
    headers = {"content-type": "application/json", "webhook-id": msg_id, "webhook-timestamp": timestamp,
               "webhook-signature": signature or sign(secret, msg_id, timestamp, body)}
    return http(url, "POST", body, headers)


# -- the tests ---------------------------------------------------------------------------------
def test_signing_vectors_pass_through_the_java_verifier(classes):
    if not VECTORS.exists():
        pytest.skip(f"{VECTORS.relative_to(REPO)} is absent (the shared vectors come with the Python SDK's branch)")
    done = subprocess.run([shutil.which("java") or "java", "-cp", str(classes), "VectorCheck", str(VECTORS)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"the Java verifier disagrees with the vectors:\n{done.stdout}{done.stderr}"
    assert " 0 failed" in done.stdout, done.stdout


def test_the_json_parser_round_trips_and_refuses_bad_text(classes):
    good = [
        {"a": [1, 2.5, -3, 1e-7, 12345678901234567890, True, False, None], "b": {}, "c": []},
        "quote \" backslash \\ slash / controls \b\f\n\r\t\u0001 unicode é ✓ 😀 \u2028",
        [[[[{"deep": [{}]}]]]], 0, -0.5, "", {"": ""},
    ]
    texts = [json.dumps(v, ensure_ascii=ascii_) for v in good for ascii_ in (True, False)]
    texts.append('  {"spaced" : [ 1 , 2 ] }  ')
    bad = ['{"a":1,}', "[1,]", "01", "1.", "-", '"\\x"', '"ab', "nul", '{"a" 1}', "[1] 2", "{'a':1}",
           '"tab\tinside"', "NaN", "[" * 300 + "]" * 300]
    done = subprocess.run([shutil.which("java") or "java", "-cp", str(classes), "Executor", "--json-echo"],
                          input="\n".join(texts + bad) + "\n", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = done.stdout.rstrip("\n").split("\n")
    assert len(out) == len(texts) + len(bad), out
    for text, line in zip(texts, out):
        assert not line.startswith("error"), (text, line)
        assert json.loads(line) == json.loads(text), (text, line)
    for text, line in zip(bad, out[len(texts):]):
        assert line.startswith("error: "), (text, line)


def test_it_registers_its_handlers_and_heartbeats(sundial, tenant_key, app, executor):
    [exe] = executors_of(sundial, tenant_key, app)
    assert exe["state"] == "online", exe
    assert exe["address"].rstrip("/") == executor.url.rstrip("/"), exe
    assert {"java.hello", "java.sum", "java.sleep", "java.fail"} <= set(exe["handlers"]), exe
    assert exe["metadata"].get("language") == "java", exe
    # Each new handler created a (stopped) job of the app.
    assert job_for(sundial, tenant_key, app, "java.hello")["state"] == "stopped"
    first = exe["last_heartbeat_at"]
    wait_for("a heartbeat", lambda: executors_of(sundial, tenant_key, app)[0]["last_heartbeat_at"] != first, 8)


def test_a_triggered_run_succeeds_with_the_handlers_output(sundial, tenant_key, app, executor):
    job = job_for(sundial, tenant_key, app, "java.hello")
    params = {"to": "world", "list": [1, 2.5, "é ✓"], "nested": {"ok": True, "none": None}}
    run = call(sundial.base, "POST", f"/api/v1/jobs/{job['id']}/trigger", tenant_key, {"params": params})
    done = final_run(sundial, tenant_key, run["id"])
    assert done["state"] == "succeeded", done
    assert done["output"] == {"echo": params, "by": "java", "attempt": 1}, done
    [exe] = executors_of(sundial, tenant_key, app)
    assert done["attempts"][0]["executor_id"] == exe["id"], done["attempts"]
    executor.wait_line(f"run {run['id']} attempt 1: java.hello(")
    assert executor.count(f"run {run['id']} attempt 1: java.hello(") == 1, executor.output()


def test_a_failure_that_must_not_be_retried_fails_the_run_at_once(sundial, tenant_key, app, executor):
    job = job_for(sundial, tenant_key, app, "java.fail")
    run = call(sundial.base, "POST", f"/api/v1/jobs/{job['id']}/trigger", tenant_key, {"params": {"retry": False}})
    done = final_run(sundial, tenant_key, run["id"])
    assert done["state"] in ("failed", "dead"), done
    assert len(done["attempts"]) == 1, done["attempts"]
    assert "failed on purpose" in (done["attempts"][0].get("message") or ""), done["attempts"]


def test_bad_signatures_get_401(app, executor):
    run_id = "run_" + secrets.token_hex(8)
    body = delivery(run_id=run_id)
    now = int(time.time())
    other = "whsec_" + base64.b64encode(b"not the app's secret at all").decode()
    cases = {
        "wrong secret": dict(signature=sign(other, "msg_x", now, body), msg_id="msg_x", timestamp=now),
        "altered body": dict(signature=sign(app["secret"], "msg_y", now, body + b" "), msg_id="msg_y", timestamp=now),
        # Well past the 300 s tolerance: `now` was read before the loop, and a
        # second may tick between it and the executor's own clock.
        "stale": dict(timestamp=now - 360),
        "future": dict(timestamp=now + 360),
        "not a number": dict(signature="v1,AAAA", timestamp="soon"),
    }
    for name, kw in cases.items():
        status, payload, raw = post_signed(executor.url, app["secret"], body, **kw)
        assert status == 401 and payload["code"] == "bad_signature", (name, status, raw)
    status, payload, _ = http(executor.url, "POST", body, {"content-type": "application/json"})
    assert status == 401 and payload["code"] == "bad_signature"
    assert executor.count(f"run {run_id} ") == 0, "a refused delivery ran its handler"


def test_a_repeated_webhook_id_gets_the_first_answer(app, executor):
    run_id = "run_" + secrets.token_hex(8)
    msg_id = f"msg_{run_id}_0_1"
    s1, a1, _ = post_signed(executor.url, app["secret"], delivery(params={"n": 1}, run_id=run_id), msg_id=msg_id)
    # Same id, a different (validly signed) body: the memory answers, the handler does not run again.
    s2, a2, _ = post_signed(executor.url, app["secret"], delivery(params={"n": 2}, run_id=run_id), msg_id=msg_id)
    assert (s1, s2) == (200, 200)
    assert a1 == a2 == {"status": "succeeded", "output": {"echo": {"n": 1}, "by": "java", "attempt": 1}}, (a1, a2)
    # The executor's stdout is read by another thread: wait for the first line before counting.
    executor.wait_line(f"run {run_id} attempt 1: java.hello(")
    assert executor.count(f"run {run_id} attempt 1: java.hello(") == 1, executor.output()
    # A new attempt has a new id and runs.
    s3, a3, _ = post_signed(executor.url, app["secret"], delivery(params={"n": 3}, run_id=run_id, attempt=2))
    assert s3 == 200 and a3["output"]["echo"] == {"n": 3}


def test_an_unknown_handler_is_retired(app, executor):
    status, payload, raw = post_signed(executor.url, app["secret"], delivery(handler="no.such.handler"))
    assert status == 410 and payload["code"] == "handler_retired", raw


def test_a_timeout_cancel_reaches_the_running_handler(sundial, tenant_key, app, executor):
    # Sundial's signed `POST {address}/cancel` after the attempt's deadline interrupts the handler's
    # thread. (A cancel through the API while a synchronous delivery is still in flight sends none:
    # the attempt has no address recorded until it ends; see /work/briefs/java-report.md.)
    job = call(sundial.base, "POST", "/api/v1/jobs", tenant_key, {
        "name": "java-timeout", "app": "java", "handler": "java.sleep", "timeout_ms": 1000,
        "failure": {"policy": "discard"}, "schedule": {"kind": "manual"}})
    run = call(sundial.base, "POST", f"/api/v1/jobs/{job['id']}/trigger", tenant_key, {"params": {"ms": 20000}})
    executor.wait_line(f"run {run['id']} attempt 1: java.sleep(", 10)
    executor.wait_line(f"cancel of run {run['id']} attempt 1: interrupting its handler", 10)
    done = final_run(sundial, tenant_key, run["id"])
    assert done["state"] != "succeeded", done
    assert done["attempts"][0]["reason"] == "timeout", done["attempts"]


def test_it_drains_with_503_and_deregisters_on_sigterm(classes, sundial, tenant_key, app, executor):
    # A second executor of the app, stopped here (the module's one keeps serving the other tests).
    second = JavaExecutor(classes, {"SUNDIAL_URL": sundial.base, "SUNDIAL_SECRET": app["secret"],
                                    "SUNDIAL_APP_ID": app["id"], "GRACE_MS": "10000"})
    try:
        line = second.wait_line("registered as exe", 15)
        exe_id = line.split("registered as ", 1)[1].split(" ", 1)[0]
        slow: dict = {}
        run_id = "run_" + secrets.token_hex(8)
        worker = threading.Thread(target=lambda: slow.update(answer=post_signed(
            second.url, app["secret"], delivery("java.sleep", {"ms": 1500}, run_id=run_id))))
        worker.start()
        second.wait_line(f"run {run_id} attempt 1: java.sleep(", 10)
        second.proc.send_signal(signal.SIGTERM)
        second.wait_line("draining: new deliveries get 503", 10)
        status, payload, raw = post_signed(second.url, app["secret"], delivery())
        assert status == 503 and payload["code"] == "executor_offline", raw
        worker.join(15)
        assert slow["answer"][0] == 200, slow
        assert slow["answer"][1] == {"status": "succeeded", "output": {"slept_ms": 1500}}, slow
        code = second.proc.wait(timeout=20)
        assert code in (0, 143), f"exit {code}:\n{second.output()}"  # 143: the JVM's exit on SIGTERM
        assert f"deregistered {exe_id}" in second.output(), second.output()
        states = {e["id"]: e["state"] for e in executors_of(sundial, tenant_key, app)}
        assert states[exe_id] == "offline", states
    finally:
        second.stop()
