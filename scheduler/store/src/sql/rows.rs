//! Row decoding shared by several modules: runs, jobs, executors. Imports only the
//! helpers of `sql/mod.rs`, so every module can use it without an import cycle.

use sqlx::any::AnyRow;

use super::{col, json_col, json_opt, parse_col};
use crate::{Executor, Job, Result, Run, StoreError};

pub(super) fn run_row(r: &AnyRow) -> Result<Run> {
    Ok(Run {
        id: col(r, "id")?,
        tenant_id: col(r, "tenant_id")?,
        job_id: col(r, "job_id")?,
        fire_key: col(r, "fire_key")?,
        trigger: parse_col(r, "trigger_kind")?,
        scheduled_at_ms: col(r, "scheduled_at_ms")?,
        state: parse_col(r, "state")?,
        attempt: col(r, "attempt")?,
        shard_total: col(r, "shard_total")?,
        params: json_opt(r, "params")?,
        parent_run_id: col(r, "parent_run_id")?,
        parent_output: json_opt(r, "parent_output")?,
        parents: json_opt(r, "parents")?,
        job_version: col(r, "job_version")?,
        owner_node: col(r, "owner_node")?,
        lease_until_ms: col(r, "lease_until_ms")?,
        deadline_ms: col(r, "deadline_ms")?,
        next_attempt_at_ms: col(r, "next_attempt_at_ms")?,
        reason: col(r, "reason")?,
        message: col(r, "message")?,
        output: json_opt(r, "output")?,
        expired_count: col(r, "expired_count")?,
        created_at_ms: col(r, "created_at_ms")?,
        updated_at_ms: col(r, "updated_at_ms")?,
        started_at_ms: col(r, "started_at_ms")?,
        finished_at_ms: col(r, "finished_at_ms")?,
        script_version: col(r, "script_version")?,
        chain_id: col(r, "chain_id")?,
    })
}

pub(super) const JOB_COLS: &str = "id, tenant_id, app_id, name, description, handler, script_id, script_version, schedule_kind, schedule, params, route, block_strategy, misfire, failure, timeout_ms, max_concurrency, wait_for, state, script_limits, source, registration_key, version, generated_until_ms, created_at_ms, updated_at_ms";

pub(super) fn job_row(r: &AnyRow) -> Result<Job> {
    Ok(Job {
        id: col(r, "id")?,
        tenant_id: col(r, "tenant_id")?,
        app_id: col(r, "app_id")?,
        name: col(r, "name")?,
        description: col(r, "description")?,
        handler: col(r, "handler")?,
        script_id: col(r, "script_id")?,
        script_version: col(r, "script_version")?,
        schedule_kind: parse_col(r, "schedule_kind")?,
        schedule: json_col(r, "schedule")?,
        params: json_col(r, "params")?,
        route: parse_col(r, "route")?,
        block: parse_col(r, "block_strategy")?,
        misfire: json_col(r, "misfire")?,
        failure: json_col(r, "failure")?,
        timeout_ms: col(r, "timeout_ms")?,
        max_concurrency: col(r, "max_concurrency")?,
        wait: parse_col(r, "wait_for")?,
        state: parse_col(r, "state")?,
        script_limits: json_opt(r, "script_limits")?
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("column script_limits: {e}")))?,
        source: parse_col(r, "source")?,
        registration_key: col(r, "registration_key")?,
        version: col(r, "version")?,
        generated_until_ms: col(r, "generated_until_ms")?,
        created_at_ms: col(r, "created_at_ms")?,
        updated_at_ms: col(r, "updated_at_ms")?,
    })
}

pub(super) fn executor_row(r: &AnyRow) -> Result<Executor> {
    Ok(Executor {
        id: col(r, "id")?,
        tenant_id: col(r, "tenant_id")?,
        app_id: col(r, "app_id")?,
        name: col(r, "name")?,
        address: col(r, "address")?,
        tags: json_col(r, "tags")?,
        metadata: json_col(r, "metadata")?,
        handlers: json_col(r, "handlers")?,
        runtimes: json_col(r, "runtimes")?,
        state: parse_col(r, "state")?,
        running: col(r, "running")?,
        registered_at_ms: col(r, "registered_at_ms")?,
        last_heartbeat_ms: col(r, "last_heartbeat_ms")?,
        last_metadata_ms: col(r, "last_metadata_ms")?,
    })
}
