from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field


from ..models.job_state import JobState
from ..models.wait_for import WaitFor


T = TypeVar("T", bound="ChainJobOut")


@_attrs_define
class ChainJobOut:
    """A job of a chain's view.

    Attributes:
        id (str):
        name (str):
        parents (int): How many parent jobs it has (more than one: a fan-in).
        state (JobState): Whether a job fires on its own. Manual triggers work in both states.
        wait (WaitFor): When a job with several parents (a fan-in) fires in a chain: once every parent it
            waits for has ended there with its edge's condition holding (`all`, the default), or
            as soon as one has (`any`).
    """

    id: str
    name: str
    parents: int
    state: JobState
    wait: WaitFor
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        name = self.name

        parents = self.parents

        state = self.state.value

        wait = self.wait.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "name": name,
                "parents": parents,
                "state": state,
                "wait": wait,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        name = d.pop("name")

        parents = d.pop("parents")

        state = JobState(d.pop("state"))

        wait = WaitFor(d.pop("wait"))

        chain_job_out = cls(
            id=id,
            name=name,
            parents=parents,
            state=state,
            wait=wait,
        )

        chain_job_out.additional_properties = d
        return chain_job_out

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
