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

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};

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
