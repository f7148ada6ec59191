from enum import Enum


class FailurePolicyKind(str, Enum):
    DISCARD = "discard"
    RETRY = "retry"

    def __str__(self) -> str:
        return str(self.value)
