//! How runs enter a node's timer, shared by the services that fill it (generator, claimer,
//! at-dispatch) and the fire path: late schedule fires settled by their misfire policy in
//! bulk ([`settle_late`]) before they go in ([`take_into_timer`]), and fires written
//! claimed by the node that will fire them ([`claim_soon`]).

use std::collections::{BTreeMap, HashMap, HashSet};

use sundial_core::job::MisfireSpec;
use sundial_core::misfire::{LateFire, decide};
use sundial_core::run_state::RunEvent;
use sundial_core::schedule::Schedule;
use sundial_core::types::{RunState, TriggerKind};
use sundial_store::{Job, Run};

use crate::Result;
use crate::config::EngineConfig;
use crate::shared::Shared;

/// Time allowed for a generated run's insert to commit, in the margin of
/// [`insert_claim_margin_ms`].
const INSERT_COMMIT_MS: i64 = 1_000;

/// A run the generator writes due within the claim window plus this margin is written
/// claimed by its node (and goes into its timer at once) instead of `pending`: no peek
/// cursor, which is at most the claim window ahead of its node's clock, can have passed
/// it. The margin is the clock skew nodes tolerate ([`crate::EngineConfig::max_clock_skew_ms`],
/// 2 s by default, at most 10 s counted) plus 1 s for the insert to commit. An insert
/// slower than that to commit may leave a fire below a cursor: the claim's backstop
/// fires it after the affinity grace, late but never lost.
pub(crate) fn insert_claim_margin_ms(cfg: &EngineConfig) -> i64 {
    cfg.max_clock_skew_ms.clamp(0, 10_000) + INSERT_COMMIT_MS
}

/// Parse a stored schedule (stored specs are canonical, so this does not fail in practice).
pub(crate) fn schedule_of(job: &Job) -> Option<Schedule> {
    Schedule::parse(&job.schedule, job.created_at_ms).ok()
}

/// Runs about to be written that are due by `soon` are written claimed by this node
/// (`queued`, with a lease) instead of `pending`, at most `room` of them (the timer's free
/// capacity, counted down): see [`insert_claim_margin_ms`].
pub(crate) fn claim_soon(cfg: &EngineConfig, runs: &mut [Run], soon: i64, now: i64, room: &mut usize) {
    for r in runs.iter_mut().filter(|r| r.state == RunState::Pending && r.scheduled_at_ms <= soon) {
        if *room == 0 {
            break;
        }
        *room -= 1;
        r.state =
            sundial_core::run_state::transition(r.state, &RunEvent::Claim).expect("pending runs may be claimed").to;
        r.owner_node = Some(cfg.node_id.clone());
        r.lease_until_ms = Some(now + cfg.lease_ms);
    }
}

/// Put claimed or peeked runs into the timer, applying the misfire policy to late
/// schedule fires first (in bulk: [`settle_late`]). Returns how many entered the timer.
pub(crate) async fn take_into_timer(node: &Shared, runs: Vec<Run>) -> usize {
    let now = node.now_ms();
    let late: Vec<LateFire> = runs
        .iter()
        .filter(|r| {
            matches!(r.state, RunState::Pending | RunState::Queued)
                && r.trigger == TriggerKind::Schedule
                && r.scheduled_at_ms < now
        })
        .map(|r| LateFire { id: r.id.clone(), job_id: r.job_id.clone(), scheduled_at_ms: r.scheduled_at_ms })
        .collect();
    let keep: Option<HashSet<String>> = if late.is_empty() {
        None
    } else {
        match settle_late(node, &late).await {
            Ok(kept) => Some(kept.into_iter().collect()),
            Err(e) => {
                // The rest of the batch still goes on; these come back with their lease
                // (claimed) or through the claim's backstop (peeked).
                tracing::warn!(runs = late.len(), error = %e, "misfire check failed; the runs will come back");
                Some(HashSet::new())
            }
        }
    };
    let late_ids: HashSet<&str> = late.iter().map(|f| f.id.as_str()).collect();
    let mut queued = 0;
    let soon = now + node.cfg.tick_ms as i64 + node.dispatch_lead_ms();
    let mut wake = false;
    for run in runs {
        if late_ids.contains(run.id.as_str()) && !keep.as_ref().is_some_and(|k| k.contains(&run.id)) {
            continue;
        }
        let due = match run.state {
            RunState::Retrying => run.next_attempt_at_ms.unwrap_or(now),
            _ => run.scheduled_at_ms,
        };
        node.fire.timer.push_run(due, &run);
        if late_ids.contains(run.id.as_str()) {
            node.fire.timer.settled(&run.id);
        }
        wake |= due < soon;
        queued += 1;
    }
    if wake {
        node.fire.due_sooner.notify_one();
    }
    queued
}

/// Settle late schedule fires by their jobs' misfire policies in bulk: one job lookup
/// for the batch, one `UPDATE` per chunk of the fires dropped (written `expired`).
/// Returns the ids to deliver (late, as the policy allows).
pub(crate) async fn settle_late(node: &Shared, fires: &[LateFire]) -> Result<Vec<String>> {
    if fires.is_empty() {
        return Ok(Vec::new());
    }
    let mut ids: Vec<String> = fires.iter().map(|f| f.job_id.clone()).collect();
    ids.sort_unstable();
    ids.dedup();
    let jobs = node.store.job_misfire_many(&ids).await?;
    // How far each job's runs are written: a `fire_once` fire is the one to deliver only
    // once every missed fire of its job is written (else a later one, still to be
    // generated, is the latest missed fire).
    let written: HashMap<String, i64> =
        jobs.iter().map(|j| (j.id.clone(), j.generated_until_ms.unwrap_or(i64::MIN))).collect();
    let specs: HashMap<String, MisfireSpec> = jobs.into_iter().map(|j| (j.id, j.misfire)).collect();
    let now = node.now_ms();
    // `fire_once`: a later fire of the job held here and due (or being dispatched) settles
    // it in memory; only otherwise does the store say whether one has gone already.
    let mut ask_store: Vec<(String, i64, i64)> = Vec::new();
    // A high-frequency job held here has its fires from `next_fire` on still to come
    // (not yet in the timer, or to be caught up through rows).
    let unwritten = |job: &str, before: i64| {
        written.get(job).is_some_and(|w| *w < before) || node.at_dispatch.next_fire(job).is_some_and(|n| n < before)
    };
    let probe = decide(fires, &specs, now, |job, at, before| {
        if unwritten(job, before) || node.fire.timer.holds_later_fire(job, at, before) {
            return true;
        }
        ask_store.push((job.to_string(), at, before));
        false
    });
    let mut settled = probe;
    if !ask_store.is_empty() {
        // One `before` for the batch (every fire was judged at the same `now`), but
        // thresholds differ per job: ask per distinct `before`, each one set-based.
        let mut by_before: BTreeMap<i64, Vec<(String, i64)>> = BTreeMap::new();
        for (job, at, before) in &ask_store {
            by_before.entry(*before).or_default().push((job.clone(), *at));
        }
        let mut later = std::collections::HashSet::new();
        for (before, fires) in &by_before {
            let jobs: std::collections::HashSet<String> =
                node.store.run_later_fires(fires, *before).await?.into_iter().collect();
            later.extend(fires.iter().filter(|(j, _)| jobs.contains(j)).cloned());
        }
        if !later.is_empty() {
            settled = decide(fires, &specs, now, |job, at, before| {
                unwritten(job, before)
                    || node.fire.timer.holds_later_fire(job, at, before)
                    || later.contains(&(job.to_string(), at))
            });
        }
    }
    let mut expired = 0;
    for (message, ids) in &settled.expire {
        // Fires with no row yet (high-frequency jobs') are written `expired`; the others'
        // rows move there.
        let unwritten = node.at_dispatch.take_many(ids.iter());
        let taken: std::collections::HashSet<&str> = unwritten.iter().map(|r| r.id.as_str()).collect();
        if !unwritten.is_empty() {
            let to = sundial_core::run_state::transition(
                sundial_core::types::RunState::Pending,
                &sundial_core::run_state::RunEvent::Expire,
            )
            .expect("pending runs may expire")
            .to;
            let rows: Vec<sundial_store::Run> = unwritten
                .iter()
                .map(|r| sundial_store::Run {
                    state: to,
                    message: Some(message.clone()),
                    finished_at_ms: Some(now),
                    updated_at_ms: now,
                    ..r.clone()
                })
                .collect();
            match crate::retry_deadlock(|| node.store.run_insert_missing(&rows)).await {
                Ok(n) => expired += n as u64,
                Err(e) => {
                    // Not written: they stay unwritten fires, judged again.
                    for r in unwritten {
                        node.at_dispatch.put_back(r);
                    }
                    return Err(e.into());
                }
            }
        }
        let written: Vec<String> = ids.iter().filter(|id| !taken.contains(id.as_str())).cloned().collect();
        if written.is_empty() {
            continue;
        }
        expired +=
            crate::retry_deadlock(|| node.store.run_expire_many(&written, &node.cfg.node_id, message, now)).await?;
    }
    if expired > 0 {
        node.load.note_misfired(expired);
        tracing::debug!(expired, kept = settled.keep.len(), "late fires settled by their misfire policy");
    }
    Ok(settled.keep)
}
