from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.run_state import RunState
from dateutil.parser import isoparse
from typing import cast
from typing import Union
import datetime


T = TypeVar("T", bound="ShardOut")


@_attrs_define
class ShardOut:
    """One shard of a sharded run: its own state, attempts and result.

    Attributes:
        attempt (int): The shard's current attempt; all its attempts are in `attempts` with this `shard`.
        index (int): 0 to `shard_total` - 1; sent as `sundial-shard: index/total`.
        state (RunState): The life of a run; see `docs/state-machine.md`.
        updated_at (datetime.datetime):
        address (Union[None, Unset, str]):
        deadline_at (Union[None, Unset, datetime.datetime]): The current attempt's deadline.
        executor_id (Union[None, Unset, str]): The executor of the current attempt (`static:<url>` for a static
            endpoint).
        finished_at (Union[None, Unset, datetime.datetime]):
        message (Union[None, Unset, str]):
        next_attempt_at (Union[None, Unset, datetime.datetime]): When a `retrying` shard's next attempt is due.
        output (Union[Unset, Any]):
        reason (Union[None, Unset, str]):
        started_at (Union[None, Unset, datetime.datetime]):
    """

    attempt: int
    index: int
    state: RunState
    updated_at: datetime.datetime
    address: Union[None, Unset, str] = UNSET
    deadline_at: Union[None, Unset, datetime.datetime] = UNSET
    executor_id: Union[None, Unset, str] = UNSET
    finished_at: Union[None, Unset, datetime.datetime] = UNSET
    message: Union[None, Unset, str] = UNSET
    next_attempt_at: Union[None, Unset, datetime.datetime] = UNSET
    output: Union[Unset, Any] = UNSET
    reason: Union[None, Unset, str] = UNSET
    started_at: Union[None, Unset, datetime.datetime] = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        index = self.index

        state = self.state.value

        updated_at = self.updated_at.isoformat()

        address: Union[None, Unset, str]
        if isinstance(self.address, Unset):
            address = UNSET
        else:
            address = self.address

        deadline_at: Union[None, Unset, str]
        if isinstance(self.deadline_at, Unset):
            deadline_at = UNSET
        elif isinstance(self.deadline_at, datetime.datetime):
            deadline_at = self.deadline_at.isoformat()
        else:
            deadline_at = self.deadline_at

        executor_id: Union[None, Unset, str]
        if isinstance(self.executor_id, Unset):
            executor_id = UNSET
        else:
            executor_id = self.executor_id

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

        next_attempt_at: Union[None, Unset, str]
        if isinstance(self.next_attempt_at, Unset):
            next_attempt_at = UNSET
        elif isinstance(self.next_attempt_at, datetime.datetime):
            next_attempt_at = self.next_attempt_at.isoformat()
        else:
            next_attempt_at = self.next_attempt_at

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
                "index": index,
                "state": state,
                "updated_at": updated_at,
            }
        )
        if address is not UNSET:
            field_dict["address"] = address
        if deadline_at is not UNSET:
            field_dict["deadline_at"] = deadline_at
        if executor_id is not UNSET:
            field_dict["executor_id"] = executor_id
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at
        if message is not UNSET:
            field_dict["message"] = message
        if next_attempt_at is not UNSET:
            field_dict["next_attempt_at"] = next_attempt_at
        if output is not UNSET:
            field_dict["output"] = output
        if reason is not UNSET:
            field_dict["reason"] = reason
        if started_at is not UNSET:
            field_dict["started_at"] = started_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attempt = d.pop("attempt")

        index = d.pop("index")

        state = RunState(d.pop("state"))

        updated_at = isoparse(d.pop("updated_at"))

        def _parse_address(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        address = _parse_address(d.pop("address", UNSET))

        def _parse_deadline_at(data: object) -> Union[None, Unset, datetime.datetime]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                deadline_at_type_0 = isoparse(data)

                return deadline_at_type_0
            except:  # noqa: E722
                pass
            return cast(Union[None, Unset, datetime.datetime], data)

        deadline_at = _parse_deadline_at(d.pop("deadline_at", UNSET))

        def _parse_executor_id(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        executor_id = _parse_executor_id(d.pop("executor_id", UNSET))

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

        def _parse_next_attempt_at(
            data: object,
        ) -> Union[None, Unset, datetime.datetime]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_attempt_at_type_0 = isoparse(data)

                return next_attempt_at_type_0
            except:  # noqa: E722
                pass
            return cast(Union[None, Unset, datetime.datetime], data)

        next_attempt_at = _parse_next_attempt_at(d.pop("next_attempt_at", UNSET))

        output = d.pop("output", UNSET)

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

        shard_out = cls(
            attempt=attempt,
            index=index,
            state=state,
            updated_at=updated_at,
            address=address,
            deadline_at=deadline_at,
            executor_id=executor_id,
            finished_at=finished_at,
            message=message,
            next_attempt_at=next_attempt_at,
            output=output,
            reason=reason,
            started_at=started_at,
        )

        shard_out.additional_properties = d
        return shard_out

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
