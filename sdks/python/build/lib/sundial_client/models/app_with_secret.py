from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from dateutil.parser import isoparse
from typing import cast
from typing import Union
import datetime


T = TypeVar("T", bound="AppWithSecret")


@_attrs_define
class AppWithSecret:
    """
    Attributes:
        created_at (datetime.datetime):
        description (str):
        endpoints (list[str]):
        id (str):
        name (str):
        updated_at (datetime.datetime):
        secret (str): Signing secret (`whsec_…`), shown on create and rotate only.
        previous_secret_expires_at (Union[None, Unset, datetime.datetime]): Until when the previous secret (after a
            rotation) still verifies.
    """

    created_at: datetime.datetime
    description: str
    endpoints: list[str]
    id: str
    name: str
    updated_at: datetime.datetime
    secret: str
    previous_secret_expires_at: Union[None, Unset, datetime.datetime] = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        description = self.description

        endpoints = self.endpoints

        id = self.id

        name = self.name

        updated_at = self.updated_at.isoformat()

        secret = self.secret

        previous_secret_expires_at: Union[None, Unset, str]
        if isinstance(self.previous_secret_expires_at, Unset):
            previous_secret_expires_at = UNSET
        elif isinstance(self.previous_secret_expires_at, datetime.datetime):
            previous_secret_expires_at = self.previous_secret_expires_at.isoformat()
        else:
            previous_secret_expires_at = self.previous_secret_expires_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "description": description,
                "endpoints": endpoints,
                "id": id,
                "name": name,
                "updated_at": updated_at,
                "secret": secret,
            }
        )
        if previous_secret_expires_at is not UNSET:
            field_dict["previous_secret_expires_at"] = previous_secret_expires_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = isoparse(d.pop("created_at"))

        description = d.pop("description")

        endpoints = cast(list[str], d.pop("endpoints"))

        id = d.pop("id")

        name = d.pop("name")

        updated_at = isoparse(d.pop("updated_at"))

        secret = d.pop("secret")

        def _parse_previous_secret_expires_at(
            data: object,
        ) -> Union[None, Unset, datetime.datetime]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                previous_secret_expires_at_type_0 = isoparse(data)

                return previous_secret_expires_at_type_0
            except:  # noqa: E722
                pass
            return cast(Union[None, Unset, datetime.datetime], data)

        previous_secret_expires_at = _parse_previous_secret_expires_at(
            d.pop("previous_secret_expires_at", UNSET)
        )

        app_with_secret = cls(
            created_at=created_at,
            description=description,
            endpoints=endpoints,
            id=id,
            name=name,
            updated_at=updated_at,
            secret=secret,
            previous_secret_expires_at=previous_secret_expires_at,
        )

        app_with_secret.additional_properties = d
        return app_with_secret

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
