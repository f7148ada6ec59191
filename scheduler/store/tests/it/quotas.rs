//! Tenant quotas ([`QuotaStore`] and the `job_*_within` writes): the operator's settings,
//! usage counting, and writes refused past a limit writing nothing.

use sundial_core::quota::{Quota, QuotaOverrides, Quotas};
use sundial_core::schedule::ScheduleSpec;
use sundial_core::types::{JobSource, JobState, ScheduleKind};
use sundial_store::*;

use crate::fixtures::*;

for_each_database!(
    settings_are_kept_per_tenant_and_listed_for_a_cache,
    usage_counts_jobs_fire_rates_handlers_and_log_bytes,
    job_writes_past_a_quota_are_refused_and_write_nothing,
    the_kept_counts_follow_every_job_write,
    concurrent_creates_at_the_limit_pass_exactly_to_it,
    log_appends_past_a_byte_limit_are_refused_and_write_nothing
);

fn every(j: &mut Job, every_ms: i64) {
    j.schedule_kind = ScheduleKind::FixedRate;
    j.schedule = ScheduleSpec {
        kind: ScheduleKind::FixedRate,
        expression: None,
        timezone: None,
        every_ms: Some(every_ms),
        anchor: None,
        at: None,
        start_at: None,
        end_at: None,
    };
}

fn exceeded(r: Result<impl std::fmt::Debug, StoreError>) -> sundial_core::quota::Exceeded {
    match r {
        Err(StoreError::QuotaExceeded(e)) => e,
        other => panic!("expected a quota refusal, got {other:?}"),
    }
}

async fn settings_are_kept_per_tenant_and_listed_for_a_cache(s: S) {
    let a = tenant(&s, "a").await;
    let b = tenant(&s, "b").await;
    assert_eq!(s.quota_get(&a.id).await.unwrap(), QuotaOverrides::default());
    let o = QuotaOverrides { max_jobs: Some(5), max_inflight: Some(7), ..Default::default() };
    s.quota_set(&a.id, &o, NOW).await.unwrap();
    s.quota_set(&b.id, &QuotaOverrides { max_scripts: Some(1), ..Default::default() }, NOW).await.unwrap();
    assert_eq!(s.quota_get(&a.id).await.unwrap(), o);
    // Set again: replaced, not merged.
    let o2 = QuotaOverrides { max_fires_per_second: Some(9), ..Default::default() };
    s.quota_set(&a.id, &o2, NOW + 1).await.unwrap();
    let mut all = s.quota_all().await.unwrap();
    all.sort_by(|x, y| x.0.cmp(&y.0));
    let mut want =
        vec![(a.id.clone(), o2), (b.id.clone(), QuotaOverrides { max_scripts: Some(1), ..Default::default() })];
    want.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(all, want);
}

async fn usage_counts_jobs_fire_rates_handlers_and_log_bytes(s: S) {
    let t = tenant(&s, "t").await;
    let other = tenant(&s, "other").await;
    let ap = app(&s, &t, "a").await;
    // 1,000 ms: one fire a second; the fixture's cron `0 */5 * * * *`: 1/60; stopped: nothing.
    let mut fast = job_of(&ap, "fast");
    every(&mut fast, 1_000);
    s.job_insert(&fast, &[]).await.unwrap();
    let cron = job(&s, &ap, "cron").await;
    let mut stopped = job_of(&ap, "stopped");
    every(&mut stopped, 1_000);
    stopped.state = JobState::Stopped;
    s.job_insert(&stopped, &[]).await.unwrap();
    let mut reg = job_of(&ap, "reg");
    reg.source = JobSource::Registration;
    reg.registration_key = Some(format!("{}:reg", ap.id));
    reg.state = JobState::Stopped;
    s.job_insert(&reg, &[]).await.unwrap();
    job(&s, &app(&s, &other, "o").await, "elsewhere").await;
    let u = s.usage_get(&t.id, NOW).await.unwrap();
    assert_eq!((u.jobs, u.fire_rate_micros, u.handlers_most_in_one_app), (4, 1_016_667, 1));
    // Starting, stopping, editing and deleting move the rate.
    s.job_set_state(&t.id, &stopped.id, JobState::Active, NOW).await.unwrap();
    assert_eq!(s.usage_get(&t.id, NOW).await.unwrap().fire_rate_micros, 2_016_667);
    let mut slower = s.job_get(&t.id, &fast.id).await.unwrap().unwrap();
    every(&mut slower, 4_000);
    slower.version += 1;
    assert!(s.job_update(&slower, None, slower.version - 1).await.unwrap());
    assert_eq!(s.usage_get(&t.id, NOW).await.unwrap().fire_rate_micros, 1_266_667);
    assert!(s.job_delete(&t.id, &cron.id, NOW).await.unwrap());
    let u = s.usage_get(&t.id, NOW).await.unwrap();
    assert_eq!((u.jobs, u.fire_rate_micros), (3, 1_250_000));
    // Registration bookkeeping: what the app has, of what is listed.
    let r = s.app_registered_handlers(&t.id, &ap.id, &["reg".into(), "new".into()]).await.unwrap();
    assert_eq!(r, RegisteredHandlers { app_total: 1, present: 1, tenant_jobs: 3 });
    // Log bytes per day: today's, not yesterday's.
    let run = run_of(&fast, "s:1", NOW);
    s.run_insert(&run).await.unwrap();
    let lines = vec![(NOW, "info".to_string(), "héllo".to_string())];
    let append =
        LogAppend { tenant_id: &t.id, run_id: &run.id, shard_index: 0, attempt: 1, lines: &lines, now_ms: NOW };
    s.log_append_within(&append, &Quotas::default()).await.unwrap();
    s.log_append_within(&append, &Quotas::default()).await.unwrap();
    assert_eq!(s.usage_get(&t.id, NOW).await.unwrap().log_bytes_today, 12, "bytes, not characters");
    assert_eq!(s.usage_get(&t.id, NOW + 86_400_000).await.unwrap().log_bytes_today, 0);
    assert_eq!(s.usage_get(&other.id, NOW).await.unwrap().log_bytes_today, 0);
    assert_eq!(s.run_logs(&run.id, 10).await.unwrap().len(), 2);
}

async fn job_writes_past_a_quota_are_refused_and_write_nothing(s: S) {
    let t = tenant(&s, "t").await;
    let ap = app(&s, &t, "a").await;
    let q = Quotas { max_jobs: 2, max_fires_per_second: 2, ..Quotas::default() };
    let mut one = job_of(&ap, "one");
    every(&mut one, 1_000);
    s.job_insert_within(&one, &[], &q).await.unwrap();
    // A second every-second job fits exactly; a third job of any kind passes `max_jobs`.
    let mut two = job_of(&ap, "two");
    every(&mut two, 2_000);
    s.job_insert_within(&two, &[], &q).await.unwrap();
    let three = job_of(&ap, "three");
    let e = exceeded(s.job_insert_within(&three, &[], &q).await);
    assert_eq!((e.quota, e.limit, e.usage, e.requested), (Quota::MaxJobs, 2, 2.0, 1.0));
    assert!(s.job_get(&t.id, &three.id).await.unwrap().is_none());
    // An edit taking the rate past 2 fires a second is refused, the row unchanged.
    let mut faster = s.job_get(&t.id, &two.id).await.unwrap().unwrap();
    let before = faster.version;
    every(&mut faster, 1_000);
    faster.version += 1;
    assert!(s.job_update_within(&faster, None, before, &q).await.unwrap(), "1.5 + 0.5 fits");
    let mut over = s.job_get(&t.id, &one.id).await.unwrap().unwrap();
    let v = over.version;
    every(&mut over, 1_000);
    over.state = JobState::Active;
    over.description = "unchanged rate".into();
    over.version += 1;
    assert!(s.job_update_within(&over, None, v, &q).await.unwrap(), "at the limit, an edit adding nothing passes");
    assert_eq!(s.job_get(&t.id, &two.id).await.unwrap().unwrap().schedule.every_ms, Some(1_000));
    // The operator lowers the limit below the usage: stopping is still allowed, starting not.
    let q1 = Quotas { max_fires_per_second: 1, ..q };
    let stop_two = s.job_set_state_within(&t.id, &two.id, JobState::Stopped, NOW, &q1).await.unwrap().unwrap();
    assert_eq!(stop_two.state, JobState::Stopped, "stopping adds nothing: never refused, even over a limit");
    let e = exceeded(s.job_set_state_within(&t.id, &two.id, JobState::Active, NOW, &q1).await);
    assert_eq!((e.quota, e.limit, e.usage, e.requested), (Quota::MaxFiresPerSecond, 1, 1.0, 1.0));
    assert_eq!(s.job_get(&t.id, &two.id).await.unwrap().unwrap().state, JobState::Stopped);
    let mut edit = s.job_get(&t.id, &one.id).await.unwrap().unwrap();
    let v = edit.version;
    edit.state = JobState::Active;
    edit.name = "renamed".into();
    edit.version += 1;
    assert!(s.job_update_within(&edit, None, v, &q1).await.unwrap(), "an edit adding nothing passes");
    let mut edit = s.job_get(&t.id, &two.id).await.unwrap().unwrap();
    let v = edit.version;
    edit.state = JobState::Active;
    edit.version += 1;
    let e = exceeded(s.job_update_within(&edit, None, v, &q1).await);
    assert_eq!(e.quota, Quota::MaxFiresPerSecond);
    assert_eq!(s.job_get(&t.id, &two.id).await.unwrap().unwrap().version, v, "the refused edit wrote nothing");
}

/// The counts a quota check reads (`tenant_job_counts`) move with every job write, with or
/// without quotas: insert, batch, edit, start/stop and delete. A refusal reports them as usage,
/// and they agree with the usage counted from the jobs themselves.
async fn the_kept_counts_follow_every_job_write(s: S) {
    let t = tenant(&s, "t").await;
    let ap = app(&s, &t, "a").await;
    let other = tenant(&s, "other").await;
    let other_app = app(&s, &other, "a").await;
    let unlimited = Quotas { max_jobs: 1_000, max_fires_per_second: 1_000, ..Quotas::default() };
    let mut a = job_of(&ap, "a");
    every(&mut a, 1_000);
    s.job_insert(&a, &[]).await.unwrap();
    let mut b = job_of(&ap, "b");
    every(&mut b, 1_000);
    b.state = JobState::Stopped;
    let mut c = job_of(&ap, "c");
    every(&mut c, 2_000);
    let batch = [NewJob { job: b.clone(), children: vec![] }, NewJob { job: c.clone(), children: vec![] }];
    s.job_insert_many_within(&t.id, &batch, &unlimited).await.unwrap();
    s.job_insert(&job_of(&other_app, "elsewhere"), &[]).await.unwrap();
    expect_counts(&s, &t, &ap, 3, 1_500_000).await;
    // An edit (no quotas) doubling c's rate, a stop and a start, a delete.
    let mut faster = s.job_get(&t.id, &c.id).await.unwrap().unwrap();
    let v = faster.version;
    every(&mut faster, 1_000);
    faster.version += 1;
    assert!(s.job_update(&faster, None, v).await.unwrap());
    expect_counts(&s, &t, &ap, 3, 2_000_000).await;
    s.job_set_state(&t.id, &a.id, JobState::Stopped, NOW).await.unwrap();
    s.job_set_state(&t.id, &a.id, JobState::Stopped, NOW).await.unwrap();
    expect_counts(&s, &t, &ap, 3, 1_000_000).await;
    s.job_set_state_within(&t.id, &b.id, JobState::Active, NOW, &unlimited).await.unwrap();
    expect_counts(&s, &t, &ap, 3, 2_000_000).await;
    assert!(s.job_delete(&t.id, &c.id, NOW).await.unwrap());
    assert!(!s.job_delete(&t.id, &c.id, NOW).await.unwrap(), "gone already: nothing moves");
    expect_counts(&s, &t, &ap, 2, 1_000_000).await;
    // A stale edit and a refused one move nothing.
    let mut stale = s.job_get(&t.id, &b.id).await.unwrap().unwrap();
    let v = stale.version;
    stale.state = JobState::Stopped;
    stale.version += 1;
    assert!(matches!(s.job_update(&stale, None, v - 1).await, Err(StoreError::Stale(_))));
    let one = Quotas { max_fires_per_second: 1, ..unlimited };
    exceeded(s.job_set_state_within(&t.id, &a.id, JobState::Active, NOW, &one).await);
    expect_counts(&s, &t, &ap, 2, 1_000_000).await;
    let e = exceeded(s.job_set_state_within(&t.id, &a.id, JobState::Active, NOW, &one).await);
    assert_eq!((e.quota, e.usage), (Quota::MaxFiresPerSecond, 1.0), "the kept rate");
    assert_eq!(s.usage_get(&other.id, NOW).await.unwrap().jobs, 1, "per tenant");
}

/// Assert the tenant's usage counted from its jobs, and that the kept count a quota check
/// reads agrees (a create one past it is refused, reporting it as usage).
async fn expect_counts(s: &S, t: &Tenant, ap: &App, jobs: i64, micros: i64) {
    let u = s.usage_get(&t.id, NOW).await.unwrap();
    assert_eq!((u.jobs, u.fire_rate_micros), (jobs, micros), "counted from the jobs");
    let tight = Quotas { max_jobs: jobs, max_fires_per_second: 1_000, ..Quotas::default() };
    let e = exceeded(s.job_insert_within(&job_of(ap, "probe"), &[], &tight).await);
    assert_eq!((e.quota, e.usage), (Quota::MaxJobs, jobs as f64), "kept count");
}

/// Creates racing for the last places of `max_jobs`: exactly the places are taken.
async fn concurrent_creates_at_the_limit_pass_exactly_to_it(s: S) {
    let t = tenant(&s, "t").await;
    let ap = app(&s, &t, "a").await;
    let q = Quotas { max_jobs: 5, ..Quotas::default() };
    let tries: Vec<_> = (0..12)
        .map(|i| {
            let (s, j) = (s.clone(), job_of(&ap, &format!("j{i}")));
            tokio::spawn(async move { s.job_insert_within(&j, &[], &q).await })
        })
        .collect();
    let mut passed = 0;
    for r in tries {
        match r.await.unwrap() {
            Ok(()) => passed += 1,
            Err(StoreError::QuotaExceeded(e)) => assert_eq!(e.quota, Quota::MaxJobs),
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(passed, 5);
    assert_eq!(s.usage_get(&t.id, NOW).await.unwrap().jobs, 5);
}

async fn log_appends_past_a_byte_limit_are_refused_and_write_nothing(s: S) {
    let t = tenant(&s, "t").await;
    let ap = app(&s, &t, "a").await;
    let j = job(&s, &ap, "j").await;
    let (r1, r2) = (run_of(&j, "s:1", NOW), run_of(&j, "s:2", NOW));
    s.run_insert(&r1).await.unwrap();
    s.run_insert(&r2).await.unwrap();
    let q = Quotas { max_log_bytes_per_run: 10, max_log_bytes_per_day: 15, ..Quotas::default() };
    async fn append(s: &S, t: &Tenant, run: &Run, n: usize, q: &Quotas) -> Result<(), StoreError> {
        let lines = vec![(NOW, "info".to_string(), "x".repeat(n))];
        let a = LogAppend { tenant_id: &t.id, run_id: &run.id, shard_index: 0, attempt: 1, lines: &lines, now_ms: NOW };
        s.log_append_within(&a, q).await
    }
    append(&s, &t, &r1, 6, &q).await.unwrap();
    let e = exceeded(append(&s, &t, &r1, 5, &q).await);
    assert_eq!((e.quota, e.limit, e.usage, e.requested), (Quota::MaxLogBytesPerRun, 10, 6.0, 5.0));
    append(&s, &t, &r1, 4, &q).await.unwrap();
    let e = exceeded(append(&s, &t, &r2, 6, &q).await);
    assert_eq!((e.quota, e.limit, e.usage, e.requested), (Quota::MaxLogBytesPerDay, 15, 10.0, 6.0));
    append(&s, &t, &r2, 5, &q).await.unwrap();
    assert_eq!(s.run_logs(&r1.id, 10).await.unwrap().len(), 2);
    assert_eq!(s.run_logs(&r2.id, 10).await.unwrap().len(), 1);
    assert_eq!(s.usage_get(&t.id, NOW).await.unwrap().log_bytes_today, 15);
}
