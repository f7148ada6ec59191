//! The node's in-memory timer: claimed (or peeked, or unwritten) runs by their due instant,
//! with the per-job gating of `serial` backlogs. Filled by the claimer (`claim.rs`) and
//! the at-dispatch fill (`at_dispatch.rs`), emptied by the timer loop (`fire.rs`).

// Run and job ids are hashed on every push, pop and dispatch: foldhash, not SipHash (6 % of
// the node's CPU in a herd). The keys are ids this node generated, not caller input.
use foldhash::{HashMap, HashSet};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex as StdMutex;

use sundial_core::types::{RunState, TriggerKind};
use sundial_store::Run;

use crate::due_heap::{DueHeap, FairRanks, tenant_key};

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

#[cfg(test)]
mod tests;
