//! Builders the conformance files share: a tenant, an app, a job, a run, claim and
//! dispatch arguments, results and node heartbeats.

use std::sync::Arc;
use sundial_core::job::ChildEdge;

use serde_json::json;
use sundial_core::ids::{self, new_id};
use sundial_core::job::{FailureSpec, MisfireSpec};
use sundial_core::schedule::ScheduleSpec;
use sundial_core::types::*;
use sundial_store::*;

pub type S = Arc<dyn Store>;

pub const NOW: i64 = 1_790_000_000_000;

pub fn page(limit: i64) -> Page {
    Page { limit, after: None }
}

pub async fn tenant(s: &S, name: &str) -> Tenant {
    let t = Tenant { id: new_id(ids::TENANT), name: name.into(), created_at_ms: NOW };
    s.tenant_insert(&t).await.unwrap();
    t
}

pub fn app_of(t: &Tenant, name: &str) -> App {
    App {
        id: new_id(ids::APP),
        tenant_id: t.id.clone(),
        name: name.into(),
        description: "d".into(),
        endpoints: vec!["https://example.com/hook".into()],
        secret: "whsec_c2VjcmV0".into(),
        previous_secret: None,
        previous_expires_ms: None,
        created_at_ms: NOW,
        updated_at_ms: NOW,
    }
}

pub async fn app(s: &S, t: &Tenant, name: &str) -> App {
    let a = app_of(t, name);
    s.app_insert(&a).await.unwrap();
    a
}

pub fn job_of(a: &App, name: &str) -> Job {
    Job {
        id: new_id(ids::JOB),
        tenant_id: a.tenant_id.clone(),
        app_id: a.id.clone(),
        name: name.into(),
        description: String::new(),
        handler: Some("h".into()),
        script_id: None,
        script_version: None,
        schedule_kind: ScheduleKind::Cron,
        schedule: ScheduleSpec {
            kind: ScheduleKind::Cron,
            expression: Some("0 */5 * * * *".into()),
            timezone: Some("Europe/Berlin".into()),
            every_ms: None,
            anchor: None,
            at: None,
            start_at: None,
            end_at: None,
        },
        params: json!({"k": [1, 2, {"x": "ü"}]}),
        route: Route::Failover,
        block: BlockStrategy::DiscardLater,
        misfire: MisfireSpec {
            policy: MisfirePolicy::FireAll,
            threshold_ms: Some(5000),
            catchup_window_ms: Some(3_600_000),
            max_catchup: Some(10),
        },
        failure: FailureSpec {
            policy: FailurePolicyKind::Retry,
            max_retries: Some(3),
            backoff: None,
            allow_overlap: None,
        },
        timeout_ms: 60_000,
        max_concurrency: Some(2),
        wait: sundial_core::types::WaitFor::All,
        state: JobState::Active,
        script_limits: None,
        source: JobSource::Api,
        registration_key: None,
        version: 1,
        generated_until_ms: None,
        created_at_ms: NOW,
        updated_at_ms: NOW,
    }
}

pub async fn job(s: &S, a: &App, name: &str) -> Job {
    let j = job_of(a, name);
    s.job_insert(&j, &[]).await.unwrap();
    j
}

pub fn run_of(j: &Job, fire_key: &str, at: i64) -> Run {
    let mut r = Run::pending(&j.tenant_id, &j.id, j.version, fire_key.into(), TriggerKind::Schedule, at, NOW);
    r.params = Some(json!({"a": 1}));
    r
}

pub fn claim(node: &str, now: i64) -> ClaimParams {
    ClaimParams {
        node_id: node.into(),
        due_before_ms: now,
        now_ms: now,
        lease_until_ms: now + 30_000,
        limit: 100,
        include_schedule: true,
        owned_buckets: sundial_core::affinity::ALL_BUCKETS,
        foreign_due_before_ms: now,
        own_fires_due_before_ms: None,
        skip_tenant: None,
    }
}

/// Runs as a node hands them to dispatch after claiming them (a claimed `dispatching` run
/// is redelivered).
pub fn to_dispatch(ids: &[String]) -> Vec<ToDispatch> {
    ids.iter().map(|id| ToDispatch::new(id.clone(), true)).collect()
}

pub async fn job_with(s: &S, a: &App, name: &str, block: BlockStrategy) -> Job {
    let mut j = job_of(a, name);
    j.block = block;
    j.max_concurrency = None;
    s.job_insert(&j, &[]).await.unwrap();
    j
}

pub fn dispatched(d: &DispatchDecision) -> &Run {
    match d {
        DispatchDecision::Dispatch { run, .. } => run,
        other => panic!("expected a dispatch, got {other:?}"),
    }
}

pub fn result(run_id: &str, attempt: i64, ok: bool, output: serde_json::Value) -> FinishAttempt {
    FinishAttempt {
        run_id: run_id.into(),
        attempt,
        result: if ok {
            AttemptResult::Succeeded
        } else {
            AttemptResult::Failed { reason: sundial_core::run_state::FailReason::Error, retry_at_ms: Some(NOW + 5_000) }
        },
        output: Some(output),
        message: None,
        now_ms: NOW + 1,
        target: None,
        dispatched: None,
    }
}

pub fn beat(id: &str, address: &str, claimed: i64, started_at_ms: i64) -> NodeBeat {
    NodeBeat {
        id: id.into(),
        address: address.into(),
        version: "1".into(),
        claimed,
        started_at_ms,
        ..NodeBeat::default()
    }
}

/// A child edge that fires when the parent run succeeds.
pub fn edge(job_id: &str) -> ChildEdge {
    ChildEdge { job_id: job_id.to_string(), on: sundial_core::types::EdgeCondition::OnSuccess }
}
