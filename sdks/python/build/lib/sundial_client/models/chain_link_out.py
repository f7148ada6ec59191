from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.edge_condition import EdgeCondition
from ..models.link_status import LinkStatus
from typing import cast, Union


T = TypeVar("T", bound="ChainLinkOut")


@_attrs_define
class ChainLinkOut:
    """An edge from a run's job to a child job, in this chain.

    Attributes:
        from_job (str):
        from_run (str):
        on (EdgeCondition): When a child edge fires: the parent run `succeeded` (`on_success`, the default), it
            `failed` for good (`on_failure`: retries exhausted), or either (`always`; never for a
            `cancelled` parent).
        status (LinkStatus):
        to_job (str):
        detail (Union[None, Unset, str]):
        reason (Union[None, Unset, str]): Why it did not fire: `parent_running`, `condition_not_met`,
            `child_job_stopped`,
            `waiting_for_parents`, `decided_without_it`, `edge_added_later`, `unknown`.
        to_run (Union[None, Unset, str]): The child run it fired (or the fan-in's run, `skipped` or decided without it).
    """

    from_job: str
    from_run: str
    on: EdgeCondition
    status: LinkStatus
    to_job: str
    detail: Union[None, Unset, str] = UNSET
    reason: Union[None, Unset, str] = UNSET
    to_run: Union[None, Unset, str] = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from_job = self.from_job

        from_run = self.from_run

        on = self.on.value

        status = self.status.value

        to_job = self.to_job

        detail: Union[None, Unset, str]
        if isinstance(self.detail, Unset):
            detail = UNSET
        else:
            detail = self.detail

        reason: Union[None, Unset, str]
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        to_run: Union[None, Unset, str]
        if isinstance(self.to_run, Unset):
            to_run = UNSET
        else:
            to_run = self.to_run

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "from_job": from_job,
                "from_run": from_run,
                "on": on,
                "status": status,
                "to_job": to_job,
            }
        )
        if detail is not UNSET:
            field_dict["detail"] = detail
        if reason is not UNSET:
            field_dict["reason"] = reason
        if to_run is not UNSET:
            field_dict["to_run"] = to_run

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        from_job = d.pop("from_job")

        from_run = d.pop("from_run")

        on = EdgeCondition(d.pop("on"))

        status = LinkStatus(d.pop("status"))

        to_job = d.pop("to_job")

        def _parse_detail(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        detail = _parse_detail(d.pop("detail", UNSET))

        def _parse_reason(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        reason = _parse_reason(d.pop("reason", UNSET))

        def _parse_to_run(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        to_run = _parse_to_run(d.pop("to_run", UNSET))

        chain_link_out = cls(
            from_job=from_job,
            from_run=from_run,
            on=on,
            status=status,
            to_job=to_job,
            detail=detail,
            reason=reason,
            to_run=to_run,
        )

        chain_link_out.additional_properties = d
        return chain_link_out

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
