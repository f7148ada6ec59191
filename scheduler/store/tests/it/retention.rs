//! Retention ([`RetentionStore`]).

use crate::fixtures::*;
use sundial_core::types::*;

for_each_database!(retention_deletes_only_old_finished_runs, retention_takes_every_tenants_old_runs_a_batch_at_a_time);

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

/// Retention reads each tenant's old runs through the tenant's index and deletes them a
/// chunk at a time: the batch bound holds across tenants, and every tenant's old runs go.
pub async fn retention_takes_every_tenants_old_runs_a_batch_at_a_time(s: S) {
    let mut old = Vec::new();
    for name in ["t", "u", "v"] {
        let t = tenant(&s, name).await;
        let a = app(&s, &t, "a").await;
        let j = job(&s, &a, "j").await;
        for i in 0..3 {
            let mut r = run_of(&j, &format!("s:{i}"), NOW);
            r.state = RunState::Succeeded;
            r.finished_at_ms = Some(NOW);
            s.run_insert(&r).await.unwrap();
            s.run_log_append(&r.id, 1, &[(NOW, "info".into(), "x".into())]).await.unwrap();
            old.push((t.id.clone(), r.id));
        }
        let kept = run_of(&j, "s:9", NOW + 100_000);
        s.run_insert(&kept).await.unwrap();
    }
    assert_eq!(s.retention_cleanup(NOW + 5_000, 4).await.unwrap(), 4, "at most the batch");
    assert_eq!(s.retention_cleanup(NOW + 5_000, 4).await.unwrap(), 4);
    assert_eq!(s.retention_cleanup(NOW + 5_000, 4).await.unwrap(), 1, "the last tenant's last old run");
    assert_eq!(s.retention_cleanup(NOW + 5_000, 4).await.unwrap(), 0);
    for (tenant, id) in &old {
        assert!(s.run_get(tenant, id).await.unwrap().is_none());
        assert!(s.run_logs(id, 10).await.unwrap().is_empty());
    }
}
