from enum import Enum


class ScriptRuntime(str, Enum):
    BASH = "bash"
    JAVASCRIPT = "javascript"
    PYTHON = "python"
    SH = "sh"
    WASM = "wasm"

    def __str__(self) -> str:
        return str(self.value)
