//! The executor protocol's messages, typed: what Sundial POSTs to an executor (a delivery,
//! a cancel) and what the executor answers. The engine builds and reads exactly these, and
//! the API publishes them in the OpenAPI document under `webhooks` (with their headers), so
//! the spec carries the whole protocol. The executor's own calls to Sundial (register,
//! heartbeat, result, logs) are ordinary API operations.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::types::TriggerKind;

/// Headers of every delivery and cancel, besides the Standard Webhooks three
/// (`webhook-id`, `webhook-timestamp`, `webhook-signature`).
pub mod headers {
    /// The app the call is signed for.
    pub const APP_ID: &str = "sundial-app-id";
    /// The node that sent it.
    pub const NODE: &str = "sundial-node";
    /// Delivery only: the run, its attempt (the shard's), its scheduled instant, `index/total`.
    pub const RUN_ID: &str = "sundial-run-id";
    pub const ATTEMPT: &str = "sundial-attempt";
    pub const SCHEDULED_AT: &str = "sundial-scheduled-at";
    pub const SHARD: &str = "sundial-shard";
}

/// The JSON body of a delivery (`POST` to the executor's URL).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Delivery {
    pub run_id: String,
    pub job_id: String,
    /// The job's name.
    pub job: String,
    /// The job's handler, for executors that serve several.
    pub handler: Option<String>,
    /// The run's parameters (the job's, or those given when it was triggered): any JSON value.
    pub params: Value,
    /// This attempt's number (for a shard: the shard's attempt), from 1.
    pub attempt: i64,
    /// The instant the run is for (RFC 3339, UTC).
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub scheduled_at: String,
    pub trigger: TriggerKind,
    pub shard: ShardRef,
    /// For a run fired by one parent (its edge's condition held): the parent run and its output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentRef>,
    /// For a run of a job with several parents (a fan-in), fired once per chain: every
    /// parent that had ended in the chain when it fired, with its run, state and output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parents: Option<Vec<ParentRun>>,
    /// For a run fired by a parent: the params the chain's root was triggered with (they are
    /// merged over the job's own `params`, already in `params`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_params: Option<Value>,
    /// For a script job (sent only to runners): the script version this attempt runs. The
    /// runner fetches its source with `POST /api/v1/executors/script` (by the run) and checks
    /// it against `sha256`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<ScriptRef>,
}

/// The script version an attempt of a script job runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ScriptRef {
    pub id: String,
    pub name: String,
    /// `wasm`, `python`, `javascript`, `bash` or `sh`.
    pub runtime: String,
    pub version: i64,
    /// SHA-256 of the source's bytes (decoded for a WebAssembly binary), lower-case hex.
    pub sha256: String,
    /// The job's timeout: the script's wall-clock budget.
    pub timeout_ms: i64,
    /// The job's own limits: the runner runs it with the smaller of these and its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<crate::job::ScriptLimits>,
}

/// Which shard of the run this delivery is (`{"index": 0, "total": 1}` for an unsharded run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ShardRef {
    pub index: i64,
    pub total: i64,
}

/// The parent run of a child run, with its output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ParentRef {
    pub run_id: String,
    /// Any JSON value, or null.
    pub output: Option<Value>,
}

/// One parent of a fan-in run: its job, its run in the chain, how it ended, its output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!(
    {"job_id": "job_01JDX2B", "run_id": "run_01JDX2V6Q9", "state": "succeeded", "output": {"region": "eu", "total": 264.6}}
)))]
pub struct ParentRun {
    pub job_id: String,
    pub run_id: String,
    /// `succeeded` or `failed`.
    pub state: crate::types::RunState,
    /// Any JSON value, or null.
    pub output: Option<Value>,
}

/// The default largest run output, in bytes (`max_output_bytes`): outputs are stored with
/// the run and passed to its children, so they stay small; bulk data belongs elsewhere.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// An output's size as stored and passed on (its compact JSON), if larger than `limit`.
pub fn output_over(output: Option<&Value>, limit: usize) -> Option<usize> {
    let size = output.map(|v| serde_json::to_vec(v).map(|b| b.len()).unwrap_or(usize::MAX)).unwrap_or(0);
    (size > limit).then_some(size)
}

/// The executor's synchronous answer (`200`, or any `2xx` but `202`): every field is
/// optional, and an empty body means success with no output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Answer {
    /// `succeeded` (the default) or `failed`.
    #[serde(default)]
    pub status: Option<AnswerStatus>,
    /// Any JSON value: kept as the run's output, passed to child runs.
    #[serde(default)]
    pub output: Option<Value>,
    #[serde(default)]
    pub message: Option<String>,
    /// `false` with a failure: it cannot succeed on a retry (for a script: the source does
    /// not compile, the script is missing, the runtime is not available here), so the
    /// job's failure policy is not applied and the run fails at once. Omitted or `true`:
    /// the failure policy decides. The result call (`POST /api/v1/runs/{id}/result`) takes
    /// the same field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum AnswerStatus {
    Succeeded,
    Failed,
}

/// The body of an executor's `410` (`handler_retired`) or `503` (`executor_offline`) answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AnswerCode {
    pub code: String,
}

/// The body of a best-effort cancel (`POST {executor URL}/cancel`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Cancel {
    pub run_id: String,
    /// The attempt to stop (for a shard: the shard's attempt).
    pub attempt: i64,
    /// The shard, for a sharded run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The wire form executors rely on (docs/executors.md, "The protocol", shows it).
    #[test]
    fn the_wire_form_is_the_documented_one() {
        let d = Delivery {
            run_id: "run_1".into(),
            job_id: "job_1".into(),
            job: "nightly".into(),
            handler: None,
            params: json!([1, 2]),
            attempt: 1,
            scheduled_at: "2026-11-25T00:00:00.000Z".into(),
            trigger: TriggerKind::Schedule,
            shard: ShardRef { index: 0, total: 1 },
            parent: None,
            parents: None,
            chain_params: None,
            script: None,
        };
        assert_eq!(
            serde_json::to_value(&d).unwrap(),
            json!({"run_id": "run_1", "job_id": "job_1", "job": "nightly", "handler": null, "params": [1, 2],
                "attempt": 1, "scheduled_at": "2026-11-25T00:00:00.000Z", "trigger": "schedule",
                "shard": {"index": 0, "total": 1}})
        );
        let c = Cancel { run_id: "run_1".into(), attempt: 2, shard: None };
        assert_eq!(serde_json::to_value(&c).unwrap(), json!({"run_id": "run_1", "attempt": 2}));
        let a: Answer = serde_json::from_value(json!({"status": "failed", "message": "boom"})).unwrap();
        assert_eq!(a.status, Some(AnswerStatus::Failed));
        assert!(serde_json::from_value::<Answer>(json!({"status": "ok"})).is_err());
        let a: Answer = serde_json::from_value(json!({"status": "failed", "retry": false})).unwrap();
        assert_eq!(a.retry, Some(false));
    }
}
