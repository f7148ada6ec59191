from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field


from dateutil.parser import isoparse
import datetime


T = TypeVar("T", bound="LogOut")


@_attrs_define
class LogOut:
    """
    Attributes:
        at (datetime.datetime):
        attempt (int):
        level (str):
        message (str):
        seq (int): The line's sequence number: grows with every line stored (across all runs, so not
            dense within one); pass the last one read as `after` to `GET /runs/{id}/logs`.
        shard (int):
    """

    at: datetime.datetime
    attempt: int
    level: str
    message: str
    seq: int
    shard: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        attempt = self.attempt

        level = self.level

        message = self.message

        seq = self.seq

        shard = self.shard

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "at": at,
                "attempt": attempt,
                "level": level,
                "message": message,
                "seq": seq,
                "shard": shard,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = isoparse(d.pop("at"))

        attempt = d.pop("attempt")

        level = d.pop("level")

        message = d.pop("message")

        seq = d.pop("seq")

        shard = d.pop("shard")

        log_out = cls(
            at=at,
            attempt=attempt,
            level=level,
            message=message,
            seq=seq,
            shard=shard,
        )

        log_out.additional_properties = d
        return log_out

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
