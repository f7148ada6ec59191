from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define


T = TypeVar("T", bound="DeregisterRequest")


@_attrs_define
class DeregisterRequest:
    """
    Attributes:
        executor_id (str):
    """

    executor_id: str

    def to_dict(self) -> dict[str, Any]:
        executor_id = self.executor_id

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "executor_id": executor_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        executor_id = d.pop("executor_id")

        deregister_request = cls(
            executor_id=executor_id,
        )

        return deregister_request
