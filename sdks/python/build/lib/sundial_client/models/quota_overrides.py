from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

from typing import cast, Union


T = TypeVar("T", bound="QuotaOverrides")


@_attrs_define
class QuotaOverrides:
    """The operator's settings for one tenant: `None` follows the node's default.

    Attributes:
        max_api_requests_per_second (Union[None, Unset, int]):
        max_fires_per_second (Union[None, Unset, int]):
        max_handlers_per_app (Union[None, Unset, int]):
        max_inflight (Union[None, Unset, int]):
        max_jobs (Union[None, Unset, int]):
        max_log_bytes_per_day (Union[None, Unset, int]):
        max_log_bytes_per_run (Union[None, Unset, int]):
        max_script_bytes (Union[None, Unset, int]):
        max_scripts (Union[None, Unset, int]):
    """

    max_api_requests_per_second: Union[None, Unset, int] = UNSET
    max_fires_per_second: Union[None, Unset, int] = UNSET
    max_handlers_per_app: Union[None, Unset, int] = UNSET
    max_inflight: Union[None, Unset, int] = UNSET
    max_jobs: Union[None, Unset, int] = UNSET
    max_log_bytes_per_day: Union[None, Unset, int] = UNSET
    max_log_bytes_per_run: Union[None, Unset, int] = UNSET
    max_script_bytes: Union[None, Unset, int] = UNSET
    max_scripts: Union[None, Unset, int] = UNSET

    def to_dict(self) -> dict[str, Any]:
        max_api_requests_per_second: Union[None, Unset, int]
        if isinstance(self.max_api_requests_per_second, Unset):
            max_api_requests_per_second = UNSET
        else:
            max_api_requests_per_second = self.max_api_requests_per_second

        max_fires_per_second: Union[None, Unset, int]
        if isinstance(self.max_fires_per_second, Unset):
            max_fires_per_second = UNSET
        else:
            max_fires_per_second = self.max_fires_per_second

        max_handlers_per_app: Union[None, Unset, int]
        if isinstance(self.max_handlers_per_app, Unset):
            max_handlers_per_app = UNSET
        else:
            max_handlers_per_app = self.max_handlers_per_app

        max_inflight: Union[None, Unset, int]
        if isinstance(self.max_inflight, Unset):
            max_inflight = UNSET
        else:
            max_inflight = self.max_inflight

        max_jobs: Union[None, Unset, int]
        if isinstance(self.max_jobs, Unset):
            max_jobs = UNSET
        else:
            max_jobs = self.max_jobs

        max_log_bytes_per_day: Union[None, Unset, int]
        if isinstance(self.max_log_bytes_per_day, Unset):
            max_log_bytes_per_day = UNSET
        else:
            max_log_bytes_per_day = self.max_log_bytes_per_day

        max_log_bytes_per_run: Union[None, Unset, int]
        if isinstance(self.max_log_bytes_per_run, Unset):
            max_log_bytes_per_run = UNSET
        else:
            max_log_bytes_per_run = self.max_log_bytes_per_run

        max_script_bytes: Union[None, Unset, int]
        if isinstance(self.max_script_bytes, Unset):
            max_script_bytes = UNSET
        else:
            max_script_bytes = self.max_script_bytes

        max_scripts: Union[None, Unset, int]
        if isinstance(self.max_scripts, Unset):
            max_scripts = UNSET
        else:
            max_scripts = self.max_scripts

        field_dict: dict[str, Any] = {}
        field_dict.update({})
        if max_api_requests_per_second is not UNSET:
            field_dict["max_api_requests_per_second"] = max_api_requests_per_second
        if max_fires_per_second is not UNSET:
            field_dict["max_fires_per_second"] = max_fires_per_second
        if max_handlers_per_app is not UNSET:
            field_dict["max_handlers_per_app"] = max_handlers_per_app
        if max_inflight is not UNSET:
            field_dict["max_inflight"] = max_inflight
        if max_jobs is not UNSET:
            field_dict["max_jobs"] = max_jobs
        if max_log_bytes_per_day is not UNSET:
            field_dict["max_log_bytes_per_day"] = max_log_bytes_per_day
        if max_log_bytes_per_run is not UNSET:
            field_dict["max_log_bytes_per_run"] = max_log_bytes_per_run
        if max_script_bytes is not UNSET:
            field_dict["max_script_bytes"] = max_script_bytes
        if max_scripts is not UNSET:
            field_dict["max_scripts"] = max_scripts

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_max_api_requests_per_second(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        max_api_requests_per_second = _parse_max_api_requests_per_second(
            d.pop("max_api_requests_per_second", UNSET)
        )

        def _parse_max_fires_per_second(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        max_fires_per_second = _parse_max_fires_per_second(
            d.pop("max_fires_per_second", UNSET)
        )

        def _parse_max_handlers_per_app(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        max_handlers_per_app = _parse_max_handlers_per_app(
            d.pop("max_handlers_per_app", UNSET)
        )

        def _parse_max_inflight(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        max_inflight = _parse_max_inflight(d.pop("max_inflight", UNSET))

        def _parse_max_jobs(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        max_jobs = _parse_max_jobs(d.pop("max_jobs", UNSET))

        def _parse_max_log_bytes_per_day(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        max_log_bytes_per_day = _parse_max_log_bytes_per_day(
            d.pop("max_log_bytes_per_day", UNSET)
        )

        def _parse_max_log_bytes_per_run(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        max_log_bytes_per_run = _parse_max_log_bytes_per_run(
            d.pop("max_log_bytes_per_run", UNSET)
        )

        def _parse_max_script_bytes(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        max_script_bytes = _parse_max_script_bytes(d.pop("max_script_bytes", UNSET))

        def _parse_max_scripts(data: object) -> Union[None, Unset, int]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(Union[None, Unset, int], data)

        max_scripts = _parse_max_scripts(d.pop("max_scripts", UNSET))

        quota_overrides = cls(
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

        return quota_overrides
