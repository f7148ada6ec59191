//! Job definitions: the wire/storage specs of their policies and the validated [`JobDef`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::FieldError;
use crate::schedule::{Schedule, ScheduleSpec};
use crate::types::{BackoffKind, BlockStrategy, FailurePolicyKind, JobState, MisfirePolicy, Name, Route, bounded_text};

pub const DEFAULT_MISFIRE_THRESHOLD_MS: i64 = 5_000;
pub const DEFAULT_CATCHUP_WINDOW_MS: i64 = 3_600_000;
pub const DEFAULT_MAX_CATCHUP: i64 = 100;
pub const DEFAULT_MAX_RETRIES: i64 = 5;
pub const DEFAULT_TIMEOUT_MS: i64 = 300_000;
/// Retry backoff when the job says nothing: the first delay …
pub const DEFAULT_BACKOFF_BASE_MS: i64 = 1_000;
/// … and the longest (exponential backoff doubles up to it).
pub const DEFAULT_BACKOFF_MAX_MS: i64 = 300_000;
pub const MAX_PARAMS_BYTES: usize = 64 * 1024;

/// Job and trigger parameters are a JSON object: executors in any language read them as
/// a map, and generated clients type them so (an array or a number would break every
/// typed client reading the job).
pub fn check_params(params: &Value) -> Result<(), FieldError> {
    if !params.is_object() {
        let kind = match params {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        };
        return Err(FieldError::new("params", "wrong_type", format!("must be a JSON object, not {kind}")));
    }
    Ok(())
}
pub const MAX_CHILDREN: usize = 50;

/// What a fire missed by more than `threshold_ms` does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct MisfireSpec {
    pub policy: MisfirePolicy,
    /// A fire late by less than this fires at once, whatever the policy. Default 5000.
    #[serde(default)]
    pub threshold_ms: Option<i64>,
    /// `fire_all` delivers missed fires no older than this. Default 3600000 (one hour).
    #[serde(default)]
    pub catchup_window_ms: Option<i64>,
    /// `fire_all` delivers at most this many missed fires; one `expired` run counts the rest. Default 100.
    #[serde(default)]
    pub max_catchup: Option<i64>,
}

/// What a failed attempt leads to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct FailureSpec {
    pub policy: FailurePolicyKind,
    /// Retries after the first attempt (policy `retry`). Default 5.
    #[serde(default)]
    pub max_retries: Option<i64>,
    #[serde(default)]
    pub backoff: Option<BackoffSpec>,
    /// May a retry start while the executor of the timed-out attempt still reports, in its
    /// heartbeats, that it is running the run? Default false: the retry waits until that
    /// executor stops listing the run or goes offline.
    #[serde(default)]
    pub allow_overlap: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BackoffSpec {
    pub kind: BackoffKind,
    /// First delay. Default 1000.
    #[serde(default)]
    pub base_ms: Option<i64>,
    /// Largest delay (exponential). Default 300000.
    #[serde(default)]
    pub max_ms: Option<i64>,
    /// Randomise each delay by up to ±20%. Default true.
    #[serde(default)]
    pub jitter: Option<bool>,
}

/// A script job's own limits, each lowering the runner's (the operator's maxima, `serve`'s
/// `script_*` settings): a run gets the smaller of the two; a value above the runner's
/// maximum runs at the maximum. Absent fields follow the runner.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ScriptLimits {
    /// Memory of a run in bytes (wasm, Python, JavaScript: linear memory; shell: the run's
    /// cgroup), 16 MiB to 1 TiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 16777216))]
    pub memory_bytes: Option<u64>,
    /// Fuel (wasm instructions) of a wasm, Python or JavaScript run, at least 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub fuel: Option<u64>,
    /// stdout and stderr are each kept up to this many bytes, 1 KiB to 64 MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1024, maximum = 67108864))]
    pub output_bytes: Option<u64>,
    /// Disk quota of a run in bytes, 64 KiB to 1 TiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 65536))]
    pub disk_bytes: Option<u64>,
    /// Files a run may hold open at once, 16 to 65536.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 16, maximum = 65536))]
    pub open_files: Option<u64>,
    /// A shell run stopped (timeout, cancel) gets SIGTERM this many milliseconds before
    /// SIGKILL, 0 to 60000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(maximum = 60000))]
    pub kill_grace_ms: Option<u64>,
}

/// The ranges of [`ScriptLimits`]' fields (the operator's settings share them).
pub mod script_limit_ranges {
    use std::ops::RangeInclusive;
    pub const MEMORY_BYTES: RangeInclusive<u64> = (16 << 20)..=(1 << 40);
    pub const FUEL: RangeInclusive<u64> = 1..=u64::MAX;
    pub const OUTPUT_BYTES: RangeInclusive<u64> = 1024..=(64 << 20);
    pub const DISK_BYTES: RangeInclusive<u64> = (64 << 10)..=(1 << 40);
    pub const OPEN_FILES: RangeInclusive<u64> = 16..=65_536;
    pub const KILL_GRACE_MS: RangeInclusive<u64> = 0..=60_000;
}

impl ScriptLimits {
    /// Check every field's range (the error names it, under `script_limits`).
    pub fn check(&self) -> Result<(), FieldError> {
        use script_limit_ranges as r;
        let fields = [
            ("memory_bytes", self.memory_bytes, r::MEMORY_BYTES),
            ("fuel", self.fuel, r::FUEL),
            ("output_bytes", self.output_bytes, r::OUTPUT_BYTES),
            ("disk_bytes", self.disk_bytes, r::DISK_BYTES),
            ("open_files", self.open_files, r::OPEN_FILES),
            ("kill_grace_ms", self.kill_grace_ms, r::KILL_GRACE_MS),
        ];
        for (name, v, range) in fields {
            if let Some(v) = v
                && !range.contains(&v)
            {
                return Err(FieldError::invalid(
                    format!("script_limits.{name}"),
                    format!("{v} is out of range {}-{}", range.start(), range.end()),
                ));
            }
        }
        Ok(())
    }

    /// Nothing set.
    pub fn is_empty(&self) -> bool {
        *self == ScriptLimits::default()
    }
}

/// A job as sent to `POST /api/v1/jobs` and `PUT /api/v1/jobs/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JobInput {
    /// Unique within the tenant: 1-100 letters, digits, `-`, `_`, `.`, starting with a letter or digit.
    #[cfg_attr(
        feature = "openapi",
        schema(min_length = 1, max_length = 100, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]*$")
    )]
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// The app (executor group) that runs it: its name or id.
    pub app: String,
    /// Webhook handler name the app's executors serve. Exactly one of `handler` and `script`.
    #[serde(default)]
    pub handler: Option<String>,
    /// Script id or name (GLUE job). Exactly one of `handler` and `script`.
    #[serde(default)]
    pub script: Option<String>,
    /// Run this version of the script, not its current one (only with `script`).
    #[serde(default)]
    pub script_version: Option<i64>,
    pub schedule: ScheduleSpec,
    /// A JSON object, passed to every run as `params` (default `{}`). At most 64 KiB.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub params: Option<Value>,
    /// Default `round_robin`.
    #[serde(default)]
    pub route: Option<Route>,
    /// Default `serial`.
    #[serde(default)]
    pub block: Option<BlockStrategy>,
    /// Default `{"policy": "fire_once"}`.
    #[serde(default)]
    pub misfire: Option<MisfireSpec>,
    /// Default `{"policy": "retry", "max_retries": 5, "backoff": {"kind": "exponential"}}`.
    #[serde(default)]
    pub failure: Option<FailureSpec>,
    /// Attempt deadline, 1000 to 86400000. Default 300000.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 1000, maximum = 86400000))]
    pub timeout_ms: Option<i64>,
    /// Runs of this job in flight at once, 1 to 10000; excess runs are `skipped`. Default: no limit but the block strategy.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 10000))]
    pub max_concurrency: Option<i64>,
    /// Child jobs fired (trigger `parent`, with this run's output) when a run of this job
    /// ends: a job id (fired when the run succeeds), or an edge
    /// `{"job": "job_…", "on": "on_success" | "on_failure" | "always"}`.
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(example = json!(["job_01JDX2B", {"job": "job_01JDX2C", "on": "on_failure"}, {"job": "job_01JDX2D", "on": "always"}]))
    )]
    pub children: Option<Vec<ChildInput>>,
    /// For a job that is the child of several jobs (a fan-in): fire once per chain when every
    /// parent has ended in it with its edge's condition holding (`all`, the default), or as
    /// soon as one has (`any`). A parent that will never end in the chain (its edge's
    /// condition false, its job stopped, its run cancelled) releases an `all` child as a
    /// `skipped` run with the reason.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(example = "all"))]
    pub wait: Option<crate::types::WaitFor>,
    /// `active` (default) fires on schedule; `stopped` fires only when triggered.
    #[serde(default)]
    pub state: Option<JobState>,
    /// A script job's own limits, lowering the runner's (only with `script`).
    #[serde(default)]
    pub script_limits: Option<ScriptLimits>,
}

/// A child edge as a request gives it: a job id (`on_success`), or the edge form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum ChildInput {
    /// The child job's id: fired when the parent run succeeds.
    Id(String),
    /// The child job's id and when it fires.
    Edge {
        job: String,
        /// `on_success` (default), `on_failure` or `always`.
        #[serde(default)]
        on: Option<String>,
    },
}

/// A child edge: the child job, and the parent outcomes that fire it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildEdge {
    pub job_id: String,
    pub on: crate::types::EdgeCondition,
}

/// What a job runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    Handler(String),
    /// A script reference (id or name) still to be resolved by the caller.
    Script(String),
}

/// A validated job definition (apart from references the store must resolve:
/// the app, the script and the children).
#[derive(Debug, Clone, PartialEq)]
pub struct JobDef {
    pub name: Name,
    pub description: String,
    pub app: String,
    pub target: Target,
    /// The script version a script job is pinned to (`None`: it follows the current one).
    pub script_version: Option<i64>,
    pub schedule: Schedule,
    pub params: Value,
    pub route: Route,
    pub block: BlockStrategy,
    pub misfire: MisfireSpec,
    pub failure: FailureSpec,
    pub timeout_ms: i64,
    pub max_concurrency: Option<i64>,
    pub children: Vec<ChildEdge>,
    pub wait: crate::types::WaitFor,
    pub state: JobState,
    /// A script job's own limits (`None`: the runner's).
    pub script_limits: Option<ScriptLimits>,
}

fn in_range(field: &str, v: i64, lo: i64, hi: i64) -> Result<i64, FieldError> {
    if !(lo..=hi).contains(&v) {
        return Err(FieldError::invalid(field, format!("{v} is out of range {lo}-{hi}")));
    }
    Ok(v)
}

/// Handler names: 1-200 characters, no whitespace or control characters.
pub fn parse_handler(field: &str, s: &str) -> Result<String, FieldError> {
    if s.is_empty() {
        return Err(FieldError::invalid(field, "must not be empty"));
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(FieldError::invalid(field, format!("`{s}` must not contain whitespace")));
    }
    bounded_text(field, s, 200)
}

impl MisfireSpec {
    /// Fill defaults and check ranges.
    pub fn resolve(&self) -> Result<MisfireSpec, FieldError> {
        let threshold =
            in_range("threshold_ms", self.threshold_ms.unwrap_or(DEFAULT_MISFIRE_THRESHOLD_MS), 0, 3_600_000)?;
        let window = in_range(
            "catchup_window_ms",
            self.catchup_window_ms.unwrap_or(DEFAULT_CATCHUP_WINDOW_MS),
            0,
            7 * 24 * 3_600_000,
        )?;
        let cap = in_range("max_catchup", self.max_catchup.unwrap_or(DEFAULT_MAX_CATCHUP), 1, 10_000)?;
        Ok(MisfireSpec {
            policy: self.policy,
            threshold_ms: Some(threshold),
            catchup_window_ms: Some(window),
            max_catchup: Some(cap),
        })
    }
}

impl FailureSpec {
    pub fn resolve(&self) -> Result<FailureSpec, FieldError> {
        let max_retries = match self.policy {
            FailurePolicyKind::Retry => {
                in_range("max_retries", self.max_retries.unwrap_or(DEFAULT_MAX_RETRIES), 0, 100)?
            }
            FailurePolicyKind::Discard => {
                if self.max_retries.is_some_and(|n| n != 0) {
                    return Err(FieldError::invalid("max_retries", "must be 0 or absent with policy `discard`"));
                }
                0
            }
        };
        let b = self.backoff.clone().unwrap_or(BackoffSpec {
            kind: BackoffKind::Exponential,
            base_ms: None,
            max_ms: None,
            jitter: None,
        });
        let base = in_range("backoff.base_ms", b.base_ms.unwrap_or(DEFAULT_BACKOFF_BASE_MS), 0, 86_400_000)?;
        let max = in_range("backoff.max_ms", b.max_ms.unwrap_or(DEFAULT_BACKOFF_MAX_MS.max(base)), 0, 86_400_000)?;
        if max < base {
            return Err(FieldError::invalid("backoff.max_ms", "must not be less than backoff.base_ms"));
        }
        Ok(FailureSpec {
            policy: self.policy,
            max_retries: Some(max_retries),
            backoff: Some(BackoffSpec {
                kind: b.kind,
                base_ms: Some(base),
                max_ms: Some(max),
                jitter: Some(b.jitter.unwrap_or(true)),
            }),
            allow_overlap: Some(self.allow_overlap.unwrap_or(false)),
        })
    }
}

impl JobDef {
    /// Validate everything that needs no lookup. `now_ms` anchors fixed-rate schedules.
    pub fn parse(input: &JobInput, now_ms: i64) -> Result<JobDef, FieldError> {
        let name = Name::parse("name", &input.name)?;
        let description = bounded_text("description", input.description.as_deref().unwrap_or(""), 2000)?;
        if input.app.is_empty() {
            return Err(FieldError::invalid("app", "must name an app (its name or id)"));
        }
        let target = parse_target(input)?;
        let script_version = match (input.script_version, &target) {
            (None, _) => None,
            (Some(_), Target::Handler(_)) => {
                return Err(FieldError::invalid("script_version", "only a script job runs a script version"));
            }
            (Some(v), Target::Script(_)) => Some(in_range("script_version", v, 1, i64::MAX)?),
        };
        let schedule = Schedule::parse(&input.schedule, now_ms).map_err(|e| e.within("schedule"))?;
        let params = input.params.clone().unwrap_or(Value::Object(Default::default()));
        check_params(&params)?;
        let size = serde_json::to_vec(&params).map(|v| v.len()).unwrap_or(usize::MAX);
        if size > MAX_PARAMS_BYTES {
            return Err(FieldError::invalid(
                "params",
                format!("is {size} bytes; at most {MAX_PARAMS_BYTES} are allowed"),
            ));
        }
        let misfire = input
            .misfire
            .clone()
            .unwrap_or(MisfireSpec {
                policy: MisfirePolicy::FireOnce,
                threshold_ms: None,
                catchup_window_ms: None,
                max_catchup: None,
            })
            .resolve()
            .map_err(|e| e.within("misfire"))?;
        let failure = input
            .failure
            .clone()
            .unwrap_or(FailureSpec {
                policy: FailurePolicyKind::Retry,
                max_retries: None,
                backoff: None,
                allow_overlap: None,
            })
            .resolve()
            .map_err(|e| e.within("failure"))?;
        let timeout_ms = in_range("timeout_ms", input.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS), 1_000, 86_400_000)?;
        let max_concurrency = input.max_concurrency.map(|n| in_range("max_concurrency", n, 1, 10_000)).transpose()?;
        let children = parse_children(input.children.as_deref().unwrap_or_default())?;
        let script_limits = match (&input.script_limits, &target) {
            (None, _) => None,
            (Some(_), Target::Handler(_)) => {
                return Err(FieldError::invalid("script_limits", "only a script job has script limits"));
            }
            (Some(l), Target::Script(_)) => {
                l.check()?;
                (!l.is_empty()).then(|| l.clone())
            }
        };
        let route = input.route.unwrap_or(Route::RoundRobin);
        Ok(JobDef {
            name,
            description,
            app: input.app.clone(),
            target,
            script_version,
            schedule,
            params,
            route,
            block: input.block.unwrap_or(BlockStrategy::Serial),
            misfire,
            failure,
            timeout_ms,
            max_concurrency,
            children,
            wait: input.wait.unwrap_or(crate::types::WaitFor::All),
            state: input.state.unwrap_or(JobState::Active),
            script_limits,
        })
    }
}

/// A job's target: a webhook handler or a script (exactly one of them).
fn parse_target(input: &JobInput) -> Result<Target, FieldError> {
    Ok(match (&input.handler, &input.script) {
        (Some(h), None) => Target::Handler(parse_handler("handler", h)?),
        (None, Some(s)) if !s.is_empty() => Target::Script(s.clone()),
        (None, Some(_)) => return Err(FieldError::invalid("script", "must not be empty")),
        (Some(_), Some(_)) => {
            return Err(FieldError::invalid("script", "give either `handler` or `script`, not both"));
        }
        (None, None) => {
            return Err(FieldError::new("handler", "missing_field", "one of `handler` or `script` is required"));
        }
    })
}

/// A job's child edges: job ids (fired on success) or `{job, on}`; at most
/// [`MAX_CHILDREN`], each job once.
fn parse_children(given: &[ChildInput]) -> Result<Vec<ChildEdge>, FieldError> {
    if given.len() > MAX_CHILDREN {
        return Err(FieldError::invalid("children", format!("at most {MAX_CHILDREN} child jobs")));
    }
    let mut children = Vec::with_capacity(given.len());
    for (i, c) in given.iter().enumerate() {
        let (job_id, on) = match c {
            ChildInput::Id(id) => (id, crate::types::EdgeCondition::OnSuccess),
            ChildInput::Edge { job, on } => (
                job,
                match on {
                    Some(o) => crate::types::parse_enum(&format!("children[{i}].on"), o)?,
                    None => crate::types::EdgeCondition::OnSuccess,
                },
            ),
        };
        if !crate::ids::looks_like(crate::ids::JOB, job_id) {
            let field = match c {
                ChildInput::Id(_) => format!("children[{i}]"),
                ChildInput::Edge { .. } => format!("children[{i}].job"),
            };
            return Err(FieldError::invalid(field, format!("`{job_id}` is not a job id")));
        }
        children.push(ChildEdge { job_id: job_id.clone(), on });
    }
    let mut dedup: Vec<&str> = children.iter().map(|c| c.job_id.as_str()).collect();
    dedup.sort();
    dedup.dedup();
    if dedup.len() != children.len() {
        return Err(FieldError::invalid("children", "lists a job more than once"));
    }
    Ok(children)
}

/// When a job fires next on its own: the first fire of its schedule at or after `now_ms`.
/// `None` when the job is stopped, fires only when triggered (`manual`), or its schedule has
/// no fire left (a one-shot time or a window end already past). `created_at_ms` is the
/// fixed-rate anchor when the spec has none (stored specs carry theirs).
pub fn next_fire_at(schedule: &ScheduleSpec, created_at_ms: i64, state: JobState, now_ms: i64) -> Option<i64> {
    if state == JobState::Stopped {
        return None;
    }
    Schedule::parse(schedule, created_at_ms).ok()?.next_after(now_ms.saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{parse_rfc3339, rfc3339_utc};
    use crate::types::ScheduleKind;

    fn spec(v: serde_json::Value) -> ScheduleSpec {
        serde_json::from_value(v).unwrap()
    }

    fn at(s: &str) -> i64 {
        parse_rfc3339("t", s).unwrap()
    }

    /// The next fire after `now` as RFC 3339 UTC, or `none`.
    fn next(schedule: &ScheduleSpec, state: JobState, now: &str) -> String {
        next_fire_at(schedule, at("2026-01-01T00:00:00Z"), state, at(now)).map_or("none".into(), rfc3339_utc)
    }

    #[test]
    fn the_next_fire_of_a_cron_job_is_read_in_its_time_zone() {
        let nightly =
            spec(serde_json::json!({"kind": "cron", "expression": "0 30 2 * * *", "timezone": "Europe/Berlin"}));
        // 02:30 in Berlin is 01:30 UTC in winter (UTC+1) …
        assert_eq!(next(&nightly, JobState::Active, "2026-03-27T12:00:00Z"), "2026-03-28T01:30:00.000Z");
        // … and, on the spring-forward night, 02:30 does not exist: the fire is at 03:00 CEST (01:00 UTC).
        assert_eq!(next(&nightly, JobState::Active, "2026-03-28T12:00:00Z"), "2026-03-29T01:00:00.000Z");
        // … then 00:30 UTC in summer (UTC+2).
        assert_eq!(next(&nightly, JobState::Active, "2026-03-30T12:00:00Z"), "2026-03-31T00:30:00.000Z");
        // A fire exactly now is the next one.
        assert_eq!(next(&nightly, JobState::Active, "2026-03-31T00:30:00Z"), "2026-03-31T00:30:00.000Z");
    }

    #[test]
    fn the_next_fire_of_a_fixed_rate_job_counts_from_its_anchor() {
        let every =
            spec(serde_json::json!({"kind": "fixed_rate", "every_ms": 60000, "anchor": "2026-01-01T00:00:10Z"}));
        assert_eq!(next(&every, JobState::Active, "2026-02-01T08:00:11Z"), "2026-02-01T08:01:10.000Z");
        assert_eq!(next(&every, JobState::Active, "2025-12-31T00:00:00Z"), "2026-01-01T00:00:10.000Z");
        // No anchor in the spec: the job's creation time is.
        let unanchored = spec(serde_json::json!({"kind": "fixed_rate", "every_ms": 3600000}));
        assert_eq!(next(&unanchored, JobState::Active, "2026-01-01T05:30:00Z"), "2026-01-01T06:00:00.000Z");
    }

    #[test]
    fn a_stopped_job_a_manual_job_and_a_schedule_with_nothing_left_have_no_next_fire() {
        let every = spec(serde_json::json!({"kind": "fixed_rate", "every_ms": 60000}));
        assert_eq!(next(&every, JobState::Stopped, "2026-02-01T08:00:00Z"), "none", "a stopped job");
        assert_ne!(next(&every, JobState::Active, "2026-02-01T08:00:00Z"), "none");
        assert_eq!(
            next(&spec(serde_json::json!({"kind": "manual"})), JobState::Active, "2026-02-01T08:00:00Z"),
            "none"
        );
        let once = spec(serde_json::json!({"kind": "once", "at": "2026-02-01T09:00:00Z"}));
        assert_eq!(next(&once, JobState::Active, "2026-02-01T08:00:00Z"), "2026-02-01T09:00:00.000Z");
        assert_eq!(next(&once, JobState::Active, "2026-02-01T09:00:00.001Z"), "none", "a one-shot in the past");
        let ended =
            spec(serde_json::json!({"kind": "fixed_rate", "every_ms": 60000, "end_at": "2026-01-02T00:00:00Z"}));
        assert_eq!(next(&ended, JobState::Active, "2026-01-03T00:00:00Z"), "none", "a window already closed");
    }

    fn input() -> JobInput {
        serde_json::from_value(serde_json::json!({
            "name": "nightly", "app": "billing", "handler": "invoice.run",
            "schedule": {"kind": "cron", "expression": "0 0 2 * * *", "timezone": "Europe/Berlin"}
        }))
        .unwrap()
    }

    #[test]
    fn script_limits_are_for_script_jobs_and_checked_field_by_field() {
        let mut i = input();
        i.script_limits = Some(ScriptLimits { disk_bytes: Some(1 << 20), ..Default::default() });
        assert_eq!(JobDef::parse(&i, 0).unwrap_err().field, "script_limits");
        i.handler = None;
        i.script = Some("report".into());
        assert_eq!(
            JobDef::parse(&i, 0).unwrap().script_limits,
            Some(ScriptLimits { disk_bytes: Some(1 << 20), ..Default::default() })
        );
        i.script_limits = Some(ScriptLimits::default());
        assert_eq!(JobDef::parse(&i, 0).unwrap().script_limits, None, "nothing set is no limits");
        for (limits, field) in [
            (ScriptLimits { memory_bytes: Some(1 << 20), ..Default::default() }, "script_limits.memory_bytes"),
            (ScriptLimits { fuel: Some(0), ..Default::default() }, "script_limits.fuel"),
            (ScriptLimits { output_bytes: Some(100), ..Default::default() }, "script_limits.output_bytes"),
            (ScriptLimits { disk_bytes: Some(1), ..Default::default() }, "script_limits.disk_bytes"),
            (ScriptLimits { open_files: Some(70_000), ..Default::default() }, "script_limits.open_files"),
            (ScriptLimits { kill_grace_ms: Some(60_001), ..Default::default() }, "script_limits.kill_grace_ms"),
        ] {
            i.script_limits = Some(limits);
            assert_eq!(JobDef::parse(&i, 0).unwrap_err().field, field);
        }
        let unknown = serde_json::from_value::<ScriptLimits>(serde_json::json!({"disk": 1}));
        assert!(unknown.is_err(), "unknown fields are refused");
    }

    #[test]
    fn defaults_are_filled() {
        let d = JobDef::parse(&input(), 0).unwrap();
        assert_eq!(d.route, Route::RoundRobin);
        assert_eq!(d.failure.max_retries, Some(5));
        assert_eq!(d.misfire.threshold_ms, Some(5000));
        assert_eq!(d.schedule.kind(), ScheduleKind::Cron);
        assert_eq!(d.state, JobState::Active);
    }

    #[test]
    fn a_script_version_pins_only_a_script_job() {
        let mut i = input();
        i.script_version = Some(2);
        assert_eq!(JobDef::parse(&i, 0).unwrap_err().field, "script_version", "a handler job has no script");
        i.handler = None;
        i.script = Some("etl".into());
        assert_eq!(JobDef::parse(&i, 0).unwrap().script_version, Some(2));
        i.script_version = Some(0);
        assert_eq!(JobDef::parse(&i, 0).unwrap_err().field, "script_version");
        i.script_version = None;
        assert_eq!(JobDef::parse(&i, 0).unwrap().script_version, None, "follows the current version");
    }

    #[test]
    fn bad_values_name_their_field() {
        let mut i = input();
        i.handler = None;
        assert_eq!(JobDef::parse(&i, 0).unwrap_err().field, "handler");
        let mut i = input();
        i.timeout_ms = Some(5);
        assert_eq!(JobDef::parse(&i, 0).unwrap_err().field, "timeout_ms");
        let mut i = input();
        i.schedule.timezone = Some("Nowhere/Land".into());
        assert_eq!(JobDef::parse(&i, 0).unwrap_err().field, "schedule.timezone");
        let mut i = input();
        i.failure = Some(FailureSpec {
            policy: FailurePolicyKind::Retry,
            max_retries: Some(1000),
            backoff: None,
            allow_overlap: None,
        });
        assert_eq!(JobDef::parse(&i, 0).unwrap_err().field, "failure.max_retries");
        let mut i = input();
        i.children = Some(vec![ChildInput::Id("nope".into())]);
        assert_eq!(JobDef::parse(&i, 0).unwrap_err().field, "children[0]");
        i.children = Some(vec![ChildInput::Edge { job: "job_1".into(), on: Some("sometimes".into()) }]);
        assert_eq!(JobDef::parse(&i, 0).unwrap_err().field, "children[0].on");
        i.children = Some(vec![ChildInput::Edge { job: "nope".into(), on: None }]);
        assert_eq!(JobDef::parse(&i, 0).unwrap_err().field, "children[0].job");
    }

    #[test]
    fn sharding_is_a_route_like_the_others() {
        let mut i = input();
        i.route = Some(Route::Sharding);
        assert_eq!(JobDef::parse(&i, 0).unwrap().route, Route::Sharding);
    }
}
