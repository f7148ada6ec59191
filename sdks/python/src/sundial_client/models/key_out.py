from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field


from ..models.role import Role
from dateutil.parser import isoparse
import datetime


T = TypeVar("T", bound="KeyOut")


@_attrs_define
class KeyOut:
    """
    Attributes:
        created_at (datetime.datetime):
        id (str):
        name (str):
        prefix (str): The first characters of the key, to recognise it.
        role (Role): What an API key may do inside its tenant. `Operator` keys manage tenants only.
    """

    created_at: datetime.datetime
    id: str
    name: str
    prefix: str
    role: Role
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        id = self.id

        name = self.name

        prefix = self.prefix

        role = self.role.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "id": id,
                "name": name,
                "prefix": prefix,
                "role": role,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = isoparse(d.pop("created_at"))

        id = d.pop("id")

        name = d.pop("name")

        prefix = d.pop("prefix")

        role = Role(d.pop("role"))

        key_out = cls(
            created_at=created_at,
            id=id,
            name=name,
            prefix=prefix,
            role=role,
        )

        key_out.additional_properties = d
        return key_out

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
