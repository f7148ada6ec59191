from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast, Union


T = TypeVar("T", bound="Cancel")


@_attrs_define
class Cancel:
    """The body of a best-effort cancel (`POST {executor URL}/cancel`).

    Attributes:
        attempt (int): The attempt to stop (for a shard: the shard's attempt).
        run_id (str):
        shard (Union[None, Unset, int]): The shard, for a sharded run.
    """

    attempt: int
    run_id: str
    shard: Union[None, Unset, int] = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        run_id = self.run_id

        shard: Union[None, Unset, int]
        if isinstance(self.shard, Unset):
            shard = UNSET
        else:
            shard = self.shard

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "run_id": run_id,
            }
        )
        if shard is not UNSET:
            field_dict["shard"] = shard

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attempt = d.pop("attempt")

        run_id = d.pop("run_id")

        def _parse_shard(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        shard = _parse_shard(d.pop("shard", UNSET))

        cancel = cls(
            attempt=attempt,
            run_id=run_id,
            shard=shard,
        )

        cancel.additional_properties = d
        return cancel

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
