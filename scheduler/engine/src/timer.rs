//! Claiming due runs into the node's in-memory timer, and firing them on time.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::sync::Mutex as StdMutex;
use std::time::Duration;

use sundial_core::affinity::bucket_of;
use sundial_core::schedule::Schedule;
use sundial_core::types::{RunState, TriggerKind};
use sundial_store::{ClaimParams, PeekParams, Run};

use crate::due_heap::{DueHeap, FairRanks, tenant_key};
use crate::misfire::{LATE_POP_MS, LateFire};
use crate::{Counters, Engine, Result};

/// Where this node's peek stopped: the last (scheduled at, id) read, for the buckets `mask`.
#[derive(Debug, Default)]
pub(crate) struct PeekCursor {
    pub mask: u64,
    pub at_ms: i64,
    pub id: String,
}

/// Time allowed for a generated run's insert to commit, in the margin of
/// [`Engine::insert_claim_margin_ms`].
const INSERT_COMMIT_MS: i64 = 1_000;

impl Engine {
    /// A run the generator writes due within the claim window plus this margin is written
    /// claimed by its node (and goes into its timer at once) instead of `pending`: no peek
    /// cursor, which is at most the claim window ahead of its node's clock, can have passed
    /// it. The margin is the clock skew nodes tolerate ([`crate::EngineConfig::max_clock_skew_ms`],
    /// 2 s by default, at most 10 s counted) plus 1 s for the insert to commit. An insert
    /// slower than that to commit may leave a fire below a cursor: the claim's backstop
    /// fires it after the affinity grace, late but never lost.
    pub(crate) fn insert_claim_margin_ms(&self) -> i64 {
        self.cfg.max_clock_skew_ms.clamp(0, 10_000) + INSERT_COMMIT_MS
    }
}

/// The node's claimed runs waiting for their instant: a min-heap by due time, plus
/// per-job gating of `serial` backlogs.
///
/// When a `serial` job has several runs due at once (a backlog after a crash or a slow
/// executor), only one of them polls the database: a run whose dispatch came back
/// `Blocked` (re-pushed by `dispatch_batch`) is *parked*, and the job's other fresh fires
/// that come due here wait in memory behind it instead of each running a dispatch
/// transaction on the job's row lock every 500 ms. When a run of the job is dispatched
/// for good here, the parked run is woken at once; when the parked run itself goes, the
/// job's next waiting run is released. Waiting runs go through one dispatch check before
/// their claim's lease would run out, which renews it (as the serial wait always did).
///
/// Only runs claimed `queued` (fresh fires, which are the only ones the block strategy
/// can hold) ever wait: a redelivery or a retry is the run in flight that the others
/// wait for, so holding it back would wait forever. Only `serial` runs are ever
/// `Blocked`, so other block strategies never park and keep deciding at each fire's own
/// instant.
#[derive(Debug, Default)]
pub(crate) struct Timer {
    inner: StdMutex<Inner>,
}

#[derive(Debug, Clone)]
struct Meta {
    job_id: String,
    /// Its tenant ([`crate::due_heap::tenant_key`]): runs due at one instant take turns by tenant.
    tenant: u64,
    scheduled_at_ms: i64,
    /// Claimed as `queued`: may wait behind a parked run of its job.
    holdable: bool,
    /// Until when its claim holds, as far as this node knows.
    lease_until_ms: i64,
    /// Let it through the next `pop_due` even if its job has a parked run (lease renewal).
    pass: bool,
    /// Claimed as `dispatching` (recovered from a node that lost it): its dispatch
    /// redelivers the attempt (see [`sundial_store::ToDispatch`]).
    redeliver: bool,
    /// A fresh schedule fire (`pending`/`queued`): subject to its job's misfire policy when late.
    schedule: bool,
    /// Sent by this node, its delivery not over yet ([`Timer::delivering`]).
    delivering: bool,
    /// Popped, its dispatch decision not back yet ([`Inner::checking`]).
    checking: bool,
}

/// A run taken from the timer: its id, the instant it was due, and whether it is a fresh
/// schedule fire that is late by more than the popper's cut (the misfire policy decides it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Popped {
    pub id: String,
    pub due_ms: i64,
    /// The order it was popped in (node-wide): deliveries waiting for one instant leave in it.
    pub seq: u64,
    pub late: bool,
    pub job_id: Option<String>,
    pub scheduled_at_ms: i64,
}

#[derive(Debug, Default)]
struct Inner {
    /// Due runs, earliest first: (due time, run id). May hold stale entries (a run whose
    /// due time was moved): only the one matching `due` counts.
    heap: DueHeap,
    /// Each tenant's rank at each instant held: a tenant's herd does not go before another
    /// tenant's fire due at the same instant (issue 26).
    ranks: FairRanks,
    /// Runs in the heap, with their current due time.
    due: HashMap<String, i64>,
    /// How many runs of `due` are due at each instant (to count a herd ahead of its instant).
    due_counts: BTreeMap<i64, usize>,
    /// Per job, the scheduled times of the runs held with their meta (for `fire_once`: is a
    /// later fire of the job here already?).
    by_job: HashMap<String, BTreeMap<i64, usize>>,
    /// Every run this node holds (in the heap, waiting, or being dispatched) that came
    /// through [`Timer::push_run`].
    meta: HashMap<String, Meta>,
    /// Per job: its run that came back `Blocked` and polls.
    parked: HashMap<String, String>,
    /// Per job: runs held behind the parked one, by (scheduled at, run id).
    waiting: HashMap<String, BTreeSet<(i64, String)>>,
    /// Jobs whose parked run was mid-check when a run of the job went: it checks again at once.
    woken: HashSet<String>,
    /// Per job: its runs popped whose dispatch decision is not back yet. A run of the job that
    /// ends meanwhile may have been read in flight by that decision: if it comes back
    /// `Blocked`, it checks again at once ([`Inner::woken`]) instead of after its poll interval
    /// (up to [`QUIET_POLLS`] or a retry's backoff).
    checking: HashMap<String, usize>,
    /// Per job: its runs this node has sent and is still delivering. A parked run of such a
    /// job need not poll: the end of that delivery wakes it ([`QUIET_POLLS`]).
    delivering: HashMap<String, usize>,
    /// When `waiting` was last looked through for leases to renew ([`RENEW_SCAN_MS`]).
    renew_scanned_ms: Option<i64>,
    /// Runs popped so far (each [`Popped::seq`]).
    popped: u64,
    /// Runs held with their meta, per tenant (a tenant's share of the timer's capacity).
    per_tenant: HashMap<u64, usize>,
    /// The tenant ids behind [`Meta::tenant`] keys (for the store: whose runs to pass over).
    tenant_ids: HashMap<u64, String>,
    /// Entries taken from the heap whose instant has come, per tenant: popped one tenant at a
    /// time in turn (see [`Ready`]).
    ready: Ready,
}

/// Due runs, per tenant, taken out in turns: across instants, not only within one. A node
/// behind (a hung tenant's serial jobs releasing their queued runs all at once, a stalled
/// database) holds a backlog of one tenant's runs due earlier than another tenant's fresh
/// fire; popped by instant alone, that fire waited behind the whole backlog (seconds). Each
/// tenant's own runs keep their order (instant, then heap order). Entries stay in
/// [`Inner::due`] until popped: one whose run was moved meanwhile is stale and skipped.
#[derive(Debug, Default)]
struct Ready {
    queues: HashMap<u64, BTreeMap<(i64, u64), String>>,
    /// Tenants with entries, in turn order.
    ring: std::collections::VecDeque<u64>,
    moved: u64,
}

impl Ready {
    fn push(&mut self, tenant: u64, at: i64, id: String) {
        self.moved += 1;
        let q = self.queues.entry(tenant).or_default();
        if q.is_empty() {
            self.ring.push_back(tenant);
        }
        q.insert((at, self.moved), id);
    }

    /// The next tenant's earliest entry due by `horizon` (tenants whose earliest is later
    /// keep their turn).
    fn pop_by(&mut self, horizon: i64) -> Option<(i64, String)> {
        for _ in 0..self.ring.len() {
            let t = self.ring.pop_front()?;
            let Some(q) = self.queues.get_mut(&t) else { continue };
            match q.first_key_value() {
                Some((&(at, _), _)) if at <= horizon => {
                    let ((at, _), id) = q.pop_first().expect("peeked");
                    if q.is_empty() {
                        self.queues.remove(&t);
                    } else {
                        self.ring.push_back(t);
                    }
                    return Some((at, id));
                }
                Some(_) => self.ring.push_back(t),
                None => {
                    self.queues.remove(&t);
                }
            }
        }
        None
    }

    /// The earliest instant held, dropping the stale entries in front (`due`: the runs held,
    /// with their current due times).
    fn next_at(&mut self, due: &HashMap<String, i64>) -> Option<i64> {
        let mut earliest = None;
        self.queues.retain(|_, q| {
            while let Some(((at, _), id)) = q.first_key_value() {
                if due.get(id) == Some(at) {
                    earliest = Some(earliest.map_or(*at, |e: i64| e.min(*at)));
                    return true;
                }
                q.pop_first();
            }
            false
        });
        self.ring.retain(|t| self.queues.contains_key(t));
        earliest
    }
}

/// The waiting runs are looked through for leases to renew at most this often: under load
/// thousands wait, and the pops come many times a second (a lease is renewed a third of its
/// length before it ends, far more ahead than this).
const RENEW_SCAN_MS: i64 = 250;

/// How often a run held back (`Blocked`) checks its job again, in the database.
pub(crate) const BLOCKED_POLL_MS: i64 = 500;

/// ... while this node is delivering a run of its job (at most; a third of its claim's
/// lease if that is shorter, so the check renews it in time). The end of that delivery wakes
/// it at once ([`Timer::after_dispatch`]): a hung executor's serial jobs, each holding a
/// backlog behind a delivery that waits out its timeout, would otherwise run a dispatch
/// transaction each every 500 ms for nothing — thousands a second on the one SQLite writer,
/// ahead of every other tenant's fires.
const QUIET_POLLS: i64 = 10_000;

/// When a run held back (`Blocked`) checks its job again: in [`BLOCKED_POLL_MS`], or, when
/// the decision knows nothing can change before `until_ms` (every run holding it back is a
/// retry waiting out its backoff), then — but never later than its claim needs renewing
/// (a third of `lease_ms`) nor [`QUIET_POLLS`] away. A thousand serial jobs each behind a
/// retry would otherwise check every 500 ms for nothing.
pub(crate) fn blocked_poll_at(now_ms: i64, until_ms: Option<i64>, lease_ms: i64) -> i64 {
    let soonest = now_ms + BLOCKED_POLL_MS;
    match until_ms {
        None => soonest,
        Some(at) => at.min(now_ms + QUIET_POLLS.min(lease_ms / 3)).max(soonest),
    }
}

fn count_add(m: &mut BTreeMap<i64, usize>, k: i64) {
    *m.entry(k).or_default() += 1;
}

fn count_sub(m: &mut BTreeMap<i64, usize>, k: i64) {
    if let Some(c) = m.get_mut(&k) {
        *c -= 1;
        if *c == 0 {
            m.remove(&k);
        }
    }
}

impl Inner {
    fn insert(&mut self, due_ms: i64, run_id: String) {
        if let Some(old) = self.due.insert(run_id.clone(), due_ms) {
            count_sub(&mut self.due_counts, old);
        }
        count_add(&mut self.due_counts, due_ms);
        let tenant = self.meta.get(&run_id).map_or(0, |m| m.tenant);
        let rank = self.ranks.next(due_ms, tenant);
        self.heap.push_ranked(due_ms, rank, run_id);
    }
    /// Take a run out of the heap's bookkeeping (its heap entry goes stale).
    fn undue(&mut self, run_id: &str) -> Option<i64> {
        let d = self.due.remove(run_id)?;
        count_sub(&mut self.due_counts, d);
        Some(d)
    }
    fn add_meta(&mut self, run_id: String, meta: Meta) {
        count_add(self.by_job.entry(meta.job_id.clone()).or_default(), meta.scheduled_at_ms);
        *self.per_tenant.entry(meta.tenant).or_default() += 1;
        if let Some(old) = self.meta.insert(run_id, meta) {
            if old.delivering {
                self.delivery_over(&old.job_id);
            }
            if old.checking {
                self.check_over(&old.job_id);
            }
            self.forget_job_fire(&old.job_id, old.scheduled_at_ms);
            self.forget_tenant_run(old.tenant);
        }
    }
    fn remove_meta(&mut self, run_id: &str) -> Option<Meta> {
        let m = self.meta.remove(run_id)?;
        if m.delivering {
            self.delivery_over(&m.job_id);
        }
        if m.checking {
            self.check_over(&m.job_id);
        }
        self.forget_job_fire(&m.job_id, m.scheduled_at_ms);
        self.forget_tenant_run(m.tenant);
        Some(m)
    }
    fn delivery_over(&mut self, job_id: &str) {
        if let Some(n) = self.delivering.get_mut(job_id) {
            *n -= 1;
            if *n == 0 {
                self.delivering.remove(job_id);
            }
        }
    }
    /// The run's dispatch decision is back (or it is no longer held).
    fn uncheck(&mut self, run_id: &str) {
        if let Some(m) = self.meta.get_mut(run_id).filter(|m| m.checking) {
            m.checking = false;
            let job = m.job_id.clone();
            self.check_over(&job);
        }
    }
    fn check_over(&mut self, job_id: &str) {
        if let Some(n) = self.checking.get_mut(job_id) {
            *n -= 1;
            if *n == 0 {
                self.checking.remove(job_id);
            }
        }
    }
    fn forget_tenant_run(&mut self, tenant: u64) {
        if let Some(n) = self.per_tenant.get_mut(&tenant) {
            *n -= 1;
            if *n == 0 {
                self.per_tenant.remove(&tenant);
            }
        }
    }
    fn forget_job_fire(&mut self, job_id: &str, at: i64) {
        if let Some(fires) = self.by_job.get_mut(job_id) {
            count_sub(fires, at);
            if fires.is_empty() {
                self.by_job.remove(job_id);
                // No run of the job is held: a wake left for a check that went otherwise is moot.
                self.woken.remove(job_id);
            }
        }
    }
    fn is_waiting(&self, run_id: &str) -> bool {
        let Some(m) = self.meta.get(run_id) else { return false };
        self.waiting.get(&m.job_id).is_some_and(|w| w.contains(&(m.scheduled_at_ms, run_id.to_string())))
    }
    fn wait(&mut self, job_id: &str, run_id: String) {
        let at = self.meta.get(&run_id).map_or(i64::MAX, |m| m.scheduled_at_ms);
        self.undue(&run_id);
        self.waiting.entry(job_id.to_string()).or_default().insert((at, run_id));
    }
    /// When a held run may go again at the earliest: now, or its fire's instant if that is
    /// later (a run is never sent before it is due).
    fn not_before(&self, run_id: &str, now_ms: i64) -> i64 {
        self.meta.get(run_id).map_or(now_ms, |m| m.scheduled_at_ms.max(now_ms))
    }
    /// Drop heap entries that no longer count.
    fn skip_stale(&mut self) {
        while let Some((due, id)) = self.heap.peek() {
            if self.due.get(id) == Some(&due) {
                return;
            }
            self.heap.pop();
        }
    }
}

impl Timer {
    /// Schedule a run this node holds (a no-op if it is already scheduled or waiting).
    pub fn push(&self, due_ms: i64, run_id: String) {
        let mut g = self.inner.lock().expect("timer lock");
        if !g.due.contains_key(&run_id) && !g.is_waiting(&run_id) {
            g.insert(due_ms, run_id);
        }
    }
    /// Schedule a run just claimed (or read `pending` by the peek), remembering its job for
    /// per-job gating. A peeked run this node already holds is left as it is: the peek may
    /// read a fire again after its cursor restarted, even while it is being dispatched.
    pub fn push_run(&self, due_ms: i64, run: &Run) {
        let mut g = self.inner.lock().expect("timer lock");
        if run.state == RunState::Pending && g.meta.contains_key(&run.id) {
            return;
        }
        let tenant = tenant_key(&run.tenant_id);
        g.tenant_ids.entry(tenant).or_insert_with(|| run.tenant_id.clone());
        let meta = Meta {
            job_id: run.job_id.clone(),
            tenant,
            scheduled_at_ms: run.scheduled_at_ms,
            holdable: matches!(run.state, RunState::Pending | RunState::Queued),
            lease_until_ms: run.lease_until_ms.unwrap_or(i64::MAX),
            pass: false,
            redeliver: run.state == RunState::Dispatching,
            schedule: run.trigger == TriggerKind::Schedule && matches!(run.state, RunState::Pending | RunState::Queued),
            delivering: false,
            checking: false,
        };
        g.add_meta(run.id.clone(), meta);
        if !g.due.contains_key(&run.id) && !g.is_waiting(&run.id) {
            g.insert(due_ms, run.id.clone());
        }
    }
    /// The misfire policy has had its say on this run (it was kept although late, or a
    /// dispatch decision held it back as `Blocked`): it is not settled again when it pops.
    pub fn settled(&self, run_id: &str) {
        let mut g = self.inner.lock().expect("timer lock");
        if let Some(m) = g.meta.get_mut(run_id) {
            m.schedule = false;
        }
    }
    /// The run's dispatch decided to send it: this node delivers it now, until
    /// [`Timer::after_dispatch`]. Until then its job's parked run polls only slowly.
    pub fn delivering(&self, run_id: &str) {
        let mut g = self.inner.lock().expect("timer lock");
        g.uncheck(run_id);
        let Some(m) = g.meta.get_mut(run_id) else { return };
        if m.delivering {
            return;
        }
        m.delivering = true;
        let job = m.job_id.clone();
        *g.delivering.entry(job).or_default() += 1;
    }
    /// Was the run claimed `dispatching`, so that its dispatch redelivers it?
    pub fn redelivers(&self, run_id: &str) -> bool {
        let g = self.inner.lock().expect("timer lock");
        g.meta.get(run_id).is_some_and(|m| m.redeliver)
    }
    /// Runs held per tenant ([`crate::due_heap::tenant_key`]), those being dispatched included.
    pub fn per_tenant(&self) -> HashMap<u64, usize> {
        self.inner.lock().expect("timer lock").per_tenant.clone()
    }
    /// The tenant holding `share` runs or more, if any (with a share of more than half the
    /// capacity, at most one can).
    pub fn tenant_over(&self, share: usize) -> Option<String> {
        let g = self.inner.lock().expect("timer lock");
        g.per_tenant.iter().find(|(_, n)| **n >= share).and_then(|(t, _)| g.tenant_ids.get(t).cloned())
    }
    /// Runs held: scheduled or waiting (not those being dispatched).
    pub fn len(&self) -> usize {
        let g = self.inner.lock().expect("timer lock");
        g.due.len() + g.waiting.values().map(BTreeSet::len).sum::<usize>()
    }
    pub fn next_due(&self) -> Option<i64> {
        let mut g = self.inner.lock().expect("timer lock");
        g.skip_stale();
        let ready = {
            let Inner { ready, due, .. } = &mut *g;
            ready.next_at(due)
        };
        match (g.heap.next_at(), ready) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
    /// Runs in the heap due at or before `t` (a herd coming up, or a backlog already due).
    pub fn due_by(&self, t: i64) -> usize {
        let g = self.inner.lock().expect("timer lock");
        g.due_counts.range(..=t).map(|(_, c)| c).sum()
    }
    /// Does the node hold another fire of `job_id` scheduled after `after_ms` and at or
    /// before `until_ms` (waiting, due, or being dispatched)?
    pub fn holds_later_fire(&self, job_id: &str, after_ms: i64, until_ms: i64) -> bool {
        if until_ms <= after_ms {
            return false;
        }
        let g = self.inner.lock().expect("timer lock");
        g.by_job.get(job_id).is_some_and(|f| f.range(after_ms + 1..=until_ms).next().is_some())
    }
    /// Remove and return every run due at or before `now_ms` to dispatch; a fresh fire of a
    /// job with a parked run waits behind it instead. Waiting runs whose lease ends within
    /// `renew_within_ms` are let through once, so their dispatch check renews it.
    #[cfg(test)]
    pub fn pop_due(&self, now_ms: i64, renew_within_ms: i64) -> Vec<String> {
        self.pop_due_max(now_ms, renew_within_ms, usize::MAX, i64::MIN).into_iter().map(|p| p.id).collect()
    }
    /// [`Timer::pop_due`], at most `max` runs (the earliest due). A fresh schedule fire due
    /// before `late_before_ms` comes back marked `late`, for its job's misfire policy.
    pub fn pop_due_max(&self, now_ms: i64, renew_within_ms: i64, max: usize, late_before_ms: i64) -> Vec<Popped> {
        let mut g = self.inner.lock().expect("timer lock");
        let scan = g.renew_scanned_ms.is_none_or(|t| now_ms - t >= RENEW_SCAN_MS || now_ms < t);
        let renew: Vec<(String, String)> = if scan {
            g.renew_scanned_ms = Some(now_ms);
            g.waiting
                .iter()
                .flat_map(|(job, w)| w.iter().map(move |(_, id)| (job, id)))
                .filter(|(_, id)| g.meta.get(*id).is_some_and(|m| m.lease_until_ms - now_ms <= renew_within_ms))
                .map(|(job, id)| (job.clone(), id.clone()))
                .collect()
        } else {
            Vec::new()
        };
        for (job, id) in renew {
            let at = g.meta.get(&id).map_or(i64::MAX, |m| m.scheduled_at_ms);
            if let Some(w) = g.waiting.get_mut(&job) {
                w.remove(&(at, id.clone()));
                if w.is_empty() {
                    g.waiting.remove(&job);
                }
            }
            if let Some(m) = g.meta.get_mut(&id) {
                m.pass = true;
            }
            let at = g.not_before(&id, now_ms);
            g.insert(at, id);
        }
        // Everything due by now joins its tenant's turn (in heap order: instant, then rank).
        loop {
            g.skip_stale();
            if g.heap.next_at().is_none_or(|at| at > now_ms) {
                break;
            }
            let (due_ms, id) = g.heap.pop().expect("peeked");
            let tenant = g.meta.get(&id).map_or(0, |m| m.tenant);
            g.ready.push(tenant, due_ms, id);
        }
        let mut out = Vec::new();
        while out.len() < max {
            let Some((due_ms, id)) = g.ready.pop_by(now_ms) else { break };
            if g.due.get(&id) != Some(&due_ms) {
                continue; // moved since (or popped already): stale
            }
            g.undue(&id);
            let hold_behind = match g.meta.get_mut(&id) {
                Some(m) if m.pass => {
                    m.pass = false;
                    None
                }
                Some(m) if m.holdable => {
                    let job = m.job_id.clone();
                    g.parked.get(&job).filter(|p| **p != id).map(|_| job)
                }
                _ => None,
            };
            match hold_behind {
                Some(job) => g.wait(&job, id),
                None => {
                    g.popped += 1;
                    let seq = g.popped;
                    if let Some(m) = g.meta.get_mut(&id).filter(|m| !m.checking) {
                        m.checking = true;
                        let job = m.job_id.clone();
                        *g.checking.entry(job).or_default() += 1;
                    }
                    let m = g.meta.get(&id);
                    out.push(Popped {
                        seq,
                        // By its fire's instant: a fire put back after a failed try is
                        // due later than it was scheduled, and just as late.
                        late: m.is_some_and(|m| m.schedule && m.scheduled_at_ms.min(due_ms) < late_before_ms),
                        job_id: m.map(|m| m.job_id.clone()),
                        scheduled_at_ms: m.map_or(due_ms, |m| m.scheduled_at_ms),
                        id,
                        due_ms,
                    })
                }
            }
        }
        // Every instant before the earliest still held is over: its ranks can go.
        g.skip_stale();
        let ready = {
            let Inner { ready, due, .. } = &mut *g;
            ready.next_at(due)
        };
        let held = match (g.heap.next_at(), ready) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match held {
            Some(at) => g.ranks.forget_before(at),
            None => g.ranks.clear(),
        }
        out
    }
    /// After the dispatch of a popped run is over (decided, and if sent, delivered): park it if it came back `Blocked`
    /// (it was re-pushed, and its lease renewed until `lease_until_ms`), else forget it and
    /// move its job's queue on.
    pub fn after_dispatch(&self, run_id: &str, now_ms: i64, lease_until_ms: i64) {
        let mut g = self.inner.lock().expect("timer lock");
        let Some(job) = g.meta.get(run_id).map(|m| m.job_id.clone()) else { return };
        g.uncheck(run_id);
        if let Some(m) = g.meta.get_mut(run_id).filter(|m| m.delivering) {
            m.delivering = false;
            g.delivery_over(&job);
        }
        if g.due.contains_key(run_id) {
            if let Some(m) = g.meta.get_mut(run_id) {
                m.lease_until_ms = lease_until_ms;
            }
            if !g.meta.get(run_id).is_some_and(|m| m.holdable) {
                // A retry waiting for the executor of its timed-out attempt to let go: it polls
                // by itself and holds no other run of its job.
                return;
            }
            // A run of its job went while this one's check was under way (the wake below could
            // not move it then): it checks again now rather than after its poll interval.
            let woken = g.woken.remove(&job);
            if woken {
                let at = g.not_before(run_id, now_ms);
                g.insert(at, run_id.to_string());
            } else if g.delivering.contains_key(&job) {
                // What blocks it is most likely the run of its job this node is delivering, whose
                // end wakes it: it polls only to renew its claim until then.
                let quiet = now_ms + QUIET_POLLS.min((lease_until_ms - now_ms) / 3).max(BLOCKED_POLL_MS);
                if g.due.get(run_id).is_some_and(|&d| d < quiet) {
                    g.insert(quiet, run_id.to_string());
                }
            }
            // Blocked: it polls again by itself. The job's other blocked runs wait behind one
            // poller: the earliest scheduled of them.
            match g.parked.get(&job).cloned() {
                Some(p) if p != run_id => {
                    let at = |g: &Inner, id: &str| g.meta.get(id).map_or(i64::MAX, |m| m.scheduled_at_ms);
                    let (poller, waiter) = if g.due.contains_key(&p) && at(&g, run_id) < at(&g, &p) {
                        (run_id.to_string(), p)
                    } else {
                        (p, run_id.to_string())
                    };
                    g.wait(&job, waiter);
                    g.parked.insert(job, poller);
                }
                _ => {
                    g.parked.insert(job, run_id.to_string());
                }
            }
            return;
        }
        g.remove_meta(run_id);
        match g.parked.get(&job).cloned() {
            Some(p) if p == run_id => {
                g.parked.remove(&job);
                g.woken.remove(&job);
            }
            Some(p) => {
                // A run of this job went here while another polls: the poller may go now.
                // (Only if it is in the heap: never while its own dispatch is under way; then
                // it checks again as soon as that dispatch comes back `Blocked`.)
                if g.due.contains_key(&p) {
                    g.insert(now_ms, p);
                } else {
                    g.woken.insert(job);
                }
                return;
            }
            // A run of the job popped meanwhile is still being checked (its first check: it is
            // not parked yet), and may have read this one in flight: if it comes back
            // `Blocked`, it checks again at once.
            None if g.checking.contains_key(&job) => {
                g.woken.insert(job.clone());
            }
            None => {}
        }
        // Nothing parked for the job any more: release its next waiting run.
        let next = g.waiting.get_mut(&job).and_then(BTreeSet::pop_first);
        if g.waiting.get(&job).is_some_and(BTreeSet::is_empty) {
            g.waiting.remove(&job);
        }
        if let Some((_, id)) = next {
            // Never before its instant: a run popped ahead by the dispatch lead may wait here.
            let at = g.not_before(&id, now_ms);
            g.insert(at, id);
        }
    }
    /// Everything held (for hand-back at shutdown).
    pub fn drain(&self) -> Vec<String> {
        let mut g = self.inner.lock().expect("timer lock");
        let mut out: Vec<String> = g.due.drain().map(|(id, _)| id).collect();
        out.extend(g.waiting.drain().flat_map(|(_, w)| w.into_iter().map(|(_, id)| id)));
        *g = Inner::default();
        out
    }
}

impl Engine {
    /// Claim runs due within the claim window (up to the timer's free capacity),
    /// apply the misfire policy to late schedule fires, and put the rest in the timer.
    /// Returns how many runs entered the timer.
    pub async fn claim_once(&self) -> Result<usize> {
        Ok(self.claim_round().await?.0)
    }

    /// [`Engine::claim_once`], also telling whether the claim came back full (as many runs
    /// as it asked for: more may be due, so the claimer goes again without waiting a tick,
    /// and claiming keeps up with any rate the rest of the node sustains).
    pub async fn claim_round(&self) -> Result<(usize, bool)> {
        let room = self.cfg.capacity.saturating_sub(self.fire.timer.len());
        if room == 0 || self.clock_skewed() {
            return Ok((0, false));
        }
        let now = self.now_ms();
        let include_schedule = !self.schedules_paused().await?;
        let owned = self.owned_buckets();
        // The backstop for our own fires (those the peek reads): claimed once overdue past the
        // grace, like anyone's. But while this node is itself that far behind (its timer's
        // earliest run is older than the grace), its overdue fires are almost all in its timer
        // already; claiming them would add a write to each exactly when the node is short of
        // time, so then it waits as long as a claim's lease.
        let behind = self.fire.timer.next_due().is_some_and(|d| d < now - self.cfg.affinity_grace_ms);
        let own_backstop = now - if behind { self.cfg.lease_ms } else { self.cfg.affinity_grace_ms };
        Counters::add(&self.counters.claim_calls, 1);
        // A tenant over its share of the timer (its runs pile up: a hung executor's serial
        // jobs) is not claimed for: what room is left is the other tenants'.
        let skip_tenant = self.fire.timer.tenant_over(crate::at_dispatch::tenant_share(self.cfg.capacity));
        let claimed = self
            .store
            .run_claim(&ClaimParams {
                node_id: self.cfg.node_id.clone(),
                due_before_ms: now + self.cfg.claim_window_ms,
                now_ms: now,
                lease_until_ms: now + self.cfg.lease_ms,
                limit: room.min(self.cfg.claim_batch.max(1)) as i64,
                include_schedule,
                owned_buckets: owned,
                foreign_due_before_ms: now - self.cfg.affinity_grace_ms,
                own_fires_due_before_ms: Some(own_backstop),
                skip_tenant: skip_tenant.clone(),
            })
            .await?;
        let limit = room.min(self.cfg.claim_batch.max(1));
        let mut full = claimed.len() == limit;
        Counters::add(&self.counters.claimed, claimed.len() as u64);
        if claimed.is_empty() {
            Counters::add(&self.counters.claim_empty, 1);
        }
        let foreign = claimed
            .iter()
            .filter(|r| r.trigger == TriggerKind::Schedule && owned & (1u64 << bucket_of(&r.job_id)) == 0)
            .count();
        Counters::add(&self.counters.claimed_foreign, foreign as u64);
        let mut queued = self.take_into_timer(claimed).await;
        let room = self.cfg.capacity.saturating_sub(self.fire.timer.len()).min(self.cfg.claim_batch.max(1));
        if include_schedule && room > 0 {
            let peeked = self.peek(owned, now, room, skip_tenant).await?;
            full |= peeked.len() == room;
            Counters::add(&self.counters.peeked, peeked.len() as u64);
            queued += self.take_into_timer(peeked).await;
        }
        Ok((queued, full))
    }

    /// Read the pending schedule fires of this node's buckets due within the claim window,
    /// after the cursor, without claiming them: most fires then cost no claim write at
    /// all, and the dispatch transaction takes them from `pending` under the row lock.
    ///
    /// Rules that keep every fire found (ARCHITECTURE.md, "the peek"): the cursor only
    /// moves forward over what was read; it restarts `affinity_grace_ms` back whenever the
    /// node's buckets change; a run written `pending` below a cursor cannot happen in the
    /// normal course, because the generator writes any run due within the claim window plus
    /// [`Engine::insert_claim_margin_ms`] already claimed by itself; and anything left `pending`
    /// past the grace (a node that died, a dispatch that failed) is claimed by any node's
    /// claim, as a backstop.
    async fn peek(&self, owned: u64, now: i64, room: usize, skip_tenant: Option<String>) -> Result<Vec<Run>> {
        let (after_ms, after_id) = {
            let mut c = self.membership.peek_cursor.lock().expect("cursor lock");
            if c.mask != owned {
                *c = PeekCursor { mask: owned, at_ms: now - self.cfg.affinity_grace_ms, id: String::new() };
            }
            (c.at_ms, c.id.clone())
        };
        let runs = self
            .store
            .run_peek(&PeekParams {
                after_ms,
                after_id,
                due_before_ms: now + self.cfg.claim_window_ms,
                owned_buckets: owned,
                limit: room as i64,
                skip_tenant,
            })
            .await?;
        if let Some(last) = runs.last() {
            let mut c = self.membership.peek_cursor.lock().expect("cursor lock");
            // Only for the buckets it was read for (the read itself only goes forward).
            if c.mask == owned {
                c.at_ms = last.scheduled_at_ms;
                c.id = last.id.clone();
            }
        }
        Ok(runs)
    }

    /// Put claimed or peeked runs into the timer, applying the misfire policy to late
    /// schedule fires first (in bulk: [`Engine::settle_late`]). Returns how many entered the timer.
    pub(crate) async fn take_into_timer(&self, runs: Vec<Run>) -> usize {
        let now = self.now_ms();
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
            match self.settle_late(&late).await {
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
        let soon = now + self.cfg.tick_ms as i64 + self.dispatch_lead_ms();
        let mut wake = false;
        for run in runs {
            if late_ids.contains(run.id.as_str()) && !keep.as_ref().is_some_and(|k| k.contains(&run.id)) {
                continue;
            }
            let due = match run.state {
                RunState::Retrying => run.next_attempt_at_ms.unwrap_or(now),
                _ => run.scheduled_at_ms,
            };
            self.fire.timer.push_run(due, &run);
            if late_ids.contains(run.id.as_str()) {
                self.fire.timer.settled(&run.id);
            }
            wake |= due < soon;
            queued += 1;
        }
        if wake {
            self.fire.due_sooner.notify_one();
        }
        queued
    }

    /// Dispatch every run in the timer due at or before now (plus the dispatch lead, see
    /// [`Engine::dispatch_lead_ms`]); returns how many were started.
    /// Due runs go in batches of up to [`crate::DISPATCH_BATCH`], one dispatch transaction
    /// each, a few at once; while every slot is busy more runs fall due, so batches grow
    /// with the load. Fresh schedule fires popped more than [`LATE_POP_MS`] late are settled
    /// by their misfire policy in bulk first ([`Engine::settle_late`]), so a node that fell
    /// behind clears its backlog in a few statements instead of delivering it late. With
    /// `wait`, deliveries finish before this returns (tests); otherwise they run as tasks.
    pub async fn fire_due(self: &Arc<Self>, wait: bool) -> usize {
        let mut n = 0;
        let mut handles = Vec::new();
        loop {
            // Shutdown must not wait for the timer to run dry: under load (or with every
            // `serial` job polling behind a predecessor that is retrying) it never does.
            if self.cancel_token().is_cancelled() {
                break;
            }
            let asked = self.now_ms();
            let slot = self.fire.batch_slots.clone().acquire_owned().await.expect("the semaphore is never closed");
            let popped_at = self.now_ms();
            if popped_at - asked > crate::LATENESS_NOTED_MS / 4 {
                tracing::debug!(target: "sundial_engine::lateness", waited_ms = popped_at - asked, "the timer waited for a dispatch slot");
            }
            // Runs whose instant has come are committed only while a delivery slot is free, so
            // none waits long for one after its commit (its deadline runs from then); runs due
            // later (the dispatch lead) are committed ahead whatever the slots, since they wait
            // for their instant anyway. Every popped run holds a staging permit until delivered.
            let horizon = if self.inflight_free() { popped_at + self.dispatch_lead_ms() } else { popped_at - 1 };
            // Waiting serial runs renew their claim when a third of its lease is left.
            let batch = crate::DISPATCH_BATCH.min(self.cfg.capacity.max(1));
            let due = self.fire.timer.pop_due_max(horizon, self.cfg.lease_ms / 3, batch, popped_at - LATE_POP_MS);
            if due.is_empty() {
                break;
            }
            n += due.len();
            Counters::add(&self.counters.dispatched, due.len() as u64);
            let turn = self.fire.turns.take();
            let permits = self.staged_permits(due.len()).await;
            let staged_ms = self.now_ms() - popped_at;
            if staged_ms > crate::LATENESS_NOTED_MS {
                tracing::debug!(target: "sundial_engine::lateness", waited_ms = staged_ms, runs = due.len(), "the timer waited for staging permits");
            }
            let e = self.clone();
            let h = self.fire.deliveries.spawn(async move {
                e.dispatch_popped(due, permits, wait, popped_at, turn).await;
                drop(slot);
            });
            if wait {
                handles.push(h);
            }
        }
        for h in handles {
            let _ = h.await;
        }
        n
    }

    /// Settle the late fires of a popped batch, then dispatch the rest.
    async fn dispatch_popped(
        self: &Arc<Self>,
        due: Vec<Popped>,
        permits: tokio::sync::OwnedSemaphorePermit,
        wait: bool,
        popped_at: i64,
        turn: crate::instant_gate::Turn,
    ) {
        let (late, mut go): (Vec<Popped>, Vec<Popped>) = due.into_iter().partition(|p| p.late && p.job_id.is_some());
        if !late.is_empty() {
            let fires: Vec<LateFire> = late
                .iter()
                .map(|p| LateFire {
                    id: p.id.clone(),
                    job_id: p.job_id.clone().unwrap_or_default(),
                    scheduled_at_ms: p.scheduled_at_ms,
                })
                .collect();
            match self.settle_late(&fires).await {
                Ok(kept) => {
                    let kept: HashSet<String> = kept.into_iter().collect();
                    let now = self.now_ms();
                    for p in late {
                        if kept.contains(&p.id) {
                            go.push(p);
                        } else {
                            self.fire.timer.after_dispatch(&p.id, now, now + self.cfg.lease_ms);
                        }
                    }
                }
                Err(err) => {
                    // Not judged: they stay in the timer and are judged again shortly (never
                    // sent past their misfire policy because the store could not be asked).
                    tracing::warn!(runs = fires.len(), error = %err, "misfire check failed; checking the late runs again shortly");
                    let again = self.now_ms() + 500;
                    for p in late {
                        self.fire.timer.push(again, p.id);
                    }
                }
            }
        }
        if go.is_empty() {
            return;
        }
        let ids: Vec<String> = go.iter().map(|p| p.id.clone()).collect();
        let first = ids[0].clone();
        let count = ids.len();
        let due: Vec<(String, i64, u64)> = go.into_iter().map(|p| (p.id, p.due_ms, p.seq)).collect();
        if let Err(err) = self.dispatch_batch(due, permits, wait, popped_at, turn).await {
            tracing::warn!(run_id = %first, runs = count, error = %err, "dispatch failed; the runs' leases will bring them back");
            let now = self.now_ms();
            for id in &ids {
                self.fire.timer.after_dispatch(id, now, now + self.cfg.lease_ms);
                // A fire with no row has no lease to bring it back: it tries again shortly
                // (late by then, so its misfire policy has its say).
                if let Some(run) = self.at_dispatch.get(id) {
                    self.fire.timer.push_run(now + 500, &run);
                }
            }
        }
    }

    pub(crate) async fn timer_loop(self: Arc<Self>) {
        loop {
            let now = self.now_ms();
            let sleep_ms = match self.fire.timer.next_due().map(|due| due - self.dispatch_lead_ms()) {
                Some(due) if due <= now => 0,
                Some(due) => (due - now).min(self.cfg.tick_ms as i64),
                None => self.cfg.tick_ms as i64,
            };
            if sleep_ms > 0 {
                tokio::select! {
                    _ = self.cancel_token().cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_millis(sleep_ms as u64)) => {}
                    _ = self.fire.due_sooner.notified() => {}
                }
                let overslept = self.now_ms() - now - sleep_ms;
                if overslept > crate::LATENESS_NOTED_MS / 4 {
                    tracing::debug!(target: "sundial_engine::lateness", overslept_ms = overslept, "the timer woke late (a busy runtime)");
                }
            }
            let turn_began = self.now_ms();
            if self.cancel_token().is_cancelled() {
                return;
            }
            self.fire_due(false).await;
            self.load.maybe_report(self.now_ms(), || self.fire.timer.due_by(self.now_ms()));
            let turn_took = self.now_ms() - turn_began;
            if turn_took > crate::LATENESS_NOTED_MS / 4 {
                tracing::debug!(target: "sundial_engine::lateness", took_ms = turn_took, "a turn of the timer took long");
            }
        }
    }

    /// Generate, claim and fire everything due now, waiting for deliveries: one
    /// deterministic turn of the engine for tests driven by a manual clock.
    pub async fn tick(self: &Arc<Self>) -> Result<usize> {
        self.generate_once().await?;
        self.at_dispatch_fill();
        self.at_dispatch_sync().await?;
        self.at_dispatch_fill();
        self.claim_once().await?;
        let fired = self.fire_due(true).await;
        self.shard_retry_once(true).await?;
        Ok(fired)
    }

    /// Parse a stored schedule (stored specs are canonical, so this does not fail in practice).
    pub(crate) fn schedule_of(job: &sundial_store::Job) -> Option<Schedule> {
        Schedule::parse(&job.schedule, job.created_at_ms).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sundial_core::types::TriggerKind;

    fn run(job: &str, at: i64) -> Run {
        let mut r = Run::pending("ten_1", job, 1, format!("s:{at}"), TriggerKind::Schedule, at, 0);
        r.id = format!("{job}@{at}");
        r.state = RunState::Queued; // as claimed
        r
    }

    #[test]
    fn runs_pop_in_due_order_and_ids_stay_unique() {
        let t = Timer::default();
        t.push_run(30, &run("j", 30));
        t.push_run(10, &run("k", 10));
        t.push_run(10, &run("k", 10));
        t.push(20, "loose".into());
        assert_eq!(t.len(), 3);
        assert_eq!(t.next_due(), Some(10));
        assert_eq!(t.pop_due(20, 10_000), ["k@10", "loose"]);
        assert_eq!(t.pop_due(29, 10_000), Vec::<String>::new());
        assert_eq!(t.pop_due(30, 10_000), ["j@30"]);
        assert_eq!(t.len(), 0);
        assert_eq!(t.next_due(), None);
    }

    /// Issue 26: a tenant's herd of 1,000 fires and another tenant's one fire, due at the
    /// same instant and pushed last, go out with the first batch, not after the herd.
    #[test]
    fn at_one_instant_a_small_tenants_fire_is_in_the_first_batch_not_behind_a_herd() {
        let t = Timer::default();
        for i in 0..1000 {
            t.push_run(5_000, &run(&format!("big{i}"), 5_000));
        }
        let mut small = run("small", 5_000);
        small.tenant_id = "ten_small".into();
        t.push_run(5_000, &small);
        let first = t.pop_due_max(5_000, 10_000, 256, i64::MIN);
        let ids: Vec<&str> = first.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids[..3], ["big0@5000", "small@5000", "big1@5000"], "tenants take turns at an instant");
        // The big tenant's own fires keep their order.
        let rest = t.pop_due(5_000, 10_000);
        assert_eq!(rest.len(), 1000 - 255);
        assert_eq!(rest[0], "big255@5000");
        assert_eq!(rest.last().map(String::as_str), Some("big999@5000"));
    }

    /// Issue 26: a backlog of one tenant's runs due earlier (a node behind) and another
    /// tenant's fresh fire: the fire goes in the first batch, the backlog keeps its order.
    #[test]
    fn a_backlog_of_one_tenant_does_not_hold_back_another_tenants_fire() {
        let t = Timer::default();
        for i in 0..1000 {
            t.push_run(1_000 + i, &run(&format!("late{i}"), 1_000 + i));
        }
        let mut small = run("small", 5_000);
        small.tenant_id = "ten_small".into();
        t.push_run(5_000, &small);
        let first = t.pop_due_max(5_000, 10_000, 16, i64::MIN);
        let ids: Vec<&str> = first.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids[..3], ["late0@1000", "small@5000", "late1@1001"], "tenants take turns across instants");
        let rest = t.pop_due(5_000, 10_000);
        assert_eq!(rest.len(), 1000 - 15);
        assert!(rest.windows(2).all(|w| {
            let n = |s: &str| s.trim_start_matches("late").split('@').next().unwrap().parse::<u32>().unwrap();
            n(&w[0]) < n(&w[1])
        }));
        assert_eq!(t.len(), 0);
        assert_eq!(t.next_due(), None);
    }

    /// Runs held are counted per tenant (what a tenant's share of the capacity is checked
    /// against), until their dispatch is over.
    #[test]
    fn runs_held_are_counted_per_tenant_until_their_dispatch_is_over() {
        let t = Timer::default();
        let mut b = run("b", 10);
        b.tenant_id = "ten_b".into();
        t.push_run(10, &run("a", 10));
        t.push_run(11, &run("a", 11));
        t.push_run(10, &b);
        let (a, bk) = (tenant_key("ten_1"), tenant_key("ten_b"));
        assert_eq!(t.per_tenant().get(&a), Some(&2));
        assert_eq!(t.per_tenant().get(&bk), Some(&1));
        let popped = t.pop_due(20, 10_000);
        assert_eq!(t.per_tenant().get(&a), Some(&2), "being dispatched still counts");
        for id in &popped {
            t.after_dispatch(id, 20, 30_000);
        }
        assert!(t.per_tenant().is_empty(), "{:?}", t.per_tenant());
    }

    /// Entries due within the dispatch lead, taken into the turns by one pop, are not popped
    /// by a later pop whose horizon is before them.
    #[test]
    fn a_pop_never_takes_a_run_due_after_its_horizon() {
        let t = Timer::default();
        t.push_run(100, &run("a", 100));
        t.push_run(300, &run("b", 300));
        assert_eq!(t.pop_due_max(300, 10_000, 1, i64::MIN).len(), 1, "a");
        assert_eq!(t.pop_due(200, 10_000), Vec::<String>::new(), "b is due at 300");
        assert_eq!(t.next_due(), Some(300));
        assert_eq!(t.pop_due(300, 10_000), ["b@300"]);
        assert_eq!(t.pop_due(1_000, 10_000), Vec::<String>::new(), "popped once");
        assert_eq!(t.next_due(), None);
    }

    #[test]
    fn a_serial_backlog_polls_through_one_parked_run_and_drains_in_order() {
        let t = Timer::default();
        for at in [1, 2, 3, 4] {
            t.push_run(at, &run("j", at));
        }
        t.push_run(2, &run("other", 2));
        // The first pass pops the whole backlog: nothing is parked yet.
        assert_eq!(t.pop_due(10, 10_000), ["j@1", "j@2", "other@2", "j@3", "j@4"]);
        // j@1 is dispatched for good; j@2 comes back Blocked (dispatch_batch re-pushes it).
        t.after_dispatch("j@1", 10, 10 + 30_000);
        t.push(510, "j@2".into());
        t.after_dispatch("j@2", 10, 10 + 30_000);
        t.after_dispatch("other@2", 10, 10 + 30_000);
        // j@3 and j@4 came back Blocked too before the park was known: they are re-pushed,
        // and from now on they wait behind j@2 without polling.
        t.push(510, "j@3".into());
        t.after_dispatch("j@3", 10, 10 + 30_000);
        t.push(510, "j@4".into());
        t.after_dispatch("j@4", 10, 10 + 30_000);
        assert_eq!(t.pop_due(510, 10_000), ["j@2"], "only the parked run polls");
        assert_eq!(t.len(), 2, "the others wait in memory (j@2 is being dispatched)");
        t.push(1010, "j@2".into()); // Blocked again
        t.after_dispatch("j@2", 510, 510 + 30_000);
        assert_eq!(t.pop_due(2000, 10_000), ["j@2"]);
        // j@2 is dispatched for good: the next waiting run goes at once, then the next.
        t.after_dispatch("j@2", 2000, 2000 + 30_000);
        assert_eq!(t.pop_due(2000, 10_000), ["j@3"]);
        t.after_dispatch("j@3", 2001, 2001 + 30_000);
        assert_eq!(t.pop_due(2001, 10_000), ["j@4"]);
        t.after_dispatch("j@4", 2002, 2002 + 30_000);
        assert_eq!((t.len(), t.pop_due(i64::MAX, 10_000)), (0, Vec::<String>::new()));
    }

    #[test]
    fn a_run_of_the_job_going_here_wakes_the_parked_poller_but_never_mid_dispatch() {
        let t = Timer::default();
        t.push_run(0, &run("j", 0));
        t.push_run(0, &run("j", 9)); // another run of the job in flight here (due 0 for the test)
        for at in [1, 2] {
            t.push_run(at, &run("j", at));
        }
        assert_eq!(t.pop_due(0, 10_000), ["j@0", "j@9"]); // slow synchronous deliveries, still under way
        assert_eq!(t.pop_due(2, 10_000), ["j@1", "j@2"]);
        // j@1 and j@2 are blocked by j@0: j@1 (the earlier) parks and polls, j@2 waits.
        t.push(502, "j@2".into());
        t.after_dispatch("j@2", 2, 2 + 30_000);
        t.push(501, "j@1".into());
        t.after_dispatch("j@1", 2, 2 + 30_000);
        assert_eq!(t.len(), 2);
        // j@0 is done: the parked j@1 need not wait for its 500 ms poll.
        assert_eq!(t.pop_due(100, 10_000), Vec::<String>::new());
        t.after_dispatch("j@0", 100, 100 + 30_000);
        assert_eq!(t.pop_due(100, 10_000), ["j@1"]);
        // While j@1's own dispatch is under way, j@9 finishing does not wake it a second
        // time (that would send it twice), and j@2 still waits behind it.
        t.after_dispatch("j@9", 101, 101 + 30_000);
        assert_eq!(t.pop_due(600, 10_000), Vec::<String>::new());
        // j@1 is dispatched for good: j@2 is released.
        t.after_dispatch("j@1", 600, 600 + 30_000);
        assert_eq!(t.pop_due(600, 10_000), ["j@2"]);
        t.after_dispatch("j@2", 601, 601 + 30_000);
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn a_run_let_go_after_waiting_is_never_due_before_its_instant() {
        // Found by the J=5,000 spread benchmark: fires popped ahead by the dispatch lead that
        // waited behind their job's previous run were let go "now", and sent up to a few
        // hundred ms before their instant.
        let t = Timer::default();
        t.push_run(1_000, &run("j", 1_000));
        t.push_run(2_000, &run("j", 2_000));
        assert_eq!(t.pop_due(1_000, 10_000), ["j@1000"]);
        t.push(1_500, "j@1000".into());
        t.after_dispatch("j@1000", 1_000, 31_000); // blocked: parked
        // At 1,600 with a lead of 500 ms: the parked j@1000 polls, j@2000 (popped ahead) waits behind it.
        assert_eq!(t.pop_due(2_100, 10_000), ["j@1000"]);
        assert_eq!(t.len(), 1, "j@2000 waits");
        // j@1000 goes for good at 1,600: j@2000 is let go, but not before 2,000.
        t.after_dispatch("j@1000", 1_600, 31_600);
        assert_eq!(t.pop_due(1_999, 10_000), Vec::<String>::new());
        assert_eq!(t.pop_due(2_000, 10_000), ["j@2000"]);
    }

    /// A hung executor's serial job: its run is sent and waits out its timeout, its next fire
    /// is held back. The held fire does not check the database every 500 ms for nothing (a
    /// thousand such jobs made thousands of dispatch transactions a second, ahead of every
    /// other tenant's fires on SQLite's one writer): it checks a third of a lease later, to
    /// renew its claim, and goes as soon as the delivery ends.
    #[test]
    fn a_run_held_behind_a_delivery_under_way_here_polls_slowly_and_goes_when_it_ends() {
        let t = Timer::default();
        t.push_run(0, &run("j", 0));
        t.push_run(1_000, &run("j", 1_000));
        assert_eq!(t.pop_due(0, 10_000), ["j@0"]);
        t.delivering("j@0"); // sent: the executor does not answer
        assert_eq!(t.pop_due(1_000, 10_000), ["j@1000"]);
        t.push(1_000 + BLOCKED_POLL_MS, "j@1000".into()); // Blocked
        t.after_dispatch("j@1000", 1_000, 31_000);
        assert_eq!(t.next_due(), Some(11_000), "checks again a third of its lease later");
        assert_eq!(t.pop_due(10_999, 10_000), Vec::<String>::new());
        t.after_dispatch("j@0", 5_000, 35_000); // the delivery ends (timed out)
        assert_eq!(t.pop_due(5_000, 10_000), ["j@1000"], "woken at once");
    }

    /// Held back by a run this node is not delivering (answered `202`, or sent by another
    /// node): nothing here would wake it, so it polls at the usual pace.
    #[test]
    fn a_run_held_behind_a_run_not_delivered_here_polls_every_half_second() {
        let t = Timer::default();
        t.push_run(0, &run("j", 0));
        t.push_run(1_000, &run("j", 1_000));
        assert_eq!(t.pop_due(0, 10_000), ["j@0"]);
        t.delivering("j@0");
        t.after_dispatch("j@0", 10, 30_010); // answered 202: its delivery is over, the run is not
        assert_eq!(t.pop_due(1_000, 10_000), ["j@1000"]);
        t.push(1_000 + BLOCKED_POLL_MS, "j@1000".into());
        t.after_dispatch("j@1000", 1_000, 31_000);
        assert_eq!(t.next_due(), Some(1_500));
        // A run whose delivery is marked twice leaves no count behind that would quiet its
        // job's next held run.
        t.push_run(2_000, &run("k", 2_000));
        t.push_run(3_000, &run("k", 3_000));
        assert_eq!(t.pop_due(2_000, 10_000), ["j@1000", "k@2000"]);
        t.delivering("k@2000");
        t.delivering("k@2000");
        t.after_dispatch("k@2000", 2_010, 32_010);
        assert_eq!(t.pop_due(3_000, 10_000), ["k@3000"]);
        t.push(3_000 + BLOCKED_POLL_MS, "k@3000".into());
        t.after_dispatch("k@3000", 3_000, 33_000);
        assert_eq!(t.pop_due(3_500, 10_000), ["k@3000"]);
    }

    #[test]
    fn a_wake_that_comes_while_the_parked_run_checks_is_not_lost() {
        let t = Timer::default();
        t.push_run(0, &run("j", 0));
        t.push_run(1, &run("j", 1));
        assert_eq!(t.pop_due(0, 10_000), ["j@0"]); // delivered, slowly
        assert_eq!(t.pop_due(1, 10_000), ["j@1"]); // blocked by j@0: parked
        t.push(501, "j@1".into());
        t.after_dispatch("j@1", 1, 30_001);
        assert_eq!(t.pop_due(501, 10_000), ["j@1"]); // its poll is under way when ...
        t.after_dispatch("j@0", 502, 30_502); // ... j@0 is done
        // The poll, which read j@0 still in flight, comes back Blocked: it checks again at
        // once, not after another 500 ms.
        t.push(1_003, "j@1".into());
        t.after_dispatch("j@1", 503, 30_503);
        assert_eq!(t.pop_due(503, 10_000), ["j@1"]);
    }

    /// The next fire's first check reads the run in flight, which ends before the check comes
    /// back `Blocked`: nothing is parked yet for that end to wake, so the check itself goes
    /// again at once, not after its poll interval (up to 10 s while a delivery is under way).
    #[test]
    fn a_run_ending_while_the_next_ones_first_check_is_under_way_wakes_it() {
        let t = Timer::default();
        t.push_run(0, &run("j", 0));
        t.push_run(1_000, &run("j", 1_000));
        assert_eq!(t.pop_due(0, 10_000), ["j@0"]);
        t.delivering("j@0");
        assert_eq!(t.pop_due(1_000, 10_000), ["j@1000"]); // its check reads j@0 in flight ...
        t.after_dispatch("j@0", 1_001, 31_001); // ... j@0's delivery ends ...
        t.push(1_002 + BLOCKED_POLL_MS, "j@1000".into()); // ... and the check says Blocked
        t.after_dispatch("j@1000", 1_002, 31_002);
        assert_eq!(t.pop_due(1_002, 10_000), ["j@1000"], "checks again at once");
        // That check dispatches it: the wake is used up, the job's next held fire polls as usual.
        t.delivering("j@1000");
        t.after_dispatch("j@1000", 1_003, 31_003);
        t.push_run(2_000, &run("j", 2_000));
        t.push_run(2_001, &run("j", 2_001));
        assert_eq!(t.pop_due(2_000, 10_000), ["j@2000"]);
        t.after_dispatch("j@2000", 2_000, 32_000); // answered 202
        assert_eq!(t.pop_due(2_001, 10_000), ["j@2001"]);
        t.push(2_001 + BLOCKED_POLL_MS, "j@2001".into());
        t.after_dispatch("j@2001", 2_001, 32_001);
        assert_eq!(t.next_due(), Some(2_501), "no wake left over");
    }

    /// A serial job whose run in flight failed and waits out its retry's backoff: its next
    /// fire checks again when the retry is due, not every 500 ms (but never later than its
    /// claim needs renewing), and every 500 ms when the decision cannot say.
    #[test]
    fn a_run_held_behind_a_retry_checks_again_when_the_retry_is_due() {
        assert_eq!(blocked_poll_at(1_000, None, 30_000), 1_500);
        assert_eq!(blocked_poll_at(1_000, Some(6_000), 30_000), 6_000);
        assert_eq!(blocked_poll_at(1_000, Some(1_100), 30_000), 1_500, "not sooner than a poll");
        assert_eq!(blocked_poll_at(1_000, Some(60_000), 30_000), 11_000, "a third of the lease");
        assert_eq!(blocked_poll_at(1_000, Some(60_000), 120_000), 1_000 + QUIET_POLLS);
        assert_eq!(blocked_poll_at(1_000, Some(60_000), 900), 1_500);
    }

    #[test]
    fn drain_returns_waiting_runs_too() {
        let t = Timer::default();
        for at in [1, 2, 3] {
            t.push_run(at, &run("j", at));
        }
        assert_eq!(t.pop_due(1, 10_000), ["j@1"]);
        t.push(500, "j@1".into());
        t.after_dispatch("j@1", 1, 1 + 30_000); // parked
        assert!(t.pop_due(3, 10_000).is_empty(), "j@2 and j@3 wait behind j@1");
        let mut all = t.drain();
        all.sort();
        assert_eq!(all, ["j@1", "j@2", "j@3"]);
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn a_redelivery_or_retry_never_waits_behind_the_run_it_blocks() {
        // Found by the chaos test: a `dispatching` run recovered from a dead node is the run
        // in flight its job's parked successor waits for; holding it back waited forever.
        let t = Timer::default();
        t.push_run(1, &run("j", 1));
        assert_eq!(t.pop_due(1, 10_000), ["j@1"]);
        t.push(501, "j@1".into());
        t.after_dispatch("j@1", 1, 30_001); // parked: blocked by the orphaned dispatch below
        let mut orphan = run("j", 0);
        orphan.state = RunState::Dispatching;
        t.push_run(2, &orphan);
        let mut retry = run("j", -1);
        retry.state = RunState::Retrying;
        t.push_run(2, &retry);
        assert_eq!(t.pop_due(2, 10_000), ["j@0", "j@-1"], "both go, parked run or not (ties in the order pushed)");
    }

    #[test]
    fn waiting_runs_renew_their_claim_before_its_lease_ends() {
        let t = Timer::default();
        let mut first = run("j", 1);
        first.lease_until_ms = Some(30_001);
        t.push_run(1, &first);
        let mut second = run("j", 2);
        second.lease_until_ms = Some(30_002);
        t.push_run(2, &second);
        assert_eq!(t.pop_due(1, 10_000), ["j@1"]);
        t.push(501, "j@1".into());
        t.after_dispatch("j@1", 1, 30_001); // parked (its dispatch check renewed its lease)
        assert!(t.pop_due(2, 10_000).is_empty(), "j@2 waits");
        // j@1 keeps polling (and renewing its own lease) while j@2 waits without a check...
        for now in [501, 1_001, 15_000] {
            assert_eq!(t.pop_due(now, 10_000), ["j@1"]);
            t.push(now + 500, "j@1".into());
            t.after_dispatch("j@1", now, now + 30_000);
        }
        // ... until a third of j@2's lease is left: it goes through one check, which renews it,
        // and comes back to wait.
        assert_eq!(t.pop_due(20_002, 10_000), ["j@1", "j@2"]);
        t.push(20_502, "j@2".into());
        t.after_dispatch("j@2", 20_002, 50_002);
        t.push(20_502, "j@1".into());
        t.after_dispatch("j@1", 20_002, 50_002);
        assert_eq!(t.pop_due(40_001, 10_000), ["j@1"], "j@2 waits again, renewed until 50,002");
        assert_eq!(t.len(), 1);
    }
}
