from collections.abc import Mapping
from typing import Any, TypeVar, TYPE_CHECKING

from attrs import define as _attrs_define


if TYPE_CHECKING:
    from ..models.job_input import JobInput


T = TypeVar("T", bound="JobBatchInput")


@_attrs_define
class JobBatchInput:
    """`POST /api/v1/jobs/batch`: the jobs to create, each exactly a `POST /api/v1/jobs` body.

    Attributes:
        jobs (list['JobInput']): 1 to 1,000 jobs, created all or none.
    """

    jobs: list["JobInput"]

    def to_dict(self) -> dict[str, Any]:
        jobs = []
        for jobs_item_data in self.jobs:
            jobs_item = jobs_item_data.to_dict()
            jobs.append(jobs_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(
            {
                "jobs": jobs,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.job_input import JobInput

        d = dict(src_dict)
        jobs = []
        _jobs = d.pop("jobs")
        for jobs_item_data in _jobs:
            jobs_item = JobInput.from_dict(jobs_item_data)

            jobs.append(jobs_item)

        job_batch_input = cls(
            jobs=jobs,
        )

        return job_batch_input
