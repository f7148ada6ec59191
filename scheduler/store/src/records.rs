//! Rows as the store returns them, in domain types.

use serde_json::Value;
pub use sundial_core::model::{Attempt, Job, JobMisfire, Run};
use sundial_core::types::{ExecutorState, JobState, Role, RunState};

#[derive(Debug, Clone, PartialEq)]
pub struct Tenant {
    pub id: String,
    pub name: String,
    pub created_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApiKey {
    pub id: String,
    /// `None` for operator keys.
    pub tenant_id: Option<String>,
    pub name: String,
    pub role: Role,
    pub key_hash: String,
    pub display_prefix: String,
    pub created_at_ms: i64,
}

/// An app. Its secrets are plain here (the store seals them at rest); `Debug` hides them.
#[derive(Clone, PartialEq)]
pub struct App {
    pub id: String,
    pub tenant_id: String,
    pub name: String,
    pub description: String,
    pub endpoints: Vec<String>,
    pub secret: String,
    pub previous_secret: Option<String>,
    pub previous_expires_ms: Option<i64>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("id", &self.id)
            .field("tenant_id", &self.tenant_id)
            .field("name", &self.name)
            .field("description", &self.description)
            .field("endpoints", &self.endpoints)
            .field("secret", &"***")
            .field("previous_secret", &self.previous_secret.as_ref().map(|_| "***"))
            .field("previous_expires_ms", &self.previous_expires_ms)
            .field("created_at_ms", &self.created_at_ms)
            .field("updated_at_ms", &self.updated_at_ms)
            .finish()
    }
}

impl App {
    /// Secrets that verify an executor's signature at `now_ms`: the current one, and the
    /// previous one while its rotation grace period lasts.
    pub fn valid_secrets(&self, now_ms: i64) -> Vec<&str> {
        let mut v = vec![self.secret.as_str()];
        if let (Some(p), Some(until)) = (&self.previous_secret, self.previous_expires_ms)
            && now_ms < until
        {
            v.push(p);
        }
        v
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Executor {
    pub id: String,
    pub tenant_id: String,
    pub app_id: String,
    pub name: String,
    pub address: String,
    pub tags: Vec<String>,
    pub metadata: Value,
    pub handlers: Vec<String>,
    /// The script runtimes it runs (a `sundial runner`); empty for a webhook executor.
    pub runtimes: Vec<String>,
    pub state: ExecutorState,
    pub running: i64,
    pub registered_at_ms: i64,
    pub last_heartbeat_ms: i64,
    pub last_metadata_ms: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    pub id: String,
    pub tenant_id: String,
    pub name: String,
    pub runtime: sundial_core::types::ScriptRuntime,
    /// The version jobs that follow the script run.
    pub current_version: i64,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

/// One immutable version of a script's source.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptVersion {
    pub script_id: String,
    /// 1, 2, …: each upload the next.
    pub version: i64,
    /// The source: text, or (`encoding` `base64`) a WebAssembly binary in standard base64.
    pub source: String,
    /// `text` or `base64`.
    pub encoding: String,
    /// SHA-256 of the source's bytes (decoded for `base64`), lower-case hex.
    pub sha256: String,
    /// Size of the source's bytes (decoded for `base64`).
    pub size_bytes: i64,
    /// The id of the API key that uploaded it.
    pub author: String,
    pub note: String,
    pub created_at_ms: i64,
}

/// What `GET /chains/{id}` is built from: a chain's runs, the jobs they are of and their
/// child jobs, the edges between them, and each fan-in's arrivals.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainView {
    /// Oldest first; the root first.
    pub runs: Vec<Run>,
    pub jobs: Vec<ChainJob>,
    /// The child edges of the runs' jobs.
    pub edges: Vec<ChainEdge>,
    pub joins: Vec<ChainJoin>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChainJob {
    pub id: String,
    pub name: String,
    pub state: JobState,
    pub wait: sundial_core::types::WaitFor,
    /// Edges into the job: more than one makes it a fan-in.
    pub parents: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChainEdge {
    pub parent_job_id: String,
    pub child_job_id: String,
    pub on: sundial_core::types::EdgeCondition,
    pub created_at_ms: i64,
}

/// A fan-in child's join in a chain: the parents that arrived (ended, or will not run),
/// and the run that decided it (fired or `skipped`), if decided.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainJoin {
    pub child_job_id: String,
    pub arrivals: Vec<ChainArrival>,
    pub run_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChainArrival {
    pub parent_job_id: String,
    pub run_id: Option<String>,
    pub holds: bool,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub id: String,
    pub address: String,
    pub version: String,
    pub state: String,
    pub claimed: i64,
    pub started_at_ms: i64,
    pub heartbeat_at_ms: i64,
    /// How late its deliveries went out lately (the worst of its last heartbeat interval), ms.
    pub lateness_ms: i64,
    /// Runs in its timer already past their instant when it last heartbeat.
    pub backlog: i64,
    /// Fires it expired by misfire policy in its last heartbeat interval.
    pub misfired: i64,
}

/// One node heartbeat: who it is and how loaded it is (see [`Node`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeBeat {
    pub id: String,
    pub address: String,
    pub version: String,
    /// Runs held in its timer.
    pub claimed: i64,
    pub started_at_ms: i64,
    pub lateness_ms: i64,
    pub backlog: i64,
    pub misfired: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunLog {
    pub id: i64,
    pub run_id: String,
    pub shard_index: i64,
    pub attempt: i64,
    pub at_ms: i64,
    pub level: String,
    pub message: String,
}

// ---- shards ----

/// One shard of a sharded run: its own state (the run state machine's `dispatching`,
/// `running`, `retrying`, `succeeded`, `failed`, `cancelled`), its own attempts, and the
/// executor its current attempt went to.
#[derive(Debug, Clone, PartialEq)]
pub struct RunShard {
    pub run_id: String,
    pub shard_index: i64,
    pub state: RunState,
    /// The shard's current attempt. A shard's first attempt has the run's attempt number
    /// (1, unless the run was first retried for want of any executor).
    pub attempt: i64,
    /// Executor id (or `static:<url>`) of the current attempt.
    pub executor_id: Option<String>,
    pub address: Option<String>,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub output: Option<Value>,
    /// When a `retrying` shard's next attempt is due.
    pub next_attempt_at_ms: Option<i64>,
    /// The current attempt's deadline.
    pub deadline_ms: Option<i64>,
    pub started_at_ms: Option<i64>,
    pub finished_at_ms: Option<i64>,
    pub updated_at_ms: i64,
}

/// Where one shard goes: an executor the router found eligible.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardTarget {
    /// Executor id, or `static:<url>` for an app's static endpoint.
    pub executor_id: String,
    pub address: String,
}

/// Freeze the shard set of a run that is `dispatching` (as `run_attempt`, owned by `node_id`).
#[derive(Debug, Clone, PartialEq)]
pub struct ShardFreeze {
    pub run_id: String,
    pub run_attempt: i64,
    pub node_id: String,
    /// One shard per target, shard index = position. Used only if the run has no shards yet.
    pub targets: Vec<ShardTarget>,
    /// Deadline of the attempts about to be (re)delivered.
    pub deadline_ms: i64,
    pub now_ms: i64,
}

/// A shard attempt to send: the shard and its attempt's stable `webhook-id`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardDelivery {
    pub shard: RunShard,
    pub webhook_id: String,
}

/// Start the next attempt of a `retrying` shard, if it is still at `attempt`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardRetryBegin {
    pub run_id: String,
    pub shard_index: i64,
    /// The shard's current (failed) attempt; the new one is `attempt + 1`.
    pub attempt: i64,
    /// Where the new attempt goes (`None`: no executor is eligible).
    pub target: Option<ShardTarget>,
    pub deadline_ms: i64,
    pub now_ms: i64,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub enum AttemptResult {
    Succeeded,
    /// Failed; `retry_at_ms` when the failure policy allows another attempt.
    Failed {
        reason: sundial_core::run_state::FailReason,
        retry_at_ms: Option<i64>,
    },
}

/// How one shard attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishShard {
    pub run_id: String,
    pub shard_index: i64,
    pub attempt: i64,
    pub result: AttemptResult,
    pub output: Option<Value>,
    pub message: Option<String>,
    pub now_ms: i64,
}

#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // built once per result, never stored in bulk
pub enum ShardFinishOutcome {
    /// Recorded. `run` is the run after it (now `succeeded` when every shard has,
    /// `failed` when this shard failed for good); `children` are the child runs fired.
    Applied { run: Run, shard: RunShard, children: Vec<Run> },
    /// The same result was already recorded for this shard attempt: nothing changed.
    Duplicate,
    /// Refused: not the shard's current attempt, the shard is finished, or the run is.
    Conflict { state: RunState, attempt: i64 },
    /// No such run, or no such shard of it.
    NotFound,
}
