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
    from ..models.chain_run_out_output_type_0 import ChainRunOutOutputType0


T = TypeVar("T", bound="ChainRunOut")


@_attrs_define
class ChainRunOut:
    """A run of a chain.

    Attributes:
        attempt (int):
        fire_key (str): `p:<parent run id>` for a child with one parent, `p:<chain id>` for a fan-in.
        job_id (str):
        parent_run_ids (list[str]): The parent runs it was fired after (one, or a fan-in's several); empty for the root.
        run_id (str):
        scheduled_at (datetime.datetime):
        state (RunState): The life of a run; see `docs/state-machine.md`.
        trigger (TriggerKind): Why a run exists.
        finished_at (Union[None, Unset, datetime.datetime]):
        job (Union[None, Unset, str]): The job's name (absent if the job was deleted since).
        message (Union[None, Unset, str]): For a `skipped` fan-in: why.
        output (Union['ChainRunOutOutputType0', None, Unset]):
        reason (Union[None, Unset, str]):
        started_at (Union[None, Unset, datetime.datetime]):
    """

    attempt: int
    fire_key: str
    job_id: str
    parent_run_ids: list[str]
    run_id: str
    scheduled_at: datetime.datetime
    state: RunState
    trigger: TriggerKind
    finished_at: Union[None, Unset, datetime.datetime] = UNSET
    job: Union[None, Unset, str] = UNSET
    message: Union[None, Unset, str] = UNSET
    output: Union["ChainRunOutOutputType0", None, Unset] = UNSET
    reason: Union[None, Unset, str] = UNSET
    started_at: Union[None, Unset, datetime.datetime] = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.chain_run_out_output_type_0 import ChainRunOutOutputType0

        attempt = self.attempt

        fire_key = self.fire_key

        job_id = self.job_id

        parent_run_ids = self.parent_run_ids

        run_id = self.run_id

        scheduled_at = self.scheduled_at.isoformat()

        state = self.state.value

        trigger = self.trigger.value

        finished_at: Union[None, Unset, str]
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        elif isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        job: Union[None, Unset, str]
        if isinstance(self.job, Unset):
            job = UNSET
        else:
            job = self.job

        message: Union[None, Unset, str]
        if isinstance(self.message, Unset):
            message = UNSET
        else:
            message = self.message

        output: Union[None, Unset, dict[str, Any]]
        if isinstance(self.output, Unset):
            output = UNSET
        elif isinstance(self.output, ChainRunOutOutputType0):
            output = self.output.to_dict()
        else:
            output = self.output

        reason: Union[None, Unset, str]
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

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
                "fire_key": fire_key,
                "job_id": job_id,
                "parent_run_ids": parent_run_ids,
                "run_id": run_id,
                "scheduled_at": scheduled_at,
                "state": state,
                "trigger": trigger,
            }
        )
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at
        if job is not UNSET:
            field_dict["job"] = job
        if message is not UNSET:
            field_dict["message"] = message
        if output is not UNSET:
            field_dict["output"] = output
        if reason is not UNSET:
            field_dict["reason"] = reason
        if started_at is not UNSET:
            field_dict["started_at"] = started_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.chain_run_out_output_type_0 import ChainRunOutOutputType0

        d = dict(src_dict)
        attempt = d.pop("attempt")

        fire_key = d.pop("fire_key")

        job_id = d.pop("job_id")

        parent_run_ids = cast(list[str], d.pop("parent_run_ids"))

        run_id = d.pop("run_id")

        scheduled_at = isoparse(d.pop("scheduled_at"))

        state = RunState(d.pop("state"))

        trigger = TriggerKind(d.pop("trigger"))

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

        def _parse_job(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        job = _parse_job(d.pop("job", UNSET))

        def _parse_message(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        message = _parse_message(d.pop("message", UNSET))

        def _parse_output(data: object) -> Union["ChainRunOutOutputType0", None, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                output_type_0 = ChainRunOutOutputType0.from_dict(data)

                return output_type_0
            except:  # noqa: E722
                pass
            return cast(Union["ChainRunOutOutputType0", None, Unset], data)

        output = _parse_output(d.pop("output", UNSET))

        def _parse_reason(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        reason = _parse_reason(d.pop("reason", UNSET))

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

        chain_run_out = cls(
            attempt=attempt,
            fire_key=fire_key,
            job_id=job_id,
            parent_run_ids=parent_run_ids,
            run_id=run_id,
            scheduled_at=scheduled_at,
            state=state,
            trigger=trigger,
            finished_at=finished_at,
            job=job,
            message=message,
            output=output,
            reason=reason,
            started_at=started_at,
        )

        chain_run_out.additional_properties = d
        return chain_run_out

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
