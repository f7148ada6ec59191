from collections.abc import Mapping
from typing import Any, TypeVar, TYPE_CHECKING

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.chain_state import ChainState
from typing import cast
from typing import Union

if TYPE_CHECKING:
    from ..models.chain_link_out import ChainLinkOut
    from ..models.chain_job_out import ChainJobOut
    from ..models.chain_run_out import ChainRunOut
    from ..models.chain_out_params_type_0 import ChainOutParamsType0


T = TypeVar("T", bound="ChainOut")


@_attrs_define
class ChainOut:
    """A chain: its runs and the edges between them.

    Example:
        {'chain_id': 'run_01JDX2V6Q8K3M4N5P6R7S8T9V0', 'edges': [{'detail': 'the edge fires on_failure; the parent run
            ended `succeeded`', 'from_job': 'job_01JDX2A', 'from_run': 'run_01JDX2V6Q8K3M4N5P6R7S8T9V0', 'on': 'on_failure',
            'reason': 'condition_not_met', 'status': 'not_fired', 'to_job': 'job_01JDX2C', 'to_run': None}], 'jobs': [{'id':
            'job_01JDX2A', 'name': 'extract', 'parents': 0, 'state': 'active', 'wait': 'all'}], 'params': {'day':
            '2026-11-25'}, 'runs': [{'attempt': 1, 'finished_at': '2026-11-25T02:00:00.020Z', 'fire_key':
            'run_01JDX2V6Q8K3M4N5P6R7S8T9V0', 'job': 'extract', 'job_id': 'job_01JDX2A', 'message': None, 'output': {'rows':
            120}, 'parent_run_ids': [], 'reason': None, 'run_id': 'run_01JDX2V6Q8K3M4N5P6R7S8T9V0', 'scheduled_at':
            '2026-11-25T02:00:00.000Z', 'started_at': '2026-11-25T02:00:00.004Z', 'state': 'succeeded', 'trigger': 'api'},
            {'attempt': 1, 'finished_at': '2026-11-25T02:00:00.070Z', 'fire_key': 'p:run_01JDX2V6Q8K3M4N5P6R7S8T9V0', 'job':
            'load', 'job_id': 'job_01JDX2D', 'message': None, 'output': {'loaded': 240}, 'parent_run_ids':
            ['run_01JDX2V6Q9', 'run_01JDX2V6QA'], 'reason': None, 'run_id': 'run_01JDX2V6R0', 'scheduled_at':
            '2026-11-25T02:00:00.051Z', 'started_at': '2026-11-25T02:00:00.053Z', 'state': 'succeeded', 'trigger':
            'parent'}], 'state': 'done'}

    Attributes:
        chain_id (str): The root run's id.
        edges (list['ChainLinkOut']): For each run, each child edge of its job.
        jobs (list['ChainJobOut']): The jobs of the runs and the jobs their edges lead to.
        runs (list['ChainRunOut']): Oldest first, the root first.
        state (ChainState):
        params (Union['ChainOutParamsType0', None, Unset]): The params the root was triggered with: merged over each
            child job's own params.
    """

    chain_id: str
    edges: list["ChainLinkOut"]
    jobs: list["ChainJobOut"]
    runs: list["ChainRunOut"]
    state: ChainState
    params: Union["ChainOutParamsType0", None, Unset] = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.chain_out_params_type_0 import ChainOutParamsType0

        chain_id = self.chain_id

        edges = []
        for edges_item_data in self.edges:
            edges_item = edges_item_data.to_dict()
            edges.append(edges_item)

        jobs = []
        for jobs_item_data in self.jobs:
            jobs_item = jobs_item_data.to_dict()
            jobs.append(jobs_item)

        runs = []
        for runs_item_data in self.runs:
            runs_item = runs_item_data.to_dict()
            runs.append(runs_item)

        state = self.state.value

        params: Union[None, Unset, dict[str, Any]]
        if isinstance(self.params, Unset):
            params = UNSET
        elif isinstance(self.params, ChainOutParamsType0):
            params = self.params.to_dict()
        else:
            params = self.params

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "chain_id": chain_id,
                "edges": edges,
                "jobs": jobs,
                "runs": runs,
                "state": state,
            }
        )
        if params is not UNSET:
            field_dict["params"] = params

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.chain_link_out import ChainLinkOut
        from ..models.chain_job_out import ChainJobOut
        from ..models.chain_run_out import ChainRunOut
        from ..models.chain_out_params_type_0 import ChainOutParamsType0

        d = dict(src_dict)
        chain_id = d.pop("chain_id")

        edges = []
        _edges = d.pop("edges")
        for edges_item_data in _edges:
            edges_item = ChainLinkOut.from_dict(edges_item_data)

            edges.append(edges_item)

        jobs = []
        _jobs = d.pop("jobs")
        for jobs_item_data in _jobs:
            jobs_item = ChainJobOut.from_dict(jobs_item_data)

            jobs.append(jobs_item)

        runs = []
        _runs = d.pop("runs")
        for runs_item_data in _runs:
            runs_item = ChainRunOut.from_dict(runs_item_data)

            runs.append(runs_item)

        state = ChainState(d.pop("state"))

        def _parse_params(data: object) -> Union["ChainOutParamsType0", None, Unset]:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                params_type_0 = ChainOutParamsType0.from_dict(data)

                return params_type_0
            except:  # noqa: E722
                pass
            return cast(Union["ChainOutParamsType0", None, Unset], data)

        params = _parse_params(d.pop("params", UNSET))

        chain_out = cls(
            chain_id=chain_id,
            edges=edges,
            jobs=jobs,
            runs=runs,
            state=state,
            params=params,
        )

        chain_out.additional_properties = d
        return chain_out

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
