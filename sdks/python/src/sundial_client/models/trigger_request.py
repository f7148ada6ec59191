from collections.abc import Mapping
from typing import Any, TypeVar, TYPE_CHECKING

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from dateutil.parser import isoparse
from typing import cast
from typing import Union
import datetime

if TYPE_CHECKING:
    from ..models.trigger_request_params_type_0 import TriggerRequestParamsType0


T = TypeVar("T", bound="TriggerRequest")


@_attrs_define
class TriggerRequest:
    """
    Attributes:
        at (Union[None, Unset, datetime.datetime]): RFC 3339: fire at this time instead of now (a delayed trigger).
        params (Union['TriggerRequestParamsType0', None, Unset]): Parameters for this run instead of the job's.
    """

    at: Union[None, Unset, datetime.datetime] = UNSET
    params: Union["TriggerRequestParamsType0", None, Unset] = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.trigger_request_params_type_0 import TriggerRequestParamsType0

        at: Union[None, Unset, str]
        if isinstance(self.at, Unset):
            at = UNSET
        elif isinstance(self.at, datetime.datetime):
            at = self.at.isoformat()
        else:
            at = self.at

        params: Union[None, Unset, dict[str, Any]]
        if isinstance(self.params, Unset):
            params = UNSET
        elif isinstance(self.params, TriggerRequestParamsType0):
            params = self.params.to_dict()
        else:
            params = self.params

        field_dict: dict[str, Any] = {}
        field_dict.update({})
        if at is not UNSET:
            field_dict["at"] = at
        if params is not UNSET:
            field_dict["params"] = params

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.trigger_request_params_type_0 import TriggerRequestParamsType0

        d = dict(src_dict)

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

        def _parse_params(
            data: object,
        ) -> Union["TriggerRequestParamsType0", None, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                params_type_0 = TriggerRequestParamsType0.from_dict(data)

                return params_type_0
            except:  # noqa: E722
                pass
            return cast(Union["TriggerRequestParamsType0", None, Unset], data)

        params = _parse_params(d.pop("params", UNSET))

        trigger_request = cls(
            at=at,
            params=params,
        )

        return trigger_request
