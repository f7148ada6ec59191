//! The misfire policies: which of a job's late schedule fires are still delivered, and
//! which are written `expired` with the reason.

use std::collections::{BTreeMap, HashMap};

use crate::job::{DEFAULT_CATCHUP_WINDOW_MS, DEFAULT_MAX_CATCHUP, DEFAULT_MISFIRE_THRESHOLD_MS, MisfireSpec};
use crate::types::MisfirePolicy;

/// A schedule fire past its instant (the engine settles them in bulk before dispatch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LateFire {
    pub id: String,
    pub job_id: String,
    pub scheduled_at_ms: i64,
}

/// What the misfire policies decided for a batch of late fires.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Settled {
    /// Fires to deliver, late.
    pub keep: Vec<String>,
    /// Fires to write `expired`, by message (one statement per message and chunk).
    pub expire: BTreeMap<String, Vec<String>>,
}

/// Decide a batch of late fires by their jobs' misfire specs (pure; `later_fire(job, at,
/// before)` tells whether a later fire of the job has gone already or is missed too, i.e.
/// scheduled before `before`, for `fire_once`).
/// A fire whose job is unknown is kept: its dispatch finds the job gone and cancels it.
pub fn decide(
    fires: &[LateFire],
    specs: &HashMap<String, MisfireSpec>,
    now_ms: i64,
    mut later_fire: impl FnMut(&str, i64, i64) -> bool,
) -> Settled {
    let mut by_job: BTreeMap<&str, Vec<&LateFire>> = BTreeMap::new();
    for f in fires {
        by_job.entry(f.job_id.as_str()).or_default().push(f);
    }
    let mut out = Settled::default();
    for (job_id, mut fs) in by_job {
        fs.sort_by_key(|f| (f.scheduled_at_ms, f.id.clone()));
        let Some(spec) = specs.get(job_id) else {
            out.keep.extend(fs.iter().map(|f| f.id.clone()));
            continue;
        };
        let threshold = spec.threshold_ms.unwrap_or(DEFAULT_MISFIRE_THRESHOLD_MS);
        let window = spec.catchup_window_ms.unwrap_or(DEFAULT_CATCHUP_WINDOW_MS);
        let (missed, fresh): (Vec<&LateFire>, Vec<&LateFire>) =
            fs.iter().partition(|f| now_ms - f.scheduled_at_ms > threshold);
        out.keep.extend(fresh.iter().map(|f| f.id.clone()));
        let mut drop = |msg: String, f: &LateFire| out.expire.entry(msg).or_default().push(f.id.clone());
        match spec.policy {
            MisfirePolicy::Skip => {
                for f in &missed {
                    drop(
                        format!("missed by more than the misfire threshold of {threshold} ms; misfire policy skip"),
                        f,
                    );
                }
            }
            MisfirePolicy::FireAll => {
                for f in &missed {
                    if now_ms - f.scheduled_at_ms > window {
                        drop(
                            format!("missed by more than the catch-up window of {window} ms; misfire policy fire_all"),
                            f,
                        );
                    } else {
                        out.keep.push(f.id.clone());
                    }
                }
            }
            MisfirePolicy::FireOnce => {
                let msg = format!(
                    "missed by more than the misfire threshold of {threshold} ms; fire_once fires only the latest missed fire"
                );
                if let Some((last, earlier)) = missed.split_last() {
                    for f in earlier {
                        drop(msg.clone(), f);
                    }
                    // Collapsed into the latest *missed* fire: fresher fires (within the
                    // threshold) go as well, they are not misfires.
                    if later_fire(job_id, last.scheduled_at_ms, now_ms - threshold) {
                        drop(msg, last);
                    } else {
                        out.keep.push(last.id.clone());
                    }
                }
            }
        }
    }
    out
}

/// How a job's fires in `(from, until]`, in order, are written when they are generated late:
/// see [`catch_up`].
#[derive(Debug, PartialEq, Eq)]
pub struct CatchUp<'a> {
    /// Missed beyond the catch-up window or the cap: one `expired` record carries their count.
    pub dropped: &'a [i64],
    /// Missed, still delivered: the most recent within the catch-up window, at most `max_catchup`.
    pub kept: &'a [i64],
    /// Not missed (within the misfire threshold of `now_ms`, or ahead).
    pub upcoming: &'a [i64],
}

/// Split a job's generated fires (ascending instants) by its misfire spec at `now_ms`.
pub fn catch_up<'a>(spec: &MisfireSpec, fires: &'a [i64], now_ms: i64) -> CatchUp<'a> {
    let threshold = spec.threshold_ms.unwrap_or(DEFAULT_MISFIRE_THRESHOLD_MS);
    let window = spec.catchup_window_ms.unwrap_or(DEFAULT_CATCHUP_WINDOW_MS);
    let cap = spec.max_catchup.unwrap_or(DEFAULT_MAX_CATCHUP).max(1) as usize;
    let missed_end = fires.partition_point(|t| *t < now_ms - threshold);
    let (missed, upcoming) = fires.split_at(missed_end);
    // Keep the most recent missed fires inside the window, at most `cap`; count the rest.
    let keep_from = missed.partition_point(|t| *t < now_ms - window).max(missed.len().saturating_sub(cap));
    let (dropped, kept) = missed.split_at(keep_from);
    CatchUp { dropped, kept, upcoming }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fire(job: &str, at: i64) -> LateFire {
        LateFire { id: format!("{job}@{at}"), job_id: job.into(), scheduled_at_ms: at }
    }

    fn spec(policy: MisfirePolicy) -> MisfireSpec {
        MisfireSpec { policy, threshold_ms: Some(5_000), catchup_window_ms: Some(60_000), max_catchup: None }
    }

    #[test]
    fn each_policy_decides_a_backlog_in_one_pass() {
        let now = 100_000;
        let fires: Vec<LateFire> =
            [("s", 80_000), ("s", 90_000), ("s", 97_000), ("o", 80_000), ("o", 90_000), ("a", 30_000), ("a", 90_000)]
                .iter()
                .map(|(j, t)| fire(j, *t))
                .collect();
        let specs = HashMap::from([
            ("s".to_string(), spec(MisfirePolicy::Skip)),
            ("o".to_string(), spec(MisfirePolicy::FireOnce)),
            ("a".to_string(), spec(MisfirePolicy::FireAll)),
        ]);
        let d = decide(&fires, &specs, now, |_, _, _| false);
        let mut keep = d.keep.clone();
        keep.sort();
        // skip: the two missed fires expire, the one within the threshold goes; fire_once: only
        // the latest missed fire goes; fire_all: the fire beyond the window expires.
        assert_eq!(keep, ["a@90000", "o@90000", "s@97000"]);
        let expired: Vec<String> = d.expire.values().flatten().cloned().collect();
        assert_eq!(expired.len(), 4);
        assert_eq!(d.expire.len(), 3, "one message (one statement) per policy and threshold");
    }

    #[test]
    fn fire_once_drops_the_latest_too_when_a_later_fire_exists() {
        let specs = HashMap::from([("o".to_string(), spec(MisfirePolicy::FireOnce))]);
        let d = decide(&[fire("o", 10_000)], &specs, 100_000, |job, at, before| {
            assert_eq!((job, at, before), ("o", 10_000, 95_000));
            true
        });
        assert!(d.keep.is_empty());
        // A fresh fire of the job (within the threshold) is no misfire: the latest missed
        // fire still goes, and so does the fresh one.
        let d = decide(&[fire("o", 10_000), fire("o", 99_000)], &specs, 100_000, |_, _, _| false);
        let mut keep = d.keep.clone();
        keep.sort();
        assert_eq!(keep, ["o@10000", "o@99000"]);
    }

    #[test]
    fn fires_of_unknown_jobs_are_kept_for_dispatch_to_cancel() {
        let d = decide(&[fire("gone", 0)], &HashMap::new(), 100_000, |_, _, _| false);
        assert_eq!(d.keep, ["gone@0"]);
    }

    #[test]
    fn late_generated_fires_keep_the_latest_within_the_window_and_the_cap() {
        let spec = MisfireSpec {
            policy: MisfirePolicy::FireAll,
            threshold_ms: Some(5_000),
            catchup_window_ms: Some(60_000),
            max_catchup: Some(3),
        };
        let now = 1_000_000;
        // Every 10 s from 120 s ago to 20 s ahead.
        let fires: Vec<i64> = (-12..=2).map(|k| now + k * 10_000).collect();
        let c = catch_up(&spec, &fires, now);
        assert_eq!(c.kept, &[now - 30_000, now - 20_000, now - 10_000], "the cap keeps the latest three missed");
        assert_eq!(c.dropped.len(), 9);
        assert_eq!(c.upcoming, &[now, now + 10_000, now + 20_000], "within the threshold is not missed");
        let wide = MisfireSpec { max_catchup: Some(100), ..spec.clone() };
        let c = catch_up(&wide, &fires, now);
        assert_eq!(c.kept.first(), Some(&(now - 60_000)), "the window bounds what is kept");
        assert_eq!(c.dropped, &fires[..6]);
        assert!(catch_up(&spec, &[], now).dropped.is_empty());
    }
}
