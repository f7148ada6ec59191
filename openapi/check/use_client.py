"""Checked by scripts/spec-check with `mypy --strict`, together with the client that
openapi-python-client generates from openapi/openapi.json (`sundial_client`): a few calls
as a Python user of the spec writes them. Never run; only type-checked."""

import datetime

from sundial_client import AuthenticatedClient
from sundial_client.api.apps import list_app_executors, list_apps
from sundial_client.api.jobs import create_job, trigger_job
from sundial_client.api.runs import list_runs
from sundial_client.models import (
    CronSchedule,
    CronScheduleKind,
    ErrorBody,
    FixedRateSchedule,
    JobInput,
    JobInputParams,
    JobOut,
    TriggerRequest,
    TriggerRequestParamsType0,
)


def example() -> None:
    client = AuthenticatedClient(base_url="http://127.0.0.1:7700", token="sk_example")
    body = JobInput(
        name="nightly-invoices",
        app="billing",
        handler="invoice.run",
        schedule=CronSchedule(kind=CronScheduleKind.CRON, expression="0 30 2 * * *", timezone="Europe/Berlin"),
        params=JobInputParams.from_dict({"to": "world"}),
    )
    created = create_job.sync(client=client, body=body)
    if created is None or isinstance(created, ErrorBody):
        raise RuntimeError("refused")
    job: JobOut = created
    created_at: datetime.datetime = job.created_at
    # A schedule is one class per kind.
    if isinstance(job.schedule, FixedRateSchedule):
        every: int = job.schedule.every_ms
        print(every)
    print(created_at, job.params.to_dict())

    apps = list_apps.sync(client=client, limit=10)
    executors = list_app_executors.sync(client=client, id="billing")
    runs = list_runs.sync(client=client, limit=3)
    print(apps, executors, runs)
    trigger_job.sync(
        job.id, client=client, body=TriggerRequest(params=TriggerRequestParamsType0.from_dict({"n": 1}))
    )
