from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.answer_status import AnswerStatus
from typing import cast, Union


T = TypeVar("T", bound="Answer")


@_attrs_define
class Answer:
    """The executor's synchronous answer (`200`, or any `2xx` but `202`): every field is
    optional, and an empty body means success with no output.

        Attributes:
            message (Union[None, Unset, str]):
            output (Union[Unset, Any]): Any JSON value: kept as the run's output, passed to child runs.
            retry (Union[None, Unset, bool]): `false` with a failure: it cannot succeed on a retry (for a script: the source
                does
                not compile, the script is missing, the runtime is not available here), so the
                job's failure policy is not applied and the run fails at once. Omitted or `true`:
                the failure policy decides. The result call (`POST /api/v1/runs/{id}/result`) takes
                the same field.
            status (Union[AnswerStatus, None, Unset]):
    """

    message: Union[None, Unset, str] = UNSET
    output: Union[Unset, Any] = UNSET
    retry: Union[None, Unset, bool] = UNSET
    status: Union[AnswerStatus, None, Unset] = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        message: Union[None, Unset, str]
        if isinstance(self.message, Unset):
            message = UNSET
        else:
            message = self.message

        output = self.output

        retry: Union[None, Unset, bool]
        if isinstance(self.retry, Unset):
            retry = UNSET
        else:
            retry = self.retry

        status: Union[None, Unset, str]
        if isinstance(self.status, Unset):
            status = UNSET
        elif isinstance(self.status, AnswerStatus):
            status = self.status.value
        else:
            status = self.status

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if message is not UNSET:
            field_dict["message"] = message
        if output is not UNSET:
            field_dict["output"] = output
        if retry is not UNSET:
            field_dict["retry"] = retry
        if status is not UNSET:
            field_dict["status"] = status

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_message(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        message = _parse_message(d.pop("message", UNSET))

        output = d.pop("output", UNSET)

        def _parse_retry(data: object) -> Union[None, Unset, bool]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, bool], data)

        retry = _parse_retry(d.pop("retry", UNSET))

        def _parse_status(data: object) -> Union[AnswerStatus, None, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                status_type_1 = AnswerStatus(data)

                return status_type_1
            except:  # noqa: E722
                pass
            return cast(Union[AnswerStatus, None, Unset], data)

        status = _parse_status(d.pop("status", UNSET))

        answer = cls(
            message=message,
            output=output,
            retry=retry,
            status=status,
        )

        answer.additional_properties = d
        return answer

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
