from collections.abc import Mapping
from typing import Any, TypeVar, TYPE_CHECKING

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.block_strategy import BlockStrategy
from ..models.job_source import JobSource
from ..models.job_state import JobState
from ..models.route import Route
from ..models.wait_for import WaitFor
from dateutil.parser import isoparse
from typing import cast
from typing import Union
import datetime

if TYPE_CHECKING:
    from ..models.child_edge_out import ChildEdgeOut
    from ..models.manual_schedule import ManualSchedule
    from ..models.job_out_params import JobOutParams
    from ..models.failure_spec import FailureSpec
    from ..models.cron_schedule import CronSchedule
    from ..models.fixed_rate_schedule import FixedRateSchedule
    from ..models.once_schedule import OnceSchedule
    from ..models.script_limits import ScriptLimits
    from ..models.misfire_spec import MisfireSpec


T = TypeVar("T", bound="JobOut")


@_attrs_define
class JobOut:
    """
    Attributes:
        app_id (str):
        block (BlockStrategy): What a new run does while the job's previous run is still running.
        children (list['ChildEdgeOut']): The child edges, in the edge form (also for children given as plain job ids).
        created_at (datetime.datetime):
        description (str):
        failure (FailureSpec): What a failed attempt leads to.
        id (str):
        misfire (MisfireSpec): What a fire missed by more than `threshold_ms` does.
        name (str):
        params (JobOutParams):
        route (Route): How an attempt picks its executor among the app's online executors.
        schedule (Union['CronSchedule', 'FixedRateSchedule', 'ManualSchedule', 'OnceSchedule']): When a job fires: one
            object per `kind` (`cron`, `fixed_rate`, `once`, `manual`).
        source (JobSource): Where a job came from: created through the API, or by an executor registering a handler.
        state (JobState): Whether a job fires on its own. Manual triggers work in both states.
        timeout_ms (int):
        updated_at (datetime.datetime):
        version (int): Increments with every change; send it as `If-Match` to update safely.
        wait (WaitFor): When a job with several parents (a fan-in) fires in a chain: once every parent it
            waits for has ended there with its edge's condition holding (`all`, the default), or
            as soon as one has (`any`).
        handler (Union[None, Unset, str]):
        max_concurrency (Union[None, Unset, int]):
        next_fire_at (Union[None, Unset, datetime.datetime]): When the job fires next on its own (RFC 3339 UTC), from
            its schedule and the server's
            time: null when it is stopped, `manual`, or its schedule has no fire left.
        script_id (Union[None, Unset, str]):
        script_limits (Union['ScriptLimits', None, Unset]):
        script_version (Union[None, Unset, int]): The script version the job is pinned to; absent: it runs the script's
            current version.
    """

    app_id: str
    block: BlockStrategy
    children: list["ChildEdgeOut"]
    created_at: datetime.datetime
    description: str
    failure: "FailureSpec"
    id: str
    misfire: "MisfireSpec"
    name: str
    params: "JobOutParams"
    route: Route
    schedule: Union[
        "CronSchedule", "FixedRateSchedule", "ManualSchedule", "OnceSchedule"
    ]
    source: JobSource
    state: JobState
    timeout_ms: int
    updated_at: datetime.datetime
    version: int
    wait: WaitFor
    handler: Union[None, Unset, str] = UNSET
    max_concurrency: Union[None, Unset, int] = UNSET
    next_fire_at: Union[None, Unset, datetime.datetime] = UNSET
    script_id: Union[None, Unset, str] = UNSET
    script_limits: Union["ScriptLimits", None, Unset] = UNSET
    script_version: Union[None, Unset, int] = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.cron_schedule import CronSchedule
        from ..models.fixed_rate_schedule import FixedRateSchedule
        from ..models.once_schedule import OnceSchedule
        from ..models.script_limits import ScriptLimits

        app_id = self.app_id

        block = self.block.value

        children = []
        for children_item_data in self.children:
            children_item = children_item_data.to_dict()
            children.append(children_item)

        created_at = self.created_at.isoformat()

        description = self.description

        failure = self.failure.to_dict()

        id = self.id

        misfire = self.misfire.to_dict()

        name = self.name

        params = self.params.to_dict()

        route = self.route.value

        schedule: dict[str, Any]
        if isinstance(self.schedule, CronSchedule):
            schedule = self.schedule.to_dict()
        elif isinstance(self.schedule, FixedRateSchedule):
            schedule = self.schedule.to_dict()
        elif isinstance(self.schedule, OnceSchedule):
            schedule = self.schedule.to_dict()
        else:
            schedule = self.schedule.to_dict()

        source = self.source.value

        state = self.state.value

        timeout_ms = self.timeout_ms

        updated_at = self.updated_at.isoformat()

        version = self.version

        wait = self.wait.value

        handler: Union[None, Unset, str]
        if isinstance(self.handler, Unset):
            handler = UNSET
        else:
            handler = self.handler

        max_concurrency: Union[None, Unset, int]
        if isinstance(self.max_concurrency, Unset):
            max_concurrency = UNSET
        else:
            max_concurrency = self.max_concurrency

        next_fire_at: Union[None, Unset, str]
        if isinstance(self.next_fire_at, Unset):
            next_fire_at = UNSET
        elif isinstance(self.next_fire_at, datetime.datetime):
            next_fire_at = self.next_fire_at.isoformat()
        else:
            next_fire_at = self.next_fire_at

        script_id: Union[None, Unset, str]
        if isinstance(self.script_id, Unset):
            script_id = UNSET
        else:
            script_id = self.script_id

        script_limits: Union[None, Unset, dict[str, Any]]
        if isinstance(self.script_limits, Unset):
            script_limits = UNSET
        elif isinstance(self.script_limits, ScriptLimits):
            script_limits = self.script_limits.to_dict()
        else:
            script_limits = self.script_limits

        script_version: Union[None, Unset, int]
        if isinstance(self.script_version, Unset):
            script_version = UNSET
        else:
            script_version = self.script_version

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "app_id": app_id,
                "block": block,
                "children": children,
                "created_at": created_at,
                "description": description,
                "failure": failure,
                "id": id,
                "misfire": misfire,
                "name": name,
                "params": params,
                "route": route,
                "schedule": schedule,
                "source": source,
                "state": state,
                "timeout_ms": timeout_ms,
                "updated_at": updated_at,
                "version": version,
                "wait": wait,
            }
        )
        if handler is not UNSET:
            field_dict["handler"] = handler
        if max_concurrency is not UNSET:
            field_dict["max_concurrency"] = max_concurrency
        if next_fire_at is not UNSET:
            field_dict["next_fire_at"] = next_fire_at
        if script_id is not UNSET:
            field_dict["script_id"] = script_id
        if script_limits is not UNSET:
            field_dict["script_limits"] = script_limits
        if script_version is not UNSET:
            field_dict["script_version"] = script_version

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.child_edge_out import ChildEdgeOut
        from ..models.manual_schedule import ManualSchedule
        from ..models.job_out_params import JobOutParams
        from ..models.failure_spec import FailureSpec
        from ..models.cron_schedule import CronSchedule
        from ..models.fixed_rate_schedule import FixedRateSchedule
        from ..models.once_schedule import OnceSchedule
        from ..models.script_limits import ScriptLimits
        from ..models.misfire_spec import MisfireSpec

        d = dict(src_dict)
        app_id = d.pop("app_id")

        block = BlockStrategy(d.pop("block"))

        children = []
        _children = d.pop("children")
        for children_item_data in _children:
            children_item = ChildEdgeOut.from_dict(children_item_data)

            children.append(children_item)

        created_at = isoparse(d.pop("created_at"))

        description = d.pop("description")

        failure = FailureSpec.from_dict(d.pop("failure"))

        id = d.pop("id")

        misfire = MisfireSpec.from_dict(d.pop("misfire"))

        name = d.pop("name")

        params = JobOutParams.from_dict(d.pop("params"))

        route = Route(d.pop("route"))

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

        source = JobSource(d.pop("source"))

        state = JobState(d.pop("state"))

        timeout_ms = d.pop("timeout_ms")

        updated_at = isoparse(d.pop("updated_at"))

        version = d.pop("version")

        wait = WaitFor(d.pop("wait"))

        def _parse_handler(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        handler = _parse_handler(d.pop("handler", UNSET))

        def _parse_max_concurrency(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        max_concurrency = _parse_max_concurrency(d.pop("max_concurrency", UNSET))

        def _parse_next_fire_at(data: object) -> Union[None, Unset, datetime.datetime]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_fire_at_type_0 = isoparse(data)

                return next_fire_at_type_0
            except:  # noqa: E722
                pass
            return cast(Union[None, Unset, datetime.datetime], data)

        next_fire_at = _parse_next_fire_at(d.pop("next_fire_at", UNSET))

        def _parse_script_id(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        script_id = _parse_script_id(d.pop("script_id", UNSET))

        def _parse_script_limits(data: object) -> Union["ScriptLimits", None, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                script_limits_type_1 = ScriptLimits.from_dict(data)

                return script_limits_type_1
            except:  # noqa: E722
                pass
            return cast(Union["ScriptLimits", None, Unset], data)

        script_limits = _parse_script_limits(d.pop("script_limits", UNSET))

        def _parse_script_version(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        script_version = _parse_script_version(d.pop("script_version", UNSET))

        job_out = cls(
            app_id=app_id,
            block=block,
            children=children,
            created_at=created_at,
            description=description,
            failure=failure,
            id=id,
            misfire=misfire,
            name=name,
            params=params,
            route=route,
            schedule=schedule,
            source=source,
            state=state,
            timeout_ms=timeout_ms,
            updated_at=updated_at,
            version=version,
            wait=wait,
            handler=handler,
            max_concurrency=max_concurrency,
            next_fire_at=next_fire_at,
            script_id=script_id,
            script_limits=script_limits,
            script_version=script_version,
        )

        job_out.additional_properties = d
        return job_out

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
