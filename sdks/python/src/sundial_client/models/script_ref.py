from collections.abc import Mapping
from typing import Any, TypeVar, TYPE_CHECKING

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
from typing import Union

if TYPE_CHECKING:
    from ..models.script_limits import ScriptLimits


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
        limits (Union['ScriptLimits', None, Unset]):
    """

    id: str
    name: str
    runtime: str
    sha256: str
    timeout_ms: int
    version: int
    limits: Union["ScriptLimits", None, Unset] = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.script_limits import ScriptLimits

        id = self.id

        name = self.name

        runtime = self.runtime

        sha256 = self.sha256

        timeout_ms = self.timeout_ms

        version = self.version

        limits: Union[None, Unset, dict[str, Any]]
        if isinstance(self.limits, Unset):
            limits = UNSET
        elif isinstance(self.limits, ScriptLimits):
            limits = self.limits.to_dict()
        else:
            limits = self.limits

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
        if limits is not UNSET:
            field_dict["limits"] = limits

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.script_limits import ScriptLimits

        d = dict(src_dict)
        id = d.pop("id")

        name = d.pop("name")

        runtime = d.pop("runtime")

        sha256 = d.pop("sha256")

        timeout_ms = d.pop("timeout_ms")

        version = d.pop("version")

        def _parse_limits(data: object) -> Union["ScriptLimits", None, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                limits_type_1 = ScriptLimits.from_dict(data)

                return limits_type_1
            except:  # noqa: E722
                pass
            return cast(Union["ScriptLimits", None, Unset], data)

        limits = _parse_limits(d.pop("limits", UNSET))

        script_ref = cls(
            id=id,
            name=name,
            runtime=runtime,
            sha256=sha256,
            timeout_ms=timeout_ms,
            version=version,
            limits=limits,
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
