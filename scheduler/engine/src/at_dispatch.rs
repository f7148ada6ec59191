//! High-frequency jobs: run rows written when each fire is dispatched, not ahead.
//!
//! A job whose schedule [`fires_at_dispatch`](sundial_core::schedule::Schedule::fires_at_dispatch)
//! (a fixed rate of 10 s or less, a cron expression firing six or more seconds a minute)
//! gets no rows written ahead by the generator. The node that owns the job's bucket keeps
//! the job in memory and puts each fire into its timer a few seconds ahead as an
//! *unwritten* run (an id, the fire key `s:<ms>`, no row); the dispatch transaction writes
//! the row in the state it decides (`dispatching`, `queued` behind a `serial`
//! predecessor, `skipped`), unless a row with that fire key exists already, in which case
//! the fire is `Gone` and nothing is written. The unique fire key keeps each fire one run
//! whatever the nodes believe; one row write and the generator's start-up burst per fire
//! are gone (issue 14: the tail of a herd of cron jobs was the generator writing rows
//! while the herd fired).
//!
//! What keeps every fire (nothing lost silently): the owner starts each job it takes on
//! (at start-up, when the ring of live nodes gives it the job's bucket, when the job is
//! created, edited or started) from the later of the job's last schedule fire that has a
//! row and its last change (`updated_at_ms`); fires in between that are already past are
//! written as rows through the generator's [`plan_runs`] (catch-up within the window and
//! cap, one counted `expired` row beyond), and so go through the misfire policy like any
//! late fire. A node that stops hands its unwritten fires over as `pending` rows. Late
//! unwritten fires that the misfire policy drops are written `expired`
//! ([`intake::settle_late`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use sundial_core::affinity::bucket_of;
use sundial_core::schedule::Schedule;
use sundial_core::types::{RunState, TriggerKind};
use sundial_store::{GenerateJob, Job, Run};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::due_heap::tenant_key;
use crate::generate::plan_runs;
use crate::held::tenant_share;
use crate::shared::Shared;
use crate::{Counters, Result, intake};

/// A job whose next fire is further behind than this when the timer has room for it (the
/// node stood still: a paused process, a full timer, the pause switch) is caught up
/// through rows ([`plan_runs`]: the misfire window and cap, one counted record beyond), all
/// its missed fires at once, so its misfire policy judges them together.
const CATCH_UP_BEHIND_MS: i64 = crate::misfire::LATE_POP_MS;
/// While the timer's earliest run is more than this overdue and no dispatch transaction has
/// committed for [`FILL_STOP_NO_COMMIT_MS`] (a stalled database), no more fires enter it: the
/// jobs fall behind and are caught up through rows once the database is back, so a stall does
/// not keep feeding fires into dispatches that cannot commit (and that would go out late,
/// unjudged, when it comes back). A node that is merely busy (commits going on, a backlog
/// draining) keeps filling, so its fresh fires stay on time.
const FILL_STOP_BEHIND_MS: i64 = 3_000;
const FILL_STOP_NO_COMMIT_MS: i64 = 2_000;

/// Jobs read per store call when taking jobs on.
const TAKE_ON_CHUNK: usize = 500;
/// How far before a job's last fire with a row a node taking it over looks for fires left
/// without one (a dispatch that had not committed, or was to be tried again, when its node
/// died or left, while a later one had): dispatch transactions give up well within this.
const GAP_LOOKBACK_MS: i64 = 60_000;
/// At most this many fires are walked in that look-back (a job firing every second has 60).
const GAP_WALK: usize = 600;

/// The at-dispatch sync service: its [`run_once`](AtDispatchSync::run_once) once a second,
/// or at once when a job fell behind. No backoff: jobs that fell behind while the database
/// was away are caught up by the first sync that works (a backoff made them wait up to its
/// length after the database came back, all their fires late); failures are logged at most
/// every 10 s.
pub(crate) struct AtDispatchSync {
    node: Arc<Shared>,
    settings: AtDispatchSyncSettings,
}

/// The at-dispatch sync's settings. Its step reads `claim_window_ms`, `lease_ms`,
/// `capacity`, `horizon_ms`, `max_clock_skew_ms` and `node_id` from the node's config.
#[derive(Debug, Clone)]
pub(crate) struct AtDispatchSyncSettings {
    /// How often it runs at the latest (1 s).
    pub every: Duration,
}

impl AtDispatchSync {
    pub(crate) fn new(node: &Arc<Shared>) -> Self {
        AtDispatchSync { node: node.clone(), settings: AtDispatchSyncSettings { every: Duration::from_millis(1000) } }
    }

    /// Bring this node's set of high-frequency jobs in line with the database: take on the
    /// jobs of its buckets that are new, edited or started (and catch up their past fires
    /// through rows), drop those stopped, deleted, changed to a sparse schedule or now in
    /// another node's bucket, and catch up jobs that fell far behind. Also reads the pause
    /// switch for [`AtDispatchFill::run_once`]. Returns the jobs taken on.
    pub(crate) async fn run_once(&self, now: i64) -> Result<usize> {
        let node = &self.node;
        let paused = node.schedules_paused().await?;
        node.at_dispatch.paused.store(paused, Ordering::Relaxed);
        let versions = node.store.job_timed_versions().await?;
        let owned = node.owned_buckets();
        let mine = |id: &str| owned & (1u64 << bucket_of(id)) != 0;
        let (to_read, behind) = {
            let mut g = node.at_dispatch.inner.lock().expect("at-dispatch lock");
            if g.mask != owned {
                g.mask = owned;
                let gone: Vec<String> = g.jobs.keys().filter(|id| !mine(id)).cloned().collect();
                for id in gone {
                    // Its fires already in the timer still go (another node writing the same
                    // fire makes one of them `Gone`); no new ones from here.
                    g.jobs.remove(&id);
                }
            }
            let current: HashMap<&str, i64> = versions.iter().map(|(id, v)| (id.as_str(), *v)).collect();
            let dropped: HashSet<String> =
                g.jobs.keys().filter(|id| !current.contains_key(id.as_str())).cloned().collect();
            for id in &dropped {
                g.jobs.remove(id);
            }
            g.forget_fires(&dropped);
            g.sparse.retain(|id, v| current.get(id.as_str()) == Some(v));
            let mut to_read = Vec::new();
            for (id, v) in &versions {
                if !mine(id) || g.sparse.get(id) == Some(v) {
                    continue;
                }
                match g.jobs.get(id) {
                    Some(h) if h.version == *v && !h.behind => {}
                    _ => to_read.push(id.clone()),
                }
            }
            let behind: HashMap<String, (i64, i64)> = g
                .jobs
                .iter()
                .filter(|(_, h)| h.behind)
                .filter_map(|(id, h)| Some((id.clone(), (h.version, h.next? - 1))))
                .collect();
            (to_read, behind)
        };
        if to_read.is_empty() {
            return Ok(0);
        }
        tracing::debug!(jobs = to_read.len(), behind = behind.len(), "at-dispatch take-on");
        let mut taken = 0;
        for chunk in to_read.chunks(TAKE_ON_CHUNK) {
            let jobs = node.store.job_get_many(chunk).await?;
            let mut dense: Vec<(Job, Schedule)> = Vec::new();
            {
                let mut g = node.at_dispatch.inner.lock().expect("at-dispatch lock");
                let mut forget = HashSet::new();
                for job in jobs {
                    match intake::schedule_of(&job) {
                        Some(s) if s.fires_at_dispatch() && job.state == sundial_core::types::JobState::Active => {
                            dense.push((job, s))
                        }
                        _ => {
                            if g.jobs.remove(&job.id).is_some() {
                                forget.insert(job.id.clone());
                            }
                            g.sparse.insert(job.id.clone(), job.version);
                        }
                    }
                }
                g.forget_fires(&forget);
            }
            if dense.is_empty() {
                continue;
            }
            let ids: Vec<String> = dense.iter().map(|(j, _)| j.id.clone()).collect();
            let last = node.store.run_last_fires(&ids).await?;
            // Jobs new here (not caught up from this node's own fill): the fires before their
            // last row that have rows, to find any a node gone before left without one.
            let fresh: Vec<(String, i64, i64)> = dense
                .iter()
                .filter(|(j, _)| behind.get(&j.id).is_none_or(|(v, _)| *v != j.version))
                .filter_map(|(j, _)| last.get(&j.id).map(|l| (j.id.clone(), l - GAP_LOOKBACK_MS, *l)))
                .collect();
            let have = node.store.run_fires_between(&fresh).await?;
            taken += self.take_on(now, dense, &last, &have, &behind).await?;
        }
        Ok(taken)
    }

    /// Take on jobs of this node's buckets: write their past fires since they were last
    /// fired (or changed) as rows, then hold them for [`AtDispatchFill::run_once`].
    ///
    /// `behind`: jobs held here that fell behind, (version, fires put into the timer up to):
    /// at the same version they are caught up from there, and their fires in the timer stay.
    /// A job new here or at another version is planned afresh: its unwritten fires of the
    /// older definition are dropped (their dispatch finds no row: `Gone`) and planned again.
    async fn take_on(
        &self,
        now: i64,
        jobs: Vec<(Job, Schedule)>,
        last: &HashMap<String, i64>,
        have: &HashMap<String, Vec<i64>>,
        behind: &HashMap<String, (i64, i64)>,
    ) -> Result<usize> {
        let node = &self.node;
        let claim_soon = !node.clock_skewed() && !node.at_dispatch.paused.load(Ordering::Relaxed);
        let soon = now + node.cfg.claim_window_ms + intake::insert_claim_margin_ms(&node.cfg);
        let mut room = if claim_soon { node.cfg.capacity.saturating_sub(node.fire.timer.len()) } else { 0 };
        let mut batch = Vec::new();
        let mut plans = Vec::new();
        for (job, schedule) in jobs {
            // From its last fire with a row, or its last change (created, edited, started:
            // fires after it follow this definition), or where it fell behind.
            let changed = job.updated_at_ms - 1;
            let mut from = changed.max(last.get(&job.id).copied().unwrap_or(i64::MIN));
            let mut written: &[i64] = &[];
            if let Some((version, filled)) = behind.get(&job.id)
                && *version == job.version
            {
                from = from.max(*filled);
            } else if let Some(&last) = last.get(&job.id) {
                // Rows are not written in fire order (two dispatch batches commit in either
                // order; a failed one is tried again after a later one): a node that died or
                // left may leave fires without a row before its last one. Start at the first
                // such fire; the fires after it that have rows are not written again.
                written = have.get(&job.id).map_or(&[], Vec::as_slice);
                let floor = changed.max(last - GAP_LOOKBACK_MS);
                if let Some(gap) = schedule
                    .fires_between(floor, last, GAP_WALK)
                    .into_iter()
                    .find(|t| written.binary_search(t).is_err())
                {
                    from = gap - 1;
                }
            }
            let until = now.max(from);
            let mut runs = plan_runs(&job, &schedule, from, until, now);
            runs.retain(|r| written.binary_search(&r.scheduled_at_ms).is_err());
            intake::claim_soon(&node.cfg, &mut runs, soon, now, &mut room);
            batch.push(GenerateJob {
                job_id: job.id.clone(),
                job_version: job.version,
                runs,
                generated_until_ms: now + node.cfg.horizon_ms,
            });
            plans.push((job, schedule, until));
        }
        let results = crate::retry_deadlock(|| node.store.run_generate_many(&batch)).await?;
        let mut claimed = Vec::new();
        let mut taken = 0;
        {
            let mut g = node.at_dispatch.inner.lock().expect("at-dispatch lock");
            let kept: Vec<bool> = results.iter().map(Option::is_some).collect();
            let forget: HashSet<String> = plans
                .iter()
                .zip(&kept)
                .filter(|((job, ..), kept)| **kept && behind.get(&job.id).is_none_or(|(v, _)| *v != job.version))
                .map(|((job, ..), _)| job.id.clone())
                .collect();
            g.forget_fires(&forget);
            for ((g_job, (job, schedule, until)), kept) in batch.iter().zip(plans).zip(kept) {
                if !kept {
                    // Changed (or stopped) meanwhile: the next sync reads it again.
                    continue;
                }
                claimed.extend(g_job.runs.iter().filter(|r| r.state == RunState::Queued).cloned());
                g.hold(&job, schedule, until);
                taken += 1;
            }
        }
        if !claimed.is_empty() {
            Counters::add(&node.counters.claimed_at_insert, claimed.len() as u64);
            intake::take_into_timer(node, claimed).await;
        }
        Ok(taken)
    }

    /// Start the loop; it ends when `cancel` fires.
    pub(crate) fn spawn(self: Arc<Self>, cancel: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            let mut failures = 0u64;
            loop {
                tokio::select! {
                    _ = cancel.cancelled() => break,
                    _ = tokio::time::sleep(self.settings.every) => {}
                    _ = self.node.at_dispatch.behind.notified() => {}
                }
                match self.run_once(self.node.now_ms()).await {
                    Ok(_) => failures = 0,
                    Err(err) => {
                        if failures.is_multiple_of(10) {
                            tracing::warn!(service = "at-dispatch", error = %err, failures = failures + 1, "step failed; retrying every second");
                        }
                        failures += 1;
                    }
                }
            }
        })
    }
}

/// The at-dispatch fill service: its [`run_once`](AtDispatchFill::run_once) every tick (at
/// most 100 ms). Memory only: keeps the timer filled with the high-frequency jobs' fires even
/// while the database stalls (the timer's capacity bounds it).
pub(crate) struct AtDispatchFill {
    node: Arc<Shared>,
    settings: AtDispatchFillSettings,
}

/// The at-dispatch fill's settings. Its step also reads `capacity` from the node's config.
#[derive(Debug, Clone)]
pub(crate) struct AtDispatchFillSettings {
    /// How often it runs (`tick_ms`, at most 100 ms).
    pub every: Duration,
    /// How far ahead of their instant unwritten fires enter the timer: enough for the
    /// dispatch lead (`max_dispatch_lead_ms`) and two ticks, within `claim_window_ms`.
    pub ahead_ms: i64,
}

impl AtDispatchFill {
    pub(crate) fn new(node: &Arc<Shared>) -> Self {
        let cfg = &node.cfg;
        let every = Duration::from_millis(cfg.tick_ms).min(Duration::from_millis(100));
        let ahead_ms = (cfg.max_dispatch_lead_ms.max(0) + 2 * cfg.tick_ms as i64 + 500).min(cfg.claim_window_ms.max(1));
        AtDispatchFill { node: node.clone(), settings: AtDispatchFillSettings { every, ahead_ms } }
    }

    /// Put the fires of this node's high-frequency jobs due within the next few seconds
    /// into the timer as unwritten runs, nearest first, while the timer has room. Memory
    /// only: it goes on while the database stalls (the timer's capacity bounds it). A job
    /// whose next fire is far behind is left for [`AtDispatchSync::run_once`] to catch up.
    /// Returns how many fires were added.
    pub(crate) fn run_once(&self, now: i64) -> usize {
        let node = &self.node;
        if node.clock_skewed() || node.at_dispatch.paused.load(Ordering::Relaxed) {
            return 0;
        }
        // Stalled: nothing is added, but jobs already behind are still marked for catching up.
        let stalled = node.fire.timer.next_due().is_some_and(|d| d < now - FILL_STOP_BEHIND_MS)
            && node.fire.last_commit_ms.load(Ordering::Relaxed) < now - FILL_STOP_NO_COMMIT_MS;
        let until = now + self.settings.ahead_ms;
        let len = node.fire.timer.len();
        let mut room = node.cfg.capacity.saturating_sub(len);
        // A tenant holds at most its share of the timer: another tenant's fires always find
        // room (a hung tenant's serial jobs pile their waiting fires up to the capacity).
        let share = tenant_share(node.cfg.capacity);
        // The claim and the peek take a whole batch at a time, so a tenant just below its share
        // can fill the timer past it. A full timer still takes the fires of tenants holding
        // less than the quarter no share reaches, up to that quarter past its capacity: a
        // small tenant's fire is never refused because another tenant filled the timer.
        let small = node.cfg.capacity.saturating_sub(share);
        let mut reserve = small.saturating_sub(len.saturating_sub(node.cfg.capacity));
        let mut held = node.fire.timer.per_tenant();
        let mut over_share = Vec::new();
        let mut added = Vec::new();
        let mut fell_behind = false;
        {
            let mut guard = node.at_dispatch.inner.lock().expect("at-dispatch lock");
            let g = &mut *guard;
            while let Some(at) = g.heap.next_at() {
                if at > until || (stalled && at >= now - CATCH_UP_BEHIND_MS) || (!stalled && room == 0 && reserve == 0)
                {
                    break;
                }
                let (at, job_id) = g.heap.pop().expect("peeked");
                let Some(h) = g.jobs.get_mut(&job_id) else { continue };
                if h.next != Some(at) || h.behind {
                    continue;
                }
                if at < now - CATCH_UP_BEHIND_MS {
                    h.behind = true;
                    fell_behind = true;
                    continue;
                }
                let tenant = tenant_key(&h.tenant_id);
                let count = held.entry(tenant).or_default();
                if *count >= if room > 0 { share } else { small } {
                    // Waits here (and, once far enough behind, is caught up by its misfire policy).
                    over_share.push((at, tenant, job_id));
                    continue;
                }
                *count += 1;
                let run =
                    Run::pending(&h.tenant_id, &job_id, h.version, format!("s:{at}"), TriggerKind::Schedule, at, now);
                h.next = h.schedule.next_after(at);
                if let Some(n) = h.next {
                    let rank = g.ranks.next(n, tenant_key(&h.tenant_id));
                    g.heap.push_ranked(n, rank, job_id);
                }
                g.unwritten.insert(run.id.clone(), run.clone());
                added.push(run);
                if room > 0 {
                    room -= 1;
                } else {
                    reserve -= 1;
                }
            }
            for (at, tenant, job_id) in over_share {
                let rank = g.ranks.next(at, tenant);
                g.heap.push_ranked(at, rank, job_id);
            }
            if let Some(at) = g.heap.next_at() {
                g.ranks.forget_before(at);
            }
        }
        for run in &added {
            node.fire.timer.push_run(run.scheduled_at_ms, run);
        }
        if fell_behind {
            node.at_dispatch.behind.notify_one();
        }
        if stalled || fell_behind || !added.is_empty() {
            tracing::debug!(
                stalled,
                fell_behind,
                added = added.len(),
                timer = node.fire.timer.len(),
                "at-dispatch fill"
            );
        }
        added.len()
    }

    /// Start the loop; it ends when `cancel` fires.
    pub(crate) fn spawn(self: Arc<Self>, cancel: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = cancel.cancelled() => break,
                    _ = tokio::time::sleep(self.settings.every) => {}
                }
                self.run_once(self.node.now_ms());
            }
        })
    }
}

/// Hand this node's unwritten fires over as `pending` rows (at shutdown): the node that
/// takes their buckets starts after them and fires them.
pub(crate) async fn hand_over(node: &Shared) {
    let runs = node.at_dispatch.drain();
    if runs.is_empty() {
        return;
    }
    match node.store.run_insert_missing(&runs).await {
        Ok(n) => tracing::info!(fires = n, "handed over unwritten fires as pending runs"),
        Err(e) => tracing::warn!(
            fires = runs.len(),
            error = %e,
            "could not hand over unwritten fires; the next owner catches them up by the misfire policy"
        ),
    }
}
