from collections.abc import Mapping
from typing import Any, TypeVar, TYPE_CHECKING

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.run_state import RunState
from ..models.trigger_kind import TriggerKind
from dateutil.parser import isoparse
from typing import cast
from typing import Union
import datetime

if TYPE_CHECKING:
    from ..models.run_out_params_type_0 import RunOutParamsType0
    from ..models.attempt_out import AttemptOut
    from ..models.shard_out import ShardOut
    from ..models.log_out import LogOut


T = TypeVar("T", bound="RunDetail")


@_attrs_define
class RunDetail:
    """
    Attributes:
        attempt (int):
        chain_id (str): The chain the run belongs to: its own id for a run fired by schedule, trigger or the
            API; its root's for a run fired by a parent (list one with `GET /runs?chain_id=`).
        created_at (datetime.datetime):
        expired_count (int): For an `expired` record standing for several missed fires: how many.
        fire_key (str): `s:<epoch ms>` for schedule fires, `i:<Idempotency-Key>`, `p:<parent run id>` (a child
            run), `p:<chain id>` (a fan-in's run in a chain), or a fresh id.
        id (str):
        job_id (str):
        scheduled_at (datetime.datetime):
        state (RunState): The life of a run; see `docs/state-machine.md`.
        trigger (TriggerKind): Why a run exists.
        updated_at (datetime.datetime):
        attempts (list['AttemptOut']):
        logs (list['LogOut']): The first 1000 log lines.
        shards (list['ShardOut']): For a sharded run, its shards in index order (empty otherwise).
        finished_at (Union[None, Unset, datetime.datetime]):
        message (Union[None, Unset, str]):
        output (Union[Unset, Any]):
        params (Union['RunOutParamsType0', None, Unset]):
        parent_run_id (Union[None, Unset, str]):
        parent_run_ids (Union[None, Unset, list[str]]): For a run of a job with several parents (a fan-in, `fire_key`
            `p:<chain_id>`): the
            parents' runs it was fired (or skipped) after.
        reason (Union[None, Unset, str]):
        script_version (Union[None, Unset, int]): For a run of a script job: the script version its latest attempt ran.
        shard_total (Union[None, Unset, int]): For a `sharding` job: how many shards the run has, frozen at its first
            dispatch.
        started_at (Union[None, Unset, datetime.datetime]):
    """

    attempt: int
    chain_id: str
    created_at: datetime.datetime
    expired_count: int
    fire_key: str
    id: str
    job_id: str
    scheduled_at: datetime.datetime
    state: RunState
    trigger: TriggerKind
    updated_at: datetime.datetime
    attempts: list["AttemptOut"]
    logs: list["LogOut"]
    shards: list["ShardOut"]
    finished_at: Union[None, Unset, datetime.datetime] = UNSET
    message: Union[None, Unset, str] = UNSET
    output: Union[Unset, Any] = UNSET
    params: Union["RunOutParamsType0", None, Unset] = UNSET
    parent_run_id: Union[None, Unset, str] = UNSET
    parent_run_ids: Union[None, Unset, list[str]] = UNSET
    reason: Union[None, Unset, str] = UNSET
    script_version: Union[None, Unset, int] = UNSET
    shard_total: Union[None, Unset, int] = UNSET
    started_at: Union[None, Unset, datetime.datetime] = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.run_out_params_type_0 import RunOutParamsType0

        attempt = self.attempt

        chain_id = self.chain_id

        created_at = self.created_at.isoformat()

        expired_count = self.expired_count

        fire_key = self.fire_key

        id = self.id

        job_id = self.job_id

        scheduled_at = self.scheduled_at.isoformat()

        state = self.state.value

        trigger = self.trigger.value

        updated_at = self.updated_at.isoformat()

        attempts = []
        for attempts_item_data in self.attempts:
            attempts_item = attempts_item_data.to_dict()
            attempts.append(attempts_item)

        logs = []
        for logs_item_data in self.logs:
            logs_item = logs_item_data.to_dict()
            logs.append(logs_item)

        shards = []
        for shards_item_data in self.shards:
            shards_item = shards_item_data.to_dict()
            shards.append(shards_item)

        finished_at: Union[None, Unset, str]
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        elif isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        message: Union[None, Unset, str]
        if isinstance(self.message, Unset):
            message = UNSET
        else:
            message = self.message

        output = self.output

        params: Union[None, Unset, dict[str, Any]]
        if isinstance(self.params, Unset):
            params = UNSET
        elif isinstance(self.params, RunOutParamsType0):
            params = self.params.to_dict()
        else:
            params = self.params

        parent_run_id: Union[None, Unset, str]
        if isinstance(self.parent_run_id, Unset):
            parent_run_id = UNSET
        else:
            parent_run_id = self.parent_run_id

        parent_run_ids: Union[None, Unset, list[str]]
        if isinstance(self.parent_run_ids, Unset):
            parent_run_ids = UNSET
        elif isinstance(self.parent_run_ids, list):
            parent_run_ids = self.parent_run_ids

        else:
            parent_run_ids = self.parent_run_ids

        reason: Union[None, Unset, str]
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        script_version: Union[None, Unset, int]
        if isinstance(self.script_version, Unset):
            script_version = UNSET
        else:
            script_version = self.script_version

        shard_total: Union[None, Unset, int]
        if isinstance(self.shard_total, Unset):
            shard_total = UNSET
        else:
            shard_total = self.shard_total

        started_at: Union[None, Unset, str]
        if isinstance(self.started_at, Unset):
            started_at = UNSET
        elif isinstance(self.started_at, datetime.datetime):
            started_at = self.started_at.isoformat()
        else:
            started_at = self.started_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "chain_id": chain_id,
                "created_at": created_at,
                "expired_count": expired_count,
                "fire_key": fire_key,
                "id": id,
                "job_id": job_id,
                "scheduled_at": scheduled_at,
                "state": state,
                "trigger": trigger,
                "updated_at": updated_at,
                "attempts": attempts,
                "logs": logs,
                "shards": shards,
            }
        )
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at
        if message is not UNSET:
            field_dict["message"] = message
        if output is not UNSET:
            field_dict["output"] = output
        if params is not UNSET:
            field_dict["params"] = params
        if parent_run_id is not UNSET:
            field_dict["parent_run_id"] = parent_run_id
        if parent_run_ids is not UNSET:
            field_dict["parent_run_ids"] = parent_run_ids
        if reason is not UNSET:
            field_dict["reason"] = reason
        if script_version is not UNSET:
            field_dict["script_version"] = script_version
        if shard_total is not UNSET:
            field_dict["shard_total"] = shard_total
        if started_at is not UNSET:
            field_dict["started_at"] = started_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.run_out_params_type_0 import RunOutParamsType0
        from ..models.attempt_out import AttemptOut
        from ..models.shard_out import ShardOut
        from ..models.log_out import LogOut

        d = dict(src_dict)
        attempt = d.pop("attempt")

        chain_id = d.pop("chain_id")

        created_at = isoparse(d.pop("created_at"))

        expired_count = d.pop("expired_count")

        fire_key = d.pop("fire_key")

        id = d.pop("id")

        job_id = d.pop("job_id")

        scheduled_at = isoparse(d.pop("scheduled_at"))

        state = RunState(d.pop("state"))

        trigger = TriggerKind(d.pop("trigger"))

        updated_at = isoparse(d.pop("updated_at"))

        attempts = []
        _attempts = d.pop("attempts")
        for attempts_item_data in _attempts:
            attempts_item = AttemptOut.from_dict(attempts_item_data)

            attempts.append(attempts_item)

        logs = []
        _logs = d.pop("logs")
        for logs_item_data in _logs:
            logs_item = LogOut.from_dict(logs_item_data)

            logs.append(logs_item)

        shards = []
        _shards = d.pop("shards")
        for shards_item_data in _shards:
            shards_item = ShardOut.from_dict(shards_item_data)

            shards.append(shards_item)

        def _parse_finished_at(data: object) -> Union[None, Unset, datetime.datetime]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = isoparse(data)

                return finished_at_type_0
            except:  # noqa: E722
                pass
            return cast(Union[None, Unset, datetime.datetime], data)

        finished_at = _parse_finished_at(d.pop("finished_at", UNSET))

        def _parse_message(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        message = _parse_message(d.pop("message", UNSET))

        output = d.pop("output", UNSET)

        def _parse_params(data: object) -> Union["RunOutParamsType0", None, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                params_type_0 = RunOutParamsType0.from_dict(data)

                return params_type_0
            except:  # noqa: E722
                pass
            return cast(Union["RunOutParamsType0", None, Unset], data)

        params = _parse_params(d.pop("params", UNSET))

        def _parse_parent_run_id(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        parent_run_id = _parse_parent_run_id(d.pop("parent_run_id", UNSET))

        def _parse_parent_run_ids(data: object) -> Union[None, Unset, list[str]]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                parent_run_ids_type_0 = cast(list[str], data)

                return parent_run_ids_type_0
            except:  # noqa: E722
                pass
            return cast(Union[None, Unset, list[str]], data)

        parent_run_ids = _parse_parent_run_ids(d.pop("parent_run_ids", UNSET))

        def _parse_reason(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        reason = _parse_reason(d.pop("reason", UNSET))

        def _parse_script_version(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        script_version = _parse_script_version(d.pop("script_version", UNSET))

        def _parse_shard_total(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        shard_total = _parse_shard_total(d.pop("shard_total", UNSET))

        def _parse_started_at(data: object) -> Union[None, Unset, datetime.datetime]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                started_at_type_0 = isoparse(data)

                return started_at_type_0
            except:  # noqa: E722
                pass
            return cast(Union[None, Unset, datetime.datetime], data)

        started_at = _parse_started_at(d.pop("started_at", UNSET))

        run_detail = cls(
            attempt=attempt,
            chain_id=chain_id,
            created_at=created_at,
            expired_count=expired_count,
            fire_key=fire_key,
            id=id,
            job_id=job_id,
            scheduled_at=scheduled_at,
            state=state,
            trigger=trigger,
            updated_at=updated_at,
            attempts=attempts,
            logs=logs,
            shards=shards,
            finished_at=finished_at,
            message=message,
            output=output,
            params=params,
            parent_run_id=parent_run_id,
            parent_run_ids=parent_run_ids,
            reason=reason,
            script_version=script_version,
            shard_total=shard_total,
            started_at=started_at,
        )

        run_detail.additional_properties = d
        return run_detail

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
