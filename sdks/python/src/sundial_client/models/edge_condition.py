from enum import Enum


class EdgeCondition(str, Enum):
    ALWAYS = "always"
    ON_FAILURE = "on_failure"
    ON_SUCCESS = "on_success"

    def __str__(self) -> str:
        return str(self.value)
