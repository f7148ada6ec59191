//! Rows as the store returns them, in domain types.

use serde_json::Value;
use sundial_core::job::{FailureSpec, MisfireSpec};
use sundial_core::schedule::ScheduleSpec;
use sundial_core::types::{
    BlockStrategy, ExecutorState, JobSource, JobState, Role, Route, RunState, ScheduleKind, TriggerKind,
};

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
pub struct Job {
    pub id: String,
    pub tenant_id: String,
    pub app_id: String,
    pub name: String,
    pub description: String,
    pub handler: Option<String>,
    pub script_id: Option<String>,
    /// The script version a script job is pinned to (`None`: the script's current one).
    pub script_version: Option<i64>,
    pub schedule_kind: ScheduleKind,
    pub schedule: ScheduleSpec,
    pub params: Value,
    pub route: Route,
    pub block: BlockStrategy,
    pub misfire: MisfireSpec,
    pub failure: FailureSpec,
    pub timeout_ms: i64,
    pub max_concurrency: Option<i64>,
    /// For a job with several parents: wait for `all` of them in a chain, or `any`.
    pub wait: sundial_core::types::WaitFor,
    pub state: JobState,
    /// A script job's own limits, lowering its runner's.
    pub script_limits: Option<sundial_core::job::ScriptLimits>,
    pub source: JobSource,
    /// `app_id:handler` for jobs created by a handler registration; unique.
    pub registration_key: Option<String>,
    /// Bumped by every change of the definition or state.
    pub version: i64,
    pub generated_until_ms: Option<i64>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

/// What the engine's misfire decisions need of a job: its policy and how far its runs are
/// written ([`JobStore::job_misfire_many`](crate::JobStore::job_misfire_many)).
#[derive(Debug, Clone, PartialEq)]
pub struct JobMisfire {
    pub id: String,
    pub misfire: MisfireSpec,
    pub generated_until_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub id: String,
    pub tenant_id: String,
    pub job_id: String,
    pub fire_key: String,
    pub trigger: TriggerKind,
    pub scheduled_at_ms: i64,
    pub state: RunState,
    pub attempt: i64,
    pub shard_total: Option<i64>,
    pub params: Option<Value>,
    pub parent_run_id: Option<String>,
    pub parent_output: Option<Value>,
    /// A fan-in run's parents (a JSON array of `{job_id, run_id, state, output}`).
    pub parents: Option<Value>,
    pub job_version: i64,
    pub owner_node: Option<String>,
    pub lease_until_ms: Option<i64>,
    pub deadline_ms: Option<i64>,
    pub next_attempt_at_ms: Option<i64>,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub output: Option<Value>,
    pub expired_count: i64,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    pub started_at_ms: Option<i64>,
    pub finished_at_ms: Option<i64>,
    /// For a script job: the script version its latest attempt ran (set at delivery).
    pub script_version: Option<i64>,
    /// The chain a run fired by a parent belongs to (its root run's id); `None` for a root.
    pub chain_id: Option<String>,
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

impl Job {
    /// A new API job row (version 1) from a validated definition whose references the
    /// caller resolved: the app id, and the handler or script id.
    pub fn from_def(
        def: sundial_core::job::JobDef,
        id: String,
        tenant_id: &str,
        app_id: String,
        handler: Option<String>,
        script_id: Option<String>,
        now_ms: i64,
    ) -> Job {
        Job {
            id,
            tenant_id: tenant_id.to_string(),
            app_id,
            name: def.name.into_string(),
            description: def.description,
            handler,
            script_id,
            script_version: def.script_version,
            schedule_kind: def.schedule.kind(),
            schedule: def.schedule.to_spec(),
            params: def.params,
            route: def.route,
            block: def.block,
            misfire: def.misfire,
            failure: def.failure,
            timeout_ms: def.timeout_ms,
            max_concurrency: def.max_concurrency,
            wait: def.wait,
            state: def.state,
            script_limits: def.script_limits,
            source: JobSource::Api,
            registration_key: None,
            version: 1,
            generated_until_ms: None,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
        }
    }
}

impl Run {
    /// A new `pending` run of a job, with a fresh id: the one constructor the
    /// generator, triggers and child firing share.
    pub fn pending(
        tenant_id: &str,
        job_id: &str,
        job_version: i64,
        fire_key: String,
        trigger: TriggerKind,
        scheduled_at_ms: i64,
        now_ms: i64,
    ) -> Run {
        Run {
            id: sundial_core::ids::new_id(sundial_core::ids::RUN),
            tenant_id: tenant_id.to_string(),
            job_id: job_id.to_string(),
            fire_key,
            trigger,
            scheduled_at_ms,
            state: RunState::Pending,
            attempt: 0,
            shard_total: None,
            params: None,
            parent_run_id: None,
            parent_output: None,
            parents: None,
            job_version,
            owner_node: None,
            lease_until_ms: None,
            deadline_ms: None,
            next_attempt_at_ms: None,
            reason: None,
            message: None,
            output: None,
            expired_count: 0,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            started_at_ms: None,
            finished_at_ms: None,
            script_version: None,
            chain_id: None,
        }
    }

    /// The chain this run belongs to: its root's id (its own, for a root).
    pub fn chain(&self) -> &str {
        self.chain_id.as_deref().unwrap_or(&self.id)
    }
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

/// One attempt of one shard of a run: where it went and how it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    pub run_id: String,
    pub shard_index: i64,
    pub attempt: i64,
    /// Stable across redeliveries of this attempt: executors drop repeats.
    pub webhook_id: String,
    pub executor_id: Option<String>,
    pub address: Option<String>,
    /// `dispatching`, `running`, `succeeded`, `failed`, `cancelled`.
    pub state: String,
    pub reason: Option<String>,
    pub message: Option<String>,
    /// The dispatch trail: executors tried, in order, and why each was passed over.
    pub trail: Value,
    pub output: Option<Value>,
    pub started_at_ms: i64,
    pub finished_at_ms: Option<i64>,
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

/// How one shard attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishShard {
    pub run_id: String,
    pub shard_index: i64,
    pub attempt: i64,
    pub result: crate::AttemptResult,
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
