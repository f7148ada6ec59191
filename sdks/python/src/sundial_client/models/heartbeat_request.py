from collections.abc import Mapping
from typing import Any, TypeVar, TYPE_CHECKING

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from typing import cast
from typing import Union

if TYPE_CHECKING:
    from ..models.heartbeat_request_metadata_type_0 import HeartbeatRequestMetadataType0


T = TypeVar("T", bound="HeartbeatRequest")


@_attrs_define
class HeartbeatRequest:
    """
    Attributes:
        executor_id (str):
        metadata (Union['HeartbeatRequestMetadataType0', None, Unset]): Sent every 30 s; replaces the stored metadata.
        running (Union[None, Unset, int]): Runs in progress on this executor (used by the `busyover` route). Default:
            the
            length of `running_runs`, else 0.
        running_runs (Union[None, Unset, list[str]]): The ids of the runs in progress on this executor, at most 10000. A
            retry of a run
            whose attempt timed out waits while its executor still lists it here (unless the
            job's `failure.allow_overlap` is true).
    """

    executor_id: str
    metadata: Union["HeartbeatRequestMetadataType0", None, Unset] = UNSET
    running: Union[None, Unset, int] = UNSET
    running_runs: Union[None, Unset, list[str]] = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.heartbeat_request_metadata_type_0 import (
            HeartbeatRequestMetadataType0,
        )

        executor_id = self.executor_id

        metadata: Union[None, Unset, dict[str, Any]]
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, HeartbeatRequestMetadataType0):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        running: Union[None, Unset, int]
        if isinstance(self.running, Unset):
            running = UNSET
        else:
            running = self.running

        running_runs: Union[None, Unset, list[str]]
        if isinstance(self.running_runs, Unset):
            running_runs = UNSET
        elif isinstance(self.running_runs, list):
            running_runs = self.running_runs

        else:
            running_runs = self.running_runs

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "executor_id": executor_id,
            }
        )
        if metadata is not UNSET:
            field_dict["metadata"] = metadata
        if running is not UNSET:
            field_dict["running"] = running
        if running_runs is not UNSET:
            field_dict["running_runs"] = running_runs

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.heartbeat_request_metadata_type_0 import (
            HeartbeatRequestMetadataType0,
        )

        d = dict(src_dict)
        executor_id = d.pop("executor_id")

        def _parse_metadata(
            data: object,
        ) -> Union["HeartbeatRequestMetadataType0", None, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = HeartbeatRequestMetadataType0.from_dict(data)

                return metadata_type_0
            except:  # noqa: E722
                pass
            return cast(Union["HeartbeatRequestMetadataType0", None, Unset], data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        def _parse_running(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        running = _parse_running(d.pop("running", UNSET))

        def _parse_running_runs(data: object) -> Union[None, Unset, list[str]]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                running_runs_type_0 = cast(list[str], data)

                return running_runs_type_0
            except:  # noqa: E722
                pass
            return cast(Union[None, Unset, list[str]], data)

        running_runs = _parse_running_runs(d.pop("running_runs", UNSET))

        heartbeat_request = cls(
            executor_id=executor_id,
            metadata=metadata,
            running=running,
            running_runs=running_runs,
        )

        return heartbeat_request
