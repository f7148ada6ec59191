from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from ..models.once_schedule_kind import OnceScheduleKind
from dateutil.parser import isoparse
from typing import Union
import datetime


T = TypeVar("T", bound="OnceSchedule")


@_attrs_define
class OnceSchedule:
    """Fires once, at `at`.

    Attributes:
        at (datetime.datetime): RFC 3339 instant of the single fire.
        kind (OnceScheduleKind):
        end_at (Union[Unset, datetime.datetime]): RFC 3339: no fire at or after this instant.
        start_at (Union[Unset, datetime.datetime]): RFC 3339: no fire before this instant (inclusive).
    """

    at: datetime.datetime
    kind: OnceScheduleKind
    end_at: Union[Unset, datetime.datetime] = UNSET
    start_at: Union[Unset, datetime.datetime] = UNSET

    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        kind = self.kind.value

        end_at: Union[Unset, str] = UNSET
        if not isinstance(self.end_at, Unset):
            end_at = self.end_at.isoformat()

        start_at: Union[Unset, str] = UNSET
        if not isinstance(self.start_at, Unset):
            start_at = self.start_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "at": at,
                "kind": kind,
            }
        )
        if end_at is not UNSET:
            field_dict["end_at"] = end_at
        if start_at is not UNSET:
            field_dict["start_at"] = start_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = isoparse(d.pop("at"))

        kind = OnceScheduleKind(d.pop("kind"))

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

        once_schedule = cls(
            at=at,
            kind=kind,
            end_at=end_at,
            start_at=start_at,
        )

        return once_schedule
