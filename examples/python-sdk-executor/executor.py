"""An executor written with the Sundial Python SDK (sdks/python): two handlers, a nightly
report and what runs after it.

    pip install ./sdks/python
    SUNDIAL_URL=http://127.0.0.1:7700 SUNDIAL_APP_ID=app_… SUNDIAL_SECRET=whsec_… PORT=9100 \
        python examples/python-sdk-executor/executor.py

It registers with Sundial (a stopped job is created per new handler), heartbeats, and on
SIGTERM drains and deregisters. See README.md for the jobs to point at it.
"""
import logging
import os

from sundial import Executor, FailNoRetry

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
port = int(os.environ.get("PORT", "9100"))
ex = Executor(
    secrets=os.environ["SUNDIAL_SECRET"].split(","),
    scheduler_urls=os.environ.get("SUNDIAL_URL", "http://127.0.0.1:7700").split(","),
    app_id=os.environ["SUNDIAL_APP_ID"],
    name="python-sdk-example",
)


@ex.handler("report.extract")
def extract(ctx):
    """Fired by a cron job: count the orders of the scheduled day; the output goes to the children."""
    day = ctx.scheduled_at.date().isoformat() if ctx.scheduled_at else "unknown"
    regions = (ctx.params or {}).get("regions", ["eu", "us"])
    ctx.log(f"extracting {day} for {', '.join(regions)}")
    orders = {region: 10 * (i + 1) for i, region in enumerate(regions)}
    return {"day": day, "orders": orders, "total": sum(orders.values())}


@ex.handler("report.publish")
def publish(ctx):
    """A child job of report.extract: receives its parent's output."""
    report = ctx.parent_output
    if not report:
        raise FailNoRetry("report.publish runs as a child of report.extract")
    ctx.log(f"publishing {report['total']} orders of {report['day']} (from run {ctx.parent.run_id})")
    print(f"published {report['day']}: {report['total']}", flush=True)
    return {"published": report["total"], "day": report["day"]}


if __name__ == "__main__":
    ex.serve("127.0.0.1", port, address=os.environ.get("EXECUTOR_URL", f"http://127.0.0.1:{port}/"))
