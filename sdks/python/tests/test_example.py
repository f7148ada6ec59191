"""examples/python-sdk-executor: registers, runs a handler on a cron job, logs, and its output
reaches a child job; SIGTERM deregisters."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from conftest import REPO, Api, wait_for

EXAMPLE = REPO / "examples" / "python-sdk-executor" / "executor.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_example_executor(api: Api, unique, tmp_path) -> None:  # type: ignore[no-untyped-def]
    app = api.app(unique("example"))
    port = free_port()
    out = open(tmp_path / "executor.log", "w+")
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLE)], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        env={**os.environ, "SUNDIAL_URL": api.base, "SUNDIAL_APP_ID": app["id"], "SUNDIAL_SECRET": app["secret"],
             "PORT": str(port)})
    try:
        executors = lambda: api("GET", f"/api/v1/apps/{app['id']}/executors", expect=(200,))["items"]  # noqa: E731
        (row,) = wait_for("the example to register", lambda: [e for e in executors() if e["state"] == "online"], 20)
        assert sorted(row["handlers"]) == ["report.extract", "report.publish"]
        child = api.job(app["id"], unique("publish"), "report.publish")
        cron = api.job(app["id"], unique("extract"), "report.extract", params={"regions": ["eu", "us"]},
                       schedule={"kind": "cron", "expression": "* * * * * *"}, children=[child["id"]])
        runs = lambda: api("GET", f"/api/v1/runs?job_id={child['id']}&state=succeeded", expect=(200,))["items"]  # noqa: E731
        done = wait_for("a child run to succeed", runs, 30)[0]
        run = api.run(done["id"])
        assert run["output"]["published"] == 30 and run["trigger"] == "parent", run
        parent = api.run(run["parent_run_id"]) if run.get("parent_run_id") else None
        if parent:
            assert parent["job_id"] == cron["id"] and parent["trigger"] == "schedule"
            assert any("extracting" in line["message"] for line in parent["logs"]), parent["logs"]
        assert any("publishing 30 orders" in line["message"] for line in run["logs"]), run["logs"]
        api("POST", f"/api/v1/jobs/{cron['id']}/stop", {})
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        out.seek(0)
        log = out.read()
    assert code == 0, log
    assert "published" in log and "deregistered" in log, log
    assert all(e["state"] != "online" for e in api("GET", f"/api/v1/apps/{app['id']}/executors", expect=(200,))["items"])
