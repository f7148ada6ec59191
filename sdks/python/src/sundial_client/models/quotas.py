from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field


T = TypeVar("T", bound="Quotas")


@_attrs_define
class Quotas:
    """A tenant's limits, every one set: the node's defaults with the operator's overrides.

    Attributes:
        max_api_requests_per_second (int):
        max_fires_per_second (int): Whole fires per second.
        max_handlers_per_app (int):
        max_inflight (int):
        max_jobs (int):
        max_log_bytes_per_day (int):
        max_log_bytes_per_run (int):
        max_script_bytes (int):
        max_scripts (int):
    """

    max_api_requests_per_second: int
    max_fires_per_second: int
    max_handlers_per_app: int
    max_inflight: int
    max_jobs: int
    max_log_bytes_per_day: int
    max_log_bytes_per_run: int
    max_script_bytes: int
    max_scripts: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        max_api_requests_per_second = self.max_api_requests_per_second

        max_fires_per_second = self.max_fires_per_second

        max_handlers_per_app = self.max_handlers_per_app

        max_inflight = self.max_inflight

        max_jobs = self.max_jobs

        max_log_bytes_per_day = self.max_log_bytes_per_day

        max_log_bytes_per_run = self.max_log_bytes_per_run

        max_script_bytes = self.max_script_bytes

        max_scripts = self.max_scripts

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "max_api_requests_per_second": max_api_requests_per_second,
                "max_fires_per_second": max_fires_per_second,
                "max_handlers_per_app": max_handlers_per_app,
                "max_inflight": max_inflight,
                "max_jobs": max_jobs,
                "max_log_bytes_per_day": max_log_bytes_per_day,
                "max_log_bytes_per_run": max_log_bytes_per_run,
                "max_script_bytes": max_script_bytes,
                "max_scripts": max_scripts,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        max_api_requests_per_second = d.pop("max_api_requests_per_second")

        max_fires_per_second = d.pop("max_fires_per_second")

        max_handlers_per_app = d.pop("max_handlers_per_app")

        max_inflight = d.pop("max_inflight")

        max_jobs = d.pop("max_jobs")

        max_log_bytes_per_day = d.pop("max_log_bytes_per_day")

        max_log_bytes_per_run = d.pop("max_log_bytes_per_run")

        max_script_bytes = d.pop("max_script_bytes")

        max_scripts = d.pop("max_scripts")

        quotas = cls(
            max_api_requests_per_second=max_api_requests_per_second,
            max_fires_per_second=max_fires_per_second,
            max_handlers_per_app=max_handlers_per_app,
            max_inflight=max_inflight,
            max_jobs=max_jobs,
            max_log_bytes_per_day=max_log_bytes_per_day,
            max_log_bytes_per_run=max_log_bytes_per_run,
            max_script_bytes=max_script_bytes,
            max_scripts=max_scripts,
        )

        quotas.additional_properties = d
        return quotas

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
