from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from ..models.result_status import ResultStatus
from typing import cast, Union


T = TypeVar("T", bound="ResultRequest")


@_attrs_define
class ResultRequest:
    """
    Attributes:
        attempt (int): The attempt this result is for (`sundial-attempt` of the delivery; for a shard, the shard's
            attempt).
        status (ResultStatus):
        message (Union[None, Unset, str]):
        output (Union[Unset, Any]):
        retry (Union[None, Unset, bool]): `false` with a failure: it cannot succeed on a retry (the script does not
            compile, the
            runtime is missing, …), so the job's failure policy is not applied and the run fails
            at once. Omitted or `true`: the failure policy decides.
        shard (Union[None, Unset, int]): Shard index (`sundial-shard` of the delivery: `index/total`), from 0 to total -
            1 for a
            sharded run; 0 or omitted for runs that are not sharded.
    """

    attempt: int
    status: ResultStatus
    message: Union[None, Unset, str] = UNSET
    output: Union[Unset, Any] = UNSET
    retry: Union[None, Unset, bool] = UNSET
    shard: Union[None, Unset, int] = UNSET

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        status = self.status.value

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

        shard: Union[None, Unset, int]
        if isinstance(self.shard, Unset):
            shard = UNSET
        else:
            shard = self.shard

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "attempt": attempt,
                "status": status,
            }
        )
        if message is not UNSET:
            field_dict["message"] = message
        if output is not UNSET:
            field_dict["output"] = output
        if retry is not UNSET:
            field_dict["retry"] = retry
        if shard is not UNSET:
            field_dict["shard"] = shard

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attempt = d.pop("attempt")

        status = ResultStatus(d.pop("status"))

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

        def _parse_shard(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        shard = _parse_shard(d.pop("shard", UNSET))

        result_request = cls(
            attempt=attempt,
            status=status,
            message=message,
            output=output,
            retry=retry,
            shard=shard,
        )

        return result_request
