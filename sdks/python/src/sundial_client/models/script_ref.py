from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field


T = TypeVar("T", bound="ScriptRef")


@_attrs_define
class ScriptRef:
    """The script version an attempt of a script job runs.

    Attributes:
        id (str):
        name (str):
        runtime (str): `wasm`, `python`, `javascript`, `bash` or `sh`.
        sha256 (str): SHA-256 of the source's bytes (decoded for a WebAssembly binary), lower-case hex.
        timeout_ms (int): The job's timeout: the script's wall-clock budget.
        version (int):
    """

    id: str
    name: str
    runtime: str
    sha256: str
    timeout_ms: int
    version: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        name = self.name

        runtime = self.runtime

        sha256 = self.sha256

        timeout_ms = self.timeout_ms

        version = self.version

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "name": name,
                "runtime": runtime,
                "sha256": sha256,
                "timeout_ms": timeout_ms,
                "version": version,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        name = d.pop("name")

        runtime = d.pop("runtime")

        sha256 = d.pop("sha256")

        timeout_ms = d.pop("timeout_ms")

        version = d.pop("version")

        script_ref = cls(
            id=id,
            name=name,
            runtime=runtime,
            sha256=sha256,
            timeout_ms=timeout_ms,
            version=version,
        )

        script_ref.additional_properties = d
        return script_ref

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
