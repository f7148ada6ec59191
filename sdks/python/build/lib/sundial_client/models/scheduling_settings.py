from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define


T = TypeVar("T", bound="SchedulingSettings")


@_attrs_define
class SchedulingSettings:
    """
    Attributes:
        paused (bool): When true, no schedule fires on its own (manual and API triggers still run).
    """

    paused: bool

    def to_dict(self) -> dict[str, Any]:
        paused = self.paused

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "paused": paused,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        paused = d.pop("paused")

        scheduling_settings = cls(
            paused=paused,
        )

        return scheduling_settings
