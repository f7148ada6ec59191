from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from ..models.fixed_rate_schedule_kind import FixedRateScheduleKind
from dateutil.parser import isoparse
from typing import Union
import datetime


T = TypeVar("T", bound="FixedRateSchedule")


@_attrs_define
class FixedRateSchedule:
    """Fires every `every_ms` milliseconds, on a grid counted from `anchor`.

    Attributes:
        every_ms (int): Interval in milliseconds, one second to 366 days.
        kind (FixedRateScheduleKind):
        anchor (Union[Unset, datetime.datetime]): RFC 3339 instant fires count from (`anchor + k·every_ms`); default:
            when the job was created.
        end_at (Union[Unset, datetime.datetime]): RFC 3339: no fire at or after this instant.
        start_at (Union[Unset, datetime.datetime]): RFC 3339: no fire before this instant (inclusive).
    """

    every_ms: int
    kind: FixedRateScheduleKind
    anchor: Union[Unset, datetime.datetime] = UNSET
    end_at: Union[Unset, datetime.datetime] = UNSET
    start_at: Union[Unset, datetime.datetime] = UNSET

    def to_dict(self) -> dict[str, Any]:
        every_ms = self.every_ms

        kind = self.kind.value

        anchor: Union[Unset, str] = UNSET
        if not isinstance(self.anchor, Unset):
            anchor = self.anchor.isoformat()

        end_at: Union[Unset, str] = UNSET
        if not isinstance(self.end_at, Unset):
            end_at = self.end_at.isoformat()

        start_at: Union[Unset, str] = UNSET
        if not isinstance(self.start_at, Unset):
            start_at = self.start_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "every_ms": every_ms,
                "kind": kind,
            }
        )
        if anchor is not UNSET:
            field_dict["anchor"] = anchor
        if end_at is not UNSET:
            field_dict["end_at"] = end_at
        if start_at is not UNSET:
            field_dict["start_at"] = start_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        every_ms = d.pop("every_ms")

        kind = FixedRateScheduleKind(d.pop("kind"))

        _anchor = d.pop("anchor", UNSET)
        anchor: Union[Unset, datetime.datetime]
        if isinstance(_anchor, Unset):
            anchor = UNSET
        else:
            anchor = isoparse(_anchor)

        _end_at = d.pop("end_at", UNSET)
        end_at: Union[Unset, datetime.datetime]
        if isinstance(_end_at, Unset):
            end_at = UNSET
        else:
            end_at = isoparse(_end_at)

        _start_at = d.pop("start_at", UNSET)
        start_at: Union[Unset, datetime.datetime]
        if isinstance(_start_at, Unset):
            start_at = UNSET
        else:
            start_at = isoparse(_start_at)

        fixed_rate_schedule = cls(
            every_ms=every_ms,
            kind=kind,
            anchor=anchor,
            end_at=end_at,
            start_at=start_at,
        )

        return fixed_rate_schedule
