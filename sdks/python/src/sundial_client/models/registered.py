from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field


from typing import cast


T = TypeVar("T", bound="Registered")


@_attrs_define
class Registered:
    """
    Attributes:
        executor_id (str):
        heartbeat_interval_ms (int):
        jobs_created (list[str]): Jobs this registration created (stopped until a person starts them).
        metadata_interval_ms (int):
        offline_after_ms (int): Without a heartbeat for this long the executor counts as offline.
    """

    executor_id: str
    heartbeat_interval_ms: int
    jobs_created: list[str]
    metadata_interval_ms: int
    offline_after_ms: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        executor_id = self.executor_id

        heartbeat_interval_ms = self.heartbeat_interval_ms

        jobs_created = self.jobs_created

        metadata_interval_ms = self.metadata_interval_ms

        offline_after_ms = self.offline_after_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "executor_id": executor_id,
                "heartbeat_interval_ms": heartbeat_interval_ms,
                "jobs_created": jobs_created,
                "metadata_interval_ms": metadata_interval_ms,
                "offline_after_ms": offline_after_ms,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        executor_id = d.pop("executor_id")

        heartbeat_interval_ms = d.pop("heartbeat_interval_ms")

        jobs_created = cast(list[str], d.pop("jobs_created"))

        metadata_interval_ms = d.pop("metadata_interval_ms")

        offline_after_ms = d.pop("offline_after_ms")

        registered = cls(
            executor_id=executor_id,
            heartbeat_interval_ms=heartbeat_interval_ms,
            jobs_created=jobs_created,
            metadata_interval_ms=metadata_interval_ms,
            offline_after_ms=offline_after_ms,
        )

        registered.additional_properties = d
        return registered

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
