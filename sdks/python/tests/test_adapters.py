"""Every adapter answers a signed delivery and a cancel the same way (no server needed)."""
from __future__ import annotations

import io
import json
import threading
import time
from typing import Any, Dict, Tuple

import pytest

from sundial import Executor
from sundial.signing import signature_header

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def signed(body: Dict[str, Any], msg_id: str) -> Tuple[Dict[str, str], bytes]:
    raw = json.dumps(body).encode()
    ts = int(time.time())
    return {"content-type": "application/json", "webhook-id": msg_id, "webhook-timestamp": str(ts),
            "webhook-signature": signature_header([SECRET], msg_id, ts, raw)}, raw


def delivery(run: str, handler: str = "h") -> Dict[str, Any]:
    return {"run_id": run, "job_id": "job_1", "job": "j", "handler": handler, "params": {"x": 1}, "attempt": 1,
            "scheduled_at": "2026-01-01T00:00:00.000Z", "trigger": "manual", "shard": {"index": 0, "total": 1}}


def executor() -> Executor:
    ex = Executor(secrets=["whsec_" + "A" * 32, SECRET])  # the second secret signs: rotation

    @ex.handler("h")
    def h(ctx):  # type: ignore[no-untyped-def]
        return {"x": ctx.params["x"]}

    return ex


def test_wsgi() -> None:
    app = executor().wsgi_app()
    headers, raw = signed(delivery("run_w"), "msg_run_w_0_1")
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/hook", "CONTENT_LENGTH": str(len(raw)),
               "CONTENT_TYPE": "application/json", "wsgi.input": io.BytesIO(raw),
               **{"HTTP_" + k.upper().replace("-", "_"): v for k, v in headers.items() if k != "content-type"}}
    got: Dict[str, Any] = {}
    body = b"".join(app(environ, lambda status, hdrs: got.update(status=status)))
    assert got["status"].startswith("200") and json.loads(body) == {"status": "succeeded", "output": {"x": 1}}


def test_asgi_with_lifespan() -> None:
    from starlette.testclient import TestClient

    with TestClient(executor().asgi_app()) as client:
        headers, raw = signed(delivery("run_a"), "msg_run_a_0_1")
        r = client.post("/", content=raw, headers=headers)
        assert r.status_code == 200 and r.json()["output"] == {"x": 1}
        headers, raw = signed({"run_id": "run_a", "attempt": 1}, "c1")
        r = client.post("/cancel", content=raw, headers=headers)
        assert r.status_code == 200 and r.json() == {"cancelled": False}
        r = client.post("/", content=raw, headers={**headers, "webhook-signature": "v1,AAAA"})
        assert r.status_code == 401 and r.json()["code"] == "bad_signature"


def test_fastapi_router() -> None:
    from fastapi import FastAPI
    from starlette.testclient import TestClient

    import sundial.fastapi

    ex = executor()
    app = FastAPI()
    app.include_router(sundial.fastapi.router(ex, prefix="/sundial"))
    with TestClient(app) as client:
        headers, raw = signed(delivery("run_f", handler="gone"), "msg_run_f_0_1")
        r = client.post("/sundial/", content=raw, headers=headers)
        assert r.status_code == 410 and r.json()["code"] == "handler_retired"


def test_flask_blueprint_and_cancel_reaching_a_handler() -> None:
    from flask import Flask

    import sundial.flask

    ex = executor()
    started = threading.Event()

    @ex.handler("wait", mode="async")
    def wait(ctx):  # type: ignore[no-untyped-def]
        started.set()
        return ctx.cancelled.wait(5)

    app = Flask(__name__)
    app.register_blueprint(sundial.flask.blueprint(ex, url_prefix="/sundial"))
    client = app.test_client()
    headers, raw = signed(delivery("run_c", handler="wait"), "msg_run_c_0_1")
    r = client.post("/sundial/", data=raw, headers=headers)
    assert r.status_code == 202
    assert started.wait(5)
    headers, raw = signed({"run_id": "run_c", "attempt": 1}, "cancel_1")
    r = client.post("/sundial/cancel", data=raw, headers=headers)
    assert r.status_code == 200 and r.get_json() == {"cancelled": True}


def test_standard_library_server_backlog() -> None:
    from sundial.server import ExecutorServer, make_server

    server = make_server(executor(), "127.0.0.1", 0)
    try:
        assert isinstance(server, ExecutorServer) and server.request_queue_size >= 128
    finally:
        server.server_close()


def test_payload_types() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Order(pydantic.BaseModel):
        id: int
        note: str = ""

    from sundial.payload import parse_payload
    from sundial.errors import PayloadError

    assert parse_payload(Order, {"id": 3}).id == 3
    with pytest.raises(PayloadError, match="do not match Order.*id"):
        parse_payload(Order, {"id": "three"})
