from collections.abc import Mapping
from typing import Any, TypeVar, TYPE_CHECKING

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.script_runtime import ScriptRuntime
from dateutil.parser import isoparse
from typing import cast
from typing import Union
import datetime

if TYPE_CHECKING:
    from ..models.script_version_out import ScriptVersionOut


T = TypeVar("T", bound="ScriptOut")


@_attrs_define
class ScriptOut:
    """
    Attributes:
        created_at (datetime.datetime):
        current_version (int): The version jobs that follow the script run.
        id (str):
        name (str):
        runtime (ScriptRuntime): The language of a script: a WASI module, Python or JavaScript run inside WebAssembly,
            or a shell script run in an OS sandbox.
        updated_at (datetime.datetime):
        current (Union['ScriptVersionOut', None, Unset]):
    """

    created_at: datetime.datetime
    current_version: int
    id: str
    name: str
    runtime: ScriptRuntime
    updated_at: datetime.datetime
    current: Union["ScriptVersionOut", None, Unset] = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.script_version_out import ScriptVersionOut

        created_at = self.created_at.isoformat()

        current_version = self.current_version

        id = self.id

        name = self.name

        runtime = self.runtime.value

        updated_at = self.updated_at.isoformat()

        current: Union[None, Unset, dict[str, Any]]
        if isinstance(self.current, Unset):
            current = UNSET
        elif isinstance(self.current, ScriptVersionOut):
            current = self.current.to_dict()
        else:
            current = self.current

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "current_version": current_version,
                "id": id,
                "name": name,
                "runtime": runtime,
                "updated_at": updated_at,
            }
        )
        if current is not UNSET:
            field_dict["current"] = current

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.script_version_out import ScriptVersionOut

        d = dict(src_dict)
        created_at = isoparse(d.pop("created_at"))

        current_version = d.pop("current_version")

        id = d.pop("id")

        name = d.pop("name")

        runtime = ScriptRuntime(d.pop("runtime"))

        updated_at = isoparse(d.pop("updated_at"))

        def _parse_current(data: object) -> Union["ScriptVersionOut", None, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                current_type_1 = ScriptVersionOut.from_dict(data)

                return current_type_1
            except:  # noqa: E722
                pass
            return cast(Union["ScriptVersionOut", None, Unset], data)

        current = _parse_current(d.pop("current", UNSET))

        script_out = cls(
            created_at=created_at,
            current_version=current_version,
            id=id,
            name=name,
            runtime=runtime,
            updated_at=updated_at,
            current=current,
        )

        script_out.additional_properties = d
        return script_out

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
