from enum import Enum


class JobState(str, Enum):
    ACTIVE = "active"
    STOPPED = "stopped"

    def __str__(self) -> str:
        return str(self.value)
