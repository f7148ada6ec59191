"""Errors a handler raises, and the executor's own."""
from __future__ import annotations

from typing import Any

__all__ = ["FailNoRetry", "Fail", "PayloadError"]


class Fail(Exception):
    """Fail the run with ``message`` (and, optionally, an ``output``); the job's failure
    policy decides whether it is retried. Any other exception does the same, with
    ``"<ExceptionType>: <text>"`` as the message."""

    retry = True

    def __init__(self, message: str, output: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.output = output


class FailNoRetry(Fail):
    """Fail the run for good: Sundial does not apply the job's failure policy (no retry).
    Sent as ``"retry": false`` in the answer or the result callback."""

    retry = False


class PayloadError(FailNoRetry):
    """The run's params do not match the handler's payload type (a retry would get the same
    params, so it is not retried)."""
