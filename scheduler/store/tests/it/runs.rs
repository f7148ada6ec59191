//! Runs ([`RunStore`]): fire keys, listing, claim and peek, the reaper's scans, bulk
//! misfire settling. The hot-path batches are in `runs/batch.rs`.

use sundial_core::affinity::ALL_BUCKETS;
use sundial_core::types::*;
use sundial_store::*;

use crate::fixtures::*;

mod batch;

for_each_database!(
    runs_are_unique_per_fire_key,
    runs_list_newest_first_with_a_stable_cursor,
    claims_are_atomic_and_expired_claims_are_recovered,
    reaper_scans_see_only_running_runs,
    claims_prefer_owned_buckets_and_take_others_after_the_grace,
    peeked_fires_are_read_without_a_claim_and_dispatched_from_pending,
    a_tenant_over_its_share_is_passed_over_by_claim_and_peek,
    late_fires_are_settled_in_bulk,
    logs_are_read_after_a_sequence_number_in_order,
    run_states_are_read_in_one_call_for_many_ids,
);

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
        dispatched: None,
    };
    assert!(matches!(s.run_finish_attempt(&done).await.unwrap(), FinishOutcome::Applied { .. }));
    // The job timeout is 60 s: nothing is overdue before it, only the running run after.
    assert!(s.run_overdue(NOW + 60_000, ALL_BUCKETS, 10).await.unwrap().is_empty());
    let overdue = s.run_overdue(NOW + 60_001, ALL_BUCKETS, 10).await.unwrap();
    assert_eq!(overdue.iter().map(|r| &r.id).collect::<Vec<_>>(), vec![&runs[0].id]);
    assert_eq!(overdue[0].state, RunState::Running);
    // A node reaps the runs of its own job buckets only.
    let bucket = 1u64 << sundial_core::affinity::bucket_of(&runs[0].job_id);
    assert!(s.run_overdue(NOW + 60_001, ALL_BUCKETS & !bucket, 10).await.unwrap().is_empty(), "not its bucket");
    assert_eq!(s.run_overdue(NOW + 60_001, bucket, 10).await.unwrap().len(), 1, "its bucket");
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

/// A tenant holding more than its share of a node's timer (a hung executor's serial jobs
/// piling up their fires) is passed over by the claim and the peek: the other tenants' fires,
/// triggered runs and retries due later than its own are still taken.
pub async fn a_tenant_over_its_share_is_passed_over_by_claim_and_peek(s: S) {
    let (big, small) = (tenant(&s, "big").await, tenant(&s, "small").await);
    let (ab, as_) = (app(&s, &big, "a").await, app(&s, &small, "a").await);
    let (jb, js) = (job(&s, &ab, "j").await, job(&s, &as_, "j").await);
    let mut big_runs = Vec::new();
    for i in 0..5 {
        let r = run_of(&jb, &format!("s:{i}"), NOW - 100 + i);
        assert!(s.run_insert(&r).await.unwrap());
        big_runs.push(r.id);
    }
    let big_manual = Run::pending(&big.id, &jb.id, jb.version, "m:1".into(), TriggerKind::Manual, NOW - 100, NOW);
    assert!(s.run_insert(&big_manual).await.unwrap());
    let fire = run_of(&js, "s:1", NOW);
    assert!(s.run_insert(&fire).await.unwrap());
    let manual = Run::pending(&small.id, &js.id, js.version, "m:1".into(), TriggerKind::Manual, NOW, NOW);
    assert!(s.run_insert(&manual).await.unwrap());
    let ids = |runs: &[Run]| {
        let mut v: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
        v.sort();
        v
    };
    let peek = |skip: Option<&str>| PeekParams {
        after_ms: NOW - 2_000,
        after_id: String::new(),
        due_before_ms: NOW + 5_000,
        owned_buckets: ALL_BUCKETS,
        limit: 2,
        skip_tenant: skip.map(str::to_string),
    };
    // Limited to two, the big tenant's earlier fires fill the peek; passed over, they leave it
    // to the small tenant's fire.
    assert!(s.run_peek(&peek(None)).await.unwrap().iter().all(|r| r.tenant_id == big.id));
    assert_eq!(ids(&s.run_peek(&peek(Some(&big.id))).await.unwrap()), std::slice::from_ref(&fire.id));
    // The same with the claim, limited to two: triggered runs and fires, the small tenant's only.
    let mut c = claim("node_a", NOW);
    c.due_before_ms = NOW + 5_000;
    c.limit = 2;
    c.skip_tenant = Some(big.id.clone());
    let mut want = vec![fire.id.clone(), manual.id.clone()];
    want.sort();
    assert_eq!(ids(&s.run_claim(&c).await.unwrap()), want);
    // Nothing is left but the big tenant's: passed over, nothing; back within its share, all of it.
    assert_eq!(s.run_claim(&c).await.unwrap(), []);
    c.skip_tenant = None;
    c.limit = 10;
    let mut want = big_runs.clone();
    want.push(big_manual.id.clone());
    want.sort();
    assert_eq!(ids(&s.run_claim(&c).await.unwrap()), want);
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
        skip_tenant: None,
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
    assert_eq!(blocked[0].1, DispatchDecision::Blocked { until_ms: None });
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
    let mut l = job_of(&a, "l");
    l.misfire = sundial_core::job::MisfireSpec {
        policy: sundial_core::types::MisfirePolicy::FireAll,
        threshold_ms: Some(1_234),
        catchup_window_ms: Some(60_000),
        max_catchup: Some(7),
    };
    l.generated_until_ms = Some(NOW + 9_000);
    s.job_insert(&l, &[]).await.unwrap();
    let got = s.job_misfire_many(std::slice::from_ref(&l.id)).await.unwrap();
    assert_eq!(
        got,
        [JobMisfire { id: l.id.clone(), misfire: l.misfire.clone(), generated_until_ms: Some(NOW + 9_000) }]
    );
    let mut misfires = s.job_misfire_many(&[k.id.clone(), "job_missing".into(), j.id.clone()]).await.unwrap();
    misfires.sort_by(|a, b| a.id.cmp(&b.id));
    let mut read: Vec<JobMisfire> = jobs
        .iter()
        .map(|x| JobMisfire { id: x.id.clone(), misfire: x.misfire.clone(), generated_until_ms: x.generated_until_ms })
        .collect();
    read.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(misfires, read, "the misfire policies read alone match the jobs read whole; missing ids are left out");

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

pub async fn logs_are_read_after_a_sequence_number_in_order(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let j = job(&s, &a, "j").await;
    let (r1, r2) = (run_of(&j, "s:1", 1000), run_of(&j, "s:2", 2000));
    s.run_insert(&r1).await.unwrap();
    s.run_insert(&r2).await.unwrap();
    let lines = |from: i64, n: i64| -> Vec<(i64, String, String)> {
        (from..from + n).map(|i| (NOW + i, "info".to_string(), format!("line {i}"))).collect()
    };
    s.run_log_append(&r1.id, 1, &lines(0, 3)).await.unwrap();
    s.run_log_append(&r2.id, 1, &lines(100, 2)).await.unwrap(); // another run's lines interleave
    s.run_log_append(&r1.id, 2, &lines(3, 2)).await.unwrap();
    // Page through r1's log two lines at a time from the start: every line once, in order,
    // none of r2's.
    let mut after = 0;
    let mut read = Vec::new();
    loop {
        let page = s.run_logs_after(&r1.id, after, 2).await.unwrap();
        assert!(page.len() <= 2);
        let Some(last) = page.last() else { break };
        assert!(last.id > after, "ids grow");
        after = last.id;
        read.extend(page.into_iter().map(|l| (l.attempt, l.message, l.run_id)));
    }
    let want: Vec<(i64, String, String)> =
        [(1, 0), (1, 1), (1, 2), (2, 3), (2, 4)].map(|(a, i)| (a, format!("line {i}"), r1.id.clone())).into();
    assert_eq!(read, want);
    // After the last id: nothing, and a later append is what the next read returns.
    assert!(s.run_logs_after(&r1.id, after, 10).await.unwrap().is_empty());
    s.run_log_append(&r1.id, 2, &lines(5, 1)).await.unwrap();
    let next = s.run_logs_after(&r1.id, after, 10).await.unwrap();
    assert_eq!(next.iter().map(|l| l.message.as_str()).collect::<Vec<_>>(), ["line 5"]);
    // `run_logs` is the read from the start.
    assert_eq!(s.run_logs(&r1.id, 100).await.unwrap().len(), 6);
    assert_eq!(s.run_logs_after(&r1.id, 0, 100).await.unwrap(), s.run_logs(&r1.id, 100).await.unwrap());
}

/// A node watching its open exchanges reads their runs' states at once: the state and
/// current attempt of each run found, across more ids than one `IN` list holds.
pub async fn run_states_are_read_in_one_call_for_many_ids(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let j = job(&s, &a, "j").await;
    let (waiting, sent, cancelled) = (run_of(&j, "s:1", NOW), run_of(&j, "s:2", NOW), run_of(&j, "s:3", NOW));
    for r in [&waiting, &sent, &cancelled] {
        assert!(s.run_insert(r).await.unwrap());
    }
    let ds = s.run_dispatch_many(&[ToDispatch::new(sent.id.clone(), false)], "node_a", NOW, 30_000).await.unwrap();
    assert_eq!(dispatched(&ds[0].1).attempt, 1);
    assert!(s.run_cancel(&t.id, &cancelled.id, "cancelled", NOW).await.unwrap().is_some());
    assert_eq!(s.run_states(&[]).await.unwrap(), vec![]);
    let mut ids: Vec<String> = (0..200).map(|i| format!("run_missing_{i:03}")).collect();
    ids.insert(150, cancelled.id.clone());
    ids.insert(7, sent.id.clone());
    ids.push(waiting.id.clone());
    let mut got = s.run_states(&ids).await.unwrap();
    got.sort_by(|x, y| x.0.cmp(&y.0));
    let mut want = vec![
        (waiting.id.clone(), RunState::Pending, 0),
        (sent.id.clone(), RunState::Dispatching, 1),
        (cancelled.id.clone(), RunState::Cancelled, 0),
    ];
    want.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(got, want, "every run found once, none of the missing ids");
}
