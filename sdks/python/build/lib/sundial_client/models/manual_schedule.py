from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define


from ..models.manual_schedule_kind import ManualScheduleKind


T = TypeVar("T", bound="ManualSchedule")


@_attrs_define
class ManualSchedule:
    """Never fires on its own; runs only when triggered.

    Attributes:
        kind (ManualScheduleKind):
    """

    kind: ManualScheduleKind

    def to_dict(self) -> dict[str, Any]:
        kind = self.kind.value

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "kind": kind,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        kind = ManualScheduleKind(d.pop("kind"))

        manual_schedule = cls(
            kind=kind,
        )

        return manual_schedule
