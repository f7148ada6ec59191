from enum import Enum


class OnceScheduleKind(str, Enum):
    ONCE = "once"

    def __str__(self) -> str:
        return str(self.value)
