from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field


from ..models.edge_condition import EdgeCondition


T = TypeVar("T", bound="ChildEdgeOut")


@_attrs_define
class ChildEdgeOut:
    """A child edge: the child job, fired with the parent run's output when the parent run ends
    as `on` says.

        Attributes:
            job (str):
            on (EdgeCondition): When a child edge fires: the parent run `succeeded` (`on_success`, the default), it
                `failed` for good (`on_failure`: retries exhausted), or either (`always`; never for a
                `cancelled` parent).
    """

    job: str
    on: EdgeCondition
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job = self.job

        on = self.on.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job": job,
                "on": on,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        job = d.pop("job")

        on = EdgeCondition(d.pop("on"))

        child_edge_out = cls(
            job=job,
            on=on,
        )

        child_edge_out.additional_properties = d
        return child_edge_out

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
