//! Pre-generation: runs for the horizon ahead are written to the store under their
//! unique fire key, so dispatch needs no computation on the hot path.

use sundial_core::misfire::{CatchUp, catch_up};
use sundial_core::schedule::Schedule;
use sundial_core::time::rfc3339_utc;
use sundial_core::types::{RunState, TriggerKind};
use sundial_store::{GenerateJob, Job, Run};

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::shared::Shared;
use crate::{Counters, Result, intake};

/// Jobs handled per store round trip.
const JOBS_PER_ROUND: i64 = 200;
/// Runs per generation transaction, about (a job's runs are never split).
const GENERATE_ROWS: usize = 256;
/// Never walk more fires than this for one job in one round (a very long outage of a
/// per-second job): the rest is counted by one `expired` record.
const MAX_WALK: usize = 1_000_000;
/// A job with more upcoming fires than this within the horizon is *dense*: its runs are
/// written only a short span ahead (see [`generation_until`]), not for the whole horizon.
const DENSE_FIRES: usize = 16;

/// How far ahead to write `job`'s runs, from `now`. A sparse job (at most [`DENSE_FIRES`]
/// fires in the horizon) gets the whole horizon, as the brief's pre-generation says; one
/// with no fire in it, up to a horizon before its next fire. A
/// dense one (a per-second cron job: 180 rows per job and a 180-row burst per refill at the
/// default horizon, which buried the database when thousands of such jobs were created
/// together) is written up to a point between `near_ms` and twice that ahead, on a grid
/// of period `near_ms` offset by the job's bucket: jobs created in the same second then
/// refill at different moments, a slice of them each second, instead of all at once.
pub(crate) fn generation_until(
    job_id: &str,
    schedule: &Schedule,
    from: i64,
    now: i64,
    horizon_ms: i64,
    near_ms: i64,
) -> i64 {
    let full = now + horizon_ms;
    let upcoming = schedule.fires_between(from.max(now), full, DENSE_FIRES + 1);
    if upcoming.is_empty() {
        // No fire within the horizon (an hourly or daily job): the cursor moves to where the
        // generator, reading jobs whose cursor is within `near_ms`, reads it again about a
        // horizon before its next fire (nothing lies between, so nothing is skipped), not
        // every `horizon_ms`: a million hourly jobs would otherwise be read and rewritten
        // thousands a second.
        return schedule.next_after(full).map_or(full, |next| (next - horizon_ms + near_ms).min(next - 1).max(full));
    }
    if upcoming.len() <= DENSE_FIRES {
        return full;
    }
    let period = near_ms.max(1_000);
    let phase = sundial_core::affinity::bucket_of(job_id) as i64 * period / sundial_core::affinity::BUCKETS as i64;
    let base = now + near_ms;
    let cut = base + (phase - base).rem_euclid(period);
    cut.min(full)
}

pub(crate) fn schedule_run(job: &Job, at_ms: i64, now_ms: i64) -> Run {
    Run::pending(&job.tenant_id, &job.id, job.version, format!("s:{at_ms}"), TriggerKind::Schedule, at_ms, now_ms)
}

/// The runs to write for `job`'s fires in `(from, until]`. Missed fires (older than the
/// misfire threshold) beyond the catch-up window or the per-job cap are not written one
/// by one: one `expired` record carries their count.
pub(crate) fn plan_runs(job: &Job, schedule: &Schedule, from: i64, until: i64, now: i64) -> Vec<Run> {
    let fires = schedule.fires_between(from, until, MAX_WALK);
    let CatchUp { dropped, kept, upcoming } = catch_up(&job.misfire, &fires, now);
    let mut runs = Vec::with_capacity(kept.len() + upcoming.len() + 1);
    if let (Some(first), Some(last)) = (dropped.first(), dropped.last()) {
        let mut r = schedule_run(job, *first, now);
        let t = sundial_core::run_state::transition(RunState::Pending, &sundial_core::run_state::RunEvent::Expire)
            .expect("pending runs may expire");
        r.state = t.to;
        r.expired_count = dropped.len() as i64;
        r.finished_at_ms = Some(now);
        r.message = Some(format!(
            "{} fires from {} to {} were missed (beyond the catch-up window or cap)",
            dropped.len(),
            rfc3339_utc(*first),
            rfc3339_utc(*last)
        ));
        runs.push(r);
    }
    runs.extend(kept.iter().chain(upcoming).map(|t| schedule_run(job, *t, now)));
    runs
}

/// The generator service: every second, one [`Generator::run_once`].
pub(crate) struct Generator {
    node: Arc<Shared>,
    settings: GeneratorSettings,
}

/// The generator's settings. Its step also reads `horizon_ms`, `claim_window_ms`,
/// `capacity`, `lease_ms`, `max_clock_skew_ms` and `node_id` from [`crate::EngineConfig`].
#[derive(Debug, Clone)]
pub(crate) struct GeneratorSettings {
    /// How often it runs (1 s; backing off on failure).
    pub every: Duration,
    /// How close to now a job's written runs may end before the generator refills it: the
    /// claim window plus the margin within which fires are written claimed
    /// ([`intake::insert_claim_margin_ms`]), plus a second (at most the horizon).
    pub near_ms: i64,
}

impl Generator {
    pub(crate) fn new(node: &Arc<Shared>) -> Self {
        let cfg = &node.cfg;
        let near_ms = (cfg.claim_window_ms + intake::insert_claim_margin_ms(cfg) + 1_000).min(cfg.horizon_ms);
        Generator { node: node.clone(), settings: GeneratorSettings { every: Duration::from_millis(1000), near_ms } }
    }

    /// Write runs for every active timed job whose written runs end within
    /// [`GeneratorSettings::near_ms`] of now, nearest first, up to [`generation_until`] (the
    /// horizon for sparse jobs, a short span for dense ones). Returns the number of runs written.
    pub(crate) async fn run_once(&self, now: i64) -> Result<usize> {
        let node = &self.node;
        let mut now = now;
        let mut written = 0;
        // Fires due soon are written claimed by this node (see `insert_claim_margin_ms`),
        // unless schedules are paused or this node's clock is off (then nothing claims).
        // At most as many as the timer has room for (its memory bound): the rest are written
        // `pending`, and the claim's backstop takes them once overdue past the grace.
        let claim_soon = !node.clock_skewed() && !node.schedules_paused().await?;
        let mut room = if claim_soon { node.cfg.capacity.saturating_sub(node.fire.timer.len()) } else { 0 };
        loop {
            let near = self.settings.near_ms;
            let jobs = node.store.job_due_for_generation(now + near, JOBS_PER_ROUND).await?;
            let n = jobs.len() as i64;
            let mut batch = Vec::with_capacity(jobs.len());
            let soon = now + node.cfg.claim_window_ms + intake::insert_claim_margin_ms(&node.cfg);
            for job in jobs {
                let Some(schedule) = intake::schedule_of(&job) else {
                    tracing::error!(job_id = %job.id, "stored schedule does not parse; skipping the job");
                    continue;
                };
                if schedule.fires_at_dispatch() {
                    // Its rows are written at dispatch by the node owning its bucket
                    // (`at_dispatch.rs`); here only its cursor moves, a horizon at a time, so
                    // the job is not read again at every pass.
                    let until = now + node.cfg.horizon_ms;
                    batch.push(GenerateJob {
                        job_id: job.id,
                        job_version: job.version,
                        runs: Vec::new(),
                        generated_until_ms: until,
                    });
                    continue;
                }
                let from = job.generated_until_ms.unwrap_or(job.updated_at_ms - 1);
                let until = generation_until(&job.id, &schedule, from, now, node.cfg.horizon_ms, near);
                let mut runs = plan_runs(&job, &schedule, from, until, now);
                intake::claim_soon(&node.cfg, &mut runs, soon, now, &mut room);
                batch.push(GenerateJob { job_id: job.id, job_version: job.version, runs, generated_until_ms: until });
            }
            // Several jobs per transaction, in slices of about GENERATE_ROWS runs: few commits,
            // yet short transactions (each holds its jobs' rows, which dispatch also locks).
            let mut slices: Vec<&[GenerateJob]> = Vec::new();
            let (mut start, mut rows) = (0, 0);
            for (i, g) in batch.iter().enumerate() {
                rows += g.runs.len();
                if rows >= GENERATE_ROWS || i + 1 == batch.len() {
                    slices.push(&batch[start..=i]);
                    (start, rows) = (i + 1, 0);
                }
            }
            for slice in slices {
                let results = crate::retry_deadlock(|| node.store.run_generate_many(slice)).await?;
                let mut claimed = Vec::new();
                for (g, r) in slice.iter().zip(results) {
                    match r {
                        Some(k) => {
                            written += k;
                            // (A claimed run whose fire key existed was not written: its id is
                            // in no row, and its dispatch finds it `Gone`.)
                            claimed.extend(g.runs.iter().filter(|r| r.state == RunState::Queued).cloned());
                        }
                        None => tracing::debug!(job_id = %g.job_id, "job changed while generating; next round"),
                    }
                }
                if !claimed.is_empty() {
                    Counters::add(&node.counters.claimed_at_insert, claimed.len() as u64);
                    intake::take_into_timer(node, claimed).await;
                    // They may be due now: the timer loop sleeps at most a tick.
                }
            }
            if n < JOBS_PER_ROUND {
                break;
            }
            // A step over many jobs takes a while: the next round starts from the clock.
            now = node.now_ms().max(now);
        }
        if written > 0 {
            tracing::debug!(runs = written, "runs generated");
        }
        Ok(written)
    }

    /// Start the loop; it ends when `cancel` fires.
    pub(crate) fn spawn(self: Arc<Self>, cancel: CancellationToken) -> JoinHandle<()> {
        let every = self.settings.every;
        crate::service::every("generator", every, cancel, move || {
            let me = self.clone();
            async move { me.run_once(me.node.now_ms()).await.map(|_| ()) }
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;
    use sundial_core::job::{FailureSpec, MisfireSpec};
    use sundial_core::schedule::ScheduleSpec;
    use sundial_core::types::*;

    pub(crate) fn job(policy: MisfirePolicy, window: i64, cap: i64) -> (Job, Schedule) {
        let spec = ScheduleSpec {
            kind: ScheduleKind::FixedRate,
            expression: None,
            timezone: None,
            every_ms: Some(1000),
            anchor: Some("1970-01-01T00:00:00Z".into()),
            at: None,
            start_at: None,
            end_at: None,
        };
        let schedule = Schedule::parse(&spec, 0).unwrap();
        let job = Job {
            id: "job_x".into(),
            tenant_id: "ten_x".into(),
            app_id: "app_x".into(),
            name: "x".into(),
            description: String::new(),
            handler: Some("h".into()),
            script_id: None,
            script_version: None,
            schedule_kind: ScheduleKind::FixedRate,
            schedule: spec,
            params: json!({}),
            route: Route::First,
            block: BlockStrategy::Serial,
            misfire: MisfireSpec {
                policy,
                threshold_ms: Some(5000),
                catchup_window_ms: Some(window),
                max_catchup: Some(cap),
            },
            failure: FailureSpec {
                policy: FailurePolicyKind::Discard,
                max_retries: Some(0),
                backoff: None,
                allow_overlap: None,
            },
            timeout_ms: 1000,
            max_concurrency: None,
            wait: sundial_core::types::WaitFor::All,
            state: JobState::Active,
            script_limits: None,
            source: JobSource::Api,
            registration_key: None,
            version: 1,
            generated_until_ms: None,
            created_at_ms: 0,
            updated_at_ms: 0,
        };
        (job, schedule)
    }

    #[test]
    fn upcoming_fires_are_written_one_each() {
        let (j, s) = job(MisfirePolicy::FireAll, 3_600_000, 100);
        let runs = plan_runs(&j, &s, 99_999, 110_000, 100_000);
        assert_eq!(runs.len(), 11, "100 s to 110 s inclusive");
        assert!(runs.iter().all(|r| r.state == RunState::Pending && r.fire_key == format!("s:{}", r.scheduled_at_ms)));
    }

    #[test]
    fn a_long_outage_leaves_one_counted_record_not_a_flood() {
        // Down for a day with a per-second job: window one hour, cap 100.
        let (j, s) = job(MisfirePolicy::FireAll, 3_600_000, 100);
        let now = 86_400_000;
        let runs = plan_runs(&j, &s, 0, now + 10_000, now);
        let expired: Vec<_> = runs.iter().filter(|r| r.state == RunState::Expired).collect();
        assert_eq!(expired.len(), 1);
        let late_kept = runs.iter().filter(|r| r.state == RunState::Pending && r.scheduled_at_ms < now - 5000).count();
        assert_eq!(late_kept, 100, "the cap bounds catch-up deliveries");
        // Every fire is accounted for: delivered-late, upcoming, or counted as expired.
        let total: i64 = runs.iter().map(|r| if r.state == RunState::Expired { r.expired_count } else { 1 }).sum();
        assert_eq!(total, (now + 10_000) / 1000);
    }

    #[test]
    fn dense_jobs_are_written_a_short_span_ahead_on_a_grid_by_job() {
        let (_, every_second) = job(MisfirePolicy::FireAll, 3_600_000, 100);
        let now = 1_000_000;
        let mut cuts = std::collections::BTreeSet::new();
        for i in 0..200 {
            let id = format!("job_{i}");
            let until = generation_until(&id, &every_second, now - 1, now, 180_000, 9_000);
            assert!(until > now + 9_000 && until <= now + 18_000, "{until}");
            // The cut stays on the job's grid whenever the job is refilled.
            let later = generation_until(&id, &every_second, until, now + 4_321, 180_000, 9_000);
            assert_eq!((later - until).rem_euclid(9_000), 0);
            cuts.insert(until);
        }
        assert!(cuts.len() > 40, "jobs refill at different moments: {} distinct cuts", cuts.len());
        // A sparse job (a fire a minute) keeps the whole horizon.
        let mut spec = job(MisfirePolicy::FireAll, 0, 1).0.schedule;
        spec.every_ms = Some(60_000);
        let sparse = Schedule::parse(&spec, 0).unwrap();
        assert_eq!(generation_until("job_x", &sparse, now - 1, now, 180_000, 9_000), now + 180_000);
    }

    #[test]
    fn a_job_with_no_fire_in_the_horizon_is_read_again_a_horizon_before_its_next() {
        let mut spec = job(MisfirePolicy::FireAll, 0, 1).0.schedule;
        spec.every_ms = Some(3_600_000);
        let hourly = Schedule::parse(&spec, 0).unwrap();
        let now = 1_000_000;
        let next = hourly.next_after(now).unwrap();
        let until = generation_until("job_h", &hourly, now - 1, now, 180_000, 9_000);
        assert_eq!(until, next - 180_000 + 9_000, "skips to about a horizon before the next fire");
        // Nothing lies between the cursor and the next fire, so nothing is skipped over.
        assert!(hourly.fires_between(now - 1, until, 10).is_empty());
        // Read again at the first pass its cursor is within `near_ms` of: that pass writes
        // the next fire, a horizon ahead.
        let later = until - 9_000 + 1;
        assert!(later + 180_000 >= next);
        let until2 = generation_until("job_h", &hourly, until, later, 180_000, 9_000);
        assert_eq!(until2, later + 180_000);
        assert_eq!(plan_runs(&job(MisfirePolicy::FireAll, 0, 1).0, &hourly, until, until2, later).len(), 1);
        // A next fire just past the horizon: the cursor never goes back.
        assert_eq!(generation_until("job_h", &hourly, next - 180_001, next - 180_001, 180_000, 9_000), next - 1);
        // No fire ever again: the whole horizon, as before.
        spec.end_at = Some("1970-01-01T00:00:01Z".into());
        let ended = Schedule::parse(&spec, 0).unwrap();
        assert_eq!(generation_until("job_e", &ended, now - 1, now, 180_000, 9_000), now + 180_000);
    }

    #[test]
    fn the_window_bounds_catch_up_before_the_cap() {
        let (j, s) = job(MisfirePolicy::FireAll, 30_000, 100);
        let now = 1_000_000;
        let runs = plan_runs(&j, &s, 0, now, now);
        let kept_missed =
            runs.iter().filter(|r| r.state == RunState::Pending && r.scheduled_at_ms < now - 5000).count();
        assert_eq!(kept_missed, 25, "fires within 30 s but older than the 5 s threshold");
    }
}
