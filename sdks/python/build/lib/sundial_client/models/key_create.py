from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define


from ..models.role import Role


T = TypeVar("T", bound="KeyCreate")


@_attrs_define
class KeyCreate:
    """
    Attributes:
        name (str):
        role (Role): What an API key may do inside its tenant. `Operator` keys manage tenants only.
    """

    name: str
    role: Role

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        role = self.role.value

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "name": name,
                "role": role,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        role = Role(d.pop("role"))

        key_create = cls(
            name=name,
            role=role,
        )

        return key_create
