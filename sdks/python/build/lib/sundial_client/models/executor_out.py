from collections.abc import Mapping
from typing import Any, TypeVar, TYPE_CHECKING

from attrs import define as _attrs_define
from attrs import field as _attrs_field


from ..models.executor_state import ExecutorState
from dateutil.parser import isoparse
from typing import cast
import datetime

if TYPE_CHECKING:
    from ..models.executor_out_metadata import ExecutorOutMetadata


T = TypeVar("T", bound="ExecutorOut")


@_attrs_define
class ExecutorOut:
    """An executor of an app and its state.

    Attributes:
        address (str):
        handlers (list[str]):
        id (str):
        last_heartbeat_at (datetime.datetime):
        metadata (ExecutorOutMetadata):
        name (str):
        running (int):
        runtimes (list[str]): Script runtimes it runs (a `sundial runner`).
        state (ExecutorState):
        tags (list[str]):
    """

    address: str
    handlers: list[str]
    id: str
    last_heartbeat_at: datetime.datetime
    metadata: "ExecutorOutMetadata"
    name: str
    running: int
    runtimes: list[str]
    state: ExecutorState
    tags: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        address = self.address

        handlers = self.handlers

        id = self.id

        last_heartbeat_at = self.last_heartbeat_at.isoformat()

        metadata = self.metadata.to_dict()

        name = self.name

        running = self.running

        runtimes = self.runtimes

        state = self.state.value

        tags = self.tags

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "address": address,
                "handlers": handlers,
                "id": id,
                "last_heartbeat_at": last_heartbeat_at,
                "metadata": metadata,
                "name": name,
                "running": running,
                "runtimes": runtimes,
                "state": state,
                "tags": tags,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.executor_out_metadata import ExecutorOutMetadata

        d = dict(src_dict)
        address = d.pop("address")

        handlers = cast(list[str], d.pop("handlers"))

        id = d.pop("id")

        last_heartbeat_at = isoparse(d.pop("last_heartbeat_at"))

        metadata = ExecutorOutMetadata.from_dict(d.pop("metadata"))

        name = d.pop("name")

        running = d.pop("running")

        runtimes = cast(list[str], d.pop("runtimes"))

        state = ExecutorState(d.pop("state"))

        tags = cast(list[str], d.pop("tags"))

        executor_out = cls(
            address=address,
            handlers=handlers,
            id=id,
            last_heartbeat_at=last_heartbeat_at,
            metadata=metadata,
            name=name,
            running=running,
            runtimes=runtimes,
            state=state,
            tags=tags,
        )

        executor_out.additional_properties = d
        return executor_out

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
