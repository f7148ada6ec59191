//! Whether a claimed run is sent now: the dispatch rules (whose run it is, the block strategy,
//! the concurrency limit, a retry overlapping its timed-out attempt, the deadline and the lease),
//! decided from plain inputs.
//!
//! The store executes what is decided here under the runs' and the jobs' row locks
//! (`store/src/sql/runs/batch.rs`: it reads the inputs, asks [`entry`], [`fire_stands`] and
//! [`decide`], and writes the [`Plan`]); the engine takes deadlines from [`deadline_ms`].

use crate::model::{Job, Run};
use crate::schedule::Schedule;
use crate::types::{BlockStrategy, JobState, RunState};

/// What a claimed run's dispatch does first, before its job is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// Decide it against its job ([`decide`]).
    Decide,
    /// A `dispatching` run this node is asked to send again: the same attempt, a fresh
    /// deadline and lease.
    Redeliver,
    /// Not this node's to send: claimed by another node, already under way, or over.
    Gone,
}

/// Why a fire was skipped (written `skipped` with [`SkipReason::message`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// `discard_later`: a run of the job is still in flight.
    DiscardLater,
    /// The job's `max_concurrency` runs are in flight.
    MaxConcurrency,
}

impl SkipReason {
    /// The reason's code, as the API reports a skipped dispatch.
    pub fn code(self) -> &'static str {
        match self {
            SkipReason::DiscardLater => "discard_later",
            SkipReason::MaxConcurrency => "max_concurrency",
        }
    }

    /// The message the skipped run is written with.
    pub fn message(self) -> &'static str {
        match self {
            SkipReason::DiscardLater => "discard_later: the previous run is still in flight",
            SkipReason::MaxConcurrency => "max_concurrency reached",
        }
    }
}

/// What to do with a claimed run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Send it now, as a new attempt with this deadline and lease; first cancel `cover`
    /// (`cover_early`: the job's runs in flight this fire replaces, by id).
    Dispatch { deadline_ms: i64, lease_until_ms: i64, cover: Vec<String> },
    /// Not now: it stays claimed by this node until `lease_until_ms` and is checked again at
    /// `until_ms` (`None`: when a run of its job ends, or at the next poll).
    Hold { lease_until_ms: i64, until_ms: Option<i64> },
    /// Skipped by its job's block strategy or concurrency limit.
    Skip(SkipReason),
    /// Its job was deleted: the run is cancelled.
    JobDeleted,
}

/// An attempt's deadline when it is sent at `now_ms`: the job's timeout from now.
pub fn deadline_ms(now_ms: i64, timeout_ms: i64) -> i64 {
    now_ms + timeout_ms
}

/// The lease of a run sent at `now_ms`: `lease_ms` past its deadline, so that a node that
/// still holds the run outlives the attempt it waits for.
pub fn lease_until_ms(now_ms: i64, timeout_ms: i64, lease_ms: i64) -> i64 {
    deadline_ms(now_ms, timeout_ms) + lease_ms
}

/// Whether `node_id` may dispatch `run` now. `redeliver`: the node asks to send a
/// `dispatching` run of its own again (its earlier send was lost with a restart or a stall).
pub fn entry(run: &Run, node_id: &str, now_ms: i64, redeliver: bool) -> Entry {
    let ours = run.owner_node.as_deref() == Some(node_id) && run.lease_until_ms.is_some_and(|l| l >= now_ms);
    match run.state {
        // A fire nobody has claimed (read by this node's peek): ours under the row lock.
        RunState::Pending => Entry::Decide,
        RunState::Queued | RunState::Retrying if ours => Entry::Decide,
        RunState::Dispatching if ours && redeliver => Entry::Redeliver,
        _ => Entry::Gone,
    }
}

/// Whether a fire with no row yet (taken into the timer unwritten) is still a fire of its job:
/// the job exists, is active, and is either unchanged since the fire was computed or still
/// fires at that instant. A fire that does not stand is dropped and nothing of it written.
pub fn fire_stands(job: Option<&Job>, fire: &Run) -> bool {
    job.is_some_and(|j| {
        j.state == JobState::Active
            && (j.version == fire.job_version
                || Schedule::parse(&j.schedule, j.created_at_ms)
                    .is_ok_and(|s| s.next_after(fire.scheduled_at_ms - 1) == Some(fire.scheduled_at_ms)))
    })
}

/// Whether deciding `run` needs to know if its timed-out attempt is still running on its
/// executor (the `overlap_busy` input of [`decide`]): a retry, unless its job allows overlap.
pub fn needs_overlap_check(run: &Run, job: &Job) -> bool {
    run.state == RunState::Retrying && !job.failure.allow_overlap.unwrap_or(false)
}

/// How many runs of a job may be in flight at once: its `max_concurrency`, 1 by default.
pub fn concurrency_limit(max_concurrency: Option<i64>) -> usize {
    max_concurrency.unwrap_or(1).max(1) as usize
}

/// Whether one more run of a job fits its concurrency limit with `in_flight` under way.
pub fn within_concurrency(max_concurrency: Option<i64>, in_flight: usize) -> bool {
    in_flight < concurrency_limit(max_concurrency)
}

/// Decide a claimed run (one [`entry`] let through) at `now_ms`.
///
/// - `job`: its job, read under the job's row lock (`None`: deleted).
/// - `in_flight`: the job's runs in flight (`dispatching`, `running`, `retrying`), including
///   those dispatched earlier in the same batch; the run itself is ignored if listed.
/// - `overlap_busy`: the executor of the run's timed-out attempt still reports running it
///   (asked only when [`needs_overlap_check`]).
///
/// A fresh fire is sent while fewer than the job's [`concurrency_limit`] runs are in flight
/// (1 by default: one at a time). At the limit its block strategy acts: `serial` holds it,
/// `discard_later` skips it (reason `discard_later` at the default limit, `max_concurrency`
/// above it), `cover_early` cancels the oldest runs in flight (by scheduled instant) to make
/// room. A cancel that finds its run ended or moved leaves a run in flight, which the executor
/// of the plan checks against [`within_concurrency`] before sending. Retries take no new slot:
/// they are the same run.
pub fn decide(run: &Run, job: Option<&Job>, in_flight: &[Run], overlap_busy: bool, now_ms: i64, lease_ms: i64) -> Plan {
    let Some(job) = job else { return Plan::JobDeleted };
    let hold = |until_ms| Plan::Hold { lease_until_ms: now_ms + lease_ms, until_ms };
    if needs_overlap_check(run, job) && overlap_busy {
        // The timed-out attempt's executor still runs it: the retry waits.
        return hold(None);
    }
    let mut cover = Vec::new();
    if matches!(run.state, RunState::Pending | RunState::Queued) {
        let others = || in_flight.iter().filter(|r| r.id != run.id);
        let (count, limit) = (others().count(), concurrency_limit(job.max_concurrency));
        if count >= limit {
            match job.block {
                BlockStrategy::Serial => return hold(retries_due_at(others())),
                BlockStrategy::DiscardLater if job.max_concurrency.unwrap_or(1) > 1 => {
                    return Plan::Skip(SkipReason::MaxConcurrency);
                }
                BlockStrategy::DiscardLater => return Plan::Skip(SkipReason::DiscardLater),
                BlockStrategy::CoverEarly => {
                    let mut oldest: Vec<&Run> = others().collect();
                    oldest.sort_by(|a, b| (a.scheduled_at_ms, &a.id).cmp(&(b.scheduled_at_ms, &b.id)));
                    cover = oldest.iter().take(count + 1 - limit).map(|r| r.id.clone()).collect();
                }
            }
        }
    }
    Plan::Dispatch {
        deadline_ms: deadline_ms(now_ms, job.timeout_ms),
        lease_until_ms: lease_until_ms(now_ms, job.timeout_ms, lease_ms),
        cover,
    }
}

/// When a fire held back by `holding` (its job's runs in flight) can next be let through: if
/// every one of them is a retry waiting out its backoff, the earliest retry's due time (no run
/// of the job ends before then); otherwise unknown (`None`: any may end any moment).
fn retries_due_at<'a>(holding: impl Iterator<Item = &'a Run>) -> Option<i64> {
    holding
        .map(|r| if r.state == RunState::Retrying { r.next_attempt_at_ms } else { None })
        .try_fold(i64::MAX, |earliest, at| at.map(|at| earliest.min(at)))
        .filter(|&at| at != i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{FailureSpec, JobInput};
    use crate::types::TriggerKind;

    const NOW: i64 = 1_000_000;
    const LEASE: i64 = 30_000;
    const TIMEOUT: i64 = 60_000;

    fn job(block: BlockStrategy, max_concurrency: Option<i64>) -> Job {
        let input: JobInput = serde_json::from_value(serde_json::json!({
            "name": "j", "app": "a", "handler": "h", "schedule": {"kind": "cron", "expression": "* * * * * *"},
            "timeout_ms": TIMEOUT,
        }))
        .unwrap();
        let def = crate::job::JobDef::parse(&input, 0).unwrap();
        let mut j = Job::from_def(def, "job_1".into(), "t", "app_1".into(), Some("h".into()), None, 0);
        j.block = block;
        j.max_concurrency = max_concurrency;
        j
    }

    fn run(id: &str, state: RunState) -> Run {
        let mut r = Run::pending("t", "job_1", 1, format!("s:{id}"), TriggerKind::Schedule, NOW, NOW);
        r.id = id.into();
        r.state = state;
        r
    }

    fn at(id: &str, scheduled_at_ms: i64) -> Run {
        let mut r = run(id, RunState::Running);
        r.scheduled_at_ms = scheduled_at_ms;
        r
    }

    fn retry(id: &str, due: Option<i64>) -> Run {
        let mut r = run(id, RunState::Retrying);
        r.next_attempt_at_ms = due;
        r
    }

    fn send(cover: &[&str]) -> Plan {
        Plan::Dispatch {
            deadline_ms: NOW + TIMEOUT,
            lease_until_ms: NOW + TIMEOUT + LEASE,
            cover: cover.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn hold(until_ms: Option<i64>) -> Plan {
        Plan::Hold { lease_until_ms: NOW + LEASE, until_ms }
    }

    #[test]
    fn each_block_strategy_and_limit_decides_as_documented() {
        use BlockStrategy::*;
        let q = || run("r_new", RunState::Queued);
        let busy = || vec![run("r_a", RunState::Running)];
        // (what, the run, its job, the job's runs in flight, overlap_busy, the plan)
        type Row = (&'static str, Run, Job, Vec<Run>, bool, Plan);
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            ("nothing in flight: sent", q(), job(Serial, None), vec![], false, send(&[])),
            ("a pending fire is sent like a queued one", run("r_new", RunState::Pending), job(Serial, None), vec![], false, send(&[])),
            ("serial behind a running run: held, no known end", q(), job(Serial, None), busy(), false, hold(None)),
            ("serial behind retries in backoff: held until the first is due", q(), job(Serial, None),
                vec![retry("r_a", Some(NOW + 9_000)), retry("r_b", Some(NOW + 4_000))], false, hold(Some(NOW + 4_000))),
            ("serial behind a retry and a running run: no known end", q(), job(Serial, None),
                vec![retry("r_a", Some(NOW + 4_000)), run("r_b", RunState::Dispatching)], false, hold(None)),
            ("the run itself in the in-flight list does not hold it", q(), job(Serial, None), vec![q()], false, send(&[])),
            ("discard_later behind a running run: skipped", q(), job(DiscardLater, None), busy(), false,
                Plan::Skip(SkipReason::DiscardLater)),
            ("cover_early: sent, cancelling what is in flight", q(), job(CoverEarly, Some(1)),
                vec![run("r_a", RunState::Running), retry("r_b", None)], false, send(&["r_a", "r_b"])),
            ("max_concurrency 1, nothing in flight: sent", q(), job(Serial, Some(1)), vec![], false, send(&[])),
            ("max_concurrency 2, one in flight: sent beside it", q(), job(Serial, Some(2)), busy(), false, send(&[])),
            ("max_concurrency 2, two in flight: serial holds", q(), job(Serial, Some(2)),
                vec![run("r_a", RunState::Running), run("r_b", RunState::Dispatching)], false, hold(None)),
            ("max_concurrency 2, two in flight: discard_later skips, naming the limit", q(), job(DiscardLater, Some(2)),
                vec![run("r_a", RunState::Running), run("r_b", RunState::Running)], false, Plan::Skip(SkipReason::MaxConcurrency)),
            ("max_concurrency 2, one in flight: discard_later sends", q(), job(DiscardLater, Some(2)), busy(), false, send(&[])),
            ("max_concurrency 2, one in flight: cover_early cancels nothing", q(), job(CoverEarly, Some(2)), busy(), false, send(&[])),
            ("max_concurrency 2, three in flight: cover_early cancels the two oldest", q(), job(CoverEarly, Some(2)),
                vec![at("r_c", NOW - 1_000), at("r_a", NOW - 3_000), at("r_b", NOW - 2_000)], false, send(&["r_a", "r_b"])),
            ("a retry ignores block strategy and limit", retry("r_new", None), job(DiscardLater, Some(1)), busy(), false, send(&[])),
            ("a retry whose timed-out attempt still runs: held", retry("r_new", None), job(Serial, None), vec![], true, hold(None)),
            ("a fresh fire does not wait on overlap", q(), job(Serial, None), vec![], true, send(&[])),
        ];
        for (what, r, j, in_flight, overlap_busy, want) in table {
            assert_eq!(decide(&r, Some(&j), &in_flight, overlap_busy, NOW, LEASE), want, "{what}");
        }
    }

    #[test]
    fn the_concurrency_limit_counts_the_runs_in_flight() {
        assert_eq!(concurrency_limit(None), 1, "one at a time by default");
        assert!(within_concurrency(None, 0));
        assert!(!within_concurrency(None, 1));
        assert!(within_concurrency(Some(2), 1));
        assert!(!within_concurrency(Some(2), 2));
        assert!(!within_concurrency(Some(1), 1));
        // At the default limit, `cover_early` cancels every run in flight.
        let j = job(BlockStrategy::CoverEarly, None);
        let q = run("r_new", RunState::Queued);
        let two = [run("r_a", RunState::Running), run("r_b", RunState::Running)];
        assert_eq!(decide(&q, Some(&j), &two, false, NOW, LEASE), send(&["r_a", "r_b"]));
    }

    #[test]
    fn a_deleted_job_cancels_and_overlap_is_asked_only_for_retries_that_forbid_it() {
        assert_eq!(decide(&run("r", RunState::Queued), None, &[], false, NOW, LEASE), Plan::JobDeleted);
        let mut j = job(BlockStrategy::Serial, None);
        assert!(needs_overlap_check(&retry("r", None), &j));
        assert!(!needs_overlap_check(&run("r", RunState::Queued), &j));
        j.failure = FailureSpec { allow_overlap: Some(true), ..j.failure.clone() };
        assert!(!needs_overlap_check(&retry("r", None), &j));
        assert_eq!(decide(&retry("r", None), Some(&j), &[], true, NOW, LEASE), send(&[]));
    }

    #[test]
    fn only_runs_this_node_holds_are_decided() {
        let mine = |state, lease: i64| {
            let mut r = run("r", state);
            r.owner_node = Some("n1".into());
            r.lease_until_ms = Some(lease);
            r
        };
        assert_eq!(entry(&run("r", RunState::Pending), "n1", NOW, false), Entry::Decide);
        assert_eq!(entry(&mine(RunState::Queued, NOW), "n1", NOW, false), Entry::Decide);
        assert_eq!(entry(&mine(RunState::Retrying, NOW + 1), "n1", NOW, false), Entry::Decide);
        assert_eq!(entry(&mine(RunState::Queued, NOW - 1), "n1", NOW, false), Entry::Gone, "lease ran out");
        assert_eq!(entry(&mine(RunState::Queued, NOW), "n2", NOW, false), Entry::Gone, "another node's");
        assert_eq!(entry(&mine(RunState::Dispatching, NOW), "n1", NOW, true), Entry::Redeliver);
        assert_eq!(entry(&mine(RunState::Dispatching, NOW), "n1", NOW, false), Entry::Gone);
        assert_eq!(entry(&mine(RunState::Running, NOW), "n1", NOW, true), Entry::Gone);
        assert_eq!(entry(&mine(RunState::Succeeded, NOW), "n1", NOW, false), Entry::Gone);
    }

    #[test]
    fn an_unwritten_fire_stands_while_its_job_still_fires_then() {
        let j = job(BlockStrategy::Serial, None);
        let fire = run("r", RunState::Pending); // at NOW, a whole second; job version 1
        assert!(fire_stands(Some(&j), &fire));
        assert!(!fire_stands(None, &fire), "job deleted");
        let mut stopped = j.clone();
        stopped.state = JobState::Stopped;
        assert!(!fire_stands(Some(&stopped), &fire), "job stopped");
        let mut changed = j.clone();
        changed.version = 2;
        assert!(fire_stands(Some(&changed), &fire), "changed, still every second");
        changed.schedule =
            serde_json::from_value(serde_json::json!({"kind": "cron", "expression": "0 0 * * * *"})).unwrap();
        assert!(!fire_stands(Some(&changed), &fire), "changed to hourly: no fire then");
    }

    #[test]
    fn deadline_and_lease_run_from_the_send() {
        assert_eq!(deadline_ms(NOW, TIMEOUT), NOW + TIMEOUT);
        assert_eq!(lease_until_ms(NOW, TIMEOUT, LEASE), NOW + TIMEOUT + LEASE);
    }
}
