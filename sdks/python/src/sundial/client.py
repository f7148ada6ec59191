"""The management client: the generated ``sundial_client`` (every operation of
``openapi/openapi.json``, typed), wrapped where it helps: typed errors carrying the server's
``code``, ``message`` and ``details.field``; cursor pagination as an iterator; an
``Idempotency-Key`` on every trigger; many jobs created in one call (``create_jobs``).

    from sundial.client import Sundial
    from sundial_client.api.jobs import get_job

    sd = Sundial("http://127.0.0.1:7700", api_key)
    job = sd.call(get_job, id="job_…")          # any generated operation, errors raised
    for run in sd.paginate(list_runs, job_id=job.id):
        ...
"""
from __future__ import annotations

import json
import time
import uuid
from types import ModuleType
from typing import Any, Dict, Iterator, List, Optional, Sequence, Type, Union

import httpx

from sundial_client import AuthenticatedClient
from sundial_client.api.apps import create_app
from sundial_client.api.jobs import create_job, create_jobs, trigger_job
from sundial_client.api.runs import get_run, list_runs
from sundial_client.models import (
    AppCreate, AppWithSecret, JobBatch, JobBatchInput, JobInput, JobOut, RunDetail, RunOut, TriggerRequest,
)
from sundial_client.types import UNSET, Response, Unset

__all__ = [
    "Sundial", "ApiError", "BadRequest", "Unauthorized", "Forbidden", "NotFound", "Conflict",
    "Unprocessable", "TooManyRequests", "ServerError", "TERMINAL_STATES",
]

TERMINAL_STATES = ("succeeded", "failed", "cancelled", "skipped", "expired")


class ApiError(Exception):
    """An error answer: ``status``, and the server's ``code``, ``message``, ``details`` and
    ``field`` (``details.field``: which input was refused, e.g. ``schedule.expression``)."""

    def __init__(self, status: int, code: str, message: str, details: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(f"HTTP {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details: Dict[str, Any] = details or {}

    @property
    def field(self) -> Optional[str]:
        f = self.details.get("field")
        return f if isinstance(f, str) else None

    @staticmethod
    def from_http(status: int, content: bytes) -> "ApiError":
        try:
            body = json.loads(content) if content else {}
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        cls = _BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
        details = body.get("details")
        return cls(
            status,
            str(body.get("code") or f"http_{status}"),
            str(body.get("message") or content[:500].decode("utf-8", "replace")),
            details if isinstance(details, dict) else {},
        )


class BadRequest(ApiError):
    """400."""


class Unauthorized(ApiError):
    """401: no key, a wrong one, a bad signature."""


class Forbidden(ApiError):
    """403: the key's role does not allow it."""


class NotFound(ApiError):
    """404."""


class Conflict(ApiError):
    """409: a name taken, a quota exceeded, a state that does not allow it."""


class Unprocessable(ApiError):
    """422: a field refused (``field`` names it)."""


class TooManyRequests(ApiError):
    """429."""


class ServerError(ApiError):
    """5xx."""


_BY_STATUS: Dict[int, Type[ApiError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict, 413: BadRequest,
    415: BadRequest, 422: Unprocessable, 429: TooManyRequests,
}


class Sundial:
    """A management client for one Sundial node (or a load balancer in front of several)."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = 30.0) -> None:
        self.raw = AuthenticatedClient(
            base_url=base_url.rstrip("/"), token=api_key, timeout=httpx.Timeout(timeout), raise_on_unexpected_status=False
        )

    # -- any operation -----------------------------------------------------------------------
    def call(self, operation: ModuleType, **kwargs: Any) -> Any:
        """Call a generated operation module (``sundial_client.api.<tag>.<operation_id>``) and
        return its parsed success body (None for an empty one); an error raises :class:`ApiError`."""
        response: Response[Any] = operation.sync_detailed(client=self.raw, **kwargs)
        status = int(response.status_code)
        if status >= 400:
            raise ApiError.from_http(status, response.content)
        return response.parsed

    def paginate(self, operation: ModuleType, *, limit: Optional[int] = None, **kwargs: Any) -> Iterator[Any]:
        """Every item of a listing, following ``next_cursor`` page by page."""
        cursor: Union[Unset, str] = UNSET
        if limit is not None:
            kwargs["limit"] = limit
        while True:
            page = self.call(operation, cursor=cursor, **kwargs)
            yield from page.items
            nxt = getattr(page, "next_cursor", None)
            if not isinstance(nxt, str) or not nxt:
                return
            cursor = nxt

    # -- common calls ------------------------------------------------------------------------
    def create_app(self, name: str, endpoints: Optional[Sequence[str]] = None, description: Optional[str] = None) -> AppWithSecret:
        body = AppCreate(name=name, endpoints=list(endpoints) if endpoints is not None else UNSET,
                         description=description if description is not None else UNSET)
        app: AppWithSecret = self.call(create_app, body=body)
        return app

    def create_job(self, spec: Union[JobInput, Dict[str, Any]]) -> JobOut:
        """Create a job from a ``JobInput`` or the same as a dict (the REST body)."""
        body = spec if isinstance(spec, JobInput) else JobInput.from_dict(spec)
        job: JobOut = self.call(create_job, body=body)
        return job

    def create_jobs(self, specs: Sequence[Union[JobInput, Dict[str, Any]]]) -> List[JobOut]:
        """Create 1 to 1,000 jobs in one call, all or none (``POST /api/v1/jobs/batch``), each a
        ``JobInput`` or the same as a dict; returns the created jobs in the same order. If any is
        refused, nothing is created and :class:`ApiError` is raised (422, or 409 when every
        refused item's name is taken) whose ``details["errors"]`` lists each refused item as
        ``{"index", "field", "code", "message"}``, the field named as :meth:`create_job` names it."""
        items = [s if isinstance(s, JobInput) else JobInput.from_dict(s) for s in specs]
        batch: JobBatch = self.call(create_jobs, body=JobBatchInput(jobs=items))
        return list(batch.jobs)

    def trigger(self, job_id: str, params: Any = None, *, idempotency_key: Optional[str] = None) -> RunOut:
        """Fire a job now, with ``params`` instead of the job's. An ``Idempotency-Key`` is always
        sent (a fresh one unless given): repeating the call with the same key returns the run the
        first one created, so a retried trigger never fires twice."""
        body = TriggerRequest.from_dict({"params": params} if params is not None else {})
        run: RunOut = self.call(trigger_job, id=job_id, body=body, idempotency_key=idempotency_key or str(uuid.uuid4()))
        return run

    def get_run(self, run_id: str) -> RunDetail:
        run: RunDetail = self.call(get_run, id=run_id)
        return run

    def runs(self, **filters: Any) -> Iterator[RunOut]:
        """Every run matching the filters of ``list_runs`` (``job_id``, ``state``, …)."""
        return self.paginate(list_runs, **filters)

    def wait_run(self, run_id: str, *, timeout: float = 60.0, states: Sequence[str] = TERMINAL_STATES) -> RunDetail:
        """Poll a run until its state is one of ``states``."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.get_run(run_id)
            if str(run.state) in states:
                return run
            if time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} is still {run.state} after {timeout} s")
            time.sleep(0.1)

    def close(self) -> None:
        self.raw.get_httpx_client().close()

    def __enter__(self) -> "Sundial":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
