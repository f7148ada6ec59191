//! Nodes ([`NodeStore`]): dead nodes hand back their claims.

use sundial_core::types::*;
use sundial_store::*;

use crate::fixtures::*;

for_each_database!(dead_nodes_hand_back_their_claims, a_dead_nodes_claimed_retry_goes_back_too);

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

/// A retry a node claimed (owner and lease on a `retrying` run) loses its owner when the
/// node is found dead, and another node claims it (the hand-back finds it through the
/// `retry` entries of `ix_runs_wake`).
pub async fn a_dead_nodes_claimed_retry_goes_back_too(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "a").await;
    let j = job(&s, &a, "j").await;
    s.run_insert(&run_of(&j, "s:1", NOW)).await.unwrap();
    s.node_heartbeat(&beat("node_a", "http://a", 1, NOW)).await.unwrap();
    let claimed = s.run_claim(&claim("node_a", NOW)).await.unwrap();
    let d = s.run_dispatch_begin(&claimed[0].id, "node_a", NOW, 30_000).await.unwrap();
    let run = dispatched(&d).clone();
    let failed = s.run_finish_many(&[result(&run.id, run.attempt, false, serde_json::json!(null))]).await.unwrap();
    assert!(matches!(failed[0], FinishOutcome::Applied { .. }), "{failed:?}");
    let retry = s.run_claim(&claim("node_a", NOW + 5_000)).await.unwrap();
    assert_eq!(retry.len(), 1, "the retry is due");
    let held = s.run_get(&t.id, &run.id).await.unwrap().unwrap();
    assert_eq!((held.state, held.owner_node.as_deref()), (RunState::Retrying, Some("node_a")));
    let db_now = s.db_now_ms().await.unwrap();
    assert!(s.node_reap_dead(db_now + 1, NOW + 5_001).await.unwrap().contains(&"node_a".to_string()));
    let back = s.run_get(&t.id, &run.id).await.unwrap().unwrap();
    assert_eq!((back.state, back.owner_node, back.lease_until_ms), (RunState::Retrying, None, None));
    let taken = s.run_claim(&claim("node_b", NOW + 5_002)).await.unwrap();
    assert_eq!(
        taken.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        [run.id.as_str()],
        "another node takes the retry"
    );
}
