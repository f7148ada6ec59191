from enum import Enum


class RunState(str, Enum):
    CANCELLED = "cancelled"
    DISPATCHING = "dispatching"
    EXPIRED = "expired"
    FAILED = "failed"
    PENDING = "pending"
    QUEUED = "queued"
    RETRYING = "retrying"
    RUNNING = "running"
    SKIPPED = "skipped"
    SUCCEEDED = "succeeded"

    def __str__(self) -> str:
        return str(self.value)
