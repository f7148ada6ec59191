from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from ..models.cron_schedule_kind import CronScheduleKind
from dateutil.parser import isoparse
from typing import Union
import datetime


T = TypeVar("T", bound="CronSchedule")


@_attrs_define
class CronSchedule:
    """Fires on a cron expression, read in a time zone.

    Attributes:
        expression (str): 5 fields (Unix), 6 with seconds, 7 with year; Quartz `? L W #`; `@hourly`-style macros.
        kind (CronScheduleKind):
        end_at (Union[Unset, datetime.datetime]): RFC 3339: no fire at or after this instant.
        start_at (Union[Unset, datetime.datetime]): RFC 3339: no fire before this instant (inclusive).
        timezone (Union[Unset, str]): IANA time zone the expression is read in; default `UTC`.
    """

    expression: str
    kind: CronScheduleKind
    end_at: Union[Unset, datetime.datetime] = UNSET
    start_at: Union[Unset, datetime.datetime] = UNSET
    timezone: Union[Unset, str] = UNSET

    def to_dict(self) -> dict[str, Any]:
        expression = self.expression

        kind = self.kind.value

        end_at: Union[Unset, str] = UNSET
        if not isinstance(self.end_at, Unset):
            end_at = self.end_at.isoformat()

        start_at: Union[Unset, str] = UNSET
        if not isinstance(self.start_at, Unset):
            start_at = self.start_at.isoformat()

        timezone = self.timezone

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "expression": expression,
                "kind": kind,
            }
        )
        if end_at is not UNSET:
            field_dict["end_at"] = end_at
        if start_at is not UNSET:
            field_dict["start_at"] = start_at
        if timezone is not UNSET:
            field_dict["timezone"] = timezone

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        expression = d.pop("expression")

        kind = CronScheduleKind(d.pop("kind"))

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

        timezone = d.pop("timezone", UNSET)

        cron_schedule = cls(
            expression=expression,
            kind=kind,
            end_at=end_at,
            start_at=start_at,
            timezone=timezone,
        )

        return cron_schedule
