from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field


from dateutil.parser import isoparse
import datetime


T = TypeVar("T", bound="Preview")


@_attrs_define
class Preview:
    """
    Attributes:
        times (list[datetime.datetime]): The next fire times, RFC 3339 with the offset of `timezone` at each instant.
        timezone (str):
    """

    times: list[datetime.datetime]
    timezone: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        times = []
        for times_item_data in self.times:
            times_item = times_item_data.isoformat()
            times.append(times_item)

        timezone = self.timezone

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "times": times,
                "timezone": timezone,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        times = []
        _times = d.pop("times")
        for times_item_data in _times:
            times_item = isoparse(times_item_data)

            times.append(times_item)

        timezone = d.pop("timezone")

        preview = cls(
            times=times,
            timezone=timezone,
        )

        preview.additional_properties = d
        return preview

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
