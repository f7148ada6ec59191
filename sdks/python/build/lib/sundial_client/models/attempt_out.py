from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from dateutil.parser import isoparse
from typing import cast
from typing import Union
import datetime


T = TypeVar("T", bound="AttemptOut")


@_attrs_define
class AttemptOut:
    """
    Attributes:
        attempt (int):
        shard (int):
        started_at (datetime.datetime):
        state (str):
        trail (Any): Executors tried, in order, and why each was passed over.
        webhook_id (str): The `webhook-id` of its deliveries (stable across redeliveries).
        address (Union[None, Unset, str]):
        executor_id (Union[None, Unset, str]):
        finished_at (Union[None, Unset, datetime.datetime]):
        message (Union[None, Unset, str]):
        output (Union[Unset, Any]):
        reason (Union[None, Unset, str]):
    """

    attempt: int
    shard: int
    started_at: datetime.datetime
    state: str
    trail: Any
    webhook_id: str
    address: Union[None, Unset, str] = UNSET
    executor_id: Union[None, Unset, str] = UNSET
    finished_at: Union[None, Unset, datetime.datetime] = UNSET
    message: Union[None, Unset, str] = UNSET
    output: Union[Unset, Any] = UNSET
    reason: Union[None, Unset, str] = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        shard = self.shard

        started_at = self.started_at.isoformat()

        state = self.state

        trail = self.trail

        webhook_id = self.webhook_id

        address: Union[None, Unset, str]
        if isinstance(self.address, Unset):
            address = UNSET
        else:
            address = self.address

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

        output = self.output

        reason: Union[None, Unset, str]
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "shard": shard,
                "started_at": started_at,
                "state": state,
                "trail": trail,
                "webhook_id": webhook_id,
            }
        )
        if address is not UNSET:
            field_dict["address"] = address
        if executor_id is not UNSET:
            field_dict["executor_id"] = executor_id
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at
        if message is not UNSET:
            field_dict["message"] = message
        if output is not UNSET:
            field_dict["output"] = output
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attempt = d.pop("attempt")

        shard = d.pop("shard")

        started_at = isoparse(d.pop("started_at"))

        state = d.pop("state")

        trail = d.pop("trail")

        webhook_id = d.pop("webhook_id")

        def _parse_address(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        address = _parse_address(d.pop("address", UNSET))

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

        output = d.pop("output", UNSET)

        def _parse_reason(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        reason = _parse_reason(d.pop("reason", UNSET))

        attempt_out = cls(
            attempt=attempt,
            shard=shard,
            started_at=started_at,
            state=state,
            trail=trail,
            webhook_id=webhook_id,
            address=address,
            executor_id=executor_id,
            finished_at=finished_at,
            message=message,
            output=output,
            reason=reason,
        )

        attempt_out.additional_properties = d
        return attempt_out

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
