from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field


T = TypeVar("T", bound="ScriptDiff")


@_attrs_define
class ScriptDiff:
    """
    Attributes:
        diff (str): Unified diff, `from` to `to` (empty when identical).
        from_ (int):
        identical (bool): The two versions have the same bytes.
        to (int):
    """

    diff: str
    from_: int
    identical: bool
    to: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        diff = self.diff

        from_ = self.from_

        identical = self.identical

        to = self.to

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "diff": diff,
                "from": from_,
                "identical": identical,
                "to": to,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        diff = d.pop("diff")

        from_ = d.pop("from")

        identical = d.pop("identical")

        to = d.pop("to")

        script_diff = cls(
            diff=diff,
            from_=from_,
            identical=identical,
            to=to,
        )

        script_diff.additional_properties = d
        return script_diff

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
