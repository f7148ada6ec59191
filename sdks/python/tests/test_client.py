"""The management client (generated from openapi/openapi.json, wrapped) against a real server."""
from __future__ import annotations

from typing import Any, Dict

import pytest

from conftest import Api
from sundial.client import ApiError, NotFound, Sundial, Unprocessable
from sundial_client.api.apps import list_apps
from sundial_client.api.jobs import list_jobs
from sundial_client.api.runs import get_run
from sundial_client.models import RunDetail


def test_management_round_trip(api: Api, unique) -> None:  # type: ignore[no-untyped-def]
    with Sundial(api.base, api.key) as sd:
        app = sd.create_app(unique("mgmt"), endpoints=["http://127.0.0.1:9/"])
        assert app.secret.startswith("whsec_")
        job = sd.create_job({"name": unique("mgmt-job"), "app": app.id, "handler": "mgmt.h",
                             "schedule": {"kind": "manual"}, "params": {"a": 1},
                             "failure": {"policy": "discard"}})
        key = unique("idem")
        run = sd.trigger(job.id, {"b": 2}, idempotency_key=key)
        again = sd.trigger(job.id, {"b": 2}, idempotency_key=key)
        assert again.id == run.id  # the same Idempotency-Key: the same run
        detail = sd.call(get_run, id=run.id)
        assert isinstance(detail, RunDetail) and detail.id == run.id and detail.job_id == job.id
        assert any(r.id == run.id for r in sd.runs(job_id=job.id, limit=1))
        names = [a.name for a in sd.paginate(list_apps, limit=1)]  # one per page: the cursor is followed
        assert app.name in names

        with pytest.raises(Unprocessable) as bad:
            sd.create_job({"name": unique("bad"), "app": app.id, "handler": "h",
                           "schedule": {"kind": "cron", "expression": "61 * * * *"}})
        assert bad.value.status == 422 and bad.value.code == "invalid_cron"
        assert bad.value.field == "schedule.expression" and "61" in bad.value.message
        with pytest.raises(NotFound) as missing:
            sd.get_run("run_does_not_exist")
        assert isinstance(missing.value, ApiError) and missing.value.code == "not_found"


def test_jobs_created_in_one_batch_all_or_none(api: Api, unique) -> None:  # type: ignore[no-untyped-def]
    with Sundial(api.base, api.key) as sd:
        app = sd.create_app(unique("batch"), endpoints=["http://127.0.0.1:9/"])

        def item(name: str, expression: str = "0 0 3 * * *") -> Dict[str, Any]:
            return {"name": name, "app": app.id, "handler": "h", "schedule": {"kind": "cron", "expression": expression}}

        names = [unique("b1"), unique("b2"), unique("b3")]
        jobs = sd.create_jobs([item(n) for n in names])
        assert [j.name for j in jobs] == names  # in the request's order
        assert all(j.app_id == app.id for j in jobs)

        with pytest.raises(Unprocessable) as bad:
            sd.create_jobs([item(unique("b4")), item(unique("b5"), "0 61 * * * *"), item(names[0])])
        assert bad.value.field == "jobs"
        refused = [(e["index"], e["field"], e["code"]) for e in bad.value.details["errors"]]
        assert refused == [(1, "schedule.expression", "invalid_cron"), (2, "name", "conflict")]
        listed = [j.name for j in sd.paginate(list_jobs, app=app.id)]
        assert sorted(listed) == sorted(names)  # nothing of the refused batch was created
