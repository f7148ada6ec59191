from enum import Enum


class LinkStatus(str, Enum):
    FIRED = "fired"
    NOT_FIRED = "not_fired"
    SKIPPED = "skipped"
    WAITING = "waiting"

    def __str__(self) -> str:
        return str(self.value)
