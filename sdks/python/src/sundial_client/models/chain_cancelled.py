from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field


from typing import cast


T = TypeVar("T", bound="ChainCancelled")


@_attrs_define
class ChainCancelled:
    """What cancelling a chain did.

    Example:
        {'cancelled': ['run_01JDX2V6R0', 'run_01JDX2V6R1'], 'chain_id': 'run_01JDX2V6Q8', 'runs': 4}

    Attributes:
        cancelled (list[str]): The runs this call cancelled (those not yet final).
        chain_id (str):
        runs (int): How many runs the chain has.
    """

    cancelled: list[str]
    chain_id: str
    runs: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cancelled = self.cancelled

        chain_id = self.chain_id

        runs = self.runs

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cancelled": cancelled,
                "chain_id": chain_id,
                "runs": runs,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cancelled = cast(list[str], d.pop("cancelled"))

        chain_id = d.pop("chain_id")

        runs = d.pop("runs")

        chain_cancelled = cls(
            cancelled=cancelled,
            chain_id=chain_id,
            runs=runs,
        )

        chain_cancelled.additional_properties = d
        return chain_cancelled

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
