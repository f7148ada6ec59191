//! The hot-path batches of [`RunStore`]: dispatch, results, generation.

use serde_json::json;
use sundial_core::types::*;
use sundial_store::*;

use crate::fixtures::*;

for_each_database!(
    dispatch_batches_decide_each_run_as_if_alone,
    result_batches_apply_in_order_with_duplicates_and_conflicts,
    generate_batches_skip_jobs_that_changed,
    generate_moves_each_jobs_own_cursor_in_a_mixed_batch,
);

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
