//! `GET /api/v1/chains/{chain_id}`: one view of a whole chain. Its runs (the root and every
//! run fired down from it) and, for each run, each edge of its job: which run it fired, or
//! why it did not (yet).

use std::collections::HashMap;

use axum::extract::{Path, State};
use serde::Serialize;
use serde_json::Value;
use sundial_core::time::rfc3339_utc;
use sundial_core::types::{EdgeCondition, JobState, RunState, TriggerKind};
use sundial_store::{ChainEdge, ChainJob, ChainView, Run};
use utoipa::ToSchema;

use crate::auth::TenantCaller;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::state::AppState;

/// The most runs a chain's view shows.
const CHAIN_MAX: i64 = 1000;

/// A chain: its runs and the edges between them.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "chain_id": "run_01JDX2V6Q8K3M4N5P6R7S8T9V0",
    "state": "done",
    "params": {"day": "2026-11-25"},
    "runs": [
        {"run_id": "run_01JDX2V6Q8K3M4N5P6R7S8T9V0", "job_id": "job_01JDX2A", "job": "extract", "state": "succeeded",
         "attempt": 1, "trigger": "api", "fire_key": "run_01JDX2V6Q8K3M4N5P6R7S8T9V0", "scheduled_at": "2026-11-25T02:00:00.000Z",
         "started_at": "2026-11-25T02:00:00.004Z", "finished_at": "2026-11-25T02:00:00.020Z", "reason": null, "message": null,
         "parent_run_ids": [], "output": {"rows": 120}},
        {"run_id": "run_01JDX2V6R0", "job_id": "job_01JDX2D", "job": "load", "state": "succeeded", "attempt": 1,
         "trigger": "parent", "fire_key": "p:run_01JDX2V6Q8K3M4N5P6R7S8T9V0", "scheduled_at": "2026-11-25T02:00:00.051Z",
         "started_at": "2026-11-25T02:00:00.053Z", "finished_at": "2026-11-25T02:00:00.070Z", "reason": null, "message": null,
         "parent_run_ids": ["run_01JDX2V6Q9", "run_01JDX2V6QA"], "output": {"loaded": 240}}
    ],
    "edges": [
        {"from_job": "job_01JDX2A", "from_run": "run_01JDX2V6Q8K3M4N5P6R7S8T9V0", "to_job": "job_01JDX2C", "on": "on_failure",
         "status": "not_fired", "to_run": null, "reason": "condition_not_met",
         "detail": "the edge fires on_failure; the parent run ended `succeeded`"}
    ],
    "jobs": [{"id": "job_01JDX2A", "name": "extract", "state": "active", "wait": "all", "parents": 0}]
}))]
pub struct ChainOut {
    /// The root run's id.
    pub chain_id: String,
    /// `running` while a run of the chain is not final, else `done`.
    pub state: ChainState,
    /// The params the root was triggered with: merged over each child job's own params.
    #[schema(value_type = Option<Object>)]
    pub params: Option<Value>,
    /// Oldest first, the root first.
    pub runs: Vec<ChainRunOut>,
    /// For each run, each child edge of its job.
    pub edges: Vec<ChainLinkOut>,
    /// The jobs of the runs and the jobs their edges lead to.
    pub jobs: Vec<ChainJobOut>,
}

/// A job of a chain's view.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChainJobOut {
    pub id: String,
    pub name: String,
    pub state: JobState,
    /// For a job with several parents: `all` or `any`.
    pub wait: sundial_core::types::WaitFor,
    /// How many parent jobs it has (more than one: a fan-in).
    pub parents: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChainState {
    Running,
    Done,
}

/// A run of a chain.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChainRunOut {
    pub run_id: String,
    pub job_id: String,
    /// The job's name (absent if the job was deleted since).
    pub job: Option<String>,
    pub state: RunState,
    pub attempt: i64,
    pub trigger: TriggerKind,
    /// `p:<parent run id>` for a child with one parent, `p:<chain id>` for a fan-in.
    pub fire_key: String,
    pub scheduled_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub reason: Option<String>,
    /// For a `skipped` fan-in: why.
    pub message: Option<String>,
    /// The parent runs it was fired after (one, or a fan-in's several); empty for the root.
    pub parent_run_ids: Vec<String>,
    #[schema(value_type = Option<Object>)]
    pub output: Option<Value>,
}

/// An edge from a run's job to a child job, in this chain.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChainLinkOut {
    pub from_job: String,
    pub from_run: String,
    pub to_job: String,
    pub on: EdgeCondition,
    pub status: LinkStatus,
    /// The child run it fired (or the fan-in's run, `skipped` or decided without it).
    pub to_run: Option<String>,
    /// Why it did not fire: `parent_running`, `condition_not_met`, `child_job_stopped`,
    /// `waiting_for_parents`, `decided_without_it`, `edge_added_later`, `unknown`.
    pub reason: Option<String>,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LinkStatus {
    /// It fired `to_run`.
    Fired,
    /// The fan-in it leads to was recorded `skipped` (`to_run`).
    Skipped,
    /// The fan-in it leads to waits for other parents.
    Waiting,
    /// It did not fire (`reason`).
    NotFired,
}

/// The tree of a chain (viewer): its runs with state, attempt and timings, the edge that
/// fired each, and the edges that did not fire and why (condition not met, parent still
/// running, child job stopped, a fan-in waiting for its other parents).
#[utoipa::path(get, path = "/api/v1/chains/{chain_id}", operation_id = "get_chain", tag = "runs",
    params(("chain_id" = String, Path, description = "The chain's id: its root run's id")),
    responses((status = 200, body = ChainOut), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(chain_id): Path<String>,
) -> ApiResult<axum::Json<ChainOut>> {
    let view = st
        .store
        .chain_view(&caller.tenant_id, &chain_id, CHAIN_MAX)
        .await?
        .ok_or_else(|| ApiError::not_found("chain"))?;
    Ok(axum::Json(tree(&chain_id, view)))
}

fn parent_run_ids(r: &Run) -> Vec<String> {
    if let Some(p) = &r.parent_run_id {
        return vec![p.clone()];
    }
    r.parents
        .as_ref()
        .and_then(Value::as_array)
        .map(|ps| ps.iter().filter_map(|p| p.get("run_id").and_then(Value::as_str).map(String::from)).collect())
        .unwrap_or_default()
}

/// Assemble the view: a pure function of what the store read.
pub fn tree(chain_id: &str, view: ChainView) -> ChainOut {
    let jobs: HashMap<&str, &ChainJob> = view.jobs.iter().map(|j| (j.id.as_str(), j)).collect();
    let fan_in_key = format!("p:{chain_id}");
    let mut edges = Vec::new();
    for x in &view.runs {
        for e in view.edges.iter().filter(|e| e.parent_job_id == x.job_id) {
            let Some(y) = jobs.get(e.child_job_id.as_str()) else { continue };
            edges.push(edge_link(&view, &fan_in_key, x, e, y));
        }
    }
    let params = view.runs.iter().find(|r| r.id == chain_id).and_then(|r| r.params.clone());
    let state = if view.runs.iter().all(|r| r.state.is_terminal()) { ChainState::Done } else { ChainState::Running };
    let runs = view
        .runs
        .into_iter()
        .map(|r| ChainRunOut {
            parent_run_ids: parent_run_ids(&r),
            job: jobs.get(r.job_id.as_str()).map(|j| j.name.clone()),
            run_id: r.id,
            job_id: r.job_id,
            state: r.state,
            attempt: r.attempt,
            trigger: r.trigger,
            fire_key: r.fire_key,
            scheduled_at: rfc3339_utc(r.scheduled_at_ms),
            started_at: r.started_at_ms.map(rfc3339_utc),
            finished_at: r.finished_at_ms.map(rfc3339_utc),
            reason: r.reason,
            message: r.message,
            output: r.output,
        })
        .collect();
    let jobs = view
        .jobs
        .iter()
        .map(|j| ChainJobOut {
            id: j.id.clone(),
            name: j.name.clone(),
            state: j.state,
            wait: j.wait,
            parents: j.parents,
        })
        .collect();
    ChainOut { chain_id: chain_id.to_string(), state, params, runs, edges, jobs }
}

/// What became of the edge `e` from run `x` to the child job `y`: fired, skipped, waiting,
/// or not fired and why.
fn edge_link(view: &ChainView, fan_in_key: &str, x: &Run, e: &ChainEdge, y: &ChainJob) -> ChainLinkOut {
    let link = |status, to_run: Option<&str>, reason: Option<&str>, detail: Option<String>| ChainLinkOut {
        from_job: x.job_id.clone(),
        from_run: x.id.clone(),
        to_job: e.child_job_id.clone(),
        on: e.on,
        status,
        to_run: to_run.map(String::from),
        reason: reason.map(String::from),
        detail,
    };
    // Why an edge from `x` did not fire, if the reason is on `x`'s or the child job's side.
    let plain_reason = || -> Option<(&'static str, String)> {
        if !x.state.is_terminal() {
            return Some(("parent_running", format!("the parent run is `{}`", x.state.as_str())));
        }
        if !e.on.fires_on(x.state) {
            return Some((
                "condition_not_met",
                format!("the edge fires {}; the parent run ended `{}`", e.on.as_str(), x.state.as_str()),
            ));
        }
        if y.state != JobState::Active {
            return Some(("child_job_stopped", "the child job is stopped".to_string()));
        }
        None
    };
    let after_the_parent = || {
        x.finished_at_ms
            .is_some_and(|f| e.created_at_ms > f)
            .then_some(("edge_added_later", "the edge was added after the parent run ended".to_string()))
    };
    if y.parents <= 1 {
        let fired = view.runs.iter().find(|r| r.job_id == e.child_job_id && r.parent_run_id.as_deref() == Some(&x.id));
        return match fired {
            Some(c) => link(LinkStatus::Fired, Some(&c.id), None, None),
            None => {
                let (reason, detail) = plain_reason()
                    .or_else(after_the_parent)
                    .unwrap_or(("unknown", "no run of the child job was fired for this parent run".to_string()));
                link(LinkStatus::NotFired, None, Some(reason), Some(detail))
            }
        };
    }
    let decided = view.runs.iter().find(|r| r.job_id == e.child_job_id && r.fire_key == fan_in_key);
    let join = view.joins.iter().find(|j| j.child_job_id == e.child_job_id);
    match decided {
        Some(r) if parent_run_ids(r).contains(&x.id) => {
            if r.state == RunState::Skipped {
                link(LinkStatus::Skipped, Some(&r.id), None, r.message.clone())
            } else {
                link(LinkStatus::Fired, Some(&r.id), None, None)
            }
        }
        Some(r) => {
            let (reason, detail) = plain_reason().filter(|(r, _)| *r == "parent_running").unwrap_or((
                "decided_without_it",
                format!("the fan-in was decided (`{}`) before this parent ended", r.state.as_str()),
            ));
            link(LinkStatus::NotFired, Some(&r.id), Some(reason), Some(detail))
        }
        None => match plain_reason() {
            Some((reason, detail)) => link(LinkStatus::NotFired, None, Some(reason), Some(detail)),
            None => {
                let arrived: Vec<&str> =
                    join.map(|j| j.arrivals.iter().map(|a| a.parent_job_id.as_str()).collect()).unwrap_or_default();
                if arrived.contains(&x.job_id.as_str()) {
                    let wait = y.wait.as_str();
                    link(
                        LinkStatus::Waiting,
                        None,
                        Some("waiting_for_parents"),
                        Some(format!(
                            "waits for {wait} of its {} parents; ended in this chain: {}",
                            y.parents,
                            arrived.join(", ")
                        )),
                    )
                } else {
                    let (reason, detail) = after_the_parent()
                        .unwrap_or(("unknown", "this parent run has not reached the fan-in".to_string()));
                    link(LinkStatus::NotFired, None, Some(reason), Some(detail))
                }
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sundial_core::types::WaitFor;
    use sundial_store::{ChainArrival, ChainEdge, ChainJoin};

    fn run(id: &str, job: &str, state: RunState, parent: Option<&str>) -> Run {
        let mut r = Run::pending("ten_1", job, 1, format!("p:{}", parent.unwrap_or(id)), TriggerKind::Parent, 0, 0);
        r.id = id.into();
        r.state = state;
        r.parent_run_id = parent.map(String::from);
        r.finished_at_ms = state.is_terminal().then_some(10);
        r
    }

    fn job(id: &str, state: JobState, parents: i64) -> ChainJob {
        ChainJob { id: id.into(), name: format!("{id}-name"), state, wait: WaitFor::All, parents }
    }

    fn edge(from: &str, to: &str, on: EdgeCondition) -> ChainEdge {
        ChainEdge { parent_job_id: from.into(), child_job_id: to.into(), on, created_at_ms: 0 }
    }

    /// Every way an edge can stand: fired, condition not met, child job stopped, parent still
    /// running, a fan-in waiting for its other parents, one recorded skipped.
    #[test]
    fn each_edge_says_what_it_did_or_why_not() {
        use EdgeCondition::*;
        let mut root = run("r", "a", RunState::Succeeded, None);
        root.trigger = TriggerKind::Manual;
        root.params = Some(serde_json::json!({"day": 1}));
        let view = ChainView {
            runs: vec![
                root,
                run("rb", "b", RunState::Succeeded, Some("r")),
                run("rc", "c", RunState::Running, Some("r")),
            ],
            jobs: vec![
                job("a", JobState::Active, 0),
                job("b", JobState::Active, 1),
                job("c", JobState::Active, 1),
                job("cleanup", JobState::Active, 1),
                job("paused", JobState::Stopped, 1),
                job("d", JobState::Active, 2),
                job("e", JobState::Active, 1),
            ],
            edges: vec![
                edge("a", "b", OnSuccess),
                edge("a", "c", Always),
                edge("a", "cleanup", OnFailure),
                edge("a", "paused", OnSuccess),
                edge("b", "d", OnSuccess),
                edge("c", "d", OnSuccess),
                edge("c", "e", OnSuccess),
            ],
            joins: vec![ChainJoin {
                child_job_id: "d".into(),
                arrivals: vec![ChainArrival {
                    parent_job_id: "b".into(),
                    run_id: Some("rb".into()),
                    holds: true,
                    reason: None,
                }],
                run_id: None,
            }],
        };
        let out = tree("r", view);
        assert_eq!(out.state, ChainState::Running);
        assert_eq!(out.params, Some(serde_json::json!({"day": 1})));
        let link = |from: &str, to: &str| out.edges.iter().find(|e| e.from_job == from && e.to_job == to).unwrap();
        assert_eq!((link("a", "b").status, link("a", "b").to_run.as_deref()), (LinkStatus::Fired, Some("rb")));
        assert_eq!(link("a", "c").status, LinkStatus::Fired);
        assert_eq!(link("a", "cleanup").reason.as_deref(), Some("condition_not_met"));
        assert_eq!(link("a", "paused").reason.as_deref(), Some("child_job_stopped"));
        assert_eq!(
            (link("b", "d").status, link("b", "d").reason.as_deref()),
            (LinkStatus::Waiting, Some("waiting_for_parents"))
        );
        assert_eq!(link("c", "d").reason.as_deref(), Some("parent_running"));
        assert_eq!(link("c", "e").reason.as_deref(), Some("parent_running"));
        assert_eq!(out.runs[1].parent_run_ids, ["r"]);
        assert_eq!(out.runs[0].job.as_deref(), Some("a-name"));

        // The fan-in decided: skipped because `c` failed.
        let mut view2 = ChainView {
            runs: vec![],
            jobs: vec![job("a", JobState::Active, 0), job("d", JobState::Active, 2)],
            edges: vec![edge("a", "d", OnSuccess)],
            joins: vec![],
        };
        let mut root = run("r", "a", RunState::Failed, None);
        root.trigger = TriggerKind::Manual;
        let mut skipped = run("rd", "d", RunState::Skipped, None);
        skipped.fire_key = "p:r".into();
        skipped.parents = Some(serde_json::json!([{"job_id": "a", "run_id": "r", "state": "failed", "output": null}]));
        skipped.message = Some("waits for all parents, and `a` did not fire it".into());
        view2.runs = vec![root, skipped];
        let out = tree("r", view2);
        assert_eq!(out.state, ChainState::Done);
        let e = &out.edges[0];
        assert_eq!((e.status, e.to_run.as_deref()), (LinkStatus::Skipped, Some("rd")));
        assert!(e.detail.as_deref().unwrap().contains("did not fire it"));
    }
}
