from collections.abc import Mapping
from typing import Any, TypeVar, TYPE_CHECKING

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from ..models.block_strategy import BlockStrategy
from ..models.job_state import JobState
from ..models.route import Route
from ..models.wait_for import WaitFor
from typing import cast
from typing import Union

if TYPE_CHECKING:
    from ..models.manual_schedule import ManualSchedule
    from ..models.failure_spec import FailureSpec
    from ..models.cron_schedule import CronSchedule
    from ..models.fixed_rate_schedule import FixedRateSchedule
    from ..models.child_input_type_1 import ChildInputType1
    from ..models.once_schedule import OnceSchedule
    from ..models.script_limits import ScriptLimits
    from ..models.misfire_spec import MisfireSpec
    from ..models.job_input_params import JobInputParams


T = TypeVar("T", bound="JobInput")


@_attrs_define
class JobInput:
    """A job as sent to `POST /api/v1/jobs` and `PUT /api/v1/jobs/{id}`.

    Attributes:
        app (str): The app (executor group) that runs it: its name or id.
        name (str): Unique within the tenant: 1-100 letters, digits, `-`, `_`, `.`, starting with a letter or digit.
        schedule (Union['CronSchedule', 'FixedRateSchedule', 'ManualSchedule', 'OnceSchedule']): When a job fires: one
            object per `kind` (`cron`, `fixed_rate`, `once`, `manual`).
        block (Union[BlockStrategy, None, Unset]):
        children (Union[None, Unset, list[Union['ChildInputType1', str]]]): Child jobs fired (trigger `parent`, with
            this run's output) when a run of this job
            ends: a job id (fired when the run succeeds), or an edge
            `{"job": "job_…", "on": "on_success" | "on_failure" | "always"}`. Example: ['job_01JDX2B', {'job':
            'job_01JDX2C', 'on': 'on_failure'}, {'job': 'job_01JDX2D', 'on': 'always'}].
        description (Union[None, Unset, str]):
        failure (Union['FailureSpec', None, Unset]):
        handler (Union[None, Unset, str]): Webhook handler name the app's executors serve. Exactly one of `handler` and
            `script`.
        max_concurrency (Union[None, Unset, int]): Runs of this job in flight at once, 1 to 10000; excess runs are
            `skipped`. Default: no limit but the block strategy.
        misfire (Union['MisfireSpec', None, Unset]):
        params (Union[Unset, JobInputParams]): A JSON object, passed to every run as `params` (default `{}`). At most 64
            KiB.
        route (Union[None, Route, Unset]):
        script (Union[None, Unset, str]): Script id or name (GLUE job). Exactly one of `handler` and `script`.
        script_limits (Union['ScriptLimits', None, Unset]):
        script_version (Union[None, Unset, int]): Run this version of the script, not its current one (only with
            `script`).
        state (Union[JobState, None, Unset]):
        timeout_ms (Union[None, Unset, int]): Attempt deadline, 1000 to 86400000. Default 300000.
        wait (Union[None, Unset, WaitFor]):
    """

    app: str
    name: str
    schedule: Union[
        "CronSchedule", "FixedRateSchedule", "ManualSchedule", "OnceSchedule"
    ]
    block: Union[BlockStrategy, None, Unset] = UNSET
    children: Union[None, Unset, list[Union["ChildInputType1", str]]] = UNSET
    description: Union[None, Unset, str] = UNSET
    failure: Union["FailureSpec", None, Unset] = UNSET
    handler: Union[None, Unset, str] = UNSET
    max_concurrency: Union[None, Unset, int] = UNSET
    misfire: Union["MisfireSpec", None, Unset] = UNSET
    params: Union[Unset, "JobInputParams"] = UNSET
    route: Union[None, Route, Unset] = UNSET
    script: Union[None, Unset, str] = UNSET
    script_limits: Union["ScriptLimits", None, Unset] = UNSET
    script_version: Union[None, Unset, int] = UNSET
    state: Union[JobState, None, Unset] = UNSET
    timeout_ms: Union[None, Unset, int] = UNSET
    wait: Union[None, Unset, WaitFor] = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.failure_spec import FailureSpec
        from ..models.cron_schedule import CronSchedule
        from ..models.fixed_rate_schedule import FixedRateSchedule
        from ..models.child_input_type_1 import ChildInputType1
        from ..models.once_schedule import OnceSchedule
        from ..models.script_limits import ScriptLimits
        from ..models.misfire_spec import MisfireSpec

        app = self.app

        name = self.name

        schedule: dict[str, Any]
        if isinstance(self.schedule, CronSchedule):
            schedule = self.schedule.to_dict()
        elif isinstance(self.schedule, FixedRateSchedule):
            schedule = self.schedule.to_dict()
        elif isinstance(self.schedule, OnceSchedule):
            schedule = self.schedule.to_dict()
        else:
            schedule = self.schedule.to_dict()

        block: Union[None, Unset, str]
        if isinstance(self.block, Unset):
            block = UNSET
        elif isinstance(self.block, BlockStrategy):
            block = self.block.value
        else:
            block = self.block

        children: Union[None, Unset, list[Union[dict[str, Any], str]]]
        if isinstance(self.children, Unset):
            children = UNSET
        elif isinstance(self.children, list):
            children = []
            for children_type_0_item_data in self.children:
                children_type_0_item: Union[dict[str, Any], str]
                if isinstance(children_type_0_item_data, ChildInputType1):
                    children_type_0_item = children_type_0_item_data.to_dict()
                else:
                    children_type_0_item = children_type_0_item_data
                children.append(children_type_0_item)

        else:
            children = self.children

        description: Union[None, Unset, str]
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        failure: Union[None, Unset, dict[str, Any]]
        if isinstance(self.failure, Unset):
            failure = UNSET
        elif isinstance(self.failure, FailureSpec):
            failure = self.failure.to_dict()
        else:
            failure = self.failure

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

        misfire: Union[None, Unset, dict[str, Any]]
        if isinstance(self.misfire, Unset):
            misfire = UNSET
        elif isinstance(self.misfire, MisfireSpec):
            misfire = self.misfire.to_dict()
        else:
            misfire = self.misfire

        params: Union[Unset, dict[str, Any]] = UNSET
        if not isinstance(self.params, Unset):
            params = self.params.to_dict()

        route: Union[None, Unset, str]
        if isinstance(self.route, Unset):
            route = UNSET
        elif isinstance(self.route, Route):
            route = self.route.value
        else:
            route = self.route

        script: Union[None, Unset, str]
        if isinstance(self.script, Unset):
            script = UNSET
        else:
            script = self.script

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

        state: Union[None, Unset, str]
        if isinstance(self.state, Unset):
            state = UNSET
        elif isinstance(self.state, JobState):
            state = self.state.value
        else:
            state = self.state

        timeout_ms: Union[None, Unset, int]
        if isinstance(self.timeout_ms, Unset):
            timeout_ms = UNSET
        else:
            timeout_ms = self.timeout_ms

        wait: Union[None, Unset, str]
        if isinstance(self.wait, Unset):
            wait = UNSET
        elif isinstance(self.wait, WaitFor):
            wait = self.wait.value
        else:
            wait = self.wait

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "app": app,
                "name": name,
                "schedule": schedule,
            }
        )
        if block is not UNSET:
            field_dict["block"] = block
        if children is not UNSET:
            field_dict["children"] = children
        if description is not UNSET:
            field_dict["description"] = description
        if failure is not UNSET:
            field_dict["failure"] = failure
        if handler is not UNSET:
            field_dict["handler"] = handler
        if max_concurrency is not UNSET:
            field_dict["max_concurrency"] = max_concurrency
        if misfire is not UNSET:
            field_dict["misfire"] = misfire
        if params is not UNSET:
            field_dict["params"] = params
        if route is not UNSET:
            field_dict["route"] = route
        if script is not UNSET:
            field_dict["script"] = script
        if script_limits is not UNSET:
            field_dict["script_limits"] = script_limits
        if script_version is not UNSET:
            field_dict["script_version"] = script_version
        if state is not UNSET:
            field_dict["state"] = state
        if timeout_ms is not UNSET:
            field_dict["timeout_ms"] = timeout_ms
        if wait is not UNSET:
            field_dict["wait"] = wait

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.manual_schedule import ManualSchedule
        from ..models.failure_spec import FailureSpec
        from ..models.cron_schedule import CronSchedule
        from ..models.fixed_rate_schedule import FixedRateSchedule
        from ..models.child_input_type_1 import ChildInputType1
        from ..models.once_schedule import OnceSchedule
        from ..models.script_limits import ScriptLimits
        from ..models.misfire_spec import MisfireSpec
        from ..models.job_input_params import JobInputParams

        d = dict(src_dict)
        app = d.pop("app")

        name = d.pop("name")

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

        def _parse_block(data: object) -> Union[BlockStrategy, None, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                block_type_1 = BlockStrategy(data)

                return block_type_1
            except:  # noqa: E722
                pass
            return cast(Union[BlockStrategy, None, Unset], data)

        block = _parse_block(d.pop("block", UNSET))

        def _parse_children(
            data: object,
        ) -> Union[None, Unset, list[Union["ChildInputType1", str]]]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                children_type_0 = []
                _children_type_0 = data
                for children_type_0_item_data in _children_type_0:

                    def _parse_children_type_0_item(
                        data: object,
                    ) -> Union["ChildInputType1", str]:
                        try:
                            if not isinstance(data, dict):
                                raise TypeError()
                            componentsschemas_child_input_type_1 = (
                                ChildInputType1.from_dict(data)
                            )

                            return componentsschemas_child_input_type_1
                        except:  # noqa: E722
                            pass
                        return cast(Union["ChildInputType1", str], data)

                    children_type_0_item = _parse_children_type_0_item(
                        children_type_0_item_data
                    )

                    children_type_0.append(children_type_0_item)

                return children_type_0
            except:  # noqa: E722
                pass
            return cast(Union[None, Unset, list[Union["ChildInputType1", str]]], data)

        children = _parse_children(d.pop("children", UNSET))

        def _parse_description(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        description = _parse_description(d.pop("description", UNSET))

        def _parse_failure(data: object) -> Union["FailureSpec", None, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                failure_type_1 = FailureSpec.from_dict(data)

                return failure_type_1
            except:  # noqa: E722
                pass
            return cast(Union["FailureSpec", None, Unset], data)

        failure = _parse_failure(d.pop("failure", UNSET))

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

        def _parse_misfire(data: object) -> Union["MisfireSpec", None, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                misfire_type_1 = MisfireSpec.from_dict(data)

                return misfire_type_1
            except:  # noqa: E722
                pass
            return cast(Union["MisfireSpec", None, Unset], data)

        misfire = _parse_misfire(d.pop("misfire", UNSET))

        _params = d.pop("params", UNSET)
        params: Union[Unset, JobInputParams]
        if isinstance(_params, Unset):
            params = UNSET
        else:
            params = JobInputParams.from_dict(_params)

        def _parse_route(data: object) -> Union[None, Route, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                route_type_1 = Route(data)

                return route_type_1
            except:  # noqa: E722
                pass
            return cast(Union[None, Route, Unset], data)

        route = _parse_route(d.pop("route", UNSET))

        def _parse_script(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        script = _parse_script(d.pop("script", UNSET))

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

        def _parse_state(data: object) -> Union[JobState, None, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                state_type_1 = JobState(data)

                return state_type_1
            except:  # noqa: E722
                pass
            return cast(Union[JobState, None, Unset], data)

        state = _parse_state(d.pop("state", UNSET))

        def _parse_timeout_ms(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        timeout_ms = _parse_timeout_ms(d.pop("timeout_ms", UNSET))

        def _parse_wait(data: object) -> Union[None, Unset, WaitFor]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                wait_type_1 = WaitFor(data)

                return wait_type_1
            except:  # noqa: E722
                pass
            return cast(Union[None, Unset, WaitFor], data)

        wait = _parse_wait(d.pop("wait", UNSET))

        job_input = cls(
            app=app,
            name=name,
            schedule=schedule,
            block=block,
            children=children,
            description=description,
            failure=failure,
            handler=handler,
            max_concurrency=max_concurrency,
            misfire=misfire,
            params=params,
            route=route,
            script=script,
            script_limits=script_limits,
            script_version=script_version,
            state=state,
            timeout_ms=timeout_ms,
            wait=wait,
        )

        return job_input
