//! What an attempt of a job runs ([`Work`]: a handler, or a script version picked per
//! attempt) and where it may go (its candidates): shared by plain deliveries
//! (`delivery.rs`) and sharded runs (`shard.rs`).

use sundial_core::route::Candidate;
use sundial_store::{Job, Run};

use crate::Result;
use crate::shared::Shared;
use crate::transport::candidates;

/// What an attempt of a job runs.
pub(crate) enum Work {
    /// The job's handler, on an executor that serves it.
    Handler,
    /// A script job: the version this attempt runs (recorded on the run), on a runner.
    Script(sundial_core::protocol::ScriptRef),
    /// A script job whose script or pinned version is gone: the attempt fails, saying so.
    ScriptGone(String),
}

impl Work {
    /// The handler the attempt is routed by ([`script_handler`](sundial_core::route::script_handler) for a script).
    pub(crate) fn handler(&self, job: &Job) -> Option<String> {
        match self {
            Work::Handler => job.handler.clone(),
            Work::Script(s) => Some(sundial_core::route::script_handler(&s.runtime)),
            Work::ScriptGone(_) => None,
        }
    }
}

/// What this attempt of `job` runs: for a script job, the version is picked (the
/// pinned one, else the current one) and recorded on the run now.
pub(crate) async fn work_of(node: &Shared, run: &Run, job: &Job) -> Result<Work> {
    let Some(script_id) = &job.script_id else {
        return Ok(Work::Handler);
    };
    Ok(match node.store.script_pick_for_run(&run.id, script_id, job.script_version).await? {
        Some(p) => Work::Script(sundial_core::protocol::ScriptRef {
            id: p.script.id,
            name: p.script.name,
            runtime: p.script.runtime.as_str().to_string(),
            version: p.version.version,
            sha256: p.version.sha256,
            timeout_ms: job.timeout_ms,
            limits: job.script_limits.clone(),
        }),
        None => Work::ScriptGone(match job.script_version {
            Some(v) => format!("script {script_id} has no version {v}"),
            None => format!("script {script_id} no longer exists"),
        }),
    })
}

/// The candidates for an attempt of `job`: this node's built-in runner joins a script job's.
pub(crate) fn candidates_for(
    node: &Shared,
    job: &Job,
    app: &sundial_store::App,
    executors: &[sundial_store::Executor],
    now: i64,
) -> Vec<Candidate> {
    let builtin = match (&job.script_id, &node.cfg.builtin_runner) {
        (Some(_), Some(b)) => Some((node.cfg.node_id.as_str(), b)),
        _ => None,
    };
    candidates(app, executors, now, node.cfg.executor_offline_ms, builtin)
}
