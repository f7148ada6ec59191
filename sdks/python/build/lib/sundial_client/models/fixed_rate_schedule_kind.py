from enum import Enum


class FixedRateScheduleKind(str, Enum):
    FIXED_RATE = "fixed_rate"

    def __str__(self) -> str:
        return str(self.value)
