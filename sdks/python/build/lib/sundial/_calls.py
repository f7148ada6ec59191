"""Signed calls from the executor to Sundial (register, heartbeat, result, logs), to any
live one of several scheduler URLs."""
from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
import uuid
from typing import Any, List, Optional, Sequence, Tuple

from .signing import signature_header

log = logging.getLogger("sundial")

__all__ = ["SchedulerCalls", "SchedulerUnavailable"]


class SchedulerUnavailable(Exception):
    """No scheduler URL answered (connection failed or 5xx on every one)."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class SchedulerCalls:
    def __init__(self, urls: Sequence[str], secrets: Sequence[str], app_id: str, timeout: float = 10.0) -> None:
        self.urls: List[str] = [u.strip().rstrip("/") for u in urls if u and u.strip()]
        self.secrets = list(secrets)
        self.app_id = app_id
        self.timeout = timeout
        self._preferred = 0
        self._lock = threading.Lock()
        # Executor calls never go through HTTP(S)_PROXY (127.0.0.1 and private nodes), never follow redirects.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())

    def post(self, path: str, body: Any) -> Tuple[int, Any]:
        """POST signed JSON to the first live URL (the last one that answered first). Returns
        (status, parsed JSON or None) for any answer below 500; raises SchedulerUnavailable."""
        if not self.urls:
            raise SchedulerUnavailable("no scheduler URL configured")
        data = json.dumps(body, separators=(",", ":")).encode()
        with self._lock:
            start = self._preferred
        errors = []
        for i in range(len(self.urls)):
            idx = (start + i) % len(self.urls)
            base = self.urls[idx]
            msg_id = "msg_" + uuid.uuid4().hex  # a fresh id per try: a repeated one is refused as a replay
            ts = int(time.time())
            req = urllib.request.Request(
                base + path,
                data=data,
                method="POST",
                headers={
                    "content-type": "application/json",
                    "sundial-app-id": self.app_id,
                    "webhook-id": msg_id,
                    "webhook-timestamp": str(ts),
                    "webhook-signature": signature_header(self.secrets, msg_id, ts, data),
                },
            )
            try:
                with self._opener.open(req, timeout=self.timeout) as resp:
                    status, payload = resp.status, resp.read()
            except urllib.error.HTTPError as err:
                status, payload = err.code, err.read()
            except (OSError, urllib.error.URLError) as err:
                errors.append(f"{base}: {err}")
                continue
            if status >= 500:
                errors.append(f"{base}: HTTP {status}")
                continue
            with self._lock:
                self._preferred = idx
            try:
                parsed = json.loads(payload) if payload else None
            except ValueError:
                parsed = None
            return status, parsed
        raise SchedulerUnavailable("; ".join(errors))
