from collections.abc import Mapping
from typing import Any, TypeVar, TYPE_CHECKING

from attrs import define as _attrs_define
from attrs import field as _attrs_field


from ..models.run_state import RunState

if TYPE_CHECKING:
    from ..models.log_out import LogOut


T = TypeVar("T", bound="RunLogPage")


@_attrs_define
class RunLogPage:
    """A page of a run's log, for reading it whole or following it while the run goes on.

    Example:
        {'has_more': False, 'items': [{'at': '2026-03-28T12:00:01.250Z', 'attempt': 1, 'level': 'info', 'message':
            'exported 120 rows', 'seq': 41, 'shard': 0}], 'next_after': 41, 'run_finished': False, 'run_state': 'running'}

    Attributes:
        has_more (bool): More lines are stored already: ask again at once with `next_after`.
        items (list['LogOut']): In `seq` order.
        next_after (int): Pass as `after` for the lines that follow: the last item's `seq`, or the `after`
            given when no line came (a follower keeps polling with it; unlike `next_cursor`
            elsewhere it is there on the last page too).
        run_finished (bool): `run_state` is final (`succeeded`, `failed`, `cancelled`, `expired`, `skipped`): with
            `has_more` false the log is complete, but for trailing lines an executor may still
            send during the short grace after a run ends.
        run_state (RunState): The life of a run; see `docs/state-machine.md`.
    """

    has_more: bool
    items: list["LogOut"]
    next_after: int
    run_finished: bool
    run_state: RunState
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        has_more = self.has_more

        items = []
        for items_item_data in self.items:
            items_item = items_item_data.to_dict()
            items.append(items_item)

        next_after = self.next_after

        run_finished = self.run_finished

        run_state = self.run_state.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "has_more": has_more,
                "items": items,
                "next_after": next_after,
                "run_finished": run_finished,
                "run_state": run_state,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.log_out import LogOut

        d = dict(src_dict)
        has_more = d.pop("has_more")

        items = []
        _items = d.pop("items")
        for items_item_data in _items:
            items_item = LogOut.from_dict(items_item_data)

            items.append(items_item)

        next_after = d.pop("next_after")

        run_finished = d.pop("run_finished")

        run_state = RunState(d.pop("run_state"))

        run_log_page = cls(
            has_more=has_more,
            items=items,
            next_after=next_after,
            run_finished=run_finished,
            run_state=run_state,
        )

        run_log_page.additional_properties = d
        return run_log_page

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
