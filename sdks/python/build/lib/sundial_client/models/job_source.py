from enum import Enum


class JobSource(str, Enum):
    API = "api"
    REGISTRATION = "registration"

    def __str__(self) -> str:
        return str(self.value)
