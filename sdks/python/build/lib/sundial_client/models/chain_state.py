from enum import Enum


class ChainState(str, Enum):
    DONE = "done"
    RUNNING = "running"

    def __str__(self) -> str:
        return str(self.value)
