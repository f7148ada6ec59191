"""The management client (generated from openapi/openapi.json, wrapped) against a real server."""
from __future__ import annotations

import pytest

from conftest import Api
from sundial.client import ApiError, NotFound, Sundial, Unprocessable
from sundial_client.api.apps import list_apps
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
