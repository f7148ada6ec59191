from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.run_state import RunState
from typing import cast, Union


T = TypeVar("T", bound="ResultAccepted")


@_attrs_define
class ResultAccepted:
    """
    Attributes:
        duplicate (bool): True when this exact result had already been recorded.
        run_id (str):
        state (RunState): The life of a run; see `docs/state-machine.md`.
        shard_state (Union[None, RunState, Unset]):
    """

    duplicate: bool
    run_id: str
    state: RunState
    shard_state: Union[None, RunState, Unset] = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        duplicate = self.duplicate

        run_id = self.run_id

        state = self.state.value

        shard_state: Union[None, Unset, str]
        if isinstance(self.shard_state, Unset):
            shard_state = UNSET
        elif isinstance(self.shard_state, RunState):
            shard_state = self.shard_state.value
        else:
            shard_state = self.shard_state

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "duplicate": duplicate,
                "run_id": run_id,
                "state": state,
            }
        )
        if shard_state is not UNSET:
            field_dict["shard_state"] = shard_state

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        duplicate = d.pop("duplicate")

        run_id = d.pop("run_id")

        state = RunState(d.pop("state"))

        def _parse_shard_state(data: object) -> Union[None, RunState, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                shard_state_type_1 = RunState(data)

                return shard_state_type_1
            except:  # noqa: E722
                pass
            return cast(Union[None, RunState, Unset], data)

        shard_state = _parse_shard_state(d.pop("shard_state", UNSET))

        result_accepted = cls(
            duplicate=duplicate,
            run_id=run_id,
            state=state,
            shard_state=shard_state,
        )

        result_accepted.additional_properties = d
        return result_accepted

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
