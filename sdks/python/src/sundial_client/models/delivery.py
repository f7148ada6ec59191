from collections.abc import Mapping
from typing import Any, TypeVar, TYPE_CHECKING

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.trigger_kind import TriggerKind
from dateutil.parser import isoparse
from typing import cast
from typing import Union
import datetime

if TYPE_CHECKING:
    from ..models.parent_ref import ParentRef
    from ..models.shard_ref import ShardRef
    from ..models.script_ref import ScriptRef
    from ..models.parent_run import ParentRun


T = TypeVar("T", bound="Delivery")


@_attrs_define
class Delivery:
    """The JSON body of a delivery (`POST` to the executor's URL).

    Attributes:
        attempt (int): This attempt's number (for a shard: the shard's attempt), from 1.
        job (str): The job's name.
        job_id (str):
        params (Any): The run's parameters (the job's, or those given when it was triggered): any JSON value.
        run_id (str):
        scheduled_at (datetime.datetime): The instant the run is for (RFC 3339, UTC).
        shard (ShardRef): Which shard of the run this delivery is (`{"index": 0, "total": 1}` for an unsharded run).
        trigger (TriggerKind): Why a run exists.
        chain_params (Union[Unset, Any]): For a run fired by a parent: the params the chain's root was triggered with
            (they are
            merged over the job's own `params`, already in `params`).
        handler (Union[None, Unset, str]): The job's handler, for executors that serve several.
        parent (Union['ParentRef', None, Unset]):
        parents (Union[None, Unset, list['ParentRun']]): For a run of a job with several parents (a fan-in), fired once
            per chain: every
            parent that had ended in the chain when it fired, with its run, state and output.
        script (Union['ScriptRef', None, Unset]):
    """

    attempt: int
    job: str
    job_id: str
    params: Any
    run_id: str
    scheduled_at: datetime.datetime
    shard: "ShardRef"
    trigger: TriggerKind
    chain_params: Union[Unset, Any] = UNSET
    handler: Union[None, Unset, str] = UNSET
    parent: Union["ParentRef", None, Unset] = UNSET
    parents: Union[None, Unset, list["ParentRun"]] = UNSET
    script: Union["ScriptRef", None, Unset] = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.parent_ref import ParentRef
        from ..models.script_ref import ScriptRef

        attempt = self.attempt

        job = self.job

        job_id = self.job_id

        params = self.params

        run_id = self.run_id

        scheduled_at = self.scheduled_at.isoformat()

        shard = self.shard.to_dict()

        trigger = self.trigger.value

        chain_params = self.chain_params

        handler: Union[None, Unset, str]
        if isinstance(self.handler, Unset):
            handler = UNSET
        else:
            handler = self.handler

        parent: Union[None, Unset, dict[str, Any]]
        if isinstance(self.parent, Unset):
            parent = UNSET
        elif isinstance(self.parent, ParentRef):
            parent = self.parent.to_dict()
        else:
            parent = self.parent

        parents: Union[None, Unset, list[dict[str, Any]]]
        if isinstance(self.parents, Unset):
            parents = UNSET
        elif isinstance(self.parents, list):
            parents = []
            for parents_type_0_item_data in self.parents:
                parents_type_0_item = parents_type_0_item_data.to_dict()
                parents.append(parents_type_0_item)

        else:
            parents = self.parents

        script: Union[None, Unset, dict[str, Any]]
        if isinstance(self.script, Unset):
            script = UNSET
        elif isinstance(self.script, ScriptRef):
            script = self.script.to_dict()
        else:
            script = self.script

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "job": job,
                "job_id": job_id,
                "params": params,
                "run_id": run_id,
                "scheduled_at": scheduled_at,
                "shard": shard,
                "trigger": trigger,
            }
        )
        if chain_params is not UNSET:
            field_dict["chain_params"] = chain_params
        if handler is not UNSET:
            field_dict["handler"] = handler
        if parent is not UNSET:
            field_dict["parent"] = parent
        if parents is not UNSET:
            field_dict["parents"] = parents
        if script is not UNSET:
            field_dict["script"] = script

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.parent_ref import ParentRef
        from ..models.shard_ref import ShardRef
        from ..models.script_ref import ScriptRef
        from ..models.parent_run import ParentRun

        d = dict(src_dict)
        attempt = d.pop("attempt")

        job = d.pop("job")

        job_id = d.pop("job_id")

        params = d.pop("params")

        run_id = d.pop("run_id")

        scheduled_at = isoparse(d.pop("scheduled_at"))

        shard = ShardRef.from_dict(d.pop("shard"))

        trigger = TriggerKind(d.pop("trigger"))

        chain_params = d.pop("chain_params", UNSET)

        def _parse_handler(data: object) -> Union[None, Unset, str]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, str], data)

        handler = _parse_handler(d.pop("handler", UNSET))

        def _parse_parent(data: object) -> Union["ParentRef", None, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                parent_type_1 = ParentRef.from_dict(data)

                return parent_type_1
            except:  # noqa: E722
                pass
            return cast(Union["ParentRef", None, Unset], data)

        parent = _parse_parent(d.pop("parent", UNSET))

        def _parse_parents(data: object) -> Union[None, Unset, list["ParentRun"]]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                parents_type_0 = []
                _parents_type_0 = data
                for parents_type_0_item_data in _parents_type_0:
                    parents_type_0_item = ParentRun.from_dict(parents_type_0_item_data)

                    parents_type_0.append(parents_type_0_item)

                return parents_type_0
            except:  # noqa: E722
                pass
            return cast(Union[None, Unset, list["ParentRun"]], data)

        parents = _parse_parents(d.pop("parents", UNSET))

        def _parse_script(data: object) -> Union["ScriptRef", None, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                script_type_1 = ScriptRef.from_dict(data)

                return script_type_1
            except:  # noqa: E722
                pass
            return cast(Union["ScriptRef", None, Unset], data)

        script = _parse_script(d.pop("script", UNSET))

        delivery = cls(
            attempt=attempt,
            job=job,
            job_id=job_id,
            params=params,
            run_id=run_id,
            scheduled_at=scheduled_at,
            shard=shard,
            trigger=trigger,
            chain_params=chain_params,
            handler=handler,
            parent=parent,
            parents=parents,
            script=script,
        )

        delivery.additional_properties = d
        return delivery

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
