from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field


from dateutil.parser import isoparse
import datetime


T = TypeVar("T", bound="NodeOut")


@_attrs_define
class NodeOut:
    """A node of the cluster as the database last saw it.

    Attributes:
        address (str):
        backlog (int): Runs in its timer already past their instant at its last heartbeat: work it is behind on.
        buckets (int): Job affinity: how many of the 64 job buckets it owns in the ring of the alive
            nodes listed here (0 unless alive). It claims its buckets' fires ahead of time;
            other nodes take them only once they are overdue past a short grace.
        claimed (int): Runs waiting in its timer at its last heartbeat.
        heartbeat_at (datetime.datetime):
        id (str):
        lateness_ms (int): How late its deliveries went out lately: the worst lateness (ms past the fire's
            instant) over its last heartbeat interval (about 3 s). 0 when on time or idle.
        misfired (int): Fires it expired by their misfire policy over its last heartbeat interval.
        started_at (datetime.datetime):
        state (str): `alive` (heartbeat within 10 s), `dead` (silent; its claims were recovered) or `left` (shut down).
        version (str):
    """

    address: str
    backlog: int
    buckets: int
    claimed: int
    heartbeat_at: datetime.datetime
    id: str
    lateness_ms: int
    misfired: int
    started_at: datetime.datetime
    state: str
    version: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        address = self.address

        backlog = self.backlog

        buckets = self.buckets

        claimed = self.claimed

        heartbeat_at = self.heartbeat_at.isoformat()

        id = self.id

        lateness_ms = self.lateness_ms

        misfired = self.misfired

        started_at = self.started_at.isoformat()

        state = self.state

        version = self.version

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "address": address,
                "backlog": backlog,
                "buckets": buckets,
                "claimed": claimed,
                "heartbeat_at": heartbeat_at,
                "id": id,
                "lateness_ms": lateness_ms,
                "misfired": misfired,
                "started_at": started_at,
                "state": state,
                "version": version,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        address = d.pop("address")

        backlog = d.pop("backlog")

        buckets = d.pop("buckets")

        claimed = d.pop("claimed")

        heartbeat_at = isoparse(d.pop("heartbeat_at"))

        id = d.pop("id")

        lateness_ms = d.pop("lateness_ms")

        misfired = d.pop("misfired")

        started_at = isoparse(d.pop("started_at"))

        state = d.pop("state")

        version = d.pop("version")

        node_out = cls(
            address=address,
            backlog=backlog,
            buckets=buckets,
            claimed=claimed,
            heartbeat_at=heartbeat_at,
            id=id,
            lateness_ms=lateness_ms,
            misfired=misfired,
            started_at=started_at,
            state=state,
            version=version,
        )

        node_out.additional_properties = d
        return node_out

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
