from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from ..models.backoff_kind import BackoffKind
from typing import cast, Union


T = TypeVar("T", bound="BackoffSpec")


@_attrs_define
class BackoffSpec:
    """
    Attributes:
        kind (BackoffKind):
        base_ms (Union[None, Unset, int]): First delay. Default 1000.
        jitter (Union[None, Unset, bool]): Randomise each delay by up to ±20%. Default true.
        max_ms (Union[None, Unset, int]): Largest delay (exponential). Default 300000.
    """

    kind: BackoffKind
    base_ms: Union[None, Unset, int] = UNSET
    jitter: Union[None, Unset, bool] = UNSET
    max_ms: Union[None, Unset, int] = UNSET

    def to_dict(self) -> dict[str, Any]:
        kind = self.kind.value

        base_ms: Union[None, Unset, int]
        if isinstance(self.base_ms, Unset):
            base_ms = UNSET
        else:
            base_ms = self.base_ms

        jitter: Union[None, Unset, bool]
        if isinstance(self.jitter, Unset):
            jitter = UNSET
        else:
            jitter = self.jitter

        max_ms: Union[None, Unset, int]
        if isinstance(self.max_ms, Unset):
            max_ms = UNSET
        else:
            max_ms = self.max_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "kind": kind,
            }
        )
        if base_ms is not UNSET:
            field_dict["base_ms"] = base_ms
        if jitter is not UNSET:
            field_dict["jitter"] = jitter
        if max_ms is not UNSET:
            field_dict["max_ms"] = max_ms

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        kind = BackoffKind(d.pop("kind"))

        def _parse_base_ms(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        base_ms = _parse_base_ms(d.pop("base_ms", UNSET))

        def _parse_jitter(data: object) -> Union[None, Unset, bool]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, bool], data)

        jitter = _parse_jitter(d.pop("jitter", UNSET))

        def _parse_max_ms(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        max_ms = _parse_max_ms(d.pop("max_ms", UNSET))

        backoff_spec = cls(
            kind=kind,
            base_ms=base_ms,
            jitter=jitter,
            max_ms=max_ms,
        )

        return backoff_spec
