//! Chains with fan-in: a job with several parents fires once per chain (`p:<chain id>`),
//! after all of its parents (`all`) or the first (`any`); a parent that will not run in the
//! chain releases it as `skipped` with the reason; and the view `GET /chains/{id}` is built from.

use std::collections::HashMap;

use serde_json::{Value, json};
use sundial_core::job::ChildEdge;
use sundial_core::run_state::FailReason;
use sundial_core::types::*;
use sundial_store::*;

use crate::fixtures::*;

for_each_database!(
    an_all_fan_in_fires_once_after_its_last_parent_with_every_output,
    parents_ending_at_once_fire_a_fan_in_once,
    an_any_fan_in_fires_at_the_first_parent_and_only_then,
    a_failed_parent_skips_an_all_fan_in_with_the_reason_and_passes_it_on,
    a_stopped_parent_job_or_a_cancelled_parent_run_releases_the_fan_in,
    a_deleted_parent_job_releases_the_fan_in_waiting_for_it,
    a_parent_run_skipped_at_dispatch_releases_the_fan_in,
    a_child_made_a_fan_in_mid_chain_is_not_fired_twice_and_the_parent_still_ends,
    a_parent_the_chain_cannot_reach_is_not_waited_for,
    the_chain_view_has_runs_jobs_edges_and_joins,
);

/// A diamond: `root` → `b1`, `b2`, `b3` → `d` (a fan-in waiting for `wait`), all `on_success`.
struct Diamond {
    t: Tenant,
    root: Job,
    branches: Vec<Job>,
    d: Job,
}

async fn set_children(s: &S, parent: &Job, children: &[ChildEdge]) -> Job {
    let mut j = s.job_get(&parent.tenant_id, &parent.id).await.unwrap().unwrap();
    let v = j.version;
    j.version += 1;
    assert!(s.job_update(&j, Some(children), v).await.unwrap());
    j
}

async fn diamond(s: &S, branches: usize, wait: WaitFor) -> Diamond {
    let t = tenant(s, "t").await;
    let a = app(s, &t, "a").await;
    let mut d = job_of(&a, "d");
    d.wait = wait;
    d.block = BlockStrategy::Serial;
    d.max_concurrency = None;
    s.job_insert(&d, &[]).await.unwrap();
    let mut bs = Vec::new();
    for i in 0..branches {
        let b = job_with(s, &a, &format!("b{i}"), BlockStrategy::Serial).await;
        bs.push(set_children(s, &b, &[edge(&d.id)]).await);
    }
    let root = job_with(s, &a, "root", BlockStrategy::Serial).await;
    let edges: Vec<ChildEdge> = bs.iter().map(|b| edge(&b.id)).collect();
    let root = set_children(s, &root, &edges).await;
    Diamond { t, root, branches: bs, d }
}

/// Claim and dispatch `ids` at `at`.
async fn dispatch(s: &S, ids: &[String], at: i64) {
    let mut c = claim("node_a", at);
    c.limit = 1000;
    s.run_claim(&c).await.unwrap();
    let d = s.run_dispatch_many(&to_dispatch(ids), "node_a", at, 30_000).await.unwrap();
    assert!(d.iter().all(|x| matches!(x.1, DispatchDecision::Dispatch { .. })), "{d:?}");
}

/// End `run_id`'s first attempt (succeeded, or failed for good) at `at`: the children fired.
async fn end(s: &S, run_id: &str, ok: bool, output: Value, at: i64) -> Vec<Run> {
    let mut r = result(run_id, 1, ok, output);
    if !ok {
        r.result = AttemptResult::Failed { reason: FailReason::Error, retry_at_ms: None };
    }
    r.now_ms = at;
    match s.run_finish_many(&[r]).await.unwrap().pop().unwrap() {
        FinishOutcome::Applied { children, .. } => children,
        other => panic!("{other:?}"),
    }
}

/// Start a chain at `root` and run the root: the branch runs it fired, by job id.
async fn start(s: &S, dm: &Diamond, key: &str, at: i64) -> (Run, HashMap<String, Run>) {
    let root = run_of(&dm.root, key, at);
    s.run_insert(&root).await.unwrap();
    dispatch(s, std::slice::from_ref(&root.id), at).await;
    let fired = end(s, &root.id, true, json!({"from": "root"}), at + 1).await;
    let ids: Vec<String> = fired.iter().map(|r| r.id.clone()).collect();
    if !ids.is_empty() {
        dispatch(s, &ids, at + 2).await;
    }
    (root, fired.into_iter().map(|r| (r.job_id.clone(), r)).collect())
}

async fn runs_of(s: &S, t: &Tenant, chain: &str, job: &Job) -> Vec<Run> {
    s.run_chain(&t.id, chain, 1000).await.unwrap().into_iter().filter(|r| r.job_id == job.id).collect()
}

pub async fn an_all_fan_in_fires_once_after_its_last_parent_with_every_output(s: S) {
    let dm = diamond(&s, 3, WaitFor::All).await;
    let (root, branches) = start(&s, &dm, "s:1", NOW).await;
    assert_eq!(branches.len(), 3, "a fan-out of one to three");
    let b = |i: usize| &branches[&dm.branches[i].id];
    assert!(end(&s, &b(0).id, true, json!({"part": 0}), NOW + 10).await.is_empty(), "still waiting for two");
    assert!(end(&s, &b(2).id, true, json!({"part": 2}), NOW + 11).await.is_empty(), "still waiting for one");
    let fired = end(&s, &b(1).id, true, json!({"part": 1}), NOW + 12).await;
    assert_eq!(fired.len(), 1, "the last parent fires it");
    let d = &fired[0];
    assert_eq!((d.job_id.as_str(), d.fire_key.clone()), (dm.d.id.as_str(), format!("p:{}", root.id)));
    assert_eq!((d.state, d.trigger, d.chain()), (RunState::Pending, TriggerKind::Parent, root.id.as_str()));
    assert_eq!(d.params, Some(json!({"a": 1})), "the root's params flow down the chain");
    let stored = s.run_get(&dm.t.id, &d.id).await.unwrap().unwrap();
    let parents = stored.parents.clone().expect("a fan-in run carries its parents");
    let mut got: Vec<(String, String, String)> = parents
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["job_id"].as_str().unwrap().into(), p["state"].as_str().unwrap().into(), p["output"].to_string()))
        .collect();
    got.sort();
    let mut want: Vec<(String, String, String)> =
        (0..3).map(|i| (dm.branches[i].id.clone(), "succeeded".into(), json!({"part": i}).to_string())).collect();
    want.sort();
    assert_eq!(got, want, "every parent's run, state and output");
    assert_eq!(stored.parent_run_id, None, "`parent` is for a single parent");
    assert_eq!(runs_of(&s, &dm.t, &root.id, &dm.d).await.len(), 1);
}

/// Two parents ending at the same moment in two transactions (two nodes) fire the fan-in
/// exactly once: the join row serialises them, and the second sees the first's arrival.
pub async fn parents_ending_at_once_fire_a_fan_in_once(s: S) {
    let dm = diamond(&s, 3, WaitFor::All).await;
    for round in 0..6 {
        let at = NOW + round * 1_000;
        let (root, branches) = start(&s, &dm, &format!("s:{round}"), at).await;
        let b = |i: usize| branches[&dm.branches[i].id].id.clone();
        end(&s, &b(0), true, json!(0), at + 10).await;
        let (b1, b2) = (b(1), b(2));
        let (x, y) = tokio::join!(end(&s, &b1, true, json!(1), at + 11), end(&s, &b2, true, json!(2), at + 11));
        assert_eq!(x.len() + y.len(), 1, "round {round}: fired once, by one of the two");
        let d = runs_of(&s, &dm.t, &root.id, &dm.d).await;
        assert_eq!(d.len(), 1, "round {round}");
        assert_eq!(d[0].parents.as_ref().unwrap().as_array().unwrap().len(), 3, "round {round}: all three outputs");
    }
}

pub async fn an_any_fan_in_fires_at_the_first_parent_and_only_then(s: S) {
    let dm = diamond(&s, 3, WaitFor::Any).await;
    let (root, branches) = start(&s, &dm, "s:1", NOW).await;
    let b = |i: usize| branches[&dm.branches[i].id].id.clone();
    // A parent whose edge does not hold (failed, edge on_success) does not fire an `any` …
    assert!(end(&s, &b(1), false, json!(null), NOW + 10).await.is_empty());
    // … the first that holds does, with the parents ended so far …
    let fired = end(&s, &b(0), true, json!({"first": true}), NOW + 11).await;
    assert_eq!(fired.len(), 1);
    assert_eq!(fired[0].fire_key, format!("p:{}", root.id));
    let parents = s.run_get(&dm.t.id, &fired[0].id).await.unwrap().unwrap().parents.unwrap();
    assert_eq!(parents.as_array().unwrap().len(), 2, "the failed one and the first success");
    // … and the last changes nothing.
    assert!(end(&s, &b(2), true, json!(2), NOW + 12).await.is_empty());
    assert_eq!(runs_of(&s, &dm.t, &root.id, &dm.d).await.len(), 1);

    // Every parent failing: `any` is skipped, saying why, once all have ended.
    let (root, branches) = start(&s, &dm, "s:2", NOW + 100).await;
    for (i, job) in dm.branches.iter().enumerate() {
        assert!(end(&s, &branches[&job.id].id, false, json!(null), NOW + 110 + i as i64).await.is_empty());
    }
    let d = runs_of(&s, &dm.t, &root.id, &dm.d).await;
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].state, RunState::Skipped);
    assert!(d[0].message.as_deref().unwrap().contains("none fired it"), "{:?}", d[0].message);
}

/// `all` with a failed parent: the fan-in can no longer fire, so it is recorded `skipped` at
/// once with the reason; a fan-in below it is released in turn.
pub async fn a_failed_parent_skips_an_all_fan_in_with_the_reason_and_passes_it_on(s: S) {
    let dm = diamond(&s, 2, WaitFor::All).await;
    // Below `d`: `e` waits for `d` and for `b0` (so `e` is a fan-in too).
    let a = s.app_get(&dm.t.id, &dm.d.app_id).await.unwrap().unwrap();
    let e = job_with(&s, &a, "e", BlockStrategy::Serial).await;
    set_children(&s, &dm.d, &[edge(&e.id)]).await;
    set_children(&s, &dm.branches[0], &[edge(&dm.d.id), edge(&e.id)]).await;
    let (root, branches) = start(&s, &dm, "s:1", NOW).await;
    let b = |i: usize| branches[&dm.branches[i].id].id.clone();
    assert!(end(&s, &b(1), false, json!(null), NOW + 10).await.is_empty());
    let d = runs_of(&s, &dm.t, &root.id, &dm.d).await;
    assert_eq!(d.len(), 1, "recorded at once");
    assert_eq!((d[0].state, d[0].fire_key.clone()), (RunState::Skipped, format!("p:{}", root.id)));
    let why = d[0].message.clone().unwrap();
    assert!(why.contains(&dm.branches[1].id) && why.contains("failed"), "{why}");
    let e_runs = runs_of(&s, &dm.t, &root.id, &e).await;
    assert_eq!(e_runs.len(), 1, "the skipped fan-in passes it on");
    assert_eq!(e_runs[0].state, RunState::Skipped);
    // The other parent ending later fires nothing.
    assert!(end(&s, &b(0), true, json!(0), NOW + 11).await.is_empty());
    assert_eq!(runs_of(&s, &dm.t, &root.id, &dm.d).await.len(), 1);
}

pub async fn a_stopped_parent_job_or_a_cancelled_parent_run_releases_the_fan_in(s: S) {
    let dm = diamond(&s, 2, WaitFor::All).await;
    s.job_set_state(&dm.t.id, &dm.branches[1].id, JobState::Stopped, NOW).await.unwrap().unwrap();
    let (root, branches) = start(&s, &dm, "s:1", NOW).await;
    assert_eq!(branches.len(), 1, "a stopped child job is not fired");
    let d = runs_of(&s, &dm.t, &root.id, &dm.d).await;
    assert_eq!(d.len(), 1, "the fan-in is released at once");
    assert_eq!(d[0].state, RunState::Skipped);
    assert!(d[0].message.as_deref().unwrap().contains("the job is stopped"), "{:?}", d[0].message);
    assert!(end(&s, &branches[&dm.branches[0].id].id, true, json!(0), NOW + 10).await.is_empty());

    s.job_set_state(&dm.t.id, &dm.branches[1].id, JobState::Active, NOW).await.unwrap().unwrap();
    let (root, branches) = start(&s, &dm, "s:2", NOW + 100).await;
    let cancelled = &branches[&dm.branches[1].id];
    s.run_cancel(&dm.t.id, &cancelled.id, "by hand", NOW + 105).await.unwrap().unwrap();
    let d = runs_of(&s, &dm.t, &root.id, &dm.d).await;
    assert_eq!(d.len(), 1, "a cancelled parent run releases it too");
    assert_eq!(d[0].state, RunState::Skipped);
    assert!(d[0].message.as_deref().unwrap().contains("cancelled"), "{:?}", d[0].message);
}

/// A fan-in parent that is not below the chain's root (another job's child, or scheduled on
/// its own) is not waited for in that chain.
pub async fn a_parent_the_chain_cannot_reach_is_not_waited_for(s: S) {
    let dm = diamond(&s, 1, WaitFor::All).await;
    let a = s.app_get(&dm.t.id, &dm.d.app_id).await.unwrap().unwrap();
    let other = job_with(&s, &a, "other", BlockStrategy::Serial).await;
    set_children(&s, &other, &[edge(&dm.d.id)]).await;
    let (root, branches) = start(&s, &dm, "s:1", NOW).await;
    let fired = end(&s, &branches[&dm.branches[0].id].id, true, json!(0), NOW + 10).await;
    assert_eq!(fired.len(), 1, "fired after the one parent the chain reaches");
    assert_eq!(fired[0].fire_key, format!("p:{}", root.id));
}

pub async fn the_chain_view_has_runs_jobs_edges_and_joins(s: S) {
    let dm = diamond(&s, 2, WaitFor::All).await;
    let (root, branches) = start(&s, &dm, "s:1", NOW).await;
    end(&s, &branches[&dm.branches[0].id].id, true, json!(0), NOW + 10).await;
    let v = s.chain_view(&dm.t.id, &root.id, 100).await.unwrap().expect("a chain");
    assert_eq!(v.runs.len(), 3);
    assert_eq!(v.runs[0].id, root.id, "the root first");
    let names: Vec<&str> = v.jobs.iter().map(|j| j.name.as_str()).collect();
    for n in ["root", "b0", "b1", "d"] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }
    let d = v.jobs.iter().find(|j| j.id == dm.d.id).unwrap();
    assert_eq!((d.parents, d.wait), (2, WaitFor::All));
    assert_eq!(v.edges.len(), 4, "root → b0, b1; b0, b1 → d");
    assert_eq!(v.joins.len(), 1);
    assert_eq!(v.joins[0].child_job_id, dm.d.id);
    assert_eq!(v.joins[0].run_id, None, "still waiting");
    assert_eq!(v.joins[0].arrivals.len(), 1);
    assert!(v.joins[0].arrivals[0].holds);
    let other = tenant(&s, "other").await;
    assert!(s.chain_view(&other.id, &root.id, 100).await.unwrap().is_none(), "another tenant sees nothing");
}

pub async fn a_deleted_parent_job_releases_the_fan_in_waiting_for_it(s: S) {
    let dm = diamond(&s, 2, WaitFor::All).await;
    let (root, branches) = start(&s, &dm, "s:1", NOW).await;
    assert!(end(&s, &branches[&dm.branches[0].id].id, true, json!(0), NOW + 10).await.is_empty(), "waits for b1");
    assert!(s.job_delete(&dm.t.id, &dm.branches[1].id, NOW + 20).await.unwrap());
    let d = runs_of(&s, &dm.t, &root.id, &dm.d).await;
    assert_eq!(d.len(), 1, "released, not left waiting");
    assert_eq!(d[0].state, RunState::Skipped);
    assert!(d[0].message.as_deref().unwrap().contains("the job was deleted"), "{:?}", d[0].message);
}

/// A chain step refused at dispatch (its job's block strategy `discard_later`, the previous
/// chain's run of it still in flight) is `skipped`: the fan-in waiting for it is released.
pub async fn a_parent_run_skipped_at_dispatch_releases_the_fan_in(s: S) {
    let dm = diamond(&s, 2, WaitFor::All).await;
    let mut b1 = s.job_get(&dm.t.id, &dm.branches[1].id).await.unwrap().unwrap();
    b1.block = BlockStrategy::DiscardLater;
    let v = b1.version;
    b1.version += 1;
    assert!(s.job_update(&b1, None, v).await.unwrap());
    let (_first, _) = start(&s, &dm, "s:1", NOW).await; // its b1 stays in flight
    let root = run_of(&dm.root, "s:2", NOW + 100);
    s.run_insert(&root).await.unwrap();
    dispatch(&s, std::slice::from_ref(&root.id), NOW + 100).await;
    let fired = end(&s, &root.id, true, json!({}), NOW + 101).await;
    let b1_run = fired.iter().find(|r| r.job_id == b1.id).unwrap().id.clone();
    let mut c = claim("node_a", NOW + 102);
    c.limit = 1000;
    s.run_claim(&c).await.unwrap();
    let d =
        s.run_dispatch_many(&to_dispatch(std::slice::from_ref(&b1_run)), "node_a", NOW + 102, 30_000).await.unwrap();
    assert!(matches!(d[0].1, DispatchDecision::Skipped { .. }), "{d:?}");
    let d = runs_of(&s, &dm.t, &root.id, &dm.d).await;
    assert_eq!(d.len(), 1, "released");
    assert_eq!(d[0].state, RunState::Skipped);
    assert!(d[0].message.as_deref().unwrap().contains("skipped"), "{:?}", d[0].message);
}

/// The job graph changing under a running chain: `y`, a single-parent child of the root, has
/// already run (`p:<root id>`, which is also the chain's fan-in key) when a second parent edge
/// makes it a fan-in. That parent ending still ends (no error) and fires no second `y`.
pub async fn a_child_made_a_fan_in_mid_chain_is_not_fired_twice_and_the_parent_still_ends(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let mut y = job_of(&a, "y");
    y.wait = WaitFor::Any;
    y.max_concurrency = None;
    s.job_insert(&y, &[]).await.unwrap();
    let b = job_with(&s, &a, "b", BlockStrategy::Serial).await;
    let root_job = job_with(&s, &a, "root", BlockStrategy::Serial).await;
    let root_job = set_children(&s, &root_job, &[edge(&y.id), edge(&b.id)]).await;
    let root = run_of(&root_job, "s:1", NOW);
    s.run_insert(&root).await.unwrap();
    dispatch(&s, std::slice::from_ref(&root.id), NOW).await;
    let fired = end(&s, &root.id, true, json!({}), NOW + 1).await;
    assert_eq!(fired.len(), 2, "y and b");
    let b_run = fired.iter().find(|r| r.job_id == b.id).unwrap().id.clone();
    set_children(&s, &b, &[edge(&y.id)]).await;
    dispatch(&s, std::slice::from_ref(&b_run), NOW + 2).await;
    assert!(end(&s, &b_run, true, json!({}), NOW + 3).await.is_empty(), "no second y");
    let ys = runs_of(&s, &t, &root.id, &y).await;
    assert_eq!(ys.len(), 1);
    assert_eq!(ys[0].fire_key, format!("p:{}", root.id));
    let v = s.chain_view(&t.id, &root.id, 100).await.unwrap().unwrap();
    assert_eq!(v.joins[0].run_id.as_deref(), Some(ys[0].id.as_str()), "the join closes on the run holding the key");
}
