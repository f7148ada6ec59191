from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from typing import cast
from typing import Union


T = TypeVar("T", bound="AppUpdate")


@_attrs_define
class AppUpdate:
    """
    Attributes:
        description (Union[None, Unset, str]):
        endpoints (Union[None, Unset, list[str]]):
    """

    description: Union[None, Unset, str] = UNSET
    endpoints: Union[None, Unset, list[str]] = UNSET

    def to_dict(self) -> dict[str, Any]:
        description: Union[None, Unset, str]
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        endpoints: Union[None, Unset, list[str]]
        if isinstance(self.endpoints, Unset):
            endpoints = UNSET
        elif isinstance(self.endpoints, list):
            endpoints = self.endpoints

        else:
            endpoints = self.endpoints

        field_dict: dict[str, Any] = {}
        field_dict.update({})
        if description is not UNSET:
            field_dict["description"] = description
        if endpoints is not UNSET:
            field_dict["endpoints"] = endpoints

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_description(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        description = _parse_description(d.pop("description", UNSET))

        def _parse_endpoints(data: object) -> Union[None, Unset, list[str]]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                endpoints_type_0 = cast(list[str], data)

                return endpoints_type_0
            except:  # noqa: E722
                pass
            return cast(Union[None, Unset, list[str]], data)

        endpoints = _parse_endpoints(d.pop("endpoints", UNSET))

        app_update = cls(
            description=description,
            endpoints=endpoints,
        )

        return app_update
