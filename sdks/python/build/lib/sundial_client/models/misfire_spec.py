from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from ..models.misfire_policy import MisfirePolicy
from typing import cast, Union


T = TypeVar("T", bound="MisfireSpec")


@_attrs_define
class MisfireSpec:
    """What a fire missed by more than `threshold_ms` does.

    Attributes:
        policy (MisfirePolicy): What happens to a fire missed by more than the misfire threshold.
        catchup_window_ms (Union[None, Unset, int]): `fire_all` delivers missed fires no older than this. Default
            3600000 (one hour).
        max_catchup (Union[None, Unset, int]): `fire_all` delivers at most this many missed fires; one `expired` run
            counts the rest. Default 100.
        threshold_ms (Union[None, Unset, int]): A fire late by less than this fires at once, whatever the policy.
            Default 5000.
    """

    policy: MisfirePolicy
    catchup_window_ms: Union[None, Unset, int] = UNSET
    max_catchup: Union[None, Unset, int] = UNSET
    threshold_ms: Union[None, Unset, int] = UNSET

    def to_dict(self) -> dict[str, Any]:
        policy = self.policy.value

        catchup_window_ms: Union[None, Unset, int]
        if isinstance(self.catchup_window_ms, Unset):
            catchup_window_ms = UNSET
        else:
            catchup_window_ms = self.catchup_window_ms

        max_catchup: Union[None, Unset, int]
        if isinstance(self.max_catchup, Unset):
            max_catchup = UNSET
        else:
            max_catchup = self.max_catchup

        threshold_ms: Union[None, Unset, int]
        if isinstance(self.threshold_ms, Unset):
            threshold_ms = UNSET
        else:
            threshold_ms = self.threshold_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "policy": policy,
            }
        )
        if catchup_window_ms is not UNSET:
            field_dict["catchup_window_ms"] = catchup_window_ms
        if max_catchup is not UNSET:
            field_dict["max_catchup"] = max_catchup
        if threshold_ms is not UNSET:
            field_dict["threshold_ms"] = threshold_ms

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        policy = MisfirePolicy(d.pop("policy"))

        def _parse_catchup_window_ms(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        catchup_window_ms = _parse_catchup_window_ms(d.pop("catchup_window_ms", UNSET))

        def _parse_max_catchup(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        max_catchup = _parse_max_catchup(d.pop("max_catchup", UNSET))

        def _parse_threshold_ms(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        threshold_ms = _parse_threshold_ms(d.pop("threshold_ms", UNSET))

        misfire_spec = cls(
            policy=policy,
            catchup_window_ms=catchup_window_ms,
            max_catchup=max_catchup,
            threshold_ms=threshold_ms,
        )

        return misfire_spec
