from enum import Enum


class TriggerKind(str, Enum):
    API = "api"
    MANUAL = "manual"
    MISFIRE = "misfire"
    PARENT = "parent"
    SCHEDULE = "schedule"

    def __str__(self) -> str:
        return str(self.value)
