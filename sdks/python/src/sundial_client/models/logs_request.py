from collections.abc import Mapping
from typing import Any, TypeVar, TYPE_CHECKING

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from typing import cast
from typing import Union

if TYPE_CHECKING:
    from ..models.log_line import LogLine


T = TypeVar("T", bound="LogsRequest")


@_attrs_define
class LogsRequest:
    """
    Attributes:
        attempt (int):
        lines (Union[Unset, list['LogLine']]):
        shard (Union[None, Unset, int]): Shard index, for a sharded run (default 0).
    """

    attempt: int
    lines: Union[Unset, list["LogLine"]] = UNSET
    shard: Union[None, Unset, int] = UNSET

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        lines: Union[Unset, list[dict[str, Any]]] = UNSET
        if not isinstance(self.lines, Unset):
            lines = []
            for lines_item_data in self.lines:
                lines_item = lines_item_data.to_dict()
                lines.append(lines_item)

        shard: Union[None, Unset, int]
        if isinstance(self.shard, Unset):
            shard = UNSET
        else:
            shard = self.shard

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "attempt": attempt,
            }
        )
        if lines is not UNSET:
            field_dict["lines"] = lines
        if shard is not UNSET:
            field_dict["shard"] = shard

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.log_line import LogLine

        d = dict(src_dict)
        attempt = d.pop("attempt")

        lines = []
        _lines = d.pop("lines", UNSET)
        for lines_item_data in _lines or []:
            lines_item = LogLine.from_dict(lines_item_data)

            lines.append(lines_item)

        def _parse_shard(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        shard = _parse_shard(d.pop("shard", UNSET))

        logs_request = cls(
            attempt=attempt,
            lines=lines,
            shard=shard,
        )

        return logs_request
