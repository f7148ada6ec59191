//! Late fires in bulk, and how far behind the node is.
//!
//! A node that falls behind (a start-up burst, a database stall, a herd of cron jobs on one
//! second, a paused process) holds fires that are already past their instant. Each of them
//! is settled by its job's misfire policy, **set-based**: one job lookup per batch, one
//! `UPDATE` per chunk of the fires it drops, never one round trip (or one log line) per
//! fire, so the backlog goes at the speed of a few statements and fresh fires are on time
//! again within seconds. What the policy drops is written `expired` (nothing is lost
//! silently); what it keeps is delivered late. The policies themselves are
//! `sundial_core::misfire::decide`.
//!
//! [`Load`] counts lateness and expiries: a rate-limited WARN says the node is behind (with
//! counts, the worst lateness and the backlog), and the heartbeat publishes the figures in
//! `GET /api/v1/nodes`.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};

use sundial_core::job::MisfireSpec;
use sundial_core::misfire::{LateFire, decide};

use crate::{Engine, Result};

/// A fire taken from the timer this late (ms past its instant) goes through its job's
/// misfire policy before dispatch (the smallest threshold anyone is likely to set is
/// checked exactly at the policy; a fire less late than this is dispatched as it is).
pub(crate) const LATE_POP_MS: i64 = 1_000;
/// Deliveries later than this count as "behind" for the WARN line.
const LATE_WARN_MS: i64 = 1_000;
/// At most one "behind" WARN line per this many ms.
const REPORT_EVERY_MS: i64 = 10_000;

/// Lateness and expiries of this node: for the heartbeat (per beat) and the WARN line
/// (per report interval).
#[derive(Debug, Default)]
pub(crate) struct Load {
    beat_lateness_ms: AtomicI64,
    beat_misfired: AtomicU64,
    report_lateness_ms: AtomicI64,
    report_misfired: AtomicU64,
    report_late: AtomicU64,
    report_sent: AtomicU64,
    last_report_ms: AtomicI64,
    behind: AtomicBool,
}

impl Load {
    /// A delivery went out `late_ms` after its instant.
    pub fn note_sent(&self, late_ms: i64) {
        let late = late_ms.max(0);
        self.beat_lateness_ms.fetch_max(late, Relaxed);
        self.report_lateness_ms.fetch_max(late, Relaxed);
        self.report_sent.fetch_add(1, Relaxed);
        if late > LATE_WARN_MS {
            self.report_late.fetch_add(1, Relaxed);
        }
    }

    /// `n` fires were expired by their misfire policy.
    pub fn note_misfired(&self, n: u64) {
        self.beat_misfired.fetch_add(n, Relaxed);
        self.report_misfired.fetch_add(n, Relaxed);
    }

    /// The figures since the last beat (worst lateness, expiries), reset.
    pub fn take_beat(&self) -> (i64, u64) {
        (self.beat_lateness_ms.swap(0, Relaxed), self.beat_misfired.swap(0, Relaxed))
    }

    /// Say at WARN, at most once per interval, that the node is behind: how many fires it
    /// expired, how many deliveries went out late and how late, the backlog. Then once at
    /// INFO when a whole interval was on time again. `backlog` is asked for only when a
    /// line is written.
    pub fn maybe_report(&self, now_ms: i64, backlog: impl FnOnce() -> usize) {
        let last = self.last_report_ms.load(Relaxed);
        if last == 0 {
            self.last_report_ms.store(now_ms, Relaxed);
            return;
        }
        if now_ms - last < REPORT_EVERY_MS
            || self.last_report_ms.compare_exchange(last, now_ms, Relaxed, Relaxed).is_err()
        {
            return;
        }
        let misfired = self.report_misfired.swap(0, Relaxed);
        let late = self.report_late.swap(0, Relaxed);
        let sent = self.report_sent.swap(0, Relaxed);
        let worst = self.report_lateness_ms.swap(0, Relaxed);
        let secs = (now_ms - last) as f64 / 1000.0;
        if misfired > 0 || late > 0 {
            self.behind.store(true, Relaxed);
            let backlog = backlog();
            tracing::warn!(
                interval_s = secs,
                expired_by_misfire = misfired,
                sent_late = late,
                sent = sent,
                worst_lateness_ms = worst,
                backlog,
                "node is behind: fires going out late or expired by their misfire policy"
            );
        } else if self.behind.swap(false, Relaxed) {
            tracing::info!(interval_s = secs, sent = sent, worst_lateness_ms = worst, "node is on time again");
        }
    }
}

impl Engine {
    /// Settle late schedule fires by their jobs' misfire policies in bulk: one job lookup
    /// for the batch, one `UPDATE` per chunk of the fires dropped (written `expired`).
    /// Returns the ids to deliver (late, as the policy allows).
    pub(crate) async fn settle_late(&self, fires: &[LateFire]) -> Result<Vec<String>> {
        if fires.is_empty() {
            return Ok(Vec::new());
        }
        let mut ids: Vec<String> = fires.iter().map(|f| f.job_id.clone()).collect();
        ids.sort_unstable();
        ids.dedup();
        let jobs = self.store.job_misfire_many(&ids).await?;
        // How far each job's runs are written: a `fire_once` fire is the one to deliver only
        // once every missed fire of its job is written (else a later one, still to be
        // generated, is the latest missed fire).
        let written: HashMap<String, i64> =
            jobs.iter().map(|j| (j.id.clone(), j.generated_until_ms.unwrap_or(i64::MIN))).collect();
        let specs: HashMap<String, MisfireSpec> = jobs.into_iter().map(|j| (j.id, j.misfire)).collect();
        let now = self.now_ms();
        // `fire_once`: a later fire of the job held here and due (or being dispatched) settles
        // it in memory; only otherwise does the store say whether one has gone already.
        let mut ask_store: Vec<(String, i64, i64)> = Vec::new();
        // A high-frequency job held here has its fires from `next_fire` on still to come
        // (not yet in the timer, or to be caught up through rows).
        let unwritten = |job: &str, before: i64| {
            written.get(job).is_some_and(|w| *w < before) || self.at_dispatch.next_fire(job).is_some_and(|n| n < before)
        };
        let probe = decide(fires, &specs, now, |job, at, before| {
            if unwritten(job, before) || self.fire.timer.holds_later_fire(job, at, before) {
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
                    self.store.run_later_fires(fires, *before).await?.into_iter().collect();
                later.extend(fires.iter().filter(|(j, _)| jobs.contains(j)).cloned());
            }
            if !later.is_empty() {
                settled = decide(fires, &specs, now, |job, at, before| {
                    unwritten(job, before)
                        || self.fire.timer.holds_later_fire(job, at, before)
                        || later.contains(&(job.to_string(), at))
                });
            }
        }
        let mut expired = 0;
        for (message, ids) in &settled.expire {
            // Fires with no row yet (high-frequency jobs') are written `expired`; the others'
            // rows move there.
            let unwritten = self.at_dispatch.take_many(ids.iter());
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
                match crate::retry_deadlock(|| self.store.run_insert_missing(&rows)).await {
                    Ok(n) => expired += n as u64,
                    Err(e) => {
                        // Not written: they stay unwritten fires, judged again.
                        for r in unwritten {
                            self.at_dispatch.put_back(r);
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
                crate::retry_deadlock(|| self.store.run_expire_many(&written, &self.cfg.node_id, message, now)).await?;
        }
        if expired > 0 {
            self.load.note_misfired(expired);
            tracing::debug!(expired, kept = settled.keep.len(), "late fires settled by their misfire policy");
        }
        Ok(settled.keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_behind_report_is_rate_limited() {
        let l = Load::default();
        l.maybe_report(1_000, || 0); // arms the interval
        l.note_sent(5_000);
        l.note_misfired(300);
        l.maybe_report(2_000, || panic!("too soon"));
        let mut asked = false;
        l.maybe_report(11_000, || {
            asked = true;
            7
        });
        assert!(asked, "a WARN line after the interval");
        assert_eq!(l.take_beat(), (5_000, 300));
        assert_eq!(l.take_beat(), (0, 0));
    }
}
