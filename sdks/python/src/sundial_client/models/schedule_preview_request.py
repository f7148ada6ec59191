from collections.abc import Mapping
from typing import Any, TypeVar, TYPE_CHECKING

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from typing import cast
from typing import Union

if TYPE_CHECKING:
    from ..models.fixed_rate_schedule import FixedRateSchedule
    from ..models.once_schedule import OnceSchedule
    from ..models.cron_schedule import CronSchedule
    from ..models.manual_schedule import ManualSchedule


T = TypeVar("T", bound="SchedulePreviewRequest")


@_attrs_define
class SchedulePreviewRequest:
    """
    Attributes:
        schedule (Union['CronSchedule', 'FixedRateSchedule', 'ManualSchedule', 'OnceSchedule']): When a job fires: one
            object per `kind` (`cron`, `fixed_rate`, `once`, `manual`).
        count (Union[None, Unset, int]): How many fire times, 1-100 (default 5).
    """

    schedule: Union[
        "CronSchedule", "FixedRateSchedule", "ManualSchedule", "OnceSchedule"
    ]
    count: Union[None, Unset, int] = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.fixed_rate_schedule import FixedRateSchedule
        from ..models.once_schedule import OnceSchedule
        from ..models.cron_schedule import CronSchedule

        schedule: dict[str, Any]
        if isinstance(self.schedule, CronSchedule):
            schedule = self.schedule.to_dict()
        elif isinstance(self.schedule, FixedRateSchedule):
            schedule = self.schedule.to_dict()
        elif isinstance(self.schedule, OnceSchedule):
            schedule = self.schedule.to_dict()
        else:
            schedule = self.schedule.to_dict()

        count: Union[None, Unset, int]
        if isinstance(self.count, Unset):
            count = UNSET
        else:
            count = self.count

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "schedule": schedule,
            }
        )
        if count is not UNSET:
            field_dict["count"] = count

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.fixed_rate_schedule import FixedRateSchedule
        from ..models.once_schedule import OnceSchedule
        from ..models.cron_schedule import CronSchedule
        from ..models.manual_schedule import ManualSchedule

        d = dict(src_dict)

        def _parse_schedule(
            data: object,
        ) -> Union[
            "CronSchedule", "FixedRateSchedule", "ManualSchedule", "OnceSchedule"
        ]:
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_schedule_spec_type_0 = CronSchedule.from_dict(data)

                return componentsschemas_schedule_spec_type_0
            except:  # noqa: E722
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_schedule_spec_type_1 = FixedRateSchedule.from_dict(
                    data
                )

                return componentsschemas_schedule_spec_type_1
            except:  # noqa: E722
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_schedule_spec_type_2 = OnceSchedule.from_dict(data)

                return componentsschemas_schedule_spec_type_2
            except:  # noqa: E722
                pass
            if not isinstance(data, dict):
                raise TypeError()
            componentsschemas_schedule_spec_type_3 = ManualSchedule.from_dict(data)

            return componentsschemas_schedule_spec_type_3

        schedule = _parse_schedule(d.pop("schedule"))

        def _parse_count(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        count = _parse_count(d.pop("count", UNSET))

        schedule_preview_request = cls(
            schedule=schedule,
            count=count,
        )

        return schedule_preview_request
