//! The dispatch lead: how far ahead of their instant runs leave the timer, so that the
//! `dispatching` commit is done by the instant ([`crate::Engine::dispatch_lead_ms`]).

use std::sync::atomic::AtomicI64;
use std::sync::atomic::Ordering::Relaxed;

/// Dispatch transactions in flight at once per node.
pub(crate) const DISPATCH_SLOTS: usize = 2;
/// How often the herd part of the dispatch lead is recounted, at most.
const HERD_RECOUNT_MS: i64 = 20;

/// The dispatch-time estimate after a new sample: up to a slower sample at once, down by
/// 1/32 per batch (at least 1 ms) otherwise: a slow commit now and then keeps the lead up
/// for a while.
fn decayed_max(old: i64, sample: i64) -> i64 {
    sample.max(old - (old + 31) / 32).max(0)
}

/// A dispatch time as a sample for the lead's estimate: at most the lead's cap `max`. A
/// dispatch that waited out a database stall took as long as the stall (20 s); the lead is
/// capped at `max` (2 s) whatever the estimate, but that estimate decays by 1/32 per batch,
/// so it kept the lead at its cap for a hundred batches after the stall — half a minute in
/// which each per-second `serial` job's next fire was checked while its previous one was
/// committed and waiting for its instant, held back, and sent a second late every few seconds.
fn lead_sample(took: i64, max: i64) -> i64 {
    if max > 0 { took.min(max) } else { took }
}

/// The lead for a dispatch-time estimate: a quarter more, at most `max`.
fn lead_for(took: i64, max: i64) -> i64 {
    (took + took / 4).clamp(0, max.max(0))
}

/// What sizes the dispatch lead (see [`crate::Engine::dispatch_lead_ms`]).
#[derive(Debug)]
pub(crate) struct DispatchLead {
    /// Its settings: the lead's cap (`EngineConfig::max_dispatch_lead_ms`; 0 turns it off).
    max: i64,
    /// A dispatch transaction's cost per run, in µs (a moving average): with the runs due
    /// soon, it sizes the lead for a herd.
    pub(crate) dispatch_per_run_us: AtomicI64,
    /// The herd part of the lead (ms) and when it was last counted.
    pub(crate) herd_ms: AtomicI64,
    pub(crate) herd_counted_at: AtomicI64,
    /// How long recent dispatches took from leaving the timer to their commit: a decaying
    /// maximum, in ms.
    pub(crate) dispatch_took_ms: AtomicI64,
}

impl DispatchLead {
    pub(crate) fn new(max_dispatch_lead_ms: i64) -> Self {
        DispatchLead {
            max: max_dispatch_lead_ms,
            dispatch_per_run_us: AtomicI64::new(0),
            herd_ms: AtomicI64::new(0),
            herd_counted_at: AtomicI64::new(i64::MIN / 2),
            dispatch_took_ms: AtomicI64::new(0),
        }
    }

    /// The lead now ([`crate::Engine::dispatch_lead_ms`]): `now` is read, and `due_by(t)`
    /// (the runs in the timer due by `t`) counted, only when the herd part is recounted.
    pub(crate) fn lead_ms(&self, now: impl FnOnce() -> i64, due_by: impl FnOnce(i64) -> usize) -> i64 {
        let max = self.max;
        let base = lead_for(self.dispatch_took_ms.load(Relaxed), max);
        let per_run_us = self.dispatch_per_run_us.load(Relaxed);
        if max <= 0 || per_run_us <= 0 {
            return base;
        }
        // Counting the runs due soon walks the timer's per-instant counts under its lock:
        // at most once per HERD_RECOUNT_MS, not for every batch popped.
        let now = now();
        let herd_ms = if now - self.herd_counted_at.load(Relaxed) < HERD_RECOUNT_MS {
            self.herd_ms.load(Relaxed)
        } else {
            let herd = due_by(now + max) as i64;
            let ms = herd * per_run_us / 1000 / DISPATCH_SLOTS as i64;
            self.herd_ms.store(ms, Relaxed);
            self.herd_counted_at.store(now, Relaxed);
            ms
        };
        (base + herd_ms + herd_ms / 4).clamp(0, max)
    }

    /// Record what a dispatch transaction cost per run (µs), for the herd part of the lead.
    pub(crate) fn note_cost(&self, took_ms: i64, runs: usize) {
        let max = self.max;
        // A transaction slower than the whole lead waited on something (a stalled database),
        // and measures that, not the cost of its runs.
        if runs == 0 || took_ms < 0 || (max > 0 && took_ms > max) {
            return;
        }
        let sample = took_ms * 1000 / runs as i64;
        let _ = self
            .dispatch_per_run_us
            .fetch_update(Relaxed, Relaxed, |old| Some(if old == 0 { sample } else { old + (sample - old) / 8 }));
    }

    /// Record how long a dispatch took from leaving the timer to its commit.
    pub(crate) fn note_took(&self, took_ms: i64) {
        let sample = lead_sample(took_ms, self.max);
        let _ = self.dispatch_took_ms.fetch_update(Relaxed, Relaxed, |old| Some(decayed_max(old, sample)));
    }
}

#[cfg(test)]
mod tests {
    use super::{decayed_max, lead_for, lead_sample};

    #[test]
    fn after_a_database_stall_the_lead_is_back_under_a_second_within_thirty_batches() {
        // A 20 s stall counts as the cap (2 s) ...
        let mut est = decayed_max(0, lead_sample(20_000, 2_000));
        assert_eq!(lead_for(est, 2_000), 2_000);
        // ... so 30 ordinary batches later the lead is under a second (uncapped: 100 batches).
        for _ in 0..30 {
            est = decayed_max(est, lead_sample(30, 2_000));
        }
        assert!(lead_for(est, 2_000) < 1_000, "{est}");
        assert_eq!(lead_sample(20_000, 0), 20_000, "no cap: the lead is off anyway");
    }

    #[test]
    fn the_dispatch_lead_follows_slow_dispatches_at_once_and_decays_slowly() {
        assert_eq!(lead_for(0, 200), 0, "no lead before anything was slow (and on a manual clock)");
        let mut est = decayed_max(0, 40);
        assert_eq!(est, 40, "a slower sample counts at once");
        assert_eq!(lead_for(est, 200), 50, "a quarter of margin");
        for _ in 0..10 {
            est = decayed_max(est, 2);
        }
        assert_eq!(est, 26, "decays by 1/32 per batch, at least 1 ms");
        for _ in 0..500 {
            est = decayed_max(est, 2);
        }
        assert_eq!(est, 2, "down to what dispatches take now");
        assert_eq!(lead_for(1_000, 200), 200, "capped");
        assert_eq!(lead_for(1_000, 0), 0, "0 turns it off");
        assert_eq!(decayed_max(0, -3), 0, "a clock step back is no sample below zero");
    }
}
