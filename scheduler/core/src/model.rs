//! The domain model the engine and the store share: a job, a run (one fire) and an attempt
//! (one delivery of it). The store's rows convert to and from these (`store/src/sql/rows.rs`),
//! the API's wire types from them (`api/src/wire.rs`); a job's validated input is
//! [`JobDef`](crate::job::JobDef), made into a [`Job`] by [`Job::from_def`].

use serde_json::Value;

use crate::job::{FailureSpec, MisfireSpec};
use crate::schedule::ScheduleSpec;
use crate::types::{BlockStrategy, JobSource, JobState, Route, RunState, ScheduleKind, TriggerKind};

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
    pub wait: crate::types::WaitFor,
    pub state: JobState,
    /// A script job's own limits, lowering its runner's.
    pub script_limits: Option<crate::job::ScriptLimits>,
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
/// written (the store's `JobStore::job_misfire_many`).
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

impl Job {
    /// A new API job row (version 1) from a validated definition whose references the
    /// caller resolved: the app id, and the handler or script id.
    pub fn from_def(
        def: crate::job::JobDef,
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
            id: crate::ids::new_id(crate::ids::RUN),
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
