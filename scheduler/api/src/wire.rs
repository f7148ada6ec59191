//! JSON shapes of the API (requests and responses), separate from domain and store
//! types; conversions are explicit (`From` impls below).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sundial_core::job::{FailureSpec, MisfireSpec};
use sundial_core::schedule::ScheduleSpec;
use sundial_core::time::rfc3339_utc;
use sundial_core::types::*;
use sundial_store::{ApiKey, App, Job, Run, Script, ScriptVersion, Tenant};
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;

pub const DEFAULT_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 200;

/// Cursor pagination: `limit` (1-200, default 50) and the `cursor` a previous page returned.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    pub cursor: Option<String>,
}

impl PageQuery {
    pub fn page(&self) -> Result<sundial_store::Page, ApiError> {
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ApiError::field("limit", "invalid_field", format!("{limit} is out of range 1-{MAX_LIMIT}")));
        }
        // Fetch one more than asked to know whether a next page exists.
        Ok(sundial_store::Page { limit: limit + 1, after: self.cursor.clone() })
    }

    /// [`Self::page`] of a list ordered by id: the cursor must be an id of that kind
    /// (`prefix`), as the list's `next_cursor` is; anything else is refused naming `cursor`.
    pub fn page_of_ids(&self, prefix: &str) -> Result<sundial_store::Page, ApiError> {
        if let Some(c) = &self.cursor
            && !sundial_core::ids::looks_like(prefix, c)
        {
            return Err(ApiError::field("cursor", "invalid_field", "is not a cursor this endpoint returned"));
        }
        self.page()
    }
}

/// Cut the extra row and compute `next_cursor`.
pub fn paginate<T, O>(
    mut rows: Vec<T>,
    page: &sundial_store::Page,
    cursor_of: impl Fn(&T) -> String,
    out: impl Fn(T) -> O,
) -> (Vec<O>, Option<String>) {
    let want = (page.limit - 1) as usize;
    let next = if rows.len() > want {
        rows.truncate(want);
        rows.last().map(&cursor_of)
    } else {
        None
    };
    (rows.into_iter().map(out).collect(), next)
}

macro_rules! list_type {
    ($name:ident, $item:ty) => {
        #[derive(Debug, Serialize, ToSchema)]
        pub struct $name {
            pub items: Vec<$item>,
            /// Pass as `cursor` to get the next page; absent on the last page.
            pub next_cursor: Option<String>,
        }
    };
}

// ---- tenants ----

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantCreate {
    /// Unique; letters, digits, `-`, `_`, `.`.
    pub name: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TenantOut {
    pub id: String,
    pub name: String,
    pub created_at: String,
}

impl From<Tenant> for TenantOut {
    fn from(t: Tenant) -> Self {
        TenantOut { id: t.id, name: t.name, created_at: rfc3339_utc(t.created_at_ms) }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TenantCreated {
    pub id: String,
    pub name: String,
    pub created_at: String,
    /// The tenant's first admin key. Shown once; store it now.
    pub admin_key: String,
}

list_type!(TenantList, TenantOut);

// ---- API keys ----

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyCreate {
    pub name: String,
    /// `admin`, `editor` or `viewer`.
    pub role: Role,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct KeyOut {
    pub id: String,
    pub name: String,
    pub role: Role,
    /// The first characters of the key, to recognise it.
    pub prefix: String,
    pub created_at: String,
}

impl From<ApiKey> for KeyOut {
    fn from(k: ApiKey) -> Self {
        KeyOut {
            id: k.id,
            name: k.name,
            role: k.role,
            prefix: k.display_prefix,
            created_at: rfc3339_utc(k.created_at_ms),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct KeyCreated {
    #[serde(flatten)]
    pub meta: KeyOut,
    /// The key itself. Shown once; only its hash is stored.
    pub key: String,
}

list_type!(KeyList, KeyOut);

// ---- apps ----

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AppCreate {
    /// Unique within the tenant; letters, digits, `-`, `_`, `.`.
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// Static executor URLs (serverless functions that never register). Each counts as one online executor serving every handler.
    #[serde(default)]
    pub endpoints: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AppUpdate {
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub endpoints: Option<Vec<String>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AppOut {
    pub id: String,
    pub name: String,
    pub description: String,
    pub endpoints: Vec<String>,
    /// Until when the previous secret (after a rotation) still verifies.
    pub previous_secret_expires_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<App> for AppOut {
    fn from(a: App) -> Self {
        AppOut {
            id: a.id,
            name: a.name,
            description: a.description,
            endpoints: a.endpoints,
            previous_secret_expires_at: a.previous_expires_ms.map(rfc3339_utc),
            created_at: rfc3339_utc(a.created_at_ms),
            updated_at: rfc3339_utc(a.updated_at_ms),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AppWithSecret {
    #[serde(flatten)]
    pub app: AppOut,
    /// Signing secret (`whsec_…`), shown on create and rotate only.
    pub secret: String,
}

list_type!(AppList, AppOut);

// ---- scripts ----

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"name": "nightly-report", "runtime": "python", "source": "print('hello from Sundial')\n", "note": "first cut"}))]
pub struct ScriptCreate {
    /// Unique within the tenant; letters, digits, `-`, `_`, `.`.
    pub name: String,
    /// `wasm` (a WASI preview-1 module), `python` or `javascript` (run inside WebAssembly), `bash` or `sh` (run in an OS sandbox).
    pub runtime: String,
    /// The code as text: Python, JavaScript, shell, or a `wasm` module in `.wat` text. Exactly one of `source` and `source_base64`.
    #[serde(default)]
    pub source: Option<String>,
    /// A `wasm` module's binary, standard base64.
    #[serde(default)]
    pub source_base64: Option<String>,
    /// What this version is (up to 2,000 characters).
    #[serde(default)]
    pub note: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"source": "print('hello again')\n", "note": "friendlier"}))]
pub struct ScriptVersionCreate {
    /// The new code as text. Exactly one of `source` and `source_base64`.
    #[serde(default)]
    pub source: Option<String>,
    /// A `wasm` module's binary, standard base64.
    #[serde(default)]
    pub source_base64: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"version": 1}))]
pub struct ScriptRestore {
    /// The version to make current.
    pub version: i64,
}

/// Which versions to compare: `from`, and `to` (default: the current version).
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct DiffQuery {
    pub from: i64,
    pub to: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ScriptDiff {
    pub from: i64,
    pub to: i64,
    /// The two versions have the same bytes.
    pub identical: bool,
    /// Unified diff, `from` to `to` (empty when identical).
    pub diff: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ScriptVersionOut {
    pub version: i64,
    /// SHA-256 of the source's bytes (for `base64`, of the decoded binary), lower-case hex.
    pub sha256: String,
    pub size_bytes: i64,
    /// `text` or `base64`.
    pub encoding: String,
    /// The id of the API key that uploaded it.
    pub author: String,
    pub note: String,
    pub created_at: String,
    /// The source (shown when one version is asked for; absent in lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl ScriptVersionOut {
    pub fn new(v: ScriptVersion, with_source: bool) -> Self {
        ScriptVersionOut {
            version: v.version,
            sha256: v.sha256,
            size_bytes: v.size_bytes,
            encoding: v.encoding,
            author: v.author,
            note: v.note,
            created_at: rfc3339_utc(v.created_at_ms),
            source: with_source.then_some(v.source),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ScriptOut {
    pub id: String,
    pub name: String,
    pub runtime: ScriptRuntime,
    /// The version jobs that follow the script run.
    pub current_version: i64,
    /// The current version's details (absent in lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current: Option<ScriptVersionOut>,
    pub created_at: String,
    pub updated_at: String,
}

impl ScriptOut {
    pub fn new(s: Script, current: ScriptVersion) -> Self {
        ScriptOut { current: Some(ScriptVersionOut::new(current, false)), ..Self::summary(s) }
    }
    pub fn summary(s: Script) -> Self {
        ScriptOut {
            id: s.id,
            name: s.name,
            runtime: s.runtime,
            current_version: s.current_version,
            current: None,
            created_at: rfc3339_utc(s.created_at_ms),
            updated_at: rfc3339_utc(s.updated_at_ms),
        }
    }
}

list_type!(ScriptList, ScriptOut);
list_type!(ScriptVersionList, ScriptVersionOut);

// ---- jobs ----

#[derive(Debug, Serialize, ToSchema)]
pub struct JobOut {
    pub id: String,
    pub name: String,
    pub description: String,
    pub app_id: String,
    pub handler: Option<String>,
    pub script_id: Option<String>,
    /// The script version the job is pinned to; absent: it runs the script's current version.
    pub script_version: Option<i64>,
    pub schedule: ScheduleSpec,
    #[schema(value_type = Object)]
    pub params: Value,
    pub route: Route,
    pub block: BlockStrategy,
    pub misfire: MisfireSpec,
    pub failure: FailureSpec,
    pub timeout_ms: i64,
    pub max_concurrency: Option<i64>,
    /// The child edges, in the edge form (also for children given as plain job ids).
    pub children: Vec<ChildEdgeOut>,
    /// When the job has several parents: fire once per chain after `all` of them, or `any`.
    pub wait: sundial_core::types::WaitFor,
    pub state: JobState,
    /// When the job fires next on its own (RFC 3339 UTC), from its schedule and the server's
    /// time: null when it is stopped, `manual`, or its schedule has no fire left.
    pub next_fire_at: Option<String>,
    /// A script job's own limits, lowering its runner's (absent: the runner's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub script_limits: Option<sundial_core::job::ScriptLimits>,
    /// `api`, or `registration` for jobs an executor's handler registration created.
    pub source: JobSource,
    /// Increments with every change; send it as `If-Match` to update safely.
    pub version: i64,
    pub created_at: String,
    pub updated_at: String,
}

/// A child edge: the child job, fired with the parent run's output when the parent run ends
/// as `on` says.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChildEdgeOut {
    pub job: String,
    pub on: sundial_core::types::EdgeCondition,
}

impl JobOut {
    /// The job as the API shows it at `now_ms` (which its next fire is computed from).
    pub fn new(j: Job, children: Vec<sundial_core::job::ChildEdge>, now_ms: i64) -> Self {
        let next_fire_at =
            sundial_core::job::next_fire_at(&j.schedule, j.created_at_ms, j.state, now_ms).map(rfc3339_utc);
        JobOut {
            id: j.id,
            name: j.name,
            description: j.description,
            app_id: j.app_id,
            handler: j.handler,
            script_id: j.script_id,
            script_version: j.script_version,
            schedule: j.schedule,
            params: j.params,
            route: j.route,
            block: j.block,
            misfire: j.misfire,
            failure: j.failure,
            timeout_ms: j.timeout_ms,
            max_concurrency: j.max_concurrency,
            children: children.into_iter().map(|c| ChildEdgeOut { job: c.job_id, on: c.on }).collect(),
            wait: j.wait,
            state: j.state,
            next_fire_at,
            script_limits: j.script_limits,
            source: j.source,
            version: j.version,
            created_at: rfc3339_utc(j.created_at_ms),
            updated_at: rfc3339_utc(j.updated_at_ms),
        }
    }
}

list_type!(JobList, JobOut);

/// `POST /api/v1/jobs/batch`: the jobs to create, each exactly a `POST /api/v1/jobs` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobBatchInput {
    /// 1 to 1,000 jobs, created all or none.
    #[schema(min_items = 1, max_items = 1000)]
    pub jobs: Vec<sundial_core::job::JobInput>,
}

/// What `POST /api/v1/jobs/batch` reads: each item kept as its JSON text, parsed as the single
/// create parses its body (so an item's refusal names its field as that call would).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobBatchBody {
    pub jobs: Vec<Box<serde_json::value::RawValue>>,
}

/// The jobs a batch created, in the request's order.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobBatch {
    pub jobs: Vec<JobOut>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct JobListQuery {
    /// App name or id.
    pub app: Option<String>,
    pub state: Option<JobState>,
    pub name: Option<String>,
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct PreviewQuery {
    /// How many fire times, 1-100 (default 5).
    #[param(minimum = 1, maximum = 100)]
    pub count: Option<i64>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SchedulePreviewRequest {
    pub schedule: ScheduleSpec,
    /// How many fire times, 1-100 (default 5).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 100)]
    pub count: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Preview {
    /// The next fire times, RFC 3339 with the offset of `timezone` at each instant.
    pub times: Vec<String>,
    pub timezone: String,
}

// ---- runs ----

#[derive(Debug, Serialize, ToSchema)]
pub struct RunOut {
    pub id: String,
    pub job_id: String,
    /// `s:<epoch ms>` for schedule fires, `i:<Idempotency-Key>`, `p:<parent run id>` (a child
    /// run), `p:<chain id>` (a fan-in's run in a chain), or a fresh id.
    pub fire_key: String,
    pub trigger: TriggerKind,
    pub scheduled_at: String,
    pub state: RunState,
    pub attempt: i64,
    /// For a `sharding` job: how many shards the run has, frozen at its first dispatch.
    pub shard_total: Option<i64>,
    #[schema(value_type = Option<Object>)]
    pub params: Option<Value>,
    pub parent_run_id: Option<String>,
    /// For a run of a job with several parents (a fan-in, `fire_key` `p:<chain_id>`): the
    /// parents' runs it was fired (or skipped) after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_ids: Option<Vec<String>>,
    pub reason: Option<String>,
    pub message: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub output: Option<Value>,
    /// For an `expired` record standing for several missed fires: how many.
    pub expired_count: i64,
    /// For a run of a script job: the script version its latest attempt ran.
    pub script_version: Option<i64>,
    /// The chain the run belongs to: its own id for a run fired by schedule, trigger or the
    /// API; its root's for a run fired by a parent (list one with `GET /runs?chain_id=`).
    pub chain_id: String,
    pub created_at: String,
    pub updated_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
}

impl From<Run> for RunOut {
    fn from(r: Run) -> Self {
        let chain_id = r.chain().to_string();
        RunOut {
            id: r.id,
            job_id: r.job_id,
            fire_key: r.fire_key,
            trigger: r.trigger,
            scheduled_at: rfc3339_utc(r.scheduled_at_ms),
            state: r.state,
            attempt: r.attempt,
            shard_total: r.shard_total,
            params: r.params,
            parent_run_id: r.parent_run_id,
            parent_run_ids: r.parents.as_ref().and_then(Value::as_array).map(|ps| {
                ps.iter().filter_map(|p| p.get("run_id").and_then(Value::as_str).map(String::from)).collect()
            }),
            reason: r.reason,
            message: r.message,
            output: r.output,
            expired_count: r.expired_count,
            script_version: r.script_version,
            chain_id,
            created_at: rfc3339_utc(r.created_at_ms),
            updated_at: rfc3339_utc(r.updated_at_ms),
            started_at: r.started_at_ms.map(rfc3339_utc),
            finished_at: r.finished_at_ms.map(rfc3339_utc),
        }
    }
}

list_type!(RunList, RunOut);

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct RunListQuery {
    pub job_id: Option<String>,
    /// The runs of one chain (its root and every run fired down from it), oldest first, on
    /// one page (at most 1000); the other filters apply within it.
    pub chain_id: Option<String>,
    pub state: Option<RunState>,
    /// RFC 3339: runs scheduled at or after.
    pub from: Option<String>,
    /// RFC 3339: runs scheduled before.
    pub to: Option<String>,
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    pub status: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TriggerRequest {
    /// Parameters for this run instead of the job's.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub params: Option<Value>,
    /// RFC 3339: fire at this time instead of now (a delayed trigger).
    #[serde(default)]
    pub at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptOut {
    pub attempt: i64,
    pub shard: i64,
    /// The `webhook-id` of its deliveries (stable across redeliveries).
    pub webhook_id: String,
    pub executor_id: Option<String>,
    pub address: Option<String>,
    pub state: String,
    pub reason: Option<String>,
    pub message: Option<String>,
    /// Executors tried, in order, and why each was passed over.
    #[schema(value_type = Object)]
    pub trail: Value,
    #[schema(value_type = Option<Object>)]
    pub output: Option<Value>,
    pub started_at: String,
    pub finished_at: Option<String>,
}

impl From<sundial_store::Attempt> for AttemptOut {
    fn from(a: sundial_store::Attempt) -> Self {
        AttemptOut {
            attempt: a.attempt,
            shard: a.shard_index,
            webhook_id: a.webhook_id,
            executor_id: a.executor_id,
            address: a.address,
            state: a.state,
            reason: a.reason,
            message: a.message,
            trail: a.trail,
            output: a.output,
            started_at: rfc3339_utc(a.started_at_ms),
            finished_at: a.finished_at_ms.map(rfc3339_utc),
        }
    }
}

/// One shard of a sharded run: its own state, attempts and result.
#[derive(Debug, Serialize, ToSchema)]
pub struct ShardOut {
    /// 0 to `shard_total` - 1; sent as `sundial-shard: index/total`.
    pub index: i64,
    /// `dispatching`, `running`, `retrying`, `succeeded`, `failed` or `cancelled`.
    pub state: RunState,
    /// The shard's current attempt; all its attempts are in `attempts` with this `shard`.
    pub attempt: i64,
    /// The executor of the current attempt (`static:<url>` for a static endpoint).
    pub executor_id: Option<String>,
    pub address: Option<String>,
    pub reason: Option<String>,
    pub message: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub output: Option<Value>,
    /// When a `retrying` shard's next attempt is due.
    pub next_attempt_at: Option<String>,
    /// The current attempt's deadline.
    pub deadline_at: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub updated_at: String,
}

impl From<sundial_store::RunShard> for ShardOut {
    fn from(s: sundial_store::RunShard) -> Self {
        ShardOut {
            index: s.shard_index,
            state: s.state,
            attempt: s.attempt,
            executor_id: s.executor_id,
            address: s.address,
            reason: s.reason,
            message: s.message,
            output: s.output,
            next_attempt_at: s.next_attempt_at_ms.map(rfc3339_utc),
            deadline_at: s.deadline_ms.map(rfc3339_utc),
            started_at: s.started_at_ms.map(rfc3339_utc),
            finished_at: s.finished_at_ms.map(rfc3339_utc),
            updated_at: rfc3339_utc(s.updated_at_ms),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LogOut {
    /// The line's sequence number: grows with every line stored (across all runs, so not
    /// dense within one); pass the last one read as `after` to `GET /runs/{id}/logs`.
    pub seq: i64,
    pub shard: i64,
    pub attempt: i64,
    pub at: String,
    pub level: String,
    pub message: String,
}

impl From<sundial_store::RunLog> for LogOut {
    fn from(l: sundial_store::RunLog) -> Self {
        LogOut {
            seq: l.id,
            shard: l.shard_index,
            attempt: l.attempt,
            at: rfc3339_utc(l.at_ms),
            level: l.level,
            message: l.message,
        }
    }
}

/// The most log lines one `GET /runs/{id}/logs` returns, and how many without `limit`.
pub const MAX_LOG_LIMIT: i64 = 1000;
pub const DEFAULT_LOG_LIMIT: i64 = 100;

/// `GET /runs/{id}/logs`: the lines after `after`, at most `limit`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct RunLogsQuery {
    /// Lines after this sequence number: the `seq` of the last line read (a page's
    /// `next_after`); absent or 0, from the first line.
    #[param(minimum = 0)]
    pub after: Option<i64>,
    /// Lines per page, 1-1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// A page of a run's log, for reading it whole or following it while the run goes on.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"items": [{"seq": 41, "shard": 0, "attempt": 1, "at": "2026-03-28T12:00:01.250Z", "level": "info", "message": "exported 120 rows"}],
    "next_after": 41, "has_more": false, "run_state": "running", "run_finished": false}))]
pub struct RunLogPage {
    /// In `seq` order.
    pub items: Vec<LogOut>,
    /// Pass as `after` for the lines that follow: the last item's `seq`, or the `after`
    /// given when no line came (a follower keeps polling with it; unlike `next_cursor`
    /// elsewhere it is there on the last page too).
    pub next_after: i64,
    /// More lines are stored already: ask again at once with `next_after`.
    pub has_more: bool,
    /// The run's state, read before the lines.
    pub run_state: RunState,
    /// `run_state` is final (`succeeded`, `failed`, `cancelled`, `expired`, `skipped`): with
    /// `has_more` false the log is complete, but for trailing lines an executor may still
    /// send during the short grace after a run ends.
    pub run_finished: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RunDetail {
    #[serde(flatten)]
    pub run: RunOut,
    /// For a sharded run, its shards in index order (empty otherwise).
    pub shards: Vec<ShardOut>,
    pub attempts: Vec<AttemptOut>,
    /// The first 1000 log lines.
    pub logs: Vec<LogOut>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SchedulingSettings {
    /// When true, no schedule fires on its own (manual and API triggers still run).
    pub paused: bool,
}
