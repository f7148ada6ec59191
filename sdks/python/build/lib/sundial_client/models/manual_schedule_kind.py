from enum import Enum


class ManualScheduleKind(str, Enum):
    MANUAL = "manual"

    def __str__(self) -> str:
        return str(self.value)
