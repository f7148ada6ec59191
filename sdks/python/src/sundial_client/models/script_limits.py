from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from typing import cast, Union


T = TypeVar("T", bound="ScriptLimits")


@_attrs_define
class ScriptLimits:
    """A script job's own limits, each lowering the runner's (the operator's maxima, `serve`'s
    `script_*` settings): a run gets the smaller of the two; a value above the runner's
    maximum runs at the maximum. Absent fields follow the runner.

        Attributes:
            disk_bytes (Union[None, Unset, int]): Disk quota of a run in bytes, 64 KiB to 1 TiB.
            fuel (Union[None, Unset, int]): Fuel (wasm instructions) of a wasm, Python or JavaScript run, at least 1.
            kill_grace_ms (Union[None, Unset, int]): A shell run stopped (timeout, cancel) gets SIGTERM this many
                milliseconds before
                SIGKILL, 0 to 60000.
            memory_bytes (Union[None, Unset, int]): Memory of a run in bytes (wasm, Python, JavaScript: linear memory;
                shell: the run's
                cgroup), 16 MiB to 1 TiB.
            open_files (Union[None, Unset, int]): Files a run may hold open at once, 16 to 65536.
            output_bytes (Union[None, Unset, int]): stdout and stderr are each kept up to this many bytes, 1 KiB to 64 MiB.
    """

    disk_bytes: Union[None, Unset, int] = UNSET
    fuel: Union[None, Unset, int] = UNSET
    kill_grace_ms: Union[None, Unset, int] = UNSET
    memory_bytes: Union[None, Unset, int] = UNSET
    open_files: Union[None, Unset, int] = UNSET
    output_bytes: Union[None, Unset, int] = UNSET

    def to_dict(self) -> dict[str, Any]:
        disk_bytes: Union[None, Unset, int]
        if isinstance(self.disk_bytes, Unset):
            disk_bytes = UNSET
        else:
            disk_bytes = self.disk_bytes

        fuel: Union[None, Unset, int]
        if isinstance(self.fuel, Unset):
            fuel = UNSET
        else:
            fuel = self.fuel

        kill_grace_ms: Union[None, Unset, int]
        if isinstance(self.kill_grace_ms, Unset):
            kill_grace_ms = UNSET
        else:
            kill_grace_ms = self.kill_grace_ms

        memory_bytes: Union[None, Unset, int]
        if isinstance(self.memory_bytes, Unset):
            memory_bytes = UNSET
        else:
            memory_bytes = self.memory_bytes

        open_files: Union[None, Unset, int]
        if isinstance(self.open_files, Unset):
            open_files = UNSET
        else:
            open_files = self.open_files

        output_bytes: Union[None, Unset, int]
        if isinstance(self.output_bytes, Unset):
            output_bytes = UNSET
        else:
            output_bytes = self.output_bytes

        field_dict: dict[str, Any] = {}
        field_dict.update({})
        if disk_bytes is not UNSET:
            field_dict["disk_bytes"] = disk_bytes
        if fuel is not UNSET:
            field_dict["fuel"] = fuel
        if kill_grace_ms is not UNSET:
            field_dict["kill_grace_ms"] = kill_grace_ms
        if memory_bytes is not UNSET:
            field_dict["memory_bytes"] = memory_bytes
        if open_files is not UNSET:
            field_dict["open_files"] = open_files
        if output_bytes is not UNSET:
            field_dict["output_bytes"] = output_bytes

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_disk_bytes(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        disk_bytes = _parse_disk_bytes(d.pop("disk_bytes", UNSET))

        def _parse_fuel(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        fuel = _parse_fuel(d.pop("fuel", UNSET))

        def _parse_kill_grace_ms(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        kill_grace_ms = _parse_kill_grace_ms(d.pop("kill_grace_ms", UNSET))

        def _parse_memory_bytes(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        memory_bytes = _parse_memory_bytes(d.pop("memory_bytes", UNSET))

        def _parse_open_files(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        open_files = _parse_open_files(d.pop("open_files", UNSET))

        def _parse_output_bytes(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        output_bytes = _parse_output_bytes(d.pop("output_bytes", UNSET))

        script_limits = cls(
            disk_bytes=disk_bytes,
            fuel=fuel,
            kill_grace_ms=kill_grace_ms,
            memory_bytes=memory_bytes,
            open_files=open_files,
            output_bytes=output_bytes,
        )

        return script_limits
