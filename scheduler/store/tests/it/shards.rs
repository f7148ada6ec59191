//! Sharded runs in the store: the frozen shard set, conditional shard results, the
//! atomic pick of due shard retries, and the run following its shards.

use std::sync::Arc;
use sundial_core::affinity::ALL_BUCKETS;

use serde_json::{Value, json};
use sundial_core::ids::{self, new_id};
use sundial_core::job::{ChildEdge, FailureSpec, MisfireSpec};
use sundial_core::run_state::FailReason;
use sundial_core::schedule::ScheduleSpec;
use sundial_core::types::*;
use sundial_store::*;

for_each_database!(
    shards_are_frozen_once_with_stable_webhook_ids,
    shard_results_are_conditional_on_the_shard_attempt,
    a_due_shard_retry_is_started_by_one_caller,
    a_sharded_run_succeeds_with_all_shards_and_fails_with_one,
    a_shard_failing_then_succeeding_on_retry_fires_the_children_once_after_the_last_shard,
    reapers_see_shards_not_whole_sharded_runs,
);

type S = Arc<dyn Store>;
const NOW: i64 = 1_790_000_000_000;
const TIMEOUT: i64 = 60_000;
const LEASE: i64 = 30_000;

struct Fixture {
    tenant: Tenant,
    app: App,
}

async fn fixture(s: &S) -> Fixture {
    let tenant = Tenant { id: new_id(ids::TENANT), name: "t".into(), created_at_ms: NOW };
    s.tenant_insert(&tenant).await.unwrap();
    let app = App {
        id: new_id(ids::APP),
        tenant_id: tenant.id.clone(),
        name: "a".into(),
        description: String::new(),
        endpoints: vec![],
        secret: "whsec_c2VjcmV0".into(),
        previous_secret: None,
        previous_expires_ms: None,
        created_at_ms: NOW,
        updated_at_ms: NOW,
    };
    s.app_insert(&app).await.unwrap();
    Fixture { tenant, app }
}

/// A sharding job (each test run gets its own job, so block strategies never interfere).
async fn sharded_job(s: &S, f: &Fixture, name: &str, children: &[ChildEdge]) -> Job {
    let manual = ScheduleSpec {
        kind: ScheduleKind::Manual,
        expression: None,
        timezone: None,
        every_ms: None,
        anchor: None,
        at: None,
        start_at: None,
        end_at: None,
    };
    let j = Job {
        id: new_id(ids::JOB),
        tenant_id: f.tenant.id.clone(),
        app_id: f.app.id.clone(),
        name: name.into(),
        description: String::new(),
        handler: Some("h".into()),
        script_id: None,
        script_version: None,
        schedule_kind: ScheduleKind::Manual,
        schedule: manual,
        params: json!({}),
        route: Route::Sharding,
        block: BlockStrategy::Serial,
        misfire: MisfireSpec {
            policy: MisfirePolicy::FireOnce,
            threshold_ms: None,
            catchup_window_ms: None,
            max_catchup: None,
        },
        failure: FailureSpec {
            policy: FailurePolicyKind::Retry,
            max_retries: Some(2),
            backoff: None,
            allow_overlap: None,
        },
        timeout_ms: TIMEOUT,
        max_concurrency: None,
        wait: sundial_core::types::WaitFor::All,
        state: JobState::Active,
        script_limits: None,
        source: JobSource::Api,
        registration_key: None,
        version: 1,
        generated_until_ms: None,
        created_at_ms: NOW,
        updated_at_ms: NOW,
    };
    s.job_insert(&j, children).await.unwrap();
    j
}

fn claim(node: &str, now: i64) -> ClaimParams {
    ClaimParams {
        node_id: node.into(),
        due_before_ms: now,
        now_ms: now,
        lease_until_ms: now + LEASE,
        limit: 100,
        include_schedule: true,
        owned_buckets: sundial_core::affinity::ALL_BUCKETS,
        foreign_due_before_ms: now,
        own_fires_due_before_ms: None,
        skip_tenant: None,
    }
}

/// A run of `job` claimed by `node` and moved to `dispatching` by the dispatch transaction.
async fn dispatched(s: &S, job: &Job, node: &str) -> Run {
    let run =
        Run::pending(&job.tenant_id, &job.id, 1, format!("m:{}", new_id(ids::RUN)), TriggerKind::Manual, NOW, NOW);
    s.run_insert(&run).await.unwrap();
    assert_eq!(s.run_claim(&claim(node, NOW)).await.unwrap().len(), 1);
    match s.run_dispatch_begin(&run.id, node, NOW, LEASE).await.unwrap() {
        DispatchDecision::Dispatch { run, .. } => run,
        other => panic!("not dispatched: {other:?}"),
    }
}

fn targets(names: &[&str]) -> Vec<ShardTarget> {
    names
        .iter()
        .map(|n| ShardTarget { executor_id: format!("static:http://{n}/"), address: format!("http://{n}/") })
        .collect()
}

fn freeze(run: &Run, node: &str, targets: Vec<ShardTarget>, now: i64) -> ShardFreeze {
    ShardFreeze {
        run_id: run.id.clone(),
        run_attempt: run.attempt,
        node_id: node.into(),
        targets,
        deadline_ms: now + TIMEOUT,
        now_ms: now,
    }
}

/// Freeze `n` shards of a fresh dispatched run of a fresh job.
async fn frozen(s: &S, f: &Fixture, name: &str, n: usize, children: &[ChildEdge]) -> (Job, Run) {
    let job = sharded_job(s, f, name, children).await;
    let run = dispatched(s, &job, "node_a").await;
    let names: Vec<String> = (0..n).map(|i| format!("e{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let d = s.shard_freeze(&freeze(&run, "node_a", targets(&names), NOW)).await.unwrap().unwrap();
    assert_eq!(d.len(), n);
    let run = s.run_get(&f.tenant.id, &run.id).await.unwrap().unwrap();
    (job, run)
}

fn ok(run: &Run, shard: i64, attempt: i64, output: Value) -> FinishShard {
    FinishShard {
        run_id: run.id.clone(),
        shard_index: shard,
        attempt,
        result: AttemptResult::Succeeded,
        output: Some(output),
        message: None,
        now_ms: NOW + 1_000,
    }
}

fn failed(run: &Run, shard: i64, attempt: i64, retry_at_ms: Option<i64>) -> FinishShard {
    FinishShard {
        run_id: run.id.clone(),
        shard_index: shard,
        attempt,
        result: AttemptResult::Failed { reason: FailReason::Error, retry_at_ms },
        output: None,
        message: Some(format!("shard {shard} broke")),
        now_ms: NOW + 1_000,
    }
}

fn applied(o: ShardFinishOutcome) -> (Run, RunShard, Vec<Run>) {
    match o {
        ShardFinishOutcome::Applied { run, shard, children } => (run, shard, children),
        other => panic!("not applied: {other:?}"),
    }
}

pub async fn shards_are_frozen_once_with_stable_webhook_ids(s: S) {
    let f = fixture(&s).await;
    let job = sharded_job(&s, &f, "j", &[]).await;
    let run = dispatched(&s, &job, "node_a").await;
    // Only the run's owner freezes, and only for the attempt it dispatched.
    assert_eq!(s.shard_freeze(&freeze(&run, "node_b", targets(&["x"]), NOW)).await.unwrap(), None);
    let mut stale = freeze(&run, "node_a", targets(&["x"]), NOW);
    stale.run_attempt = 2;
    assert_eq!(s.shard_freeze(&stale).await.unwrap(), None);
    assert!(s.shard_list(&run.id).await.unwrap().is_empty(), "refused freezes wrote nothing");

    let first = s.shard_freeze(&freeze(&run, "node_a", targets(&["e0", "e1", "e2"]), NOW)).await.unwrap().unwrap();
    let ids: Vec<&str> = first.iter().map(|d| d.webhook_id.as_str()).collect();
    assert_eq!(ids, (0..3).map(|i| format!("msg_{}_{i}_1", run.id)).collect::<Vec<_>>());
    for (i, d) in first.iter().enumerate() {
        let sh = &d.shard;
        assert_eq!((sh.shard_index, sh.state, sh.attempt), (i as i64, RunState::Dispatching, 1));
        assert_eq!(sh.address.as_deref(), Some(format!("http://e{i}/").as_str()));
        assert_eq!(sh.deadline_ms, Some(NOW + TIMEOUT));
    }
    assert_eq!(s.run_get(&f.tenant.id, &run.id).await.unwrap().unwrap().shard_total, Some(3));
    let attempts = s.run_attempts(&run.id).await.unwrap();
    assert_eq!(attempts.len(), 3, "one attempt row per shard; shard 0's is the dispatch transaction's");
    assert!(attempts.iter().all(|a| a.attempt == 1 && a.state == "dispatching"));
    assert_eq!(attempts[0].executor_id.as_deref(), Some("static:http://e0/"));

    // Frozen: a second call (the same node again) keeps the set whatever the executors now.
    let again = s.shard_freeze(&freeze(&run, "node_a", targets(&["other"]), NOW + 5)).await.unwrap().unwrap();
    assert_eq!(
        again.iter().map(|d| &d.webhook_id).collect::<Vec<_>>(),
        first.iter().map(|d| &d.webhook_id).collect::<Vec<_>>()
    );
    assert_eq!(
        again.iter().map(|d| d.shard.address.clone()).collect::<Vec<_>>(),
        first.iter().map(|d| d.shard.address.clone()).collect::<Vec<_>>()
    );

    // node_a dies: once the run's lease runs out, node_b re-begins the same attempt and
    // finds the same shards, the one already answered (202) included, with the same ids.
    assert!(s.shard_mark_running(&run.id, 1, 1, NOW + 10).await.unwrap());
    assert!(!s.shard_mark_running(&run.id, 1, 1, NOW + 11).await.unwrap(), "only from dispatching");
    let later = NOW + TIMEOUT + LEASE + 1;
    let recovered = s.run_claim(&claim("node_b", later)).await.unwrap();
    assert_eq!(recovered.iter().map(|r| &r.id).collect::<Vec<_>>(), [&run.id]);
    let DispatchDecision::Dispatch { run: again_run, .. } =
        s.run_dispatch_begin(&run.id, "node_b", later, LEASE).await.unwrap()
    else {
        panic!("redelivery not begun");
    };
    assert_eq!(again_run.attempt, 1, "a redelivery is the same attempt");
    let redo = s.shard_freeze(&freeze(&again_run, "node_b", targets(&["new"]), later)).await.unwrap().unwrap();
    assert_eq!(
        redo.iter().map(|d| &d.webhook_id).collect::<Vec<_>>(),
        first.iter().map(|d| &d.webhook_id).collect::<Vec<_>>()
    );
    let states: Vec<RunState> = redo.iter().map(|d| d.shard.state).collect();
    assert_eq!(states, [RunState::Dispatching, RunState::Running, RunState::Dispatching]);
    assert_eq!(redo[0].shard.deadline_ms, Some(later + TIMEOUT), "a redelivered shard gets a fresh deadline");
    // Shard 1 answered 202 after the second call (which re-sent it): it keeps that deadline.
    assert_eq!(redo[1].shard.deadline_ms, Some(NOW + 5 + TIMEOUT), "an answered shard keeps its own");
    assert_eq!(s.run_attempts(&run.id).await.unwrap().len(), 3, "no attempt added by a redelivery");
    assert_eq!(
        s.shard_freeze(&freeze(&again_run, "node_a", targets(&["e0"]), later)).await.unwrap(),
        None,
        "node_a lost it"
    );

    // No executor at all: nothing is frozen (the run's attempt fails, and a later attempt freezes anew).
    let job2 = sharded_job(&s, &f, "k", &[]).await;
    let empty = dispatched(&s, &job2, "node_a").await;
    assert_eq!(s.shard_freeze(&freeze(&empty, "node_a", vec![], NOW)).await.unwrap(), Some(vec![]));
    assert!(s.shard_list(&empty.id).await.unwrap().is_empty());
    assert_eq!(s.run_get(&f.tenant.id, &empty.id).await.unwrap().unwrap().shard_total, None);
}

pub async fn shard_results_are_conditional_on_the_shard_attempt(s: S) {
    let f = fixture(&s).await;
    let (_, run) = frozen(&s, &f, "j", 2, &[]).await;
    let (r, sh, children) = applied(s.shard_finish(&ok(&run, 0, 1, json!({"part": 0}))).await.unwrap());
    assert_eq!((r.state, sh.state, children.len()), (RunState::Dispatching, RunState::Succeeded, 0));
    assert_eq!(sh.output, Some(json!({"part": 0})));
    // The same result again changes nothing; a different one for the finished attempt is refused.
    assert_eq!(s.shard_finish(&ok(&run, 0, 1, json!({"part": 0}))).await.unwrap(), ShardFinishOutcome::Duplicate);
    assert_eq!(
        s.shard_finish(&ok(&run, 0, 1, json!({"part": "other"}))).await.unwrap(),
        ShardFinishOutcome::Conflict { state: RunState::Succeeded, attempt: 1 }
    );
    assert_eq!(
        s.shard_finish(&failed(&run, 0, 1, None)).await.unwrap(),
        ShardFinishOutcome::Conflict { state: RunState::Succeeded, attempt: 1 }
    );
    // An attempt that is not the shard's current one; a shard that does not exist.
    assert_eq!(
        s.shard_finish(&ok(&run, 1, 2, json!(1))).await.unwrap(),
        ShardFinishOutcome::Conflict { state: RunState::Dispatching, attempt: 1 }
    );
    assert_eq!(s.shard_finish(&ok(&run, 2, 1, json!(1))).await.unwrap(), ShardFinishOutcome::NotFound);
    // Shard 1 fails with a retry allowed: it waits, the run does not move.
    let (r, sh, _) = applied(s.shard_finish(&failed(&run, 1, 1, Some(NOW + 5_000))).await.unwrap());
    assert_eq!(
        (r.state, sh.state, sh.next_attempt_at_ms),
        (RunState::Dispatching, RunState::Retrying, Some(NOW + 5_000))
    );
    assert_eq!(sh.reason.as_deref(), Some("error"));
    assert_eq!(s.shard_finish(&failed(&run, 1, 1, Some(NOW + 5_000))).await.unwrap(), ShardFinishOutcome::Duplicate);
    assert_eq!(
        s.shard_finish(&ok(&run, 1, 1, json!(1))).await.unwrap(),
        ShardFinishOutcome::Conflict { state: RunState::Retrying, attempt: 1 }
    );
    let attempts = s.run_attempts(&run.id).await.unwrap();
    assert_eq!(attempts.iter().map(|a| a.state.as_str()).collect::<Vec<_>>(), ["succeeded", "failed"]);
    assert_eq!(attempts[1].message.as_deref(), Some("shard 1 broke"));
    // A sharded run never finishes as a whole.
    let whole = FinishAttempt {
        run_id: run.id.clone(),
        attempt: 1,
        result: AttemptResult::Succeeded,
        output: None,
        message: None,
        now_ms: NOW + 2_000,
        target: None,
        dispatched: None,
    };
    assert!(matches!(s.run_finish_attempt(&whole).await.unwrap(), FinishOutcome::Conflict { .. }));
    let after = s.run_get(&f.tenant.id, &run.id).await.unwrap().unwrap();
    assert_eq!(after.state, RunState::Dispatching);
    // Log lines are kept per shard.
    s.shard_log_append(&run.id, 1, 1, &[(NOW, "info".into(), "from shard 1".into())]).await.unwrap();
    let logs = s.run_logs(&run.id, 10).await.unwrap();
    assert_eq!((logs[0].shard_index, logs[0].attempt, logs[0].message.as_str()), (1, 1, "from shard 1"));
}

pub async fn a_due_shard_retry_is_started_by_one_caller(s: S) {
    let f = fixture(&s).await;
    let (_, run) = frozen(&s, &f, "j", 2, &[]).await;
    applied(s.shard_finish(&failed(&run, 0, 1, Some(NOW + 5_000))).await.unwrap());
    assert!(s.shard_due_retries(NOW + 5_000, 10).await.unwrap().is_empty(), "not while the run is still dispatching");
    assert!(s.shard_run_delivered(&run.id, 1, NOW + 2).await.unwrap());
    assert!(!s.shard_run_delivered(&run.id, 1, NOW + 3).await.unwrap(), "once");
    assert_eq!(s.run_get(&f.tenant.id, &run.id).await.unwrap().unwrap().state, RunState::Running);
    assert!(s.shard_due_retries(NOW + 4_999, 10).await.unwrap().is_empty(), "not before its backoff");
    let due = s.shard_due_retries(NOW + 5_000, 10).await.unwrap();
    assert_eq!(due.len(), 1);
    let (due_run, due_shard) = &due[0];
    assert_eq!((due_run.id.as_str(), due_shard.shard_index, due_shard.attempt), (run.id.as_str(), 0, 1));
    // Two nodes pick it at once: exactly one starts attempt 2.
    let begin = |exec: &str| ShardRetryBegin {
        run_id: run.id.clone(),
        shard_index: 0,
        attempt: 1,
        target: targets(&[exec]).pop(),
        deadline_ms: NOW + 5_000 + TIMEOUT,
        now_ms: NOW + 5_000,
    };
    let (bx, by) = (begin("ex"), begin("ey"));
    let (x, y) = tokio::join!(s.shard_retry_begin(&bx), s.shard_retry_begin(&by));
    let won: Vec<ShardDelivery> = [x.unwrap(), y.unwrap()].into_iter().flatten().collect();
    assert_eq!(won.len(), 1, "one winner");
    let d = &won[0];
    assert_eq!(d.webhook_id, format!("msg_{}_0_2", run.id), "a new attempt, a new webhook id");
    assert_eq!((d.shard.state, d.shard.attempt, d.shard.next_attempt_at_ms), (RunState::Dispatching, 2, None));
    assert_eq!(d.shard.deadline_ms, Some(NOW + 5_000 + TIMEOUT));
    assert!(s.shard_due_retries(NOW + 10_000, 10).await.unwrap().is_empty());
    assert_eq!(s.shard_retry_begin(&bx).await.unwrap(), None, "a late caller starts nothing");
    let mut attempts = s.run_attempts(&run.id).await.unwrap();
    attempts.retain(|a| a.shard_index == 0);
    assert_eq!(
        attempts.iter().map(|a| (a.attempt, a.state.as_str())).collect::<Vec<_>>(),
        [(1, "failed"), (2, "dispatching")]
    );
    assert_eq!(attempts[1].address, d.shard.address);
    // The new attempt's trail and result; the old attempt is no longer current.
    let trail = json!([{"executor_id": "static:http://ex/", "address": "http://ex/", "outcome": "delivered"}]);
    let exec = d.shard.executor_id.clone().unwrap();
    s.shard_attempt_set_target(&run.id, 0, 2, Some(&exec), d.shard.address.as_deref(), &trail).await.unwrap();
    assert_eq!(s.run_attempts(&run.id).await.unwrap().iter().find(|a| a.attempt == 2).unwrap().trail, trail);
    assert!(matches!(s.shard_finish(&ok(&run, 0, 1, json!(0))).await.unwrap(), ShardFinishOutcome::Conflict { .. }));
    let (r, sh, _) = applied(s.shard_finish(&ok(&run, 0, 2, json!(0))).await.unwrap());
    assert_eq!((r.state, sh.state), (RunState::Running, RunState::Succeeded));
    // A retrying shard of a run that ended is never started.
    let (_, other) = frozen(&s, &f, "k", 1, &[]).await;
    s.shard_run_delivered(&other.id, 1, NOW).await.unwrap();
    s.run_cancel(&f.tenant.id, &other.id, "stop", NOW + 1).await.unwrap().unwrap();
    assert!(s.shard_list(&other.id).await.unwrap().iter().all(|sh| sh.state == RunState::Cancelled));
}

pub async fn a_sharded_run_succeeds_with_all_shards_and_fails_with_one(s: S) {
    let f = fixture(&s).await;
    let child = sharded_job(&s, &f, "child", &[]).await;
    let (_, run) = frozen(&s, &f, "parent", 3, &[crate::fixtures::edge(&child.id)]).await;
    s.shard_run_delivered(&run.id, 1, NOW).await.unwrap();
    // In any order; the run's output is the shards' outputs in index order.
    for (i, expect_run) in [(2, RunState::Running), (0, RunState::Running)] {
        let (r, _, children) = applied(s.shard_finish(&ok(&run, i, 1, json!({"part": i}))).await.unwrap());
        assert_eq!((r.state, children.len()), (expect_run, 0));
    }
    let (r, _, children) = applied(s.shard_finish(&ok(&run, 1, 1, json!({"part": 1}))).await.unwrap());
    assert_eq!(r.state, RunState::Succeeded);
    let parts = json!([{"part": 0}, {"part": 1}, {"part": 2}]);
    assert_eq!(r.output, Some(parts.clone()));
    assert_eq!(children.len(), 1, "the child fires once, when every shard succeeded");
    let stored = s.run_get(&f.tenant.id, &run.id).await.unwrap().unwrap();
    assert_eq!(
        (stored.state, stored.output.clone(), stored.owner_node),
        (RunState::Succeeded, Some(parts.clone()), None)
    );
    assert!(stored.finished_at_ms.is_some());
    let child_run = s.run_by_fire_key(&child.id, &format!("p:{}", run.id)).await.unwrap().unwrap();
    assert_eq!((child_run.trigger, child_run.parent_output), (TriggerKind::Parent, Some(parts)));
    assert_eq!(s.shard_finish(&ok(&run, 1, 1, json!({"part": 1}))).await.unwrap(), ShardFinishOutcome::Duplicate);

    // One shard failed for good: the run fails with its reason, the open shards are cancelled.
    let (_, run) = frozen(&s, &f, "parent2", 3, &[crate::fixtures::edge(&child.id)]).await;
    s.shard_run_delivered(&run.id, 1, NOW).await.unwrap();
    applied(s.shard_finish(&ok(&run, 0, 1, json!(0))).await.unwrap());
    assert!(s.shard_mark_running(&run.id, 1, 1, NOW).await.unwrap());
    let (r, sh, children) = applied(s.shard_finish(&failed(&run, 2, 1, None)).await.unwrap());
    assert_eq!((r.state, sh.state, children.len()), (RunState::Failed, RunState::Failed, 0));
    assert_eq!(r.reason.as_deref(), Some("error"));
    assert!(r.message.as_deref().unwrap().contains("shard 2"), "{:?}", r.message);
    let states: Vec<RunState> = s.shard_list(&run.id).await.unwrap().iter().map(|sh| sh.state).collect();
    assert_eq!(states, [RunState::Succeeded, RunState::Cancelled, RunState::Failed]);
    let attempts = s.run_attempts(&run.id).await.unwrap();
    assert_eq!(attempts.iter().map(|a| a.state.as_str()).collect::<Vec<_>>(), ["succeeded", "cancelled", "failed"]);
    // A later result for a cancelled shard, or for the failed one, is refused.
    assert_eq!(
        s.shard_finish(&ok(&run, 1, 1, json!(1))).await.unwrap(),
        ShardFinishOutcome::Conflict { state: RunState::Cancelled, attempt: 1 }
    );
    assert!(matches!(s.shard_finish(&ok(&run, 2, 1, json!(2))).await.unwrap(), ShardFinishOutcome::Conflict { .. }));
    let stored = s.run_get(&f.tenant.id, &run.id).await.unwrap().unwrap();
    assert_eq!(stored.state, RunState::Failed);
    assert!(
        s.run_by_fire_key(&child.id, &format!("p:{}", run.id)).await.unwrap().is_none(),
        "no child for a failed parent"
    );

    // A cancelled sharded run takes its shards with it.
    let (_, run) = frozen(&s, &f, "parent3", 2, &[]).await;
    applied(s.shard_finish(&failed(&run, 0, 1, Some(NOW + 100))).await.unwrap());
    assert!(s.run_cancel(&f.tenant.id, &run.id, "by hand", NOW + 2).await.unwrap().is_some());
    let shards = s.shard_list(&run.id).await.unwrap();
    assert!(shards.iter().all(|sh| sh.state == RunState::Cancelled && sh.message.as_deref() == Some("by hand")));
    let attempts = s.run_attempts(&run.id).await.unwrap();
    assert_eq!(attempts.iter().map(|a| a.state.as_str()).collect::<Vec<_>>(), ["failed", "cancelled"]);
}

pub async fn reapers_see_shards_not_whole_sharded_runs(s: S) {
    let f = fixture(&s).await;
    let executor = s
        .executor_upsert(&Executor {
            id: new_id(ids::EXECUTOR),
            tenant_id: f.tenant.id.clone(),
            app_id: f.app.id.clone(),
            name: "e".into(),
            address: "http://registered/".into(),
            tags: vec![],
            metadata: json!({}),
            handlers: vec!["h".into()],
            runtimes: vec![],
            state: ExecutorState::Online,
            running: 0,
            registered_at_ms: NOW,
            last_heartbeat_ms: NOW,
            last_metadata_ms: NOW,
        })
        .await
        .unwrap();
    let job = sharded_job(&s, &f, "j", &[]).await;
    let run = dispatched(&s, &job, "node_a").await;
    let mut t = targets(&["e0"]);
    t.push(ShardTarget { executor_id: executor.id.clone(), address: executor.address.clone() });
    s.shard_freeze(&freeze(&run, "node_a", t, NOW)).await.unwrap().unwrap();
    assert!(s.shard_mark_running(&run.id, 1, 1, NOW).await.unwrap());
    let late = NOW + TIMEOUT + 1;
    assert!(
        s.shard_overdue(late, ALL_BUCKETS, 10).await.unwrap().is_empty(),
        "a dispatching run's shards are its lease's business"
    );
    s.shard_run_delivered(&run.id, 1, NOW).await.unwrap();
    // The run-level reaper never takes a sharded run as a whole ...
    assert!(s.run_overdue(late + 10 * TIMEOUT, ALL_BUCKETS, 10).await.unwrap().is_empty());
    assert!(s.run_on_silent_executors(late, ALL_BUCKETS, 10).await.unwrap().is_empty());
    // ... the shard reaper takes each shard past its own deadline, or on a silent executor.
    assert!(s.shard_overdue(NOW + TIMEOUT, ALL_BUCKETS, 10).await.unwrap().is_empty(), "not at the deadline itself");
    let overdue = s.shard_overdue(late, ALL_BUCKETS, 10).await.unwrap();
    assert_eq!(
        overdue.iter().map(|(r, sh)| (r.id.as_str(), sh.shard_index)).collect::<Vec<_>>(),
        [(run.id.as_str(), 0), (run.id.as_str(), 1)]
    );
    let silent = s.shard_on_silent_executors(NOW + 1, ALL_BUCKETS, 10).await.unwrap();
    assert_eq!(
        silent.iter().map(|(_, sh)| sh.shard_index).collect::<Vec<_>>(),
        [1],
        "only registered executors fall silent"
    );
    assert!(s.shard_on_silent_executors(NOW, ALL_BUCKETS, 10).await.unwrap().is_empty());
    // A finished shard is no longer reaped.
    applied(s.shard_finish(&ok(&run, 0, 1, json!(0))).await.unwrap());
    assert_eq!(s.shard_overdue(late, ALL_BUCKETS, 10).await.unwrap().len(), 1);
}

/// A chain step that is sharded: one shard fails, is retried and then succeeds; the child
/// fires once, after the last shard, with every shard's output.
pub async fn a_shard_failing_then_succeeding_on_retry_fires_the_children_once_after_the_last_shard(s: S) {
    let f = fixture(&s).await;
    let child = sharded_job(&s, &f, "child", &[]).await;
    let (_, run) = frozen(&s, &f, "parent", 2, &[crate::fixtures::edge(&child.id)]).await;
    let (_, _, children) = applied(s.shard_finish(&failed(&run, 0, 1, Some(NOW + 5_000))).await.unwrap());
    assert!(children.is_empty(), "a shard to be retried ends nothing");
    assert!(s.shard_run_delivered(&run.id, 1, NOW + 2).await.unwrap());
    let (r, _, children) = applied(s.shard_finish(&ok(&run, 1, 1, json!({"part": 1}))).await.unwrap());
    assert_eq!((r.state, children.len()), (RunState::Running, 0), "shard 0 is still out");
    let begin = ShardRetryBegin {
        run_id: run.id.clone(),
        shard_index: 0,
        attempt: 1,
        target: targets(&["ex"]).pop(),
        deadline_ms: NOW + 5_000 + TIMEOUT,
        now_ms: NOW + 5_000,
    };
    assert!(s.shard_retry_begin(&begin).await.unwrap().is_some());
    let (r, _, children) = applied(s.shard_finish(&ok(&run, 0, 2, json!({"part": 0}))).await.unwrap());
    assert_eq!(r.state, RunState::Succeeded);
    assert_eq!(children.len(), 1, "the child fires once, after the last shard");
    assert_eq!(children[0].parent_output, Some(json!([{"part": 0}, {"part": 1}])));
    assert_eq!(s.shard_finish(&ok(&run, 0, 2, json!({"part": 0}))).await.unwrap(), ShardFinishOutcome::Duplicate);
    let chain = s.run_chain(&f.tenant.id, &run.id, 100).await.unwrap();
    assert_eq!(chain.iter().filter(|r| r.job_id == child.id).count(), 1, "once");
}
