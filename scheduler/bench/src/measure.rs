//! The arithmetic of a measurement, pure so it is unit-tested: which fires are expected in
//! the window, which arrived within the grace, how late, duplicates, and the per-second series.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::sink::Rec;

/// Every benchmark job fires once a second.
pub const PERIOD_MS: i64 = 1000;

/// The scheduled times `[start_ms, end_ms)` whose fires are measured.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Window {
    pub start_ms: i64,
    pub end_ms: i64,
}

impl Window {
    /// Fires of a per-second job at phase `offset_ms` (0..1000) inside the window.
    pub fn fires(&self, offset_ms: i64) -> impl Iterator<Item = i64> + use<> {
        let first = self.start_ms + (offset_ms - self.start_ms).rem_euclid(PERIOD_MS);
        (first..self.end_ms).step_by(PERIOD_MS as usize)
    }

    pub fn contains(&self, t_ms: i64) -> bool {
        (self.start_ms..self.end_ms).contains(&t_ms)
    }

    pub fn secs(&self) -> f64 {
        (self.end_ms - self.start_ms) as f64 / 1000.0
    }
}

/// Phase of job `i` of `j` for `--phase spread`: `i·1000/J` ms into the second.
pub fn spread_offset_ms(i: usize, j: usize) -> i64 {
    (i as i64 * PERIOD_MS) / j.max(1) as i64
}

/// p50/p90/p99/max of millisecond values (nearest rank).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Pct {
    pub n: usize,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

/// The `p`-quantile (0..=1) of sorted values, nearest rank.
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

pub fn pct(mut v: Vec<f64>) -> Pct {
    v.sort_by(f64::total_cmp);
    Pct {
        n: v.len(),
        p50: quantile(&v, 0.5),
        p90: quantile(&v, 0.9),
        p99: quantile(&v, 0.99),
        max: v.last().copied().unwrap_or(0.0),
    }
}

/// One scheduled second of the window.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Second {
    /// Seconds from the window's start.
    pub at: i64,
    pub expected: u64,
    pub delivered: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// What the sink saw of the window's fires.
#[derive(Debug, Default, Serialize)]
pub struct Outcome {
    pub expected: u64,
    /// Distinct (job, scheduled time) received within the grace.
    pub delivered: u64,
    pub missed: u64,
    /// Received, but after the grace (counted as missed too).
    pub after_grace: u64,
    /// Extra runs of one (job, scheduled time): an exactly-once breach.
    pub duplicate_runs: u64,
    /// Extra receipts of one `webhook-id` (a redelivery, allowed by the protocol).
    pub redeliveries: u64,
    /// In-window deliveries of a job or time the benchmark did not expect.
    pub unexpected: u64,
    /// Lateness (receive − scheduled) of each delivered fire's first receipt.
    pub lateness_ms: Pct,
    pub fires_per_sec: f64,
    pub series: Vec<Second>,
    /// The fires not delivered within the grace: (job index, scheduled ms).
    #[serde(skip)]
    pub missing: Vec<(usize, i64)>,
}

/// The fires the benchmark expects of its jobs.
#[derive(Clone, Copy, Debug)]
pub enum Expected<'a> {
    /// Job i fires once a second at phase `offsets[i]` (0..1000 ms into the second).
    PerSecond(&'a [i64]),
    /// `jobs` jobs of one cron expression, all firing at each of these instants (epoch ms,
    /// ascending): `--cron`, whose herds are `jobs` fires at one instant.
    Instants { jobs: usize, at: &'a [i64] },
}

impl Expected<'_> {
    pub fn jobs(&self) -> usize {
        match self {
            Expected::PerSecond(offsets) => offsets.len(),
            Expected::Instants { jobs, .. } => *jobs,
        }
    }

    /// The fires of job `j` scheduled in the window.
    pub fn fires(&self, j: usize, w: Window) -> Vec<i64> {
        match self {
            Expected::PerSecond(offsets) => w.fires(offsets[j]).collect(),
            Expected::Instants { at, .. } => at.iter().copied().filter(|t| w.contains(*t)).collect(),
        }
    }

    /// Is `t_ms` a fire time of job `j` (a known job)?
    pub fn is_fire(&self, j: usize, t_ms: i64) -> bool {
        match self {
            Expected::PerSecond(offsets) => j < offsets.len() && (t_ms - offsets[j]).rem_euclid(PERIOD_MS) == 0,
            Expected::Instants { jobs, at } => j < *jobs && at.binary_search(&t_ms).is_ok(),
        }
    }

    /// The shortest time between two fires of a job (what one `expired` row counting several
    /// fires spans per fire).
    pub fn period_ms(&self) -> i64 {
        match self {
            Expected::PerSecond(_) => PERIOD_MS,
            Expected::Instants { at, .. } => at.windows(2).map(|w| w[1] - w[0]).min().unwrap_or(PERIOD_MS),
        }
    }
}

/// Analyse `recs` (whose `job` is already mapped to the index into the jobs, or `u32::MAX`
/// for a job of no one's) against the fires `expected` of the jobs in the window. A fire
/// counts as delivered if its first receipt came at or before `deadline_us`.
pub fn analyse(recs: &[Rec], expected: Expected<'_>, w: Window, deadline_us: i64) -> Outcome {
    let mut out = Outcome::default();
    // (job, scheduled) -> (first receipt µs, run hashes seen)
    let mut seen: HashMap<(u32, i64), (i64, Vec<u64>)> = HashMap::new();
    let mut msgs: HashSet<u64> = HashSet::new();
    for r in recs.iter().filter(|r| w.contains(r.scheduled_ms)) {
        if !expected.is_fire(r.job as usize, r.scheduled_ms) {
            out.unexpected += 1;
            continue;
        }
        if !msgs.insert(r.msg) {
            out.redeliveries += 1;
        }
        let e = seen.entry((r.job, r.scheduled_ms)).or_insert((r.received_us, Vec::new()));
        e.0 = e.0.min(r.received_us);
        if !e.1.contains(&r.run) {
            e.1.push(r.run);
        }
    }
    let secs = ((w.end_ms - w.start_ms) + PERIOD_MS - 1) / PERIOD_MS;
    let mut per_second: Vec<(u64, Vec<f64>)> = vec![(0, Vec::new()); secs.max(0) as usize];
    let mut all = Vec::with_capacity(seen.len());
    for j in 0..expected.jobs() {
        for t in expected.fires(j, w) {
            out.expected += 1;
            let slot = &mut per_second[((t - w.start_ms) / PERIOD_MS) as usize];
            slot.0 += 1;
            match seen.get(&(j as u32, t)) {
                Some((first_us, runs)) => {
                    out.duplicate_runs += runs.len() as u64 - 1;
                    if *first_us <= deadline_us {
                        let late = (*first_us - t * 1000) as f64 / 1000.0;
                        all.push(late);
                        slot.1.push(late);
                    } else {
                        out.after_grace += 1;
                        out.missing.push((j, t));
                    }
                }
                None => out.missing.push((j, t)),
            }
        }
    }
    out.delivered = all.len() as u64;
    out.missed = out.expected - out.delivered;
    out.lateness_ms = pct(all);
    out.fires_per_sec = out.delivered as f64 / w.secs();
    out.series = per_second
        .into_iter()
        .enumerate()
        .map(|(i, (expected, late))| {
            let p = pct(late);
            Second { at: i as i64, expected, delivered: p.n as u64, p50_ms: p.p50, p99_ms: p.p99 }
        })
        .collect();
    out
}

/// "On time again": the first second (from the window's start) at or after `from_sec` from
/// which every later second has all its fires delivered with p99 ≤ `bound_ms`. `None` if
/// the window's last second is not such a second.
pub fn on_time_from(series: &[Second], from_sec: i64, bound_ms: f64) -> Option<i64> {
    let good = |s: &Second| s.delivered == s.expected && s.p99_ms <= bound_ms;
    let mut first = None;
    for s in series.iter().rev() {
        if s.at < from_sec || !good(s) {
            break;
        }
        first = Some(s.at);
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(job: u32, scheduled_ms: i64, late_ms: i64, run: u64, msg: u64) -> Rec {
        Rec { job, scheduled_ms, received_us: (scheduled_ms + late_ms) * 1000, run, msg }
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let p = pct(v.into_iter().rev().collect());
        assert_eq!((p.n, p.p50, p.p90, p.p99, p.max), (100, 50.0, 90.0, 99.0, 100.0));
        assert_eq!(pct(vec![]), Pct::default());
        assert_eq!(pct(vec![7.0]).p99, 7.0);
        assert_eq!(quantile(&[1.0, 2.0], 0.5), 1.0);
    }

    #[test]
    fn window_fires_by_phase() {
        let w = Window { start_ms: 10_000, end_ms: 13_000 };
        assert_eq!(w.fires(0).collect::<Vec<_>>(), vec![10_000, 11_000, 12_000]);
        assert_eq!(w.fires(250).collect::<Vec<_>>(), vec![10_250, 11_250, 12_250]);
        let odd = Window { start_ms: 10_500, end_ms: 12_500 };
        assert_eq!(odd.fires(0).collect::<Vec<_>>(), vec![11_000, 12_000]);
        assert_eq!(odd.fires(700).collect::<Vec<_>>(), vec![10_700, 11_700]);
    }

    #[test]
    fn spread_anchors_cover_the_second() {
        let offs: Vec<i64> = (0..4).map(|i| spread_offset_ms(i, 4)).collect();
        assert_eq!(offs, vec![0, 250, 500, 750]);
        assert_eq!(spread_offset_ms(2999, 3000), 999);
        assert!((0..5000).map(|i| spread_offset_ms(i, 5000)).all(|o| (0..1000).contains(&o)));
    }

    #[test]
    fn misses_duplicates_redeliveries_and_grace() {
        let w = Window { start_ms: 10_000, end_ms: 12_000 };
        let offsets = [0, 500];
        let deadline_us = (12_000 + 5_000) * 1000;
        let recs = vec![
            rec(0, 10_000, 5, 1, 100),
            rec(0, 11_000, 7, 2, 101),
            rec(0, 11_000, 9, 2, 101), // redelivery: same run, same webhook-id
            rec(1, 10_500, 3, 3, 102),
            rec(1, 10_500, 4, 4, 103),     // a second run of the same fire: exactly-once breach
            rec(1, 11_500, 6_000, 5, 104), // after the grace
            rec(0, 9_000, 1, 6, 105),      // before the window: ignored
            rec(1, 11_000, 1, 7, 106),     // off phase
            rec(7, 11_000, 1, 8, 107),     // unknown job
        ];
        let o = analyse(&recs, Expected::PerSecond(&offsets), w, deadline_us);
        assert_eq!(o.expected, 4);
        assert_eq!(o.delivered, 3);
        assert_eq!(o.missed, 1);
        assert_eq!(o.after_grace, 1);
        assert_eq!(o.missing, vec![(1, 11_500)]);
        assert_eq!(o.duplicate_runs, 1);
        assert_eq!(o.redeliveries, 1);
        assert_eq!(o.unexpected, 2);
        assert_eq!(o.lateness_ms.max, 7.0, "first receipts only: {:?}", o.lateness_ms);
        assert_eq!(o.fires_per_sec, 1.5);
    }

    #[test]
    fn per_second_series_and_recovery() {
        let w = Window { start_ms: 0, end_ms: 5_000 };
        let offsets = [0, 0];
        let mut recs = Vec::new();
        for s in 0..5i64 {
            for j in 0..2u32 {
                // second 1 loses a fire, second 2 is 3 s late, the rest are on time
                let late = if s == 2 { 3_000 } else { 10 };
                if s == 1 && j == 1 {
                    continue;
                }
                recs.push(rec(j, s * 1000, late, (s * 10 + j as i64) as u64, (s * 10 + j as i64) as u64));
            }
        }
        let o = analyse(&recs, Expected::PerSecond(&offsets), w, 100_000_000);
        let shape: Vec<(i64, u64, u64, f64)> =
            o.series.iter().map(|s| (s.at, s.expected, s.delivered, s.p99_ms)).collect();
        assert_eq!(shape, vec![(0, 2, 2, 10.0), (1, 2, 1, 10.0), (2, 2, 2, 3000.0), (3, 2, 2, 10.0), (4, 2, 2, 10.0)]);
        assert_eq!(on_time_from(&o.series, 0, 1000.0), Some(3));
        assert_eq!(on_time_from(&o.series, 4, 1000.0), Some(4));
        assert_eq!(on_time_from(&o.series, 0, 5.0), None);
        assert_eq!(on_time_from(&o.series, 0, 5000.0), Some(2));
    }

    #[test]
    fn a_cron_herd_expects_every_job_at_each_instant_in_the_window() {
        let w = Window { start_ms: 60_000, end_ms: 180_000 };
        // Instants every minute at second 0; 120,000 is the only other one in the window.
        let at = [0, 60_000, 120_000, 180_000];
        let expected = Expected::Instants { jobs: 3, at: &at };
        assert_eq!(expected.fires(0, w), vec![60_000, 120_000]);
        assert_eq!(expected.period_ms(), 60_000);
        let mut recs = Vec::new();
        for j in 0..3u32 {
            recs.push(rec(j, 60_000, 100 + j as i64, j as u64, j as u64));
            if j != 2 {
                recs.push(rec(j, 120_000, 300, 10 + j as u64, 10 + j as u64));
            }
        }
        recs.push(rec(0, 61_000, 1, 20, 20)); // not an instant of the expression
        recs.push(rec(0, 180_000, 1, 21, 21)); // after the window: ignored
        let o = analyse(&recs, expected, w, 1_000_000_000);
        assert_eq!((o.expected, o.delivered, o.missed, o.unexpected), (6, 5, 1, 1));
        assert_eq!(o.missing, vec![(2, 120_000)]);
        assert_eq!(o.lateness_ms.max, 300.0);
        let herds: Vec<(i64, u64, u64)> =
            o.series.iter().filter(|s| s.expected > 0).map(|s| (s.at, s.expected, s.delivered)).collect();
        assert_eq!(herds, vec![(0, 3, 3), (60, 3, 2)], "one second of the series per herd");
        assert_eq!(o.series.len(), 120);
    }
}
