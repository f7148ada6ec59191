//! The high-frequency jobs a node holds in memory and their fires that have no row yet
//! ("unwritten"): the state the at-dispatch services (`at_dispatch.rs`) fill and the fire
//! path takes from. See `at_dispatch.rs` for what keeps every fire.

use foldhash::HashMap;
use std::sync::Mutex as StdMutex;
use std::sync::atomic::AtomicBool;

use sundial_core::schedule::Schedule;
use sundial_store::{Job, Run};

use crate::due_heap::{DueHeap, FairRanks, tenant_key};

/// The most of the timer's capacity one tenant's high-frequency fires take: three quarters.
pub(crate) fn tenant_share(capacity: usize) -> usize {
    (capacity / 4 * 3).max(1)
}

#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) tenant_id: String,
    pub(crate) version: i64,
    pub(crate) schedule: Schedule,
    /// The next fire not yet put into the timer.
    pub(crate) next: Option<i64>,
    /// Put back for a catch-up through rows (its next fire fell far behind).
    pub(crate) behind: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Inner {
    /// The buckets the jobs below were taken on for.
    pub(crate) mask: u64,
    /// This node's high-frequency jobs (of its buckets), by id.
    pub(crate) jobs: HashMap<String, Held>,
    /// Each held job's next fire: (instant, job id). Stale entries (the job's `next` moved
    /// or the job went) are skipped.
    pub(crate) heap: DueHeap,
    /// Tenants take turns among the jobs due at one instant (when the timer has room for
    /// only some of them, a tenant's herd does not take it all).
    pub(crate) ranks: FairRanks,
    /// Jobs seen at this version that do not fire at dispatch (sparse schedules).
    pub(crate) sparse: HashMap<String, i64>,
    /// Fires in the timer that have no row yet, by run id.
    pub(crate) unwritten: HashMap<String, Run>,
}

/// This node's high-frequency jobs and their unwritten fires.
#[derive(Debug, Default)]
pub(crate) struct AtDispatch {
    pub(crate) inner: StdMutex<Inner>,
    /// The operator's pause switch, as last read by the at-dispatch sync.
    pub(crate) paused: AtomicBool,
    /// Woken when a job fell behind (the sync catches it up at once).
    pub behind: tokio::sync::Notify,
}

impl AtDispatch {
    /// Take these ids' unwritten runs out, for their dispatch: one per id, `None` for a
    /// run that has a row (one lock for the batch).
    pub fn take_each<'a>(&self, ids: impl Iterator<Item = &'a String>) -> Vec<Option<Run>> {
        let mut g = self.inner.lock().expect("at-dispatch lock");
        ids.map(|id| g.unwritten.remove(id)).collect()
    }
    /// Put an unwritten run back (its dispatch failed before deciding).
    pub fn put_back(&self, run: Run) {
        self.inner.lock().expect("at-dispatch lock").unwritten.insert(run.id.clone(), run);
    }
    /// The unwritten run of this id, if it is one.
    pub fn get(&self, run_id: &str) -> Option<Run> {
        self.inner.lock().expect("at-dispatch lock").unwritten.get(run_id).cloned()
    }
    /// Take these ids' unwritten runs out (those that are), e.g. late fires the misfire
    /// policy settles.
    pub fn take_many<'a>(&self, ids: impl Iterator<Item = &'a String>) -> Vec<Run> {
        let mut g = self.inner.lock().expect("at-dispatch lock");
        ids.filter_map(|id| g.unwritten.remove(id)).collect()
    }
    /// Every unwritten run (shutdown hands them over).
    pub fn drain(&self) -> Vec<Run> {
        let mut g = self.inner.lock().expect("at-dispatch lock");
        g.jobs.clear();
        g.heap.clear();
        g.ranks.clear();
        g.unwritten.drain().map(|(_, r)| r).collect()
    }
    /// For a job held here: its next fire not yet put into the timer (`fire_once` asks
    /// whether a later missed fire is still to come).
    pub fn next_fire(&self, job_id: &str) -> Option<i64> {
        self.inner.lock().expect("at-dispatch lock").jobs.get(job_id).and_then(|h| h.next)
    }
    /// High-frequency jobs held, and unwritten fires held.
    pub fn counts(&self) -> (usize, usize) {
        let g = self.inner.lock().expect("at-dispatch lock");
        (g.jobs.len(), g.unwritten.len())
    }
}

impl Inner {
    pub(crate) fn hold(&mut self, job: &Job, schedule: Schedule, from: i64) {
        let next = schedule.next_after(from);
        if let Some(n) = next {
            let rank = self.ranks.next(n, tenant_key(&job.tenant_id));
            self.heap.push_ranked(n, rank, job.id.clone());
        }
        self.jobs.insert(
            job.id.clone(),
            Held { tenant_id: job.tenant_id.clone(), version: job.version, schedule, next, behind: false },
        );
    }
    /// Forget these jobs' unwritten fires (they changed: their fires are planned again).
    /// One pass over the unwritten fires for the whole set: a pass per job made taking on
    /// thousands of new jobs quadratic, under the lock the dispatches take (issue 14).
    pub(crate) fn forget_fires<S: std::hash::BuildHasher>(&mut self, job_ids: &std::collections::HashSet<String, S>) {
        if !job_ids.is_empty() {
            self.unwritten.retain(|_, r| !job_ids.contains(&r.job_id));
        }
    }
}
