from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from dateutil.parser import isoparse
from typing import cast
from typing import Union
import datetime


T = TypeVar("T", bound="LogLine")


@_attrs_define
class LogLine:
    """
    Attributes:
        message (str):
        at (Union[None, Unset, datetime.datetime]): RFC 3339; default: when received.
        level (Union[None, Unset, str]): `debug`, `info` (default), `warn` or `error`.
    """

    message: str
    at: Union[None, Unset, datetime.datetime] = UNSET
    level: Union[None, Unset, str] = UNSET

    def to_dict(self) -> dict[str, Any]:
        message = self.message

        at: Union[None, Unset, str]
        if isinstance(self.at, Unset):
            at = UNSET
        elif isinstance(self.at, datetime.datetime):
            at = self.at.isoformat()
        else:
            at = self.at

        level: Union[None, Unset, str]
        if isinstance(self.level, Unset):
            level = UNSET
        else:
            level = self.level

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "message": message,
            }
        )
        if at is not UNSET:
            field_dict["at"] = at
        if level is not UNSET:
            field_dict["level"] = level

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        message = d.pop("message")

        def _parse_at(data: object) -> Union[None, Unset, datetime.datetime]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                at_type_0 = isoparse(data)

                return at_type_0
            except:  # noqa: E722
                pass
            return cast(Union[None, Unset, datetime.datetime], data)

        at = _parse_at(d.pop("at", UNSET))

        def _parse_level(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        level = _parse_level(d.pop("level", UNSET))

        log_line = cls(
            message=message,
            at=at,
            level=level,
        )

        return log_line
