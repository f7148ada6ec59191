from collections.abc import Mapping
from typing import Any, TypeVar, TYPE_CHECKING

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from ..models.failure_policy_kind import FailurePolicyKind
from typing import cast
from typing import Union

if TYPE_CHECKING:
    from ..models.backoff_spec import BackoffSpec


T = TypeVar("T", bound="FailureSpec")


@_attrs_define
class FailureSpec:
    """What a failed attempt leads to.

    Attributes:
        policy (FailurePolicyKind): What a failed attempt leads to.
        allow_overlap (Union[None, Unset, bool]): May a retry start while the executor of the timed-out attempt still
            reports, in its
            heartbeats, that it is running the run? Default false: the retry waits until that
            executor stops listing the run or goes offline.
        backoff (Union['BackoffSpec', None, Unset]):
        max_retries (Union[None, Unset, int]): Retries after the first attempt (policy `retry`). Default 5.
    """

    policy: FailurePolicyKind
    allow_overlap: Union[None, Unset, bool] = UNSET
    backoff: Union["BackoffSpec", None, Unset] = UNSET
    max_retries: Union[None, Unset, int] = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.backoff_spec import BackoffSpec

        policy = self.policy.value

        allow_overlap: Union[None, Unset, bool]
        if isinstance(self.allow_overlap, Unset):
            allow_overlap = UNSET
        else:
            allow_overlap = self.allow_overlap

        backoff: Union[None, Unset, dict[str, Any]]
        if isinstance(self.backoff, Unset):
            backoff = UNSET
        elif isinstance(self.backoff, BackoffSpec):
            backoff = self.backoff.to_dict()
        else:
            backoff = self.backoff

        max_retries: Union[None, Unset, int]
        if isinstance(self.max_retries, Unset):
            max_retries = UNSET
        else:
            max_retries = self.max_retries

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "policy": policy,
            }
        )
        if allow_overlap is not UNSET:
            field_dict["allow_overlap"] = allow_overlap
        if backoff is not UNSET:
            field_dict["backoff"] = backoff
        if max_retries is not UNSET:
            field_dict["max_retries"] = max_retries

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.backoff_spec import BackoffSpec

        d = dict(src_dict)
        policy = FailurePolicyKind(d.pop("policy"))

        def _parse_allow_overlap(data: object) -> Union[None, Unset, bool]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, bool], data)

        allow_overlap = _parse_allow_overlap(d.pop("allow_overlap", UNSET))

        def _parse_backoff(data: object) -> Union["BackoffSpec", None, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                backoff_type_1 = BackoffSpec.from_dict(data)

                return backoff_type_1
            except:  # noqa: E722
                pass
            return cast(Union["BackoffSpec", None, Unset], data)

        backoff = _parse_backoff(d.pop("backoff", UNSET))

        def _parse_max_retries(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        max_retries = _parse_max_retries(d.pop("max_retries", UNSET))

        failure_spec = cls(
            policy=policy,
            allow_overlap=allow_overlap,
            backoff=backoff,
            max_retries=max_retries,
        )

        return failure_spec
