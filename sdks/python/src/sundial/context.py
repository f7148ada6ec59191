"""What a handler is given: the run, its place in a chain, logs, cancellation."""
from __future__ import annotations

import datetime as _dt
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional

if TYPE_CHECKING:  # pragma: no cover
    from .executor import Executor

__all__ = ["Context", "Shard", "Parent", "ParentRun", "parse_time"]


def parse_time(value: str) -> Optional[_dt.datetime]:
    """An RFC 3339 instant (``2026-11-25T02:30:00.000Z``) as an aware datetime, or None."""
    try:
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        return _dt.datetime.fromisoformat(text)
    except (AttributeError, ValueError):
        return None


@dataclass(frozen=True)
class Shard:
    """Which shard of the run this delivery is: ``index`` from 0 to ``total - 1``."""

    index: int = 0
    total: int = 1


@dataclass(frozen=True)
class Parent:
    """The parent run that fired this one, and its output."""

    run_id: str
    output: Any = None


@dataclass(frozen=True)
class ParentRun:
    """One parent of a fan-in run: its job, its run in the chain, how it ended, its output."""

    job_id: str
    run_id: str
    state: str
    output: Any = None


class Context:
    """One delivery of one attempt (of one shard), as the handler sees it.

    Fields: ``run_id``, ``attempt``, ``job_id``, ``job``, ``handler``, ``params`` (raw JSON),
    ``payload`` (``params`` parsed into the handler's payload type, if it has one),
    ``scheduled_at`` (aware datetime), ``trigger``, ``shard`` (:class:`Shard`), ``parent``
    (:class:`Parent` or None), ``parent_output``, ``parents`` (list of :class:`ParentRun` for a
    fan-in, else None), ``chain_params``, ``webhook_id``, ``app_id``, ``node``, ``body`` (the
    whole delivery body) and ``cancelled``: a :class:`threading.Event` set when Sundial sends
    its cancel for this attempt (a timeout, a cancel through the API): check it and stop.
    """

    def __init__(self, executor: "Executor", body: Dict[str, Any], headers: Dict[str, str]) -> None:
        self._executor = executor
        self.body = body
        self.run_id: str = str(body["run_id"])
        self.job_id: str = str(body.get("job_id", ""))
        self.job: str = str(body.get("job", ""))
        self.handler: Optional[str] = body.get("handler")
        self.params: Any = body.get("params")
        self.payload: Any = self.params
        self.attempt: int = int(body.get("attempt", 1))
        self.scheduled_at_text: str = str(body.get("scheduled_at", ""))
        self.scheduled_at: Optional[_dt.datetime] = parse_time(self.scheduled_at_text)
        self.trigger: str = str(body.get("trigger", ""))
        shard = body.get("shard") or {}
        self.shard = Shard(int(shard.get("index", 0)), int(shard.get("total", 1)))
        parent = body.get("parent")
        self.parent: Optional[Parent] = (
            Parent(str(parent.get("run_id", "")), parent.get("output")) if isinstance(parent, dict) else None
        )
        parents = body.get("parents")
        self.parents: Optional[List[ParentRun]] = (
            [
                ParentRun(str(p.get("job_id", "")), str(p.get("run_id", "")), str(p.get("state", "")), p.get("output"))
                for p in parents
                if isinstance(p, dict)
            ]
            if isinstance(parents, list)
            else None
        )
        self.chain_params: Any = body.get("chain_params")
        self.webhook_id: str = headers.get("webhook-id", "")
        self.app_id: str = headers.get("sundial-app-id", "")
        self.node: str = headers.get("sundial-node", "")
        self.cancelled = threading.Event()
        self._lines: List[Dict[str, Any]] = []
        self._lines_lock = threading.Lock()

    # -- the run's place in a chain ------------------------------------------------------
    @property
    def parent_output(self) -> Any:
        """The output of the parent that fired this run (None without one)."""
        return self.parent.output if self.parent else None

    @property
    def key(self) -> str:
        """``<run>/<shard>/<attempt>``: what a cancel names."""
        return f"{self.run_id}/{self.shard.index}/{self.attempt}"

    # -- logs and progress -----------------------------------------------------------------
    def log(self, message: str, level: str = "info") -> None:
        """A log line kept with the run's attempt (sent in batches to ``POST /runs/{id}/logs``)."""
        if level not in ("debug", "info", "warn", "error"):
            level = "warn" if level == "warning" else "info"
        at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        with self._lines_lock:
            self._lines.append({"level": level, "message": str(message), "at": at})
        self._executor._logs_pending(self)

    def debug(self, message: str) -> None:
        self.log(message, "debug")

    def info(self, message: str) -> None:
        self.log(message, "info")

    def warn(self, message: str) -> None:
        self.log(message, "warn")

    def error(self, message: str) -> None:
        self.log(message, "error")

    def progress(self, message: str = "", fraction: Optional[float] = None) -> None:
        """Report progress: a log line (``progress 40%: message``) sent at once. The run is also
        listed in the executor's heartbeats (``running_runs``) for as long as it runs."""
        pct = f" {round(fraction * 100)}%" if fraction is not None else ""
        self.log(f"progress{pct}{': ' if message else ''}{message}", "info")
        self._executor._flush_logs(self)

    # -- a deferred result (the handler returned ``sundial.Defer``) ------------------------
    def succeed(self, output: Any = None) -> bool:
        """Report success later (signed result callback). True if Sundial took it."""
        return self._executor.report(self, "succeeded", output)

    def fail(self, message: str, *, retry: bool = True, output: Any = None) -> bool:
        """Report failure later; ``retry=False``: fail for good (no retry)."""
        return self._executor.report(self, "failed", output, message, None if retry else False)

    def _take_lines(self) -> List[Dict[str, Any]]:
        with self._lines_lock:
            lines, self._lines = self._lines, []
        return lines

    def __repr__(self) -> str:
        return f"Context(run_id={self.run_id!r}, attempt={self.attempt}, handler={self.handler!r}, shard={self.shard})"
