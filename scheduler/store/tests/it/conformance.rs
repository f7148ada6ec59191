//! One function per behaviour of the [`Store`] contract; `main.rs` runs each on every database.

use std::sync::Arc;

use serde_json::json;
use sundial_core::ids::{self, new_id};
use sundial_core::job::{FailureSpec, MisfireSpec};
use sundial_core::schedule::ScheduleSpec;
use sundial_core::types::*;
use sundial_store::*;

type S = Arc<dyn Store>;
const NOW: i64 = 1_790_000_000_000;

fn page(limit: i64) -> Page {
    Page { limit, after: None }
}

async fn tenant(s: &S, name: &str) -> Tenant {
    let t = Tenant { id: new_id(ids::TENANT), name: name.into(), created_at_ms: NOW };
    s.tenant_insert(&t).await.unwrap();
    t
}

fn app_of(t: &Tenant, name: &str) -> App {
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

async fn app(s: &S, t: &Tenant, name: &str) -> App {
    let a = app_of(t, name);
    s.app_insert(&a).await.unwrap();
    a
}

fn job_of(a: &App, name: &str) -> Job {
    Job {
        id: new_id(ids::JOB),
        tenant_id: a.tenant_id.clone(),
        app_id: a.id.clone(),
        name: name.into(),
        description: String::new(),
        handler: Some("h".into()),
        script_id: None,
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
        state: JobState::Active,
        source: JobSource::Api,
        registration_key: None,
        version: 1,
        generated_until_ms: None,
        created_at_ms: NOW,
        updated_at_ms: NOW,
    }
}

async fn job(s: &S, a: &App, name: &str) -> Job {
    let j = job_of(a, name);
    s.job_insert(&j, &[]).await.unwrap();
    j
}

fn run_of(j: &Job, fire_key: &str, at: i64) -> Run {
    let mut r = Run::pending(&j.tenant_id, &j.id, j.version, fire_key.into(), TriggerKind::Schedule, at, NOW);
    r.params = Some(json!({"a": 1}));
    r
}

/// The database's clock agrees with ours (running the migrations twice is `migrate.rs`'s).
pub async fn the_database_clock_is_sane(s: S) {
    s.ping().await.unwrap();
    let db_now = s.db_now_ms().await.unwrap();
    let sys_now = chrono::Utc::now().timestamp_millis();
    assert!((db_now - sys_now).abs() < 5_000, "db {db_now} vs system {sys_now}");
}

pub async fn tenants_are_unique_by_name_and_paginate(s: S) {
    let a = tenant(&s, "alpha").await;
    let b = tenant(&s, "beta").await;
    let _c = tenant(&s, "gamma").await;
    let dup = Tenant { id: new_id(ids::TENANT), name: "alpha".into(), created_at_ms: NOW };
    assert!(matches!(s.tenant_insert(&dup).await, Err(StoreError::Conflict { what: "tenant_name", .. })));
    assert_eq!(s.tenant_get(&a.id).await.unwrap(), Some(a.clone()));
    let first = s.tenant_list(&page(2)).await.unwrap();
    assert_eq!(first.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["alpha", "beta"]);
    let rest = s.tenant_list(&Page { limit: 2, after: Some(b.id.clone()) }).await.unwrap();
    assert_eq!(rest.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["gamma"]);
}

pub async fn api_keys_are_found_by_hash_and_scoped_to_their_tenant(s: S) {
    let t1 = tenant(&s, "t1").await;
    let t2 = tenant(&s, "t2").await;
    let mk = |tenant: Option<&str>, role: Role, hash: &str| ApiKey {
        id: new_id(ids::API_KEY),
        tenant_id: tenant.map(String::from),
        name: "k".into(),
        role,
        key_hash: hash.repeat(64),
        display_prefix: "sk_abc".into(),
        created_at_ms: NOW,
    };
    let op = mk(None, Role::Operator, "a");
    let k1 = mk(Some(&t1.id), Role::Admin, "b");
    let k2 = mk(Some(&t2.id), Role::Viewer, "c");
    for k in [&op, &k1, &k2] {
        s.api_key_insert(k).await.unwrap();
    }
    assert!(matches!(s.api_key_insert(&mk(None, Role::Admin, "a")).await, Err(StoreError::Conflict { .. })));
    assert_eq!(s.api_key_by_hash(&"b".repeat(64)).await.unwrap(), Some(k1.clone()));
    assert_eq!(s.api_key_by_hash(&"z".repeat(64)).await.unwrap(), None);
    assert_eq!(s.api_key_list(None, &page(10)).await.unwrap(), vec![op.clone()]);
    assert_eq!(s.api_key_list(Some(&t1.id), &page(10)).await.unwrap(), vec![k1.clone()]);
    assert_eq!(s.api_key_count(None, Role::Operator).await.unwrap(), 1);
    assert_eq!(s.api_key_count(Some(&t1.id), Role::Admin).await.unwrap(), 1);
    assert_eq!(s.api_key_count(Some(&t2.id), Role::Admin).await.unwrap(), 0);
    assert_eq!(s.api_key_get(&t1.id, &k1.id).await.unwrap(), Some(k1.clone()));
    assert_eq!(s.api_key_get(&t2.id, &k1.id).await.unwrap(), None);
    // Another tenant cannot delete it.
    assert!(!s.api_key_delete(&t2.id, &k1.id).await.unwrap());
    assert!(s.api_key_delete(&t1.id, &k1.id).await.unwrap());
    assert_eq!(s.api_key_by_hash(&"b".repeat(64)).await.unwrap(), None);
}

pub async fn apps_are_unique_per_tenant_and_isolated(s: S) {
    let t1 = tenant(&s, "t1").await;
    let t2 = tenant(&s, "t2").await;
    let a = app(&s, &t1, "billing").await;
    assert!(matches!(s.app_insert(&app_of(&t1, "billing")).await, Err(StoreError::Conflict { what: "app_name", .. })));
    let other = app(&s, &t2, "billing").await; // same name, other tenant: fine
    assert_eq!(s.app_get(&t1.id, &a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(s.app_get(&t1.id, "billing").await.unwrap(), Some(a.clone()));
    assert_eq!(s.app_get(&t1.id, &other.id).await.unwrap(), None, "another tenant's app is invisible");
    let mut changed = a.clone();
    changed.endpoints = vec!["https://a.example/x".into(), "http://127.0.0.1:9/y".into()];
    changed.previous_secret = Some(a.secret.clone());
    changed.previous_expires_ms = Some(NOW + 1000);
    changed.secret = "whsec_bmV3".into();
    changed.updated_at_ms = NOW + 1;
    assert!(s.app_update(&changed).await.unwrap());
    assert_eq!(s.app_get(&t1.id, &a.id).await.unwrap(), Some(changed.clone()));
    assert_eq!(changed.valid_secrets(NOW), vec!["whsec_bmV3", "whsec_c2VjcmV0"]);
    assert_eq!(changed.valid_secrets(NOW + 1000), vec!["whsec_bmV3"]);
    let mut foreign = changed.clone();
    foreign.tenant_id = t2.id.clone();
    assert!(!s.app_update(&foreign).await.unwrap(), "update is tenant-scoped");
    assert_eq!(s.app_list(&t1.id, &page(10)).await.unwrap().len(), 1);
    assert!(!s.app_delete(&t2.id, &a.id).await.unwrap());
    assert!(s.app_delete(&t1.id, &a.id).await.unwrap());
    assert_eq!(s.app_get(&t1.id, &a.id).await.unwrap(), None);
}

pub async fn app_delete_is_refused_while_jobs_use_it(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "billing").await;
    let j = job(&s, &a, "nightly").await;
    assert!(matches!(s.app_delete(&t.id, &a.id).await, Err(StoreError::Conflict { what: "app_in_use", .. })));
    assert!(s.app_get(&t.id, &a.id).await.unwrap().is_some(), "nothing was deleted");
    assert!(s.job_delete(&t.id, &j.id).await.unwrap());
    assert!(s.app_delete(&t.id, &a.id).await.unwrap());
}

pub async fn jobs_round_trip_every_field(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "billing").await;
    let j = job(&s, &a, "nightly").await;
    assert_eq!(s.job_get(&t.id, &j.id).await.unwrap(), Some(j.clone()));
    let t2 = tenant(&s, "t2").await;
    assert_eq!(s.job_get(&t2.id, &j.id).await.unwrap(), None);
}

pub async fn job_update_is_conditional_on_version(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "billing").await;
    let j = job(&s, &a, "nightly").await;
    let mut v2 = j.clone();
    v2.name = "renamed".into();
    v2.version = 2;
    v2.timeout_ms = 1234;
    assert!(s.job_update(&v2, None, 1).await.unwrap());
    assert_eq!(s.job_get(&t.id, &j.id).await.unwrap(), Some(v2.clone()));
    // A writer that read version 1 loses.
    let mut stale = j.clone();
    stale.version = 2;
    stale.name = "lost".into();
    assert!(matches!(s.job_update(&stale, None, 1).await, Err(StoreError::Stale("job"))));
    assert_eq!(s.job_get(&t.id, &j.id).await.unwrap().unwrap().name, "renamed");
    let mut gone = v2.clone();
    gone.id = new_id(ids::JOB);
    assert!(!s.job_update(&gone, None, 2).await.unwrap());
}

pub async fn job_filters_and_state_changes(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let b = app(&s, &t, "b").await;
    let j1 = job(&s, &a, "one").await;
    let j2 = job(&s, &b, "two").await;
    let j3 = job(&s, &b, "three").await;
    let by_app = |app: &App| JobFilter { app_id: Some(app.id.clone()), ..Default::default() };
    assert_eq!(s.job_list(&t.id, &by_app(&b), &page(10)).await.unwrap().len(), 2);
    let stopped = s.job_set_state(&t.id, &j2.id, JobState::Stopped, NOW + 5).await.unwrap().unwrap();
    assert_eq!((stopped.state, stopped.version, stopped.updated_at_ms), (JobState::Stopped, 2, NOW + 5));
    // Setting the same state again changes nothing.
    let again = s.job_set_state(&t.id, &j2.id, JobState::Stopped, NOW + 9).await.unwrap().unwrap();
    assert_eq!(again.version, 2);
    let only_stopped = JobFilter { state: Some(JobState::Stopped), ..Default::default() };
    let ids: Vec<String> =
        s.job_list(&t.id, &only_stopped, &page(10)).await.unwrap().into_iter().map(|j| j.id).collect();
    assert_eq!(ids, vec![j2.id.clone()]);
    let named = JobFilter { name: Some("three".into()), ..Default::default() };
    assert_eq!(s.job_list(&t.id, &named, &page(10)).await.unwrap()[0].id, j3.id);
    let p1 = s.job_list(&t.id, &JobFilter::default(), &page(2)).await.unwrap();
    assert_eq!(p1.iter().map(|j| &j.id).collect::<Vec<_>>(), vec![&j1.id, &j2.id]);
    let p2 = s.job_list(&t.id, &JobFilter::default(), &Page { limit: 2, after: Some(j2.id.clone()) }).await.unwrap();
    assert_eq!(p2.iter().map(|j| &j.id).collect::<Vec<_>>(), vec![&j3.id]);
    assert!(s.job_set_state(&t.id, &new_id(ids::JOB), JobState::Active, NOW).await.unwrap().is_none());
}

pub async fn child_edges_refuse_cycles_and_foreign_jobs(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let c = job(&s, &a, "c").await;
    let b = job_of(&a, "b");
    s.job_insert(&b, std::slice::from_ref(&c.id)).await.unwrap();
    let top = job_of(&a, "a");
    s.job_insert(&top, std::slice::from_ref(&b.id)).await.unwrap();
    assert_eq!(s.job_children(&top.id).await.unwrap(), vec![b.id.clone()]);
    // c → a would close a → b → c → a.
    let mut c2 = c.clone();
    c2.version = 2;
    match s.job_update(&c2, Some(std::slice::from_ref(&top.id)), 1).await {
        Err(StoreError::Refused { field, message }) => {
            assert_eq!(field, "children[0]");
            assert!(message.contains("cycle"), "{message}");
        }
        other => panic!("expected a refused cycle, got {other:?}"),
    }
    assert!(s.job_children(&c.id).await.unwrap().is_empty(), "nothing written");
    assert_eq!(s.job_get(&t.id, &c.id).await.unwrap().unwrap().version, 1, "job unchanged");
    // Itself, unknown and foreign jobs are refused.
    let mut self_loop = c.clone();
    self_loop.version = 2;
    assert!(matches!(
        s.job_update(&self_loop, Some(std::slice::from_ref(&c.id)), 1).await,
        Err(StoreError::Refused { .. })
    ));
    let t2 = tenant(&s, "t2").await;
    let a2 = app(&s, &t2, "a").await;
    let foreign = job(&s, &a2, "f").await;
    let with_foreign = job_of(&a, "x");
    assert!(matches!(
        s.job_insert(&with_foreign, std::slice::from_ref(&foreign.id)).await,
        Err(StoreError::Refused { .. })
    ));
    assert!(s.job_get(&t.id, &with_foreign.id).await.unwrap().is_none(), "refused insert wrote nothing");
}

pub async fn registration_jobs_are_unique_per_app_and_handler(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let mut r1 = job_of(&a, "h");
    r1.source = JobSource::Registration;
    r1.registration_key = Some(format!("{}:h", a.id));
    s.job_insert(&r1, &[]).await.unwrap();
    let mut r2 = job_of(&a, "h");
    r2.source = JobSource::Registration;
    r2.registration_key = Some(format!("{}:h", a.id));
    assert!(matches!(s.job_insert(&r2, &[]).await, Err(StoreError::Conflict { what: "job_registration", .. })));
    // People may create more jobs on the same handler.
    job(&s, &a, "h-too").await;
    job(&s, &a, "h-three").await;
}

pub async fn runs_are_unique_per_fire_key(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let j = job(&s, &a, "j").await;
    let first = run_of(&j, "s:1000", 1000);
    assert!(s.run_insert(&first).await.unwrap());
    assert!(!s.run_insert(&run_of(&j, "s:1000", 1000)).await.unwrap(), "same fire, no second run");
    assert_eq!(s.run_by_fire_key(&j.id, "s:1000").await.unwrap(), Some(first.clone()));
    assert_eq!(s.run_get(&t.id, &first.id).await.unwrap(), Some(first.clone()));
    let other = job(&s, &a, "k").await;
    assert!(s.run_insert(&run_of(&other, "s:1000", 1000)).await.unwrap(), "fire keys are per job");
    let t2 = tenant(&s, "t2").await;
    assert_eq!(s.run_get(&t2.id, &first.id).await.unwrap(), None);
}

pub async fn runs_list_newest_first_with_a_stable_cursor(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let j = job(&s, &a, "j").await;
    let k = job(&s, &a, "k").await;
    // Two runs share an instant: the cursor must not skip or repeat either.
    for (job, key, at) in [(&j, "s:1", 1000), (&j, "s:2", 2000), (&k, "s:2", 2000), (&j, "s:3", 3000)] {
        s.run_insert(&run_of(job, key, at)).await.unwrap();
    }
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let rows = s.run_list(&t.id, &RunFilter::default(), &Page { limit: 1, after: cursor.clone() }).await.unwrap();
        let Some(r) = rows.last() else { break };
        cursor = Some(format!("{}:{}", r.scheduled_at_ms, r.id));
        seen.push(r.scheduled_at_ms);
    }
    assert_eq!(seen, vec![3000, 2000, 2000, 1000]);
    let of_k = RunFilter { job_id: Some(k.id.clone()), ..Default::default() };
    assert_eq!(s.run_list(&t.id, &of_k, &page(10)).await.unwrap().len(), 1);
    let window = RunFilter { from_ms: Some(2000), to_ms: Some(3000), ..Default::default() };
    assert_eq!(s.run_list(&t.id, &window, &page(10)).await.unwrap().len(), 2);
    let failed = RunFilter { state: Some(RunState::Failed), ..Default::default() };
    assert!(s.run_list(&t.id, &failed, &page(10)).await.unwrap().is_empty());
}

pub async fn job_delete_removes_edges_and_unstarted_runs(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let child = job(&s, &a, "child").await;
    let parent = job_of(&a, "parent");
    s.job_insert(&parent, std::slice::from_ref(&child.id)).await.unwrap();
    let pending = run_of(&child, "s:1", 1);
    s.run_insert(&pending).await.unwrap();
    let mut done = run_of(&child, "s:2", 2);
    done.state = RunState::Succeeded;
    s.run_insert(&done).await.unwrap();
    assert!(s.job_delete(&t.id, &child.id).await.unwrap());
    assert!(s.job_children(&parent.id).await.unwrap().is_empty());
    assert!(s.run_get(&t.id, &pending.id).await.unwrap().is_none(), "unstarted run deleted");
    assert!(s.run_get(&t.id, &done.id).await.unwrap().is_some(), "history kept");
    assert!(!s.job_delete(&t.id, &child.id).await.unwrap());
}

fn claim(node: &str, now: i64) -> ClaimParams {
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
    }
}

/// Runs as a node hands them to dispatch after claiming them (a claimed `dispatching` run
/// is redelivered).
fn to_dispatch(ids: &[String]) -> Vec<ToDispatch> {
    ids.iter().map(|id| ToDispatch::new(id.clone(), true)).collect()
}

pub async fn claims_are_atomic_and_expired_claims_are_recovered(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let j = job(&s, &a, "j").await;
    for i in 0..5 {
        s.run_insert(&run_of(&j, &format!("s:{i}"), NOW + i)).await.unwrap();
    }
    s.run_insert(&run_of(&j, "s:later", NOW + 60_000)).await.unwrap();
    // Two nodes claim at once: every due run goes to exactly one of them.
    let (cx, cy) = (claim("node_x", NOW + 10), claim("node_y", NOW + 10));
    let (x, y) = tokio::join!(s.run_claim(&cx), s.run_claim(&cy));
    let (x, y) = (x.unwrap(), y.unwrap());
    assert_eq!(x.len() + y.len(), 5, "{} + {}", x.len(), y.len());
    let mut ids: Vec<&String> = x.iter().chain(&y).map(|r| &r.id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 5, "no run claimed twice");
    assert!(x.iter().chain(&y).all(|r| r.state == RunState::Queued));
    // Nothing more is due; after the leases run out, another node recovers them all.
    assert!(s.run_claim(&claim("node_z", NOW + 10)).await.unwrap().is_empty());
    let recovered = s.run_claim(&claim("node_z", NOW + 30_011)).await.unwrap();
    assert_eq!(recovered.len(), 5);
    assert!(recovered.iter().all(|r| r.owner_node.as_deref() == Some("node_z")));
    // A run no longer ours cannot be dispatched by its old owner.
    let stale = s.run_dispatch_begin(&recovered[0].id, "node_x", NOW + 30_012, 30_000).await.unwrap();
    assert_eq!(stale, DispatchDecision::Gone);
    let fresh = s.run_dispatch_begin(&recovered[0].id, "node_z", NOW + 30_012, 30_000).await.unwrap();
    assert!(matches!(fresh, DispatchDecision::Dispatch { .. }));
}

pub async fn dead_nodes_hand_back_their_claims(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let mut j = job_of(&a, "j");
    j.block = BlockStrategy::DiscardLater;
    j.max_concurrency = None;
    s.job_insert(&j, &[]).await.unwrap();
    s.run_insert(&run_of(&j, "s:1", NOW)).await.unwrap();
    s.run_insert(&run_of(&j, "s:2", NOW)).await.unwrap();
    s.node_heartbeat(&beat("node_a", "http://a", 2, NOW)).await.unwrap();
    s.node_heartbeat(&beat("node_b", "http://b", 0, NOW)).await.unwrap();
    let claimed = s.run_claim(&claim("node_a", NOW)).await.unwrap();
    assert_eq!(claimed.len(), 2);
    let dispatched = s.run_dispatch_begin(&claimed[0].id, "node_a", NOW, 30_000).await.unwrap();
    assert!(matches!(dispatched, DispatchDecision::Dispatch { .. }));
    // node_b keeps heartbeating; node_a is silent past the deadline.
    let db_now = s.db_now_ms().await.unwrap();
    let dead = s.node_reap_dead(db_now + 1, NOW + 1).await.unwrap();
    assert_eq!(dead.len(), 2, "both silent as far as this check goes");
    s.node_heartbeat(&beat("node_b", "http://b", 0, NOW)).await.unwrap();
    let nodes = s.node_list().await.unwrap();
    let state = |id: &str| nodes.iter().find(|n| n.id == id).unwrap().state.clone();
    assert_eq!((state("node_a"), state("node_b")), ("dead".to_string(), "alive".to_string()));
    let queued_back = s.run_get(&t.id, &claimed[1].id).await.unwrap().unwrap();
    assert_eq!((queued_back.state, queued_back.owner_node), (RunState::Pending, None));
    let in_flight = s.run_get(&t.id, &claimed[0].id).await.unwrap().unwrap();
    assert_eq!(in_flight.state, RunState::Dispatching);
    assert_eq!(in_flight.lease_until_ms, Some(0), "its lease ended: any node redelivers it");
    let recovered = s.run_claim(&claim("node_b", NOW + 1)).await.unwrap();
    assert_eq!(recovered.len(), 2);
    // node_b restarts in place: its previous life's claims come back at once.
    assert_eq!(s.node_recover_own("node_b", NOW + 2).await.unwrap(), 2);
    assert!(s.run_claim(&claim("node_b", NOW + 2)).await.unwrap().len() == 2, "claimable again");
    s.node_leave("node_b").await.unwrap();
    assert!(s.node_list().await.unwrap().iter().any(|n| n.id == "node_b" && n.state == "left"));
}

pub async fn retention_deletes_only_old_finished_runs(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let j = job(&s, &a, "j").await;
    let mut old = run_of(&j, "s:1", NOW);
    old.state = RunState::Succeeded;
    old.finished_at_ms = Some(NOW);
    let mut recent = run_of(&j, "s:2", NOW);
    recent.state = RunState::Failed;
    recent.finished_at_ms = Some(NOW + 10_000);
    let pending = run_of(&j, "s:3", NOW - 100_000);
    // Cancelled ahead of its time: kept until that time is past the retention too.
    let mut ahead = run_of(&j, "s:4", NOW + 60_000);
    ahead.state = RunState::Cancelled;
    ahead.finished_at_ms = Some(NOW);
    for r in [&old, &recent, &pending, &ahead] {
        s.run_insert(r).await.unwrap();
    }
    s.run_log_append(&old.id, 1, &[(NOW, "info".into(), "x".into())]).await.unwrap();
    assert_eq!(s.retention_cleanup(NOW + 5_000, 100).await.unwrap(), 1);
    assert!(s.run_get(&t.id, &old.id).await.unwrap().is_none());
    assert!(s.run_logs(&old.id, 10).await.unwrap().is_empty());
    assert!(s.run_get(&t.id, &recent.id).await.unwrap().is_some());
    assert!(s.run_get(&t.id, &pending.id).await.unwrap().is_some(), "unfinished runs are never deleted");
    assert!(s.run_get(&t.id, &ahead.id).await.unwrap().is_some());
    assert_eq!(s.retention_cleanup(NOW + 60_001, 100).await.unwrap(), 2, "the cancelled run and the recent one");
    assert!(s.run_get(&t.id, &pending.id).await.unwrap().is_some());
}

/// The reaper's scans (`run_overdue`, by deadline) see `running` runs only: not runs
/// still `dispatching` (their lease covers them), not finished ones, whatever their deadline.
pub async fn reaper_scans_see_only_running_runs(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let mut runs = Vec::new();
    for name in ["running", "dispatching", "finished", "pending"] {
        let j = job(&s, &a, name).await;
        let r = run_of(&j, "s:1", NOW);
        s.run_insert(&r).await.unwrap();
        runs.push(r);
    }
    let claimed = s.run_claim(&claim("node_a", NOW)).await.unwrap();
    assert_eq!(claimed.len(), 4);
    let ids: Vec<String> = runs[..3].iter().map(|r| r.id.clone()).collect();
    let ds = s.run_dispatch_many(&to_dispatch(&ids), "node_a", NOW, 30_000).await.unwrap();
    assert!(ds.iter().all(|(_, d)| matches!(d, DispatchDecision::Dispatch { .. })));
    assert!(s.run_mark_running(&runs[0].id, 1, NOW + 1).await.unwrap());
    assert!(s.run_mark_running(&runs[2].id, 1, NOW + 1).await.unwrap());
    let done = FinishAttempt {
        run_id: runs[2].id.clone(),
        attempt: 1,
        result: AttemptResult::Succeeded,
        output: None,
        message: None,
        now_ms: NOW + 2,
        target: None,
    };
    assert!(matches!(s.run_finish_attempt(&done).await.unwrap(), FinishOutcome::Applied { .. }));
    // The job timeout is 60 s: nothing is overdue before it, only the running run after.
    assert!(s.run_overdue(NOW + 60_000, 10).await.unwrap().is_empty());
    let overdue = s.run_overdue(NOW + 60_001, 10).await.unwrap();
    assert_eq!(overdue.iter().map(|r| &r.id).collect::<Vec<_>>(), vec![&runs[0].id]);
    assert_eq!(overdue[0].state, RunState::Running);
}

pub async fn seen_webhook_ids_are_refused_twice(s: S) {
    assert!(s.webhook_seen("app_1", "msg_1", NOW).await.unwrap());
    assert!(!s.webhook_seen("app_1", "msg_1", NOW + 1).await.unwrap());
    assert!(s.webhook_seen("app_2", "msg_1", NOW).await.unwrap(), "per app");
    assert_eq!(s.webhook_forget(NOW + 1).await.unwrap(), 2);
    assert!(s.webhook_seen("app_1", "msg_1", NOW + 2).await.unwrap());
}

async fn job_with(s: &S, a: &App, name: &str, block: BlockStrategy) -> Job {
    let mut j = job_of(a, name);
    j.block = block;
    j.max_concurrency = None;
    s.job_insert(&j, &[]).await.unwrap();
    j
}

fn dispatched(d: &DispatchDecision) -> &Run {
    match d {
        DispatchDecision::Dispatch { run, .. } => run,
        other => panic!("expected a dispatch, got {other:?}"),
    }
}

pub async fn dispatch_batches_decide_each_run_as_if_alone(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let discard = job_with(&s, &a, "discard", BlockStrategy::DiscardLater).await;
    let serial = job_with(&s, &a, "serial", BlockStrategy::Serial).await;
    let cover = job_with(&s, &a, "cover", BlockStrategy::CoverEarly).await;
    // More jobs than one IN-list chunk holds, one run each.
    let mut many = Vec::new();
    for i in 0..40 {
        many.push(job_with(&s, &a, &format!("m{i}"), BlockStrategy::DiscardLater).await);
    }
    let early = run_of(&cover, "s:0", NOW - 10);
    s.run_insert(&early).await.unwrap();
    s.run_claim(&claim("node_a", NOW - 10)).await.unwrap();
    let first =
        s.run_dispatch_many(&to_dispatch(std::slice::from_ref(&early.id)), "node_a", NOW - 10, 30_000).await.unwrap();
    assert_eq!(dispatched(&first[0].1).attempt, 1);

    let runs = [
        run_of(&discard, "s:1", NOW),
        run_of(&discard, "s:2", NOW),
        run_of(&serial, "s:1", NOW),
        run_of(&serial, "s:2", NOW),
        run_of(&cover, "s:1", NOW),
    ];
    for r in &runs {
        s.run_insert(r).await.unwrap();
    }
    let mut ids: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
    for j in &many {
        let r = run_of(j, "s:1", NOW);
        s.run_insert(&r).await.unwrap();
        ids.push(r.id);
    }
    let mut claim_all = claim("node_a", NOW);
    claim_all.limit = 1000;
    assert_eq!(s.run_claim(&claim_all).await.unwrap().len(), ids.len());
    // Duplicates and unknown ids in the input are answered once, as gone.
    let mut input = ids.clone();
    input.push(ids[0].clone());
    input.push("run_unknown".into());
    let out = s.run_dispatch_many(&to_dispatch(&input), "node_a", NOW, 30_000).await.unwrap();
    assert_eq!(out.len(), ids.len() + 1, "one decision per distinct id");
    let decision = |id: &str| &out.iter().find(|(i, _)| i == id).unwrap().1;
    // Two runs of one discard_later job in one batch: the second sees the first in flight.
    assert_eq!(dispatched(decision(&runs[0].id)).attempt, 1);
    assert_eq!(decision(&runs[1].id), &DispatchDecision::Skipped { reason: "discard_later" });
    assert_eq!(dispatched(decision(&runs[2].id)).state, RunState::Dispatching);
    assert_eq!(decision(&runs[3].id), &DispatchDecision::Blocked);
    match decision(&runs[4].id) {
        DispatchDecision::Dispatch { covered, .. } => {
            assert_eq!(covered.iter().map(|r| &r.id).collect::<Vec<_>>(), [&early.id])
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(decision("run_unknown"), &DispatchDecision::Gone);
    // What was decided is what is stored.
    let get = |id: String| {
        let (s, t) = (s.clone(), t.id.clone());
        async move { s.run_get(&t, &id).await.unwrap().unwrap() }
    };
    assert_eq!(get(runs[1].id.clone()).await.state, RunState::Skipped);
    let blocked = get(runs[3].id.clone()).await;
    assert_eq!((blocked.state, blocked.lease_until_ms), (RunState::Queued, Some(NOW + 30_000)));
    assert_eq!(get(early.id.clone()).await.state, RunState::Cancelled, "cover_early cancelled the earlier run");
    for (id, _) in out.iter().filter(|(id, _)| ids[5..].contains(id)) {
        let r = get(id.clone()).await;
        assert_eq!((r.state, r.attempt, r.owner_node.as_deref()), (RunState::Dispatching, 1, Some("node_a")));
        assert_eq!(r.deadline_ms, Some(NOW + 60_000), "deadline from the job's timeout");
        let attempts = s.run_attempts(id).await.unwrap();
        assert_eq!(attempts.len(), 1);
        assert_eq!(attempts[0].webhook_id, format!("msg_{id}_0_1"));
    }
    // Another node's runs are not dispatched by this one.
    let theirs = run_of(&many[0], "s:2", NOW);
    s.run_insert(&theirs).await.unwrap();
    s.run_claim(&claim("node_b", NOW)).await.unwrap();
    let out = s.run_dispatch_many(&to_dispatch(std::slice::from_ref(&theirs.id)), "node_a", NOW, 30_000).await.unwrap();
    assert_eq!(out[0].1, DispatchDecision::Gone);
    assert_eq!(get(theirs.id.clone()).await.state, RunState::Queued);
    // A slow dispatch transaction moves its runs' deadlines: only dispatching runs of this node.
    let moved = [runs[0].id.clone(), runs[1].id.clone(), theirs.id.clone()];
    assert_eq!(s.run_extend_dispatch(&moved, "node_a", 700).await.unwrap(), 1);
    let r = get(runs[0].id.clone()).await;
    assert_eq!((r.deadline_ms, r.lease_until_ms), (Some(NOW + 60_700), Some(NOW + 90_700)));
    assert_eq!(s.run_extend_dispatch(&moved[..1], "node_b", 700).await.unwrap(), 0, "not its run");
}

fn result(run_id: &str, attempt: i64, ok: bool, output: serde_json::Value) -> FinishAttempt {
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
    }
}

pub async fn result_batches_apply_in_order_with_duplicates_and_conflicts(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let parent = job_with(&s, &a, "parent", BlockStrategy::DiscardLater).await;
    let child = job_with(&s, &a, "child", BlockStrategy::DiscardLater).await;
    let mut j = parent.clone();
    j.version = 2;
    assert!(s.job_update(&j, Some(std::slice::from_ref(&child.id)), 1).await.unwrap());
    let mut others = Vec::new();
    for i in 0..40 {
        others.push(job_with(&s, &a, &format!("o{i}"), BlockStrategy::DiscardLater).await);
    }
    let p1 = run_of(&parent, "s:1", NOW);
    let mut runs = vec![p1.clone()];
    runs.extend(others.iter().map(|j| run_of(j, "s:1", NOW)));
    for r in &runs {
        s.run_insert(r).await.unwrap();
    }
    let mut c = claim("node_a", NOW);
    c.limit = 1000;
    s.run_claim(&c).await.unwrap();
    let ids: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
    s.run_dispatch_many(&to_dispatch(&ids), "node_a", NOW, 30_000).await.unwrap();

    let mut batch = vec![
        result(&p1.id, 1, true, json!({"n": 1})),
        result(&p1.id, 1, true, json!({"n": 1})), // the same again: a duplicate
        result(&p1.id, 1, true, json!({"n": 2})), // a different result for a finished attempt
        result(&runs[1].id, 1, false, json!(null)),
        result("run_unknown", 1, true, json!(null)),
        result(&runs[2].id, 2, true, json!(null)), // not the current attempt
    ];
    let mut targeted = result(&runs[3].id, 1, true, json!("t"));
    targeted.target = Some(AttemptTarget {
        executor_id: Some("exe_1".into()),
        address: Some("http://x".into()),
        trail: json!([{"x": 1}]),
    });
    batch.push(targeted);
    // More results than one chunk holds, each with its own output and arrival time.
    for (i, r) in runs.iter().enumerate().skip(4) {
        let mut x = result(&r.id, 1, true, json!({ "i": i }));
        x.now_ms = NOW + 1 + i as i64;
        batch.push(x);
    }
    // The whole batch is stamped with its latest arrival.
    let latest = NOW + runs.len() as i64;
    let out = s.run_finish_many(&batch).await.unwrap();
    assert_eq!(out.len(), batch.len());
    match &out[0] {
        FinishOutcome::Applied { run, children } => {
            assert_eq!(run.state, RunState::Succeeded);
            assert_eq!(children.len(), 1, "the child fires once");
            assert_eq!(children[0].parent_output, Some(json!({"n": 1})));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(out[1], FinishOutcome::Duplicate);
    assert_eq!(out[2], FinishOutcome::Conflict { state: RunState::Succeeded, attempt: 1 });
    assert!(matches!(&out[3], FinishOutcome::Applied { run, .. } if run.state == RunState::Retrying));
    assert_eq!(out[4], FinishOutcome::NotFound);
    assert_eq!(out[5], FinishOutcome::Conflict { state: RunState::Dispatching, attempt: 1 });
    assert!(
        out[6..].iter().all(|o| matches!(o, FinishOutcome::Applied { run, .. } if run.state == RunState::Succeeded))
    );
    // Stored as decided.
    let stored = s.run_get(&t.id, &runs[1].id).await.unwrap().unwrap();
    assert_eq!(
        (stored.state, stored.next_attempt_at_ms, stored.owner_node),
        (RunState::Retrying, Some(NOW + 5_000), None)
    );
    assert_eq!(s.run_get(&t.id, &runs[2].id).await.unwrap().unwrap().state, RunState::Dispatching);
    for (i, r) in runs.iter().enumerate().skip(4) {
        let stored = s.run_get(&t.id, &r.id).await.unwrap().unwrap();
        assert_eq!((stored.state, stored.output), (RunState::Succeeded, Some(json!({ "i": i }))));
        assert_eq!((stored.finished_at_ms, stored.updated_at_ms), (Some(latest), latest));
        let att = s.run_attempts(&r.id).await.unwrap();
        assert_eq!((att[0].state.as_str(), att[0].output.clone()), ("succeeded", Some(json!({ "i": i }))));
        assert_eq!(att[0].finished_at_ms, Some(latest));
    }
    let att = s.run_attempts(&runs[3].id).await.unwrap();
    assert_eq!((att[0].executor_id.as_deref(), att[0].trail.clone()), (Some("exe_1"), json!([{"x": 1}])));
    let of_child = RunFilter { job_id: Some(child.id.clone()), ..Default::default() };
    assert_eq!(s.run_list(&t.id, &of_child, &page(10)).await.unwrap().len(), 1);
    // The same duplicate in a later batch is still a duplicate.
    assert_eq!(
        s.run_finish_attempt(&result(&p1.id, 1, true, json!({"n": 1}))).await.unwrap(),
        FinishOutcome::Duplicate
    );
}

pub async fn generate_batches_skip_jobs_that_changed(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let fresh = job(&s, &a, "fresh").await;
    let changed = job(&s, &a, "changed").await;
    let mut many = Vec::new();
    for i in 0..40 {
        many.push(run_of(&fresh, &format!("s:{i}"), NOW + i));
    }
    let batch = [
        GenerateJob { job_id: fresh.id.clone(), job_version: 1, runs: many.clone(), generated_until_ms: NOW + 100 },
        GenerateJob {
            job_id: changed.id.clone(),
            job_version: 7, // not its version: nothing of it is written
            runs: vec![run_of(&changed, "s:1", NOW)],
            generated_until_ms: NOW + 100,
        },
    ];
    assert_eq!(s.run_generate_many(&batch).await.unwrap(), vec![Some(40), None]);
    let listed = |job: &Job| {
        let (s, t, id) = (s.clone(), t.id.clone(), job.id.clone());
        async move { s.run_list(&t, &RunFilter { job_id: Some(id), ..Default::default() }, &page(100)).await.unwrap() }
    };
    assert_eq!(listed(&fresh).await.len(), 40);
    assert!(listed(&changed).await.is_empty());
    let got = s.job_get(&t.id, &changed.id).await.unwrap().unwrap();
    assert_eq!(got.generated_until_ms, None);
    assert_eq!(s.job_get(&t.id, &fresh.id).await.unwrap().unwrap().generated_until_ms, Some(NOW + 100));
    // The same fire keys again are ignored, not doubled.
    let again = [GenerateJob { job_id: fresh.id.clone(), job_version: 1, runs: many, generated_until_ms: NOW + 200 }];
    assert_eq!(s.run_generate_many(&again).await.unwrap(), vec![Some(0)]);
    assert_eq!(listed(&fresh).await.len(), 40);
}

/// One batch of jobs at different versions with different cursors (more than one chunk of
/// ids): every job gets its own cursor, and a job whose version moved spoils nothing else
/// (the batch is redone job by job).
pub async fn generate_moves_each_jobs_own_cursor_in_a_mixed_batch(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let mut jobs = Vec::new();
    for i in 0..40 {
        let mut j = job_of(&a, &format!("j{i}"));
        j.version = 1 + i % 3;
        s.job_insert(&j, &[]).await.unwrap();
        jobs.push(j);
    }
    let batch: Vec<GenerateJob> = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| GenerateJob {
            job_id: j.id.clone(),
            job_version: if i == 37 { 9 } else { j.version }, // 37 was edited meanwhile
            runs: vec![run_of(j, "s:1", NOW + i as i64)],
            generated_until_ms: NOW + 1_000 + i as i64,
        })
        .collect();
    let got = s.run_generate_many(&batch).await.unwrap();
    for (i, j) in jobs.iter().enumerate() {
        let stored = s.job_get(&t.id, &j.id).await.unwrap().unwrap().generated_until_ms;
        if i == 37 {
            assert_eq!((got[i], stored), (None, None), "the edited job");
        } else {
            assert_eq!((got[i], stored), (Some(1), Some(NOW + 1_000 + i as i64)), "job {i}");
        }
    }
}

/// Job affinity (`runs.bucket`, `ClaimParams::owned_buckets`): a node claims the schedule
/// fires of its own buckets as soon as they are in its claim window, the others' only
/// once they are overdue past the grace; triggered runs go to any node at once.
pub async fn claims_prefer_owned_buckets_and_take_others_after_the_grace(s: S) {
    use sundial_core::affinity::{ALL_BUCKETS, BUCKETS, Ring, bucket_of};
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    // One job in every bucket (0 and 63 included: the mask's lowest and sign bit).
    let mut by_bucket: Vec<Option<Job>> = vec![None; BUCKETS];
    while by_bucket.iter().any(Option::is_none) {
        let j = job_of(&a, "j");
        let b = bucket_of(&j.id) as usize;
        if by_bucket[b].is_none() {
            by_bucket[b] = Some(Job { name: format!("j{b}"), ..j });
        }
    }
    let jobs: Vec<Job> = by_bucket.into_iter().map(Option::unwrap).collect();
    for j in &jobs {
        s.job_insert(j, &[]).await.unwrap();
        // Through the generator's path: it must store the bucket too.
        let fire = run_of(j, &format!("s:{NOW}"), NOW);
        assert_eq!(s.run_generate(&j.id, j.version, &[fire], NOW + 1_000).await.unwrap(), Some(1));
    }
    let manual: Vec<Run> = jobs[..4]
        .iter()
        .map(|j| Run::pending(&j.tenant_id, &j.id, j.version, format!("m:{}", j.name), TriggerKind::Manual, NOW, NOW))
        .collect();
    for r in &manual {
        assert!(s.run_insert(r).await.unwrap());
    }
    let ring = Ring::new(&["node_x", "node_y"]);
    let (mask_x, mask_y) = (ring.mask_of("node_x"), ring.mask_of("node_y"));
    assert_eq!(mask_x | mask_y, ALL_BUCKETS);
    assert!(mask_x != 0 && mask_y != 0, "both nodes own buckets: {mask_x:x} {mask_y:x}");
    let grace = 2_000;
    let with = |node: &str, now: i64, owned: u64| ClaimParams {
        due_before_ms: now + 5_000,
        owned_buckets: owned,
        foreign_due_before_ms: now - grace,
        ..claim(node, now)
    };
    let schedule_buckets = |runs: &[Run]| -> u64 {
        runs.iter().filter(|r| r.trigger == TriggerKind::Schedule).fold(0, |m, r| m | 1u64 << bucket_of(&r.job_id))
    };
    // Ahead of time (the fires are due in 1 s): node_x takes exactly its own buckets, and
    // every triggered run.
    let x = s.run_claim(&with("node_x", NOW - 1_000, mask_x)).await.unwrap();
    assert_eq!(schedule_buckets(&x), mask_x, "node_x claimed its own buckets, and only those");
    assert_eq!(x.iter().filter(|r| r.trigger == TriggerKind::Schedule).count() as u32, mask_x.count_ones());
    assert_eq!(x.iter().filter(|r| r.trigger == TriggerKind::Manual).count(), manual.len(), "triggers: anyone");
    // node_y is silent. A third node owning nothing leaves node_y's fires alone while
    // they are less than the grace late ...
    assert!(s.run_claim(&with("node_z", NOW, 0)).await.unwrap().is_empty());
    assert!(s.run_claim(&with("node_z", NOW + grace - 1, 0)).await.unwrap().is_empty());
    // ... and takes them all once they are that late.
    let z = s.run_claim(&with("node_z", NOW + grace, 0)).await.unwrap();
    assert_eq!(schedule_buckets(&z), mask_y, "node_y's share, after the grace");
    assert_eq!(z.len() as u32, mask_y.count_ones());
    assert!(z.iter().all(|r| r.state == RunState::Queued && r.owner_node.as_deref() == Some("node_z")));

    // The live node set behind the ring: alive and heartbeating since the given instant.
    s.node_heartbeat(&beat("node_x", "http://x", 0, NOW)).await.unwrap();
    s.node_heartbeat(&beat("node_y", "http://y", 0, NOW)).await.unwrap();
    let db_now = s.db_now_ms().await.unwrap();
    assert_eq!(s.node_live_ids(db_now - 10_000).await.unwrap(), ["node_x", "node_y"]);
    s.node_leave("node_y").await.unwrap();
    assert_eq!(s.node_live_ids(db_now - 10_000).await.unwrap(), ["node_x"]);
    assert!(s.node_live_ids(db_now + 60_000).await.unwrap().is_empty(), "silent since then: not live");
}

/// The claim-free path: a node reads its buckets' pending fires with `run_peek` (a plain
/// read after a cursor) and the dispatch transaction takes them from `pending`.
pub async fn peeked_fires_are_read_without_a_claim_and_dispatched_from_pending(s: S) {
    use sundial_core::affinity::{ALL_BUCKETS, bucket_of};
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let j = job_with(&s, &a, "j", BlockStrategy::Serial).await;
    let k = job_with(&s, &a, "k", BlockStrategy::DiscardLater).await;
    // Two fires at the same instant (the cursor breaks the tie by id), later ones, a
    // triggered run and one fire of `k` far ahead.
    let mut fires = Vec::new();
    for (job, key, at) in [(&j, "s:1", NOW), (&k, "s:1", NOW), (&j, "s:2", NOW + 1_000), (&k, "s:3", NOW + 2_000)] {
        let r = run_of(job, key, at);
        assert!(s.run_insert(&r).await.unwrap());
        fires.push(r);
    }
    assert!(s.run_insert(&run_of(&k, "s:far", NOW + 60_000)).await.unwrap());
    let manual = Run::pending(&t.id, &j.id, j.version, "m:1".into(), TriggerKind::Manual, NOW, NOW);
    assert!(s.run_insert(&manual).await.unwrap());
    let peek = |after_ms: i64, after_id: &str, owned: u64, limit: i64| PeekParams {
        after_ms,
        after_id: after_id.into(),
        due_before_ms: NOW + 5_000,
        owned_buckets: owned,
        limit,
    };
    let ids = |runs: &[Run]| runs.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
    let mut in_order = fires.clone();
    in_order.sort_by(|x, y| (x.scheduled_at_ms, &x.id).cmp(&(y.scheduled_at_ms, &y.id)));

    // In (scheduled at, id) order, after the cursor, up to the limit and the due instant;
    // schedule fires only; nothing written.
    let first = s.run_peek(&peek(NOW - 2_000, "", ALL_BUCKETS, 3)).await.unwrap();
    assert_eq!(ids(&first), ids(&in_order[..3]));
    assert!(first.iter().all(|r| r.state == RunState::Pending && r.owner_node.is_none()));
    let last = first.last().unwrap();
    let rest = s.run_peek(&peek(last.scheduled_at_ms, &last.id, ALL_BUCKETS, 10)).await.unwrap();
    assert_eq!(ids(&rest), ids(&in_order[3..]), "the cursor resumes past the tie, the far fire is not due");
    assert_eq!(s.run_peek(&peek(NOW - 2_000, "", 0, 10)).await.unwrap(), [], "no bucket, no fire");
    let only_j = 1u64 << bucket_of(&j.id);
    let of_j = s.run_peek(&peek(NOW - 2_000, "", only_j, 10)).await.unwrap();
    assert!(of_j.iter().all(|r| bucket_of(&r.job_id) == bucket_of(&j.id)) && !of_j.is_empty());
    assert_eq!(s.run_get(&t.id, &fires[0].id).await.unwrap().unwrap().state, RunState::Pending);

    // A claim that leaves our own buckets to the peek takes only the triggered run ahead of
    // time, and our own fires only once they are overdue past the grace (the backstop).
    let mut c = claim("node_a", NOW);
    c.due_before_ms = NOW + 5_000;
    c.foreign_due_before_ms = NOW - 2_000;
    c.own_fires_due_before_ms = Some(NOW - 2_000);
    assert_eq!(ids(&s.run_claim(&c).await.unwrap()), vec![manual.id.clone()]);
    // A node that is behind puts its own backstop further back than the grace of others'.
    c.now_ms = NOW + 2_000;
    c.foreign_due_before_ms = NOW;
    c.own_fires_due_before_ms = Some(NOW - 1);
    assert_eq!(s.run_claim(&c).await.unwrap(), [], "our own fires wait for our own backstop");
    let mut other = c.clone();
    other.node_id = "node_c".into();
    other.owned_buckets = 0;
    other.own_fires_due_before_ms = Some(NOW - 30_000);
    other.limit = 1;
    let helped = s.run_claim(&other).await.unwrap();
    assert_eq!(helped.len(), 1, "a node owning none of them claims them after the grace");
    assert_eq!(s.run_release("node_c", &ids(&helped), NOW).await.unwrap(), 1);
    c.own_fires_due_before_ms = Some(NOW);
    let backstop = s.run_claim(&c).await.unwrap();
    assert_eq!(ids(&backstop).len(), 2, "the two fires due at NOW: {backstop:?}");
    // The claims are undone so the rest of the test sees pending fires.
    let back: Vec<String> = ids(&backstop);
    assert_eq!(s.run_release("node_a", &back, NOW).await.unwrap(), 2);

    // Dispatch takes a peeked fire from `pending` (claimed and dispatched in one step).
    let out = s.run_dispatch_many(&[ToDispatch::new(fires[0].id.clone(), false)], "node_a", NOW, 30_000).await.unwrap();
    let run = dispatched(&out[0].1);
    assert_eq!((run.state, run.attempt, run.owner_node.as_deref()), (RunState::Dispatching, 1, Some("node_a")));
    let stored = s.run_get(&t.id, &fires[0].id).await.unwrap().unwrap();
    assert_eq!((stored.state, stored.attempt), (RunState::Dispatching, 1));
    // The same fire read again (a stale timer entry): already under way, never a second
    // delivery unless the node claimed it `dispatching` (a recovered run).
    let again =
        s.run_dispatch_many(&[ToDispatch::new(fires[0].id.clone(), false)], "node_a", NOW, 30_000).await.unwrap();
    assert_eq!(again[0].1, DispatchDecision::Gone);
    assert_eq!(s.run_attempts(&fires[0].id).await.unwrap().len(), 1);
    // The next fire of the `serial` job is blocked by it: it is claimed for this node and waits.
    let blocked =
        s.run_dispatch_many(&[ToDispatch::new(fires[2].id.clone(), false)], "node_a", NOW, 30_000).await.unwrap();
    assert_eq!(blocked[0].1, DispatchDecision::Blocked);
    let held = s.run_get(&t.id, &fires[2].id).await.unwrap().unwrap();
    assert_eq!(
        (held.state, held.owner_node.as_deref(), held.lease_until_ms),
        (RunState::Queued, Some("node_a"), Some(NOW + 30_000))
    );
    // The misfire policy may expire a peeked fire straight from `pending`.
    assert_eq!(s.run_expire_many(&[fires[3].id.clone()], "node_a", "missed", NOW + 10_000).await.unwrap(), 1);
    assert_eq!(s.run_get(&t.id, &fires[3].id).await.unwrap().unwrap().state, RunState::Expired);
    // A peeked fire another node claimed meanwhile is theirs.
    let mut cb = claim("node_b", NOW);
    cb.due_before_ms = NOW + 5_000;
    assert_eq!(ids(&s.run_claim(&cb).await.unwrap()), [fires[1].id.clone()]);
    let theirs =
        s.run_dispatch_many(&[ToDispatch::new(fires[1].id.clone(), false)], "node_a", NOW, 30_000).await.unwrap();
    assert_eq!(theirs[0].1, DispatchDecision::Gone);
    assert_eq!(s.run_get(&t.id, &fires[1].id).await.unwrap().unwrap().owner_node.as_deref(), Some("node_b"));
    assert_eq!(
        s.run_expire_many(&[fires[1].id.clone()], "node_a", "missed", NOW + 10_000).await.unwrap(),
        0,
        "not ours to expire"
    );
    assert_eq!(s.run_peek(&peek(NOW - 2_000, "", ALL_BUCKETS, 10)).await.unwrap(), [], "nothing pending is left due");
}

fn beat(id: &str, address: &str, claimed: i64, started_at_ms: i64) -> NodeBeat {
    NodeBeat {
        id: id.into(),
        address: address.into(),
        version: "1".into(),
        claimed,
        started_at_ms,
        ..NodeBeat::default()
    }
}

/// What the engine's bulk misfire settling relies on (issue 14): a batch of jobs read at
/// once, "a later fire has gone or is missed too" for many jobs in one call, and a batch of
/// fires expired by one statement, conditional like the single-run expiry.
pub async fn late_fires_are_settled_in_bulk(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let j = job_with(&s, &a, "j", BlockStrategy::Serial).await;
    let k = job_with(&s, &a, "k", BlockStrategy::Serial).await;
    let jobs = s.job_get_many(&[j.id.clone(), k.id.clone(), "job_missing".into()]).await.unwrap();
    let mut got: Vec<&str> = jobs.iter().map(|x| x.id.as_str()).collect();
    got.sort_unstable();
    let mut want = vec![j.id.as_str(), k.id.as_str()];
    want.sort_unstable();
    assert_eq!(got, want, "missing ids are left out");

    let at = |i: i64| NOW + i * 1_000;
    let fire = |job: &Job, i: i64, state: RunState| {
        let mut r = run_of(job, &format!("s:{}", at(i)), at(i));
        r.state = state;
        r
    };
    // j: a finished fire long ago, then 10 (missed), 11 succeeded, 12 expired, 13 pending.
    // k: 10 (missed), 11 expired, 12 pending but not missed.
    let mut j10 = None;
    let mut k10 = None;
    for (job, i, state) in [
        (&j, -100, RunState::Succeeded),
        (&j, 10, RunState::Pending),
        (&j, 11, RunState::Succeeded),
        (&j, 12, RunState::Expired),
        (&j, 13, RunState::Pending),
        (&k, 10, RunState::Pending),
        (&k, 11, RunState::Expired),
        (&k, 12, RunState::Pending),
    ] {
        let r = fire(job, i, state);
        assert!(s.run_insert(&r).await.unwrap());
        if i == 10 {
            if job.id == j.id { j10 = Some(r) } else { k10 = Some(r) }
        }
    }
    let (j10, k10) = (j10.unwrap(), k10.unwrap());
    let before = at(12); // fires before +12 s are missed
    let later = s.run_later_fires(&[(j.id.clone(), at(10)), (k.id.clone(), at(10))], before).await.unwrap();
    assert_eq!(later, vec![j.id.clone()], "j's fire at +11 s has gone; k's later fires are expired or not missed");
    let later = |job: &Job, from: i64| vec![(job.id.clone(), from)];
    assert_eq!(s.run_later_fires(&later(&j, at(10)), before).await.unwrap(), vec![j.id.clone()]);
    assert!(
        s.run_later_fires(&later(&j, at(11)), before).await.unwrap().is_empty(),
        "nothing gone or missed after +11 s"
    );
    assert!(s.run_later_fires(&later(&k, at(10)), before).await.unwrap().is_empty());
    assert_eq!(
        s.run_later_fires(&later(&k, at(10)), at(13)).await.unwrap(),
        vec![k.id.clone()],
        "k's +12 s is missed before +13 s"
    );
    assert!(s.run_later_fires(&[], before).await.unwrap().is_empty());

    // Expired in bulk, only from `pending` (or this node's `queued`).
    let ids = vec![j10.id.clone(), k10.id.clone(), j10.id.clone()];
    assert_eq!(s.run_expire_many(&ids, "node_a", "missed; misfire policy skip", NOW).await.unwrap(), 2);
    for r in [&j10, &k10] {
        let got = s.run_get(&t.id, &r.id).await.unwrap().unwrap();
        assert_eq!(got.state, RunState::Expired);
        assert_eq!(got.message.as_deref(), Some("missed; misfire policy skip"));
    }
    assert_eq!(s.run_expire_many(&ids, "node_a", "again", NOW).await.unwrap(), 0, "already final: nothing changes");
}
