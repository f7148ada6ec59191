from enum import Enum


class BlockStrategy(str, Enum):
    COVER_EARLY = "cover_early"
    DISCARD_LATER = "discard_later"
    SERIAL = "serial"

    def __str__(self) -> str:
        return str(self.value)
