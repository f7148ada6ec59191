from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field


from ..models.script_runtime import ScriptRuntime


T = TypeVar("T", bound="RuntimeOffer")


@_attrs_define
class RuntimeOffer:
    """A script runtime as this install offers it.

    Attributes:
        available (bool): Scripts of this runtime can be uploaded and run here.
        detail (str): What was detected (engine, interpreter, sandbox layers), or why it is not available.
        isolation (str): How runs are isolated: `wasm` (inside wasmtime: no host files, network or
            environment; deadline, fuel and memory caps), `strong` (bubblewrap namespaces plus
            cgroup limits), `namespaces_only` (bubblewrap without cgroup limits, accepted by
            the operator), or `none` (not available).
        runtime (ScriptRuntime): The language of a script: a WASI module, Python or JavaScript run inside WebAssembly,
            or a shell script run in an OS sandbox.
    """

    available: bool
    detail: str
    isolation: str
    runtime: ScriptRuntime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        available = self.available

        detail = self.detail

        isolation = self.isolation

        runtime = self.runtime.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "available": available,
                "detail": detail,
                "isolation": isolation,
                "runtime": runtime,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        available = d.pop("available")

        detail = d.pop("detail")

        isolation = d.pop("isolation")

        runtime = ScriptRuntime(d.pop("runtime"))

        runtime_offer = cls(
            available=available,
            detail=detail,
            isolation=isolation,
            runtime=runtime,
        )

        runtime_offer.additional_properties = d
        return runtime_offer

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
