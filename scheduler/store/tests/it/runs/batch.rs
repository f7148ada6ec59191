//! The hot-path batches of [`RunStore`]: dispatch, results, generation.

use serde_json::json;
use sundial_core::job::ChildEdge;
use sundial_core::types::*;
use sundial_store::*;

use crate::fixtures::*;

for_each_database!(
    dispatch_batches_decide_each_run_as_if_alone,
    result_batches_apply_in_order_with_duplicates_and_conflicts,
    an_attempt_is_listed_while_in_flight_and_stored_once_with_its_outcome,
    results_carrying_their_dispatched_run_decide_as_from_the_rows,
    children_fire_by_their_edge_condition,
    a_chain_carries_its_roots_id_and_lists_its_runs,
    generate_batches_skip_jobs_that_changed,
    generate_moves_each_jobs_own_cursor_in_a_mixed_batch,
    fires_without_rows_are_written_by_the_dispatch_that_decides_them,
    unwritten_fires_of_stopped_changed_or_deleted_jobs_write_nothing,
    each_dispatch_sees_the_job_as_it_is_now,
    missing_runs_last_fires_and_timed_job_versions,
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
    assert_eq!(decision(&runs[3].id), &DispatchDecision::Blocked { until_ms: None });
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

pub async fn an_attempt_is_listed_while_in_flight_and_stored_once_with_its_outcome(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let mut runs = Vec::new();
    for i in 0..4 {
        let j = job_with(&s, &a, &format!("j{i}"), BlockStrategy::DiscardLater).await;
        let r = run_of(&j, "s:1", NOW);
        s.run_insert(&r).await.unwrap();
        runs.push(r.id);
    }
    s.run_claim(&claim("node_a", NOW)).await.unwrap();
    s.run_dispatch_many(&to_dispatch(&runs), "node_a", NOW, 30_000).await.unwrap();
    let only = |id: &String| {
        let s = s.clone();
        let id = id.clone();
        async move {
            let mut att = s.run_attempts(&id).await.unwrap();
            assert_eq!(att.len(), 1, "{att:?}");
            att.pop().unwrap()
        }
    };
    // In flight: listed as dispatching, with its webhook-id and start.
    let a0 = only(&runs[0]).await;
    assert_eq!(
        (a0.state.as_str(), a0.webhook_id.clone(), a0.started_at_ms, a0.finished_at_ms),
        ("dispatching", format!("msg_{}_0_1", runs[0]), NOW, None)
    );
    // Ended with its target: one row with the outcome and the start.
    let mut done = result(&runs[0], 1, true, json!({"ok": 1}));
    done.target =
        Some(AttemptTarget { executor_id: Some("exe_1".into()), address: Some("http://x".into()), trail: json!([1]) });
    s.run_finish_many(&[done]).await.unwrap();
    let a0 = only(&runs[0]).await;
    assert_eq!((a0.state.as_str(), a0.started_at_ms, a0.finished_at_ms), ("succeeded", NOW, Some(NOW + 1)));
    assert_eq!(
        (a0.executor_id.as_deref(), a0.trail.clone(), a0.output.clone()),
        (Some("exe_1"), json!([1]), Some(json!({"ok": 1})))
    );
    // Accepted for later: the target is stored then, the outcome (with none) keeps it.
    s.attempt_set_target(&runs[1], 1, Some("exe_2"), Some("http://y"), &json!([2])).await.unwrap();
    assert!(s.run_mark_running(&runs[1], 1, NOW + 1).await.unwrap());
    let a1 = only(&runs[1]).await;
    assert_eq!((a1.state.as_str(), a1.executor_id.as_deref(), a1.started_at_ms), ("running", Some("exe_2"), NOW));
    s.run_finish_many(&[result(&runs[1], 1, true, json!(null))]).await.unwrap();
    let a1 = only(&runs[1]).await;
    assert_eq!(
        (a1.state.as_str(), a1.executor_id.as_deref(), a1.trail.clone()),
        ("succeeded", Some("exe_2"), json!([2]))
    );
    assert_eq!(a1.webhook_id, format!("msg_{}_0_1", runs[1]));
    // Cancelled in flight: the attempt is recorded cancelled.
    s.run_cancel(&t.id, &runs[2], "stop", NOW + 2).await.unwrap().unwrap();
    let a2 = only(&runs[2]).await;
    assert_eq!((a2.state.as_str(), a2.started_at_ms, a2.finished_at_ms), ("cancelled", NOW, Some(NOW + 2)));
    // A retry: the failed attempt stored, the next one in flight beside it, then both stored.
    s.run_finish_many(&[result(&runs[3], 1, false, json!(null))]).await.unwrap();
    let mut c = claim("node_a", NOW + 5_000);
    c.limit = 10;
    s.run_claim(&c).await.unwrap();
    s.run_dispatch_many(&to_dispatch(&runs[3..]), "node_a", NOW + 5_000, 30_000).await.unwrap();
    let states =
        |att: Vec<Attempt>| att.iter().map(|a| (a.attempt, a.state.clone(), a.started_at_ms)).collect::<Vec<_>>();
    assert_eq!(
        states(s.run_attempts(&runs[3]).await.unwrap()),
        [(1, "failed".to_string(), NOW), (2, "dispatching".to_string(), NOW + 5_000)]
    );
    let mut ok = result(&runs[3], 2, true, json!(null));
    ok.now_ms = NOW + 5_001;
    s.run_finish_many(&[ok]).await.unwrap();
    assert_eq!(
        states(s.run_attempts(&runs[3]).await.unwrap()),
        [(1, "failed".to_string(), NOW), (2, "succeeded".to_string(), NOW + 5_000)]
    );
}

/// The engine's own results carry the run as dispatched: the batch writes without reading
/// the rows, and decides exactly as from them when a run moved on meanwhile.
pub async fn results_carrying_their_dispatched_run_decide_as_from_the_rows(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let parent = job_with(&s, &a, "parent", BlockStrategy::DiscardLater).await;
    let child = job_with(&s, &a, "child", BlockStrategy::DiscardLater).await;
    link(&s, &parent, &child).await;
    let mut ids = vec![];
    let mut jobs = vec![parent.clone()];
    for i in 0..5 {
        jobs.push(job_with(&s, &a, &format!("j{i}"), BlockStrategy::DiscardLater).await);
    }
    for j in &jobs {
        let r = run_of(j, "s:1", NOW);
        s.run_insert(&r).await.unwrap();
        ids.push(r.id);
    }
    let mut c = claim("node_a", NOW);
    c.limit = 100;
    s.run_claim(&c).await.unwrap();
    let out = s.run_dispatch_many(&to_dispatch(&ids), "node_a", NOW, 30_000).await.unwrap();
    let as_dispatched = |id: &str| dispatched(&out.iter().find(|(i, _)| i == id).unwrap().1).clone();
    let carrying = |id: &str, ok: bool| {
        let mut r = result(id, 1, ok, json!({ "id": id }));
        r.dispatched = Some(as_dispatched(id));
        r
    };
    // Every run current: applied, the parent's child fired, stored as the rows would have it.
    let batch = [carrying(&ids[0], true), carrying(&ids[1], true), carrying(&ids[2], false)];
    let got = s.run_finish_many(&batch).await.unwrap();
    match &got[0] {
        FinishOutcome::Applied { run, children } => {
            assert_eq!(
                (run.state, run.owner_node.as_deref(), run.finished_at_ms),
                (RunState::Succeeded, None, Some(NOW + 1))
            );
            assert_eq!(children.len(), 1, "the child fires once");
            assert_eq!(children[0].parent_output, Some(json!({ "id": ids[0] })));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(&got[2], FinishOutcome::Applied { run, .. } if run.state == RunState::Retrying));
    for (id, state) in [(&ids[0], RunState::Succeeded), (&ids[1], RunState::Succeeded), (&ids[2], RunState::Retrying)] {
        let stored = s.run_get(&t.id, id).await.unwrap().unwrap();
        assert_eq!((stored.state, stored.output, stored.lease_until_ms), (state, Some(json!({ "id": id })), None));
        let att = s.run_attempts(id).await.unwrap();
        assert_eq!((att.len(), att[0].started_at_ms, att[0].finished_at_ms), (1, NOW, Some(NOW + 1)));
    }
    // One run cancelled meanwhile, one result sent again: decided from the rows, the others applied.
    s.run_cancel(&t.id, &ids[3], "stop", NOW).await.unwrap().unwrap();
    let batch = [carrying(&ids[3], true), carrying(&ids[4], true), carrying(&ids[0], true), carrying(&ids[5], true)];
    let got = s.run_finish_many(&batch).await.unwrap();
    assert_eq!(got[0], FinishOutcome::Conflict { state: RunState::Cancelled, attempt: 1 });
    assert!(matches!(&got[1], FinishOutcome::Applied { run, .. } if run.state == RunState::Succeeded));
    assert_eq!(got[2], FinishOutcome::Duplicate, "the same result again");
    assert!(matches!(&got[3], FinishOutcome::Applied { .. }));
    assert_eq!(s.run_get(&t.id, &ids[3]).await.unwrap().unwrap().state, RunState::Cancelled);
    assert_eq!(s.run_get(&t.id, &ids[4]).await.unwrap().unwrap().state, RunState::Succeeded);
    // Another result for a finished attempt, carrying its run: a conflict, as from the rows.
    let mut other = result(&ids[4], 1, true, json!("other"));
    other.dispatched = Some(as_dispatched(&ids[4]));
    assert_eq!(
        s.run_finish_many(&[other]).await.unwrap(),
        [FinishOutcome::Conflict { state: RunState::Succeeded, attempt: 1 }]
    );
    let of_child = RunFilter { job_id: Some(child.id.clone()), ..Default::default() };
    assert_eq!(s.run_list(&t.id, &of_child, &page(10)).await.unwrap().len(), 1, "the child fired once");
}

pub async fn result_batches_apply_in_order_with_duplicates_and_conflicts(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let parent = job_with(&s, &a, "parent", BlockStrategy::DiscardLater).await;
    let child = job_with(&s, &a, "child", BlockStrategy::DiscardLater).await;
    link(&s, &parent, &child).await;
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

/// An unwritten fire (a high-frequency job's, no row yet) as the engine hands it over.
/// Give `parent` (at version 1) an `on_success` edge to `child`: version 2.
async fn link(s: &S, parent: &Job, child: &Job) {
    let mut j = parent.clone();
    j.version = 2;
    assert!(s.job_update(&j, Some(&[edge(&child.id)]), 1).await.unwrap());
}

fn unwritten(j: &Job, at: i64) -> ToDispatch {
    ToDispatch::unwritten(Run::pending(
        &j.tenant_id,
        &j.id,
        j.version,
        format!("s:{at}"),
        TriggerKind::Schedule,
        at,
        NOW,
    ))
}

fn decision_of<'a>(out: &'a [(String, DispatchDecision)], id: &str) -> &'a DispatchDecision {
    &out.iter().find(|(i, _)| i == id).unwrap_or_else(|| panic!("no decision for {id}")).1
}

pub async fn fires_without_rows_are_written_by_the_dispatch_that_decides_them(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let discard = job_with(&s, &a, "discard", BlockStrategy::DiscardLater).await;
    let serial = job_with(&s, &a, "serial", BlockStrategy::Serial).await;
    let taken = job_with(&s, &a, "taken", BlockStrategy::DiscardLater).await;
    // A fire another node has written already (its row, under another id).
    let existing = run_of(&taken, &format!("s:{NOW}"), NOW);
    s.run_insert(&existing).await.unwrap();

    let fresh = unwritten(&discard, NOW);
    let twin_a = unwritten(&serial, NOW);
    let twin_b = unwritten(&serial, NOW); // the same fire twice (two nodes' timers, one batch)
    let dup = unwritten(&taken, NOW);
    let batch = [fresh.clone(), twin_a.clone(), twin_b.clone(), dup.clone()];
    let out = s.run_dispatch_many(&batch, "node_a", NOW, 30_000).await.unwrap();
    assert_eq!(out.len(), 4);
    // Written at once as `dispatching`, attempt 1, with its attempt row.
    let run = dispatched(decision_of(&out, &fresh.run_id));
    assert_eq!((run.state, run.attempt, run.owner_node.as_deref()), (RunState::Dispatching, 1, Some("node_a")));
    let stored = s.run_get(&t.id, &fresh.run_id).await.unwrap().expect("the dispatch wrote the row");
    assert_eq!((stored.state, stored.attempt, stored.fire_key.clone()), (RunState::Dispatching, 1, format!("s:{NOW}")));
    assert_eq!(stored.deadline_ms, Some(NOW + discard.timeout_ms));
    assert_eq!(s.run_attempts(&fresh.run_id).await.unwrap().len(), 1);
    // One fire, one run: of two unwritten runs of one fire, one is written, the other is gone.
    let twins = [decision_of(&out, &twin_a.run_id), decision_of(&out, &twin_b.run_id)];
    assert_eq!(twins.iter().filter(|d| matches!(d, DispatchDecision::Dispatch { .. })).count(), 1, "{twins:?}");
    assert_eq!(twins.iter().filter(|d| **d == &DispatchDecision::Gone).count(), 1, "{twins:?}");
    let by_key = s.run_by_fire_key(&serial.id, &format!("s:{NOW}")).await.unwrap().unwrap();
    assert!(by_key.id == twin_a.run_id || by_key.id == twin_b.run_id);
    // A fire with a row already: gone, the row untouched, no second row.
    assert_eq!(decision_of(&out, &dup.run_id), &DispatchDecision::Gone);
    assert!(s.run_get(&t.id, &dup.run_id).await.unwrap().is_none());
    assert_eq!(s.run_get(&t.id, &existing.id).await.unwrap().unwrap().state, RunState::Pending);
    // A `cover_early` fire that another node has dispatched already: gone, and it does not
    // cancel that run (the one decision that writes to other runs checks the fire key first).
    let cover = job_with(&s, &a, "cover", BlockStrategy::CoverEarly).await;
    let elsewhere = run_of(&cover, &format!("s:{NOW}"), NOW);
    s.run_insert(&elsewhere).await.unwrap();
    let sent =
        s.run_dispatch_many(&[ToDispatch::new(elsewhere.id.clone(), false)], "node_b", NOW, 30_000).await.unwrap();
    assert_eq!(dispatched(&sent[0].1).state, RunState::Dispatching);
    let late_twin = unwritten(&cover, NOW);
    let out = s.run_dispatch_many(std::slice::from_ref(&late_twin), "node_a", NOW + 10, 30_000).await.unwrap();
    assert_eq!(out[0].1, DispatchDecision::Gone);
    assert_eq!(s.run_get(&t.id, &elsewhere.id).await.unwrap().unwrap().state, RunState::Dispatching, "not covered");

    // The next fires, while the first ones are in flight: each job's block strategy decides,
    // and the row is written in the state it decided.
    let next_discard = unwritten(&discard, NOW + 1_000);
    let next_serial = unwritten(&serial, NOW + 1_000);
    let out =
        s.run_dispatch_many(&[next_discard.clone(), next_serial.clone()], "node_a", NOW + 1_000, 30_000).await.unwrap();
    assert_eq!(decision_of(&out, &next_discard.run_id), &DispatchDecision::Skipped { reason: "discard_later" });
    let skipped = s.run_get(&t.id, &next_discard.run_id).await.unwrap().expect("written skipped");
    assert_eq!((skipped.state, skipped.finished_at_ms), (RunState::Skipped, Some(NOW + 1_000)));
    assert_eq!(decision_of(&out, &next_serial.run_id), &DispatchDecision::Blocked { until_ms: None });
    let queued = s.run_get(&t.id, &next_serial.run_id).await.unwrap().expect("written queued");
    assert_eq!(
        (queued.state, queued.owner_node.as_deref(), queued.lease_until_ms),
        (RunState::Queued, Some("node_a"), Some(NOW + 1_000 + 30_000))
    );
    // From now on it is a row like any other: its next check renews its claim.
    let again = s
        .run_dispatch_many(&[ToDispatch::new(next_serial.run_id.clone(), false)], "node_a", NOW + 1_500, 30_000)
        .await
        .unwrap();
    assert_eq!(again[0].1, DispatchDecision::Blocked { until_ms: None });
    // The run in flight fails and waits out its retry's backoff: nothing can let the queued
    // fire through before that retry is due, and the decision says when that is.
    s.run_finish_many(&[result(&by_key.id, 1, false, json!(null))]).await.unwrap();
    assert_eq!(s.run_get(&t.id, &by_key.id).await.unwrap().unwrap().state, RunState::Retrying);
    let later = s
        .run_dispatch_many(&[ToDispatch::new(next_serial.run_id.clone(), false)], "node_a", NOW + 2_000, 30_000)
        .await
        .unwrap();
    assert_eq!(later[0].1, DispatchDecision::Blocked { until_ms: Some(NOW + 5_000) });
}

pub async fn unwritten_fires_of_stopped_changed_or_deleted_jobs_write_nothing(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    // Fires every 5 minutes (Europe/Berlin); NOW (14:13:20Z) is not one of them, NOW + 100 s is.
    let stopped = job_with(&s, &a, "stopped", BlockStrategy::DiscardLater).await;
    s.job_set_state(&t.id, &stopped.id, JobState::Stopped, NOW).await.unwrap().unwrap();
    let changed = job_with(&s, &a, "changed", BlockStrategy::DiscardLater).await;
    let mut edited = changed.clone();
    edited.version = 2;
    edited.description = "edited".into();
    assert!(s.job_update(&edited, None, 1).await.unwrap());
    let deleted = job_with(&s, &a, "deleted", BlockStrategy::DiscardLater).await;
    assert!(s.job_delete(&t.id, &deleted.id, NOW).await.unwrap());

    // Planned from the definitions before the changes (version 1).
    let of_stopped = unwritten(&stopped, NOW + 100_000);
    let no_longer = unwritten(&changed, NOW); // not a fire of the current schedule
    let still = unwritten(&changed, NOW + 100_000); // still a fire: goes, at the current version
    let of_deleted = unwritten(&deleted, NOW + 100_000);
    let batch = [of_stopped.clone(), no_longer.clone(), still.clone(), of_deleted.clone()];
    let out = s.run_dispatch_many(&batch, "node_a", NOW + 100_000, 30_000).await.unwrap();
    for gone in [&of_stopped, &no_longer, &of_deleted] {
        assert_eq!(decision_of(&out, &gone.run_id), &DispatchDecision::Gone, "{gone:?}");
        assert!(s.run_get(&t.id, &gone.run_id).await.unwrap().is_none(), "nothing written for {gone:?}");
    }
    let run = dispatched(decision_of(&out, &still.run_id));
    assert_eq!((run.state, run.job_version), (RunState::Dispatching, 2));
}

/// Dispatches read only a job's version and last change under its lock, the rest as a
/// dispatch before read it: an edit or a stop in between is seen by the next dispatch.
pub async fn each_dispatch_sees_the_job_as_it_is_now(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let j = job_with(&s, &a, "j", BlockStrategy::DiscardLater).await;
    // Fires every 5 minutes: NOW + 100 s, + 400 s, + 700 s are fires.
    let go = |at: i64, version: i64| {
        let s = s.clone();
        let mut job = j.clone();
        job.version = version;
        async move {
            let out = s.run_dispatch_many(&[unwritten(&job, at)], "node_a", at, 30_000).await.unwrap();
            let (_, d) = out.into_iter().next().unwrap();
            if let DispatchDecision::Dispatch { run, .. } = &d {
                s.run_finish_many(&[result(&run.id, 1, true, json!(null))]).await.unwrap();
            }
            d
        }
    };
    match go(NOW + 100_000, 1).await {
        DispatchDecision::Dispatch { job, run, .. } => {
            assert_eq!((job.timeout_ms, run.deadline_ms), (j.timeout_ms, Some(NOW + 100_000 + j.timeout_ms)))
        }
        other => panic!("{other:?}"),
    }
    let mut edited = j.clone();
    edited.version = 2;
    edited.timeout_ms = 7_000;
    edited.description = "edited".into();
    edited.updated_at_ms = NOW + 1;
    assert!(s.job_update(&edited, None, 1).await.unwrap());
    match go(NOW + 400_000, 2).await {
        DispatchDecision::Dispatch { job, run, .. } => {
            assert_eq!((job.timeout_ms, job.description.as_str(), job.version), (7_000, "edited", 2));
            assert_eq!((run.deadline_ms, run.job_version), (Some(NOW + 407_000), 2));
        }
        other => panic!("{other:?}"),
    }
    s.job_set_state(&t.id, &j.id, JobState::Stopped, NOW + 2).await.unwrap().unwrap();
    assert_eq!(go(NOW + 700_000, 2).await, DispatchDecision::Gone, "a stopped job's fire does not go");
}

pub async fn missing_runs_last_fires_and_timed_job_versions(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let j = job(&s, &a, "j").await;
    let k = job(&s, &a, "k").await;
    let none = job(&s, &a, "none").await;
    let mut manual = job_of(&a, "manual");
    manual.schedule_kind = ScheduleKind::Manual;
    manual.schedule = sundial_core::schedule::ScheduleSpec {
        kind: ScheduleKind::Manual,
        expression: None,
        timezone: None,
        every_ms: None,
        anchor: None,
        at: None,
        start_at: None,
        end_at: None,
    };
    s.job_insert(&manual, &[]).await.unwrap();
    // Inserted unless the fire has a row: the second write of a fire changes nothing.
    let first = [
        run_of(&j, &format!("s:{}", NOW - 2_000), NOW - 2_000),
        run_of(&j, &format!("s:{}", NOW - 1_000), NOW - 1_000),
    ];
    assert_eq!(s.run_insert_missing(&first).await.unwrap(), 2);
    let again = [
        run_of(&j, &format!("s:{}", NOW - 1_000), NOW - 1_000),
        run_of(&k, &format!("s:{}", NOW + 5_000), NOW + 5_000),
    ];
    assert_eq!(s.run_insert_missing(&again).await.unwrap(), 1);
    assert_eq!(s.run_by_fire_key(&j.id, &format!("s:{}", NOW - 1_000)).await.unwrap().unwrap().id, first[1].id);
    // Triggered and child runs are not schedule fires.
    let mut manual_run = run_of(&k, "i:key-1", NOW + 60_000);
    manual_run.trigger = TriggerKind::Api;
    s.run_insert(&manual_run).await.unwrap();
    let last = s.run_last_fires(&[j.id.clone(), k.id.clone(), none.id.clone()]).await.unwrap();
    assert_eq!(last.get(&j.id), Some(&(NOW - 1_000)));
    assert_eq!(last.get(&k.id), Some(&(NOW + 5_000)));
    assert_eq!(last.get(&none.id), None);
    // The schedule fires with rows in a range, per job: not the triggered run, nothing outside it.
    s.run_insert_missing(&[run_of(&j, &format!("s:{}", NOW - 9_000), NOW - 9_000)]).await.unwrap();
    let have = s
        .run_fires_between(&[
            (j.id.clone(), NOW - 2_000, NOW + 60_000),
            (k.id.clone(), NOW - 2_000, NOW + 60_000),
            (none.id.clone(), NOW - 2_000, NOW + 60_000),
        ])
        .await
        .unwrap();
    assert_eq!(have.get(&j.id), Some(&vec![NOW - 2_000, NOW - 1_000]));
    assert_eq!(have.get(&k.id), Some(&vec![NOW + 5_000]));
    assert_eq!(have.get(&none.id), None);
    assert!(s.run_fires_between(&[(j.id.clone(), NOW, NOW - 1)]).await.unwrap().is_empty());
    // Each job in its own range: k's fire is outside j's range and the other way round.
    let own = s.run_fires_between(&[(j.id.clone(), NOW - 1_500, NOW), (k.id.clone(), NOW, NOW + 4_999)]).await.unwrap();
    assert_eq!(own.get(&j.id), Some(&vec![NOW - 1_000]));
    assert_eq!(own.get(&k.id), None);
    // Active timed jobs with their versions (the manual job and a stopped one are not).
    s.job_set_state(&t.id, &none.id, JobState::Stopped, NOW).await.unwrap().unwrap();
    let mut versions = s.job_timed_versions().await.unwrap();
    versions.sort();
    let mut want = vec![(j.id.clone(), 1), (k.id.clone(), 1)];
    want.sort();
    assert_eq!(versions, want);
}

/// A parent run that succeeds fires its `on_success` and `always` children; one that fails
/// for good fires its `on_failure` and `always` children; one that will be retried fires none.
pub async fn children_fire_by_their_edge_condition(s: S) {
    use sundial_core::types::EdgeCondition::*;
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let mut kids = Vec::new();
    for (name, on) in [("next", OnSuccess), ("cleanup", OnFailure), ("report", Always)] {
        kids.push((job_with(&s, &a, name, BlockStrategy::DiscardLater).await, on));
    }
    let edges: Vec<ChildEdge> = kids.iter().map(|(j, on)| ChildEdge { job_id: j.id.clone(), on: *on }).collect();
    let mut runs = Vec::new();
    for i in 0..3 {
        let parent = job_with(&s, &a, &format!("parent{i}"), BlockStrategy::DiscardLater).await;
        let mut j = parent.clone();
        j.version = 2;
        assert!(s.job_update(&j, Some(&edges), 1).await.unwrap());
        let mut stored = s.job_children(&parent.id).await.unwrap();
        stored.sort_by(|x, y| x.job_id.cmp(&y.job_id));
        let mut want = edges.clone();
        want.sort_by(|x, y| x.job_id.cmp(&y.job_id));
        assert_eq!(stored, want, "the edges with their conditions");
        let r = run_of(&j, "s:1", NOW);
        s.run_insert(&r).await.unwrap();
        runs.push(r);
    }
    s.run_claim(&claim("node_a", NOW)).await.unwrap();
    let ids: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
    s.run_dispatch_many(&to_dispatch(&ids), "node_a", NOW, 30_000).await.unwrap();
    let fired = |o: &FinishOutcome| -> Vec<String> {
        let FinishOutcome::Applied { children, .. } = o else { panic!("{o:?}") };
        let mut names: Vec<String> =
            children.iter().map(|c| kids.iter().find(|(k, _)| k.id == c.job_id).unwrap().0.name.clone()).collect();
        names.sort();
        names
    };
    let mut failed_for_good = result(&runs[1].id, 1, false, json!({"why": "boom"}));
    failed_for_good.result =
        AttemptResult::Failed { reason: sundial_core::run_state::FailReason::Error, retry_at_ms: None };
    let out = s
        .run_finish_many(&[
            result(&runs[0].id, 1, true, json!({"ok": 1})),
            failed_for_good,
            result(&runs[2].id, 1, false, json!(null)), // to be retried: not final
        ])
        .await
        .unwrap();
    assert_eq!(fired(&out[0]), ["next", "report"], "a success fires on_success and always");
    assert_eq!(fired(&out[1]), ["cleanup", "report"], "a failure for good fires on_failure and always");
    assert_eq!(fired(&out[2]), Vec::<String>::new(), "a run to be retried has not ended");
    let FinishOutcome::Applied { children, .. } = &out[1] else { unreachable!() };
    assert!(children.iter().all(|c| c.parent_run_id.as_deref() == Some(runs[1].id.as_str())));
    assert!(children.iter().all(|c| c.fire_key == format!("p:{}", runs[1].id)), "one run per child and parent run");
}

/// A run fired by a parent is in its root's chain (a grandchild too); the chain lists the
/// root and every run fired down from it, oldest first, within the tenant only.
pub async fn a_chain_carries_its_roots_id_and_lists_its_runs(s: S) {
    let t = tenant(&s, "t").await;
    let other = tenant(&s, "other").await;
    let a = app(&s, &t, "a").await;
    let top = job_with(&s, &a, "top", BlockStrategy::DiscardLater).await;
    let mid = job_with(&s, &a, "mid", BlockStrategy::DiscardLater).await;
    let low = job_with(&s, &a, "low", BlockStrategy::DiscardLater).await;
    link(&s, &top, &mid).await;
    link(&s, &mid, &low).await;
    let root = run_of(&top, "s:1", NOW);
    s.run_insert(&root).await.unwrap();
    // Each step: claim and dispatch what is due, succeed it, and take the child it fired.
    let step = |run_id: String, at: i64| {
        let s = s.clone();
        async move {
            let mut c = claim("node_a", at);
            c.limit = 10;
            s.run_claim(&c).await.unwrap();
            s.run_dispatch_many(&to_dispatch(std::slice::from_ref(&run_id)), "node_a", at, 30_000).await.unwrap();
            let mut r = result(&run_id, 1, true, json!({"from": run_id}));
            r.now_ms = at + 1;
            match s.run_finish_many(&[r]).await.unwrap().pop().unwrap() {
                FinishOutcome::Applied { mut children, .. } => children.pop().unwrap(),
                other => panic!("{other:?}"),
            }
        }
    };
    let child = step(root.id.clone(), NOW).await;
    assert_eq!(child.chain_id.as_deref(), Some(root.id.as_str()));
    let grandchild = step(child.id.clone(), NOW + 10).await;
    assert_eq!(grandchild.chain_id.as_deref(), Some(root.id.as_str()), "the root's chain, not the parent's id");
    let stored = s.run_get(&t.id, &grandchild.id).await.unwrap().unwrap();
    assert_eq!((stored.chain(), stored.parent_run_id.as_deref()), (root.id.as_str(), Some(child.id.as_str())));
    assert_eq!(s.run_get(&t.id, &root.id).await.unwrap().unwrap().chain(), root.id, "a root is its own chain");
    let chain: Vec<String> = s.run_chain(&t.id, &root.id, 100).await.unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(chain, [root.id.clone(), child.id.clone(), grandchild.id.clone()]);
    assert!(s.run_chain(&other.id, &root.id, 100).await.unwrap().is_empty(), "another tenant sees nothing");
    assert_eq!(s.run_chain(&t.id, &child.id, 100).await.unwrap().len(), 1, "a chain is named by its root");
}
