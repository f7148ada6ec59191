"""Shared harness: a real `sundial serve` (embedded SQLite in a temp dir, port 0, 127.0.0.1),
an operator key set at start, a tenant, and executors served by the SDK's standard-library
server. Everything stops by itself, also when a test fails."""
from __future__ import annotations

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
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

REPO = Path(__file__).resolve().parents[3]
VECTORS = REPO / "sdks" / "vectors"
_bin = os.environ.get("SUNDIAL_BIN") or "/work/main/target/release/sundial"
SUNDIAL_BIN = Path(_bin) if Path(_bin).is_absolute() else REPO / _bin
BANNER = "Sundial listening on http://"
POLL = 0.05
TERMINAL = ("succeeded", "failed", "cancelled", "skipped", "expired")


def wait_for(what: str, predicate: Callable[[], Any], timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(POLL)


def call(base: str, method: str, path: str, key: str, body: Any = None, expect=(200, 201)) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"authorization": f"Bearer {key}", "content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            status, payload = resp.status, resp.read()
    except urllib.error.HTTPError as err:
        status, payload = err.code, err.read()
    assert status in expect, f"{method} {path}: HTTP {status} {payload[:500]!r}"
    return json.loads(payload) if payload else None


def post_raw(url: str, headers: Dict[str, str], body: bytes) -> "tuple[int, Any]":
    req = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            status, payload = resp.status, resp.read()
    except urllib.error.HTTPError as err:
        status, payload = err.code, err.read()
    return status, (json.loads(payload) if payload else None)


class Sundial:
    def __init__(self, data_dir: Path):
        if not SUNDIAL_BIN.exists():
            pytest.fail(f"{SUNDIAL_BIN} not found: build it, or point SUNDIAL_BIN at the binary")
        self.operator_key = "sk_" + secrets.token_urlsafe(32)
        self.stderr_path = data_dir / "stderr.log"
        self._stderr = open(self.stderr_path, "wb")
        env = {**os.environ, "SUNDIAL_ADMIN_KEY": self.operator_key, "SUNDIAL_LOG": "warn"}
        self.proc = subprocess.Popen(
            [str(SUNDIAL_BIN), "serve", "--data-dir", str(data_dir / "data"), "--listen", "127.0.0.1:0"],
            env=env, stdout=subprocess.PIPE, stderr=self._stderr, stdin=subprocess.DEVNULL, text=True)
        self.stdout: List[str] = []
        lines: "queue.Queue[Optional[str]]" = queue.Queue()

        def drain() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.stdout.append(line)
                lines.put(line)
            lines.put(None)

        threading.Thread(target=drain, daemon=True).start()
        deadline = time.monotonic() + 30
        self.base = ""
        while not self.base:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.stop()
                pytest.fail(f"no `{BANNER}…` line within 30 s; stdout: {self.stdout!r}")
            if line is None:
                code = self.proc.wait()
                pytest.fail(f"sundial exited with {code} before listening; stderr:\n{self.stderr()}")
            if line.startswith(BANNER):
                self.base = line.strip()[len("Sundial listening on "):].rstrip("/")

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


@pytest.fixture(scope="session")
def sundial(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sundial]:
    server = Sundial(tmp_path_factory.mktemp("sundial"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def key(sundial: Sundial) -> str:
    return call(sundial.base, "POST", "/api/v1/tenants", sundial.operator_key, {"name": "sdk-py"})["admin_key"]


class Api:
    """Small REST helpers for the tests (the SDK's own client is tested separately)."""

    def __init__(self, base: str, key: str):
        self.base, self.key = base, key

    def __call__(self, method: str, path: str, body: Any = None, expect=(200, 201)) -> Any:
        return call(self.base, method, path, self.key, body, expect)

    def app(self, name: str) -> Dict[str, Any]:
        return self("POST", "/api/v1/apps", {"name": name})

    def job(self, app: str, name: str, handler: str, **fields: Any) -> Dict[str, Any]:
        body = {"name": name, "app": app, "handler": handler, "schedule": {"kind": "manual"}, **fields}
        return self("POST", "/api/v1/jobs", body)

    def trigger(self, job_id: str, params: Any = None) -> str:
        body = {} if params is None else {"params": params}
        return self("POST", f"/api/v1/jobs/{job_id}/trigger", body)["id"]

    def run(self, run_id: str) -> Dict[str, Any]:
        return self("GET", f"/api/v1/runs/{run_id}", expect=(200,))

    def wait_run(self, run_id: str, timeout: float = 20, states=TERMINAL) -> Dict[str, Any]:
        return wait_for(f"run {run_id} to end", lambda: (r if (r := self.run(run_id))["state"] in states else None),
                        timeout)


@pytest.fixture(scope="session")
def api(sundial: Sundial, key: str) -> Api:
    return Api(sundial.base, key)


_names = iter(range(1_000_000))


@pytest.fixture
def unique() -> Callable[[str], str]:
    return lambda prefix: f"{prefix}-{next(_names)}-{secrets.token_hex(3)}"


@pytest.fixture
def serve_executor(sundial: Sundial) -> Iterator[Callable[..., Any]]:
    """Start executors (SDK standard-library server, registered); all are shut down after the test."""
    from sundial.server import start_server, stop_server

    started: List[Any] = []

    def start(ex: Any, register: bool = True) -> Any:
        server = start_server(ex, "127.0.0.1", 0, register=register)
        started.append((ex, server))
        return server

    yield start
    for ex, server in started:
        stop_server(ex, server, grace=5)
