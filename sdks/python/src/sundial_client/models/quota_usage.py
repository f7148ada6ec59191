from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.quota import Quota
from typing import cast, Union


T = TypeVar("T", bound="QuotaUsage")


@_attrs_define
class QuotaUsage:
    """One quota's limit and what the tenant uses of it.

    Attributes:
        limit (int):
        quota (Quota): Every quota, by the name the API uses (in `GET /usage`, in errors, in the settings).
        usage (Union[None, Unset, float]): What the tenant uses now, in the limit's unit (fires per second may be a
            fraction);
            `null` where the limit applies to each run (`max_log_bytes_per_run`) or to each API
            key on each node (`max_api_requests_per_second`) rather than to the tenant.
    """

    limit: int
    quota: Quota
    usage: Union[None, Unset, float] = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        limit = self.limit

        quota = self.quota.value

        usage: Union[None, Unset, float]
        if isinstance(self.usage, Unset):
            usage = UNSET
        else:
            usage = self.usage

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "limit": limit,
                "quota": quota,
            }
        )
        if usage is not UNSET:
            field_dict["usage"] = usage

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        limit = d.pop("limit")

        quota = Quota(d.pop("quota"))

        def _parse_usage(data: object) -> Union[None, Unset, float]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, float], data)

        usage = _parse_usage(d.pop("usage", UNSET))

        quota_usage = cls(
            limit=limit,
            quota=quota,
            usage=usage,
        )

        quota_usage.additional_properties = d
        return quota_usage

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
