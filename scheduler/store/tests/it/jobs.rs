//! Jobs, child edges and registration jobs ([`JobStore`]).

use sundial_core::ids::{self, new_id};
use sundial_core::types::*;
use sundial_store::*;

use crate::fixtures::*;

for_each_database!(
    jobs_round_trip_every_field,
    job_update_is_conditional_on_version,
    job_filters_and_state_changes,
    child_edges_refuse_cycles_and_foreign_jobs,
    registration_jobs_are_unique_per_app_and_handler,
    job_names_are_unique_within_a_tenant,
    job_delete_removes_edges_and_unstarted_runs,
    job_batches_are_inserted_whole_or_not_at_all,
);

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
    s.job_insert(&b, &[edge(&c.id)]).await.unwrap();
    let top = job_of(&a, "a");
    s.job_insert(&top, &[edge(&b.id)]).await.unwrap();
    assert_eq!(s.job_children(&top.id).await.unwrap(), vec![edge(&b.id)]);
    // c → a would close a → b → c → a.
    let mut c2 = c.clone();
    c2.version = 2;
    match s.job_update(&c2, Some(&[edge(&top.id)]), 1).await {
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
    assert!(matches!(s.job_update(&self_loop, Some(&[edge(&c.id)]), 1).await, Err(StoreError::Refused { .. })));
    let t2 = tenant(&s, "t2").await;
    let a2 = app(&s, &t2, "a").await;
    let foreign = job(&s, &a2, "f").await;
    let with_foreign = job_of(&a, "x");
    assert!(matches!(s.job_insert(&with_foreign, &[edge(&foreign.id)]).await, Err(StoreError::Refused { .. })));
    assert!(s.job_get(&t.id, &with_foreign.id).await.unwrap().is_none(), "refused insert wrote nothing");
}

pub async fn registration_jobs_are_unique_per_app_and_handler(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let mut r1 = job_of(&a, "h");
    r1.source = JobSource::Registration;
    r1.registration_key = Some(format!("{}:h", a.id));
    s.job_insert(&r1, &[]).await.unwrap();
    let mut r2 = job_of(&a, "h2");
    r2.source = JobSource::Registration;
    r2.registration_key = Some(format!("{}:h", a.id));
    assert!(matches!(s.job_insert(&r2, &[]).await, Err(StoreError::Conflict { what: "job_registration", .. })));
    // People may create more jobs on the same handler.
    job(&s, &a, "h-too").await;
    job(&s, &a, "h-three").await;
}

pub async fn job_names_are_unique_within_a_tenant(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let b = app(&s, &t, "b").await;
    let nightly = job(&s, &a, "nightly").await;
    // Another job of the same name is refused, also on another app of the tenant, and writes nothing.
    for app in [&a, &b] {
        let dup = job_of(app, "nightly");
        let err = s.job_insert(&dup, &[]).await.unwrap_err();
        assert!(
            matches!(&err, StoreError::Conflict { what: "job_name", message } if message.contains("`nightly`")),
            "{err:?}"
        );
        assert_eq!(s.job_get(&t.id, &dup.id).await.unwrap(), None);
    }
    // Another tenant has its own names.
    let t2 = tenant(&s, "t2").await;
    let a2 = app(&s, &t2, "a").await;
    job(&s, &a2, "nightly").await;
    // A rename onto a taken name is refused and changes nothing; onto a free one it works.
    let weekly = job(&s, &a, "weekly").await;
    let mut renamed = weekly.clone();
    renamed.name = "nightly".into();
    renamed.version = 2;
    let err = s.job_update(&renamed, Some(&[]), 1).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { what: "job_name", .. }), "{err:?}");
    assert_eq!(s.job_get(&t.id, &weekly.id).await.unwrap(), Some(weekly.clone()));
    renamed.name = "monthly".into();
    assert!(s.job_update(&renamed, None, 1).await.unwrap());
    // The freed name can be taken again; the job keeping its own name is no conflict.
    job(&s, &b, "weekly").await;
    let mut same = nightly.clone();
    same.timeout_ms = 5_000;
    same.version = 2;
    assert!(s.job_update(&same, None, 1).await.unwrap());
    // Registration conflicts stay told apart from name conflicts.
    let mut r1 = job_of(&a, "reg");
    r1.registration_key = Some(format!("{}:reg", a.id));
    s.job_insert(&r1, &[]).await.unwrap();
    let mut r2 = job_of(&a, "reg-2");
    r2.registration_key = r1.registration_key.clone();
    assert!(matches!(s.job_insert(&r2, &[]).await, Err(StoreError::Conflict { what: "job_registration", .. })));
    assert!(!s.job_insert_if_absent(&r2).await.unwrap());
    let mut r3 = job_of(&a, "reg");
    r3.registration_key = Some(format!("{}:other", a.id));
    assert!(matches!(s.job_insert_if_absent(&r3).await, Err(StoreError::Conflict { what: "job_name", .. })));
}

pub async fn job_delete_removes_edges_and_unstarted_runs(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let child = job(&s, &a, "child").await;
    let parent = job_of(&a, "parent");
    s.job_insert(&parent, &[edge(&child.id)]).await.unwrap();
    let pending = run_of(&child, "s:1", 1);
    s.run_insert(&pending).await.unwrap();
    let mut done = run_of(&child, "s:2", 2);
    done.state = RunState::Succeeded;
    s.run_insert(&done).await.unwrap();
    assert!(s.job_delete(&t.id, &child.id, NOW).await.unwrap());
    assert!(s.job_children(&parent.id).await.unwrap().is_empty());
    assert!(s.run_get(&t.id, &pending.id).await.unwrap().is_none(), "unstarted run deleted");
    assert!(s.run_get(&t.id, &done.id).await.unwrap().is_some(), "history kept");
    assert!(!s.job_delete(&t.id, &child.id, NOW).await.unwrap());
}

/// `n` new jobs of `a` named `<prefix><i>`.
fn batch_of(a: &App, prefix: &str, n: usize) -> Vec<NewJob> {
    (0..n).map(|i| NewJob { job: job_of(a, &format!("{prefix}{i}")), children: vec![] }).collect()
}

pub async fn job_batches_are_inserted_whole_or_not_at_all(s: S) {
    use sundial_core::quota::{Quota, Quotas};
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "billing").await;
    let parent_of = job(&s, &a, "taken").await;
    let q = Quotas::default();
    // 300 rows: several multi-row statements (128, 128, 32, 8, 4); every seventh job with edges.
    let mut batch = batch_of(&a, "b", 300);
    for (i, n) in batch.iter_mut().enumerate().filter(|(i, _)| i % 7 == 0) {
        n.children = vec![edge(&parent_of.id)];
        n.job.state = if i % 2 == 0 { JobState::Active } else { JobState::Stopped };
    }
    s.job_insert_many_within(&t.id, &batch, &q).await.unwrap();
    for n in &batch {
        assert_eq!(s.job_get(&t.id, &n.job.id).await.unwrap().as_ref(), Some(&n.job));
        assert_eq!(s.job_children(&n.job.id).await.unwrap(), n.children);
    }
    assert_eq!(s.usage_get(&t.id, NOW).await.unwrap().jobs, 301);

    // Every refused item is named, with nothing written: a name taken in the tenant, a name
    // repeated in the batch, a child of another tenant, a child that does not exist.
    let other = tenant(&s, "other").await;
    let foreign = job(&s, &app(&s, &other, "x").await, "foreign").await;
    let mut bad = batch_of(&a, "c", 200);
    bad[3].job.name = "taken".into();
    bad[10].job.name = "c5".into();
    bad[20].children = vec![edge(&parent_of.id), edge(&foreign.id)];
    bad[150].children = vec![edge(&new_id(ids::JOB))];
    let refusal = |index: usize, field: &str, conflict: Option<&'static str>, message: String| ItemRefusal {
        index,
        field: field.into(),
        conflict,
        message,
    };
    let want = vec![
        refusal(3, "name", Some("job_name"), "a job named `taken` exists in this tenant".into()),
        refusal(10, "name", Some("job_name"), "a job named `c5` is earlier in this batch".into()),
        refusal(20, "children[1]", None, format!("job `{}` does not exist", foreign.id)),
        refusal(150, "children[0]", None, format!("job `{}` does not exist", bad[150].children[0].job_id)),
    ];
    assert_eq!(s.job_insert_problems(&t.id, &bad).await.unwrap(), want);
    match s.job_insert_many_within(&t.id, &bad, &q).await {
        Err(StoreError::Items(got)) => assert_eq!(got, want),
        other => panic!("expected the items refused, got {other:?}"),
    }
    assert_eq!(s.usage_get(&t.id, NOW).await.unwrap().jobs, 301, "nothing of the refused batch");
    assert!(s.job_get(&t.id, &bad[0].job.id).await.unwrap().is_none());
    // The same jobs in another tenant's name are of no concern to this one's check.
    assert_eq!(s.job_insert_problems(&other.id, &batch_of(&a, "b", 3)).await.unwrap(), vec![]);

    // A failure past the check, in a later statement of the insert, leaves the earlier
    // statements' rows out too: the 200th row repeats an existing id.
    let mut late = batch_of(&a, "d", 200);
    late[199].job.id = parent_of.id.clone();
    let got = s.job_insert_many_within(&t.id, &late, &q).await;
    assert!(matches!(got, Err(StoreError::Conflict { what: "job_id", .. })), "{got:?}");
    assert!(s.job_get(&t.id, &late[0].job.id).await.unwrap().is_none(), "the first 128 rows are not kept");
    assert!(s.job_children(&late[0].job.id).await.unwrap().is_empty());
    assert_eq!(s.usage_get(&t.id, NOW).await.unwrap().jobs, 301);

    // Quotas count the batch whole: 301 + 5 fit 306, six do not (and write nothing).
    let q306 = Quotas { max_jobs: 306, ..Quotas::default() };
    let six = batch_of(&a, "e", 6);
    match s.job_insert_many_within(&t.id, &six, &q306).await {
        Err(StoreError::QuotaExceeded(e)) => {
            assert_eq!((e.quota, e.limit, e.usage, e.requested), (Quota::MaxJobs, 306, 301.0, 6.0))
        }
        other => panic!("expected a quota refusal, got {other:?}"),
    }
    assert!(s.job_get(&t.id, &six[0].job.id).await.unwrap().is_none());
    s.job_insert_many_within(&t.id, &six[..5], &q306).await.unwrap();
    assert_eq!(s.usage_get(&t.id, NOW).await.unwrap().jobs, 306);
    // A batch of one tenant's jobs in another's name is refused whole.
    let mine = batch_of(&a, "f", 2);
    assert!(matches!(s.job_insert_many_within(&other.id, &mine, &q).await, Err(StoreError::Refused { .. })));
    assert!(s.job_get(&t.id, &mine[0].job.id).await.unwrap().is_none());
}
