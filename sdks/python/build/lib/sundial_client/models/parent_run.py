from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.run_state import RunState
from typing import Union


T = TypeVar("T", bound="ParentRun")


@_attrs_define
class ParentRun:
    """One parent of a fan-in run: its job, its run in the chain, how it ended, its output.

    Example:
        {'job_id': 'job_01JDX2B', 'output': {'region': 'eu', 'total': 264.6}, 'run_id': 'run_01JDX2V6Q9', 'state':
            'succeeded'}

    Attributes:
        job_id (str):
        run_id (str):
        state (RunState): The life of a run; see `docs/state-machine.md`.
        output (Union[Unset, Any]): Any JSON value, or null.
    """

    job_id: str
    run_id: str
    state: RunState
    output: Union[Unset, Any] = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job_id = self.job_id

        run_id = self.run_id

        state = self.state.value

        output = self.output

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job_id": job_id,
                "run_id": run_id,
                "state": state,
            }
        )
        if output is not UNSET:
            field_dict["output"] = output

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        job_id = d.pop("job_id")

        run_id = d.pop("run_id")

        state = RunState(d.pop("state"))

        output = d.pop("output", UNSET)

        parent_run = cls(
            job_id=job_id,
            run_id=run_id,
            state=state,
            output=output,
        )

        parent_run.additional_properties = d
        return parent_run

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
