//! What a run prints: everything in one serialisable [`Report`], shown as text or JSON.

use std::fmt::Write as _;

use serde::Serialize;

use crate::baseline::{Floor, FloorKind, RawInserts};
use crate::cpu::Usage;
use crate::db::Accounting;
use crate::measure::{Outcome, Window};

#[derive(Debug, Serialize)]
pub struct Case {
    pub jobs: usize,
    pub phase: String,
    /// `--cron`: the expression every job fires on.
    pub cron: Option<String>,
    pub database: String,
    pub database_server: String,
    /// `--env` settings: NOT Sundial's defaults.
    pub env_overrides: Vec<String>,
    pub sundial_bin: String,
    pub sundial_version: String,
    pub git_commit: Option<String>,
    pub nproc: usize,
    pub cpu_model: String,
    pub measure_after_s: u64,
    /// From the end of creation to the window's start: `measure_after_s`, rounded up so the
    /// window starts on a whole second.
    pub window_start_after_creation_s: f64,
    pub window_s: u64,
    pub grace_s: u64,
    /// Scheduled times measured, epoch ms `[start, end)`.
    pub window: Window,
    /// When the CPU was read, epoch ms: the window, or (`--cron`) as long, from 10 s before it.
    pub cpu_span: Window,
}

/// Jobs created in a time.
#[derive(Debug, Serialize)]
pub struct Rate {
    pub jobs: usize,
    pub secs: f64,
    pub jobs_per_sec: f64,
}

impl Rate {
    pub fn new(jobs: usize, secs: f64) -> Rate {
        Rate { jobs, secs, jobs_per_sec: ratio(jobs as f64, secs) }
    }
}

#[derive(Debug, Serialize)]
pub struct Creation {
    pub jobs: usize,
    pub secs: f64,
    pub jobs_per_sec: f64,
    /// Connections of the single creates.
    pub connections: usize,
    /// The jobs created through `POST /api/v1/jobs/batch`.
    pub batch: Option<Rate>,
    pub batch_size: usize,
    pub batches_in_flight: usize,
    /// The jobs created one `POST /api/v1/jobs` each (`--single-create-sample`).
    pub single: Option<Rate>,
    /// Sundial's resident memory right after the last job was created.
    pub sundial_rss_mib: Option<f64>,
    /// CPU over the creation.
    pub cpu: Usage,
}

impl Creation {
    fn lines(&self, s: &mut String) {
        let mut parts = Vec::new();
        if let Some(b) = &self.batch {
            parts.push(format!(
                "batch {} in {:.2} s = {:.0}/s ({} a call, {} in flight)",
                b.jobs, b.secs, b.jobs_per_sec, self.batch_size, self.batches_in_flight
            ));
        }
        if let Some(o) = &self.single {
            parts.push(format!(
                "single {} in {:.2} s = {:.0}/s ({} connections)",
                o.jobs, o.secs, o.jobs_per_sec, self.connections
            ));
        }
        let _ = writeln!(
            s,
            "jobs:      {} created in {:.2} s ({:.0}/s): {}",
            self.jobs,
            self.secs,
            self.jobs_per_sec,
            parts.join("; ")
        );
        let _ = writeln!(
            s,
            "           while creating: cpu {}; sundial RSS after: {}",
            cpu_line(&self.cpu),
            self.sundial_rss_mib.map_or("?".into(), |m| format!("{m:.0} MiB"))
        );
    }
}

/// CPU per fire delivered in the window against the floor's per POST, µs.
#[derive(Debug, Serialize)]
pub struct CpuPerFire {
    pub sundial_us: Option<f64>,
    /// `mariadbd`'s (none on SQLite, whose work is in sundial's).
    pub database_us: Option<f64>,
    pub sum_us: Option<f64>,
    /// The floor's sender: its CPU over every POST it sent.
    pub floor_us_per_post: Option<f64>,
    /// `sum_us / floor_us_per_post`.
    pub ratio: Option<f64>,
}

impl CpuPerFire {
    pub fn new(cpu: &Usage, delivered: u64, sqlite: bool, floor: &Floor) -> CpuPerFire {
        let per_fire = |name: &str| {
            let secs = cpu.cpu_secs.iter().find(|(n, _)| n == name).and_then(|(_, s)| *s);
            secs.filter(|_| delivered > 0).map(|s| s * 1e6 / delivered as f64)
        };
        let sundial_us = per_fire("sundial");
        let database_us = if sqlite { None } else { per_fire("mariadbd") };
        let sum_us = match (sundial_us, database_us, sqlite) {
            (Some(a), _, true) => Some(a),
            (Some(a), Some(b), false) => Some(a + b),
            _ => None,
        };
        let floor_us_per_post = floor.cpu_us_per_post;
        let ratio = match (sum_us, floor_us_per_post) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        };
        CpuPerFire { sundial_us, database_us, sum_us, floor_us_per_post, ratio }
    }
}

/// `--create-only`: what creating the jobs took.
#[derive(Debug, Serialize)]
pub struct CreateOnlyReport {
    pub jobs: usize,
    pub cron: String,
    pub database: String,
    pub database_server: String,
    pub sundial_bin: String,
    pub sundial_version: String,
    pub git_commit: Option<String>,
    pub nproc: usize,
    pub cpu_model: String,
    pub creation: Creation,
    pub raw_inserts: RawInserts,
    pub sundial_exit: String,
}

impl CreateOnlyReport {
    pub fn human(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "== sundial-bench --create-only: J = {} jobs, cron `{}`, {} ==",
            self.jobs, self.cron, self.database
        );
        let _ = writeln!(
            s,
            "sundial:   {} ({}), commit {}",
            self.sundial_bin,
            self.sundial_version,
            self.git_commit.as_deref().unwrap_or("?")
        );
        let _ = writeln!(s, "database:  {}", self.database_server);
        let _ = writeln!(s, "machine:   {} cores, {}", self.nproc, self.cpu_model);
        self.creation.lines(&mut s);
        let r = &self.raw_inserts;
        let _ = writeln!(
            s,
            "raw insert: {} rows ({} a statement, one commit each) in {:.3} s = {:.0} rows/s",
            r.rows, r.rows_per_statement, r.secs, r.rows_per_sec
        );
        let _ = writeln!(s, "sundial:   {}", self.sundial_exit);
        s
    }
}

/// `name X %, …` of each tracked process.
fn cpu_line(u: &Usage) -> String {
    let cpu: Vec<String> =
        u.processes.iter().map(|(n, p)| format!("{n} {}", p.map_or("?".into(), |p| format!("{p:.0} %")))).collect();
    format!(
        "{}, everything else {} (% of one core); machine {} of {} cores busy",
        cpu.join(", "),
        u.everything_else_pct_of_one_core.map_or("?".into(), |p| format!("{p:.0} %")),
        u.machine_busy_pct_of_all_cores.map_or("?".into(), |p| format!("{p:.0} %")),
        u.cores
    )
}

#[derive(Debug, Serialize)]
pub struct Stall {
    /// Seconds from the window's start.
    pub stopped_at_s: f64,
    pub resumed_at_s: f64,
    /// Seconds after the resume from which every later second of the window had all its fires
    /// delivered with p99 ≤ 1,000 ms (`None`: not within the window).
    pub on_time_again_after_s: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct Ratios {
    pub p99_over_floor_p99: f64,
    pub p50_over_floor_p50: f64,
    pub fires_per_sec_over_jobs: f64,
    pub fires_per_sec_over_raw_insert_rows_per_sec: f64,
}

#[derive(Debug, Serialize)]
pub struct Verdict {
    pub missed_zero: bool,
    pub p99_within_2x_floor: bool,
    pub pass: bool,
}

#[derive(Debug, Serialize)]
pub struct SinkCounts {
    pub bad_signatures: u64,
    pub unreadable: u64,
    pub cancels: u64,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub case: Case,
    pub creation: Creation,
    pub floor: Floor,
    pub raw_inserts: RawInserts,
    pub outcome: Outcome,
    pub sink: SinkCounts,
    pub cpu: Usage,
    pub cpu_per_fire: CpuPerFire,
    pub accounting: Option<Accounting>,
    pub accounting_error: Option<String>,
    pub stall: Option<Stall>,
    pub ratios: Ratios,
    pub verdict: Verdict,
    /// `--small-tenant`: the second tenant's lateness alone and beside the herd.
    pub small_tenant: Option<crate::small::SmallReport>,
    pub sundial_exit: String,
    pub sundial_log: Option<String>,
}

pub fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { f64::NAN }
}

impl Report {
    pub fn ratios_and_verdict(outcome: &Outcome, floor: &Floor, raw: &RawInserts, jobs: usize) -> (Ratios, Verdict) {
        let l = &outcome.lateness_ms;
        let ratios = Ratios {
            p99_over_floor_p99: ratio(l.p99, floor.lateness_ms.p99),
            p50_over_floor_p50: ratio(l.p50, floor.lateness_ms.p50),
            fires_per_sec_over_jobs: ratio(outcome.fires_per_sec, jobs as f64),
            fires_per_sec_over_raw_insert_rows_per_sec: ratio(outcome.fires_per_sec, raw.rows_per_sec),
        };
        let missed_zero = outcome.missed == 0;
        let p99_within_2x_floor = l.n > 0 && l.p99 <= 2.0 * floor.lateness_ms.p99;
        (ratios, Verdict { missed_zero, p99_within_2x_floor, pass: missed_zero && p99_within_2x_floor })
    }

    // Over 100 lines on purpose: the report, section by section, in the order it prints.
    pub fn human(&self) -> String {
        let mut s = String::new();
        let c = &self.case;
        let o = &self.outcome;
        let l = &o.lateness_ms;
        let f = &self.floor;
        let _ = writeln!(s, "== sundial-bench: J = {} jobs, phase {}, {} ==", c.jobs, c.phase, c.database);
        let _ = writeln!(
            s,
            "sundial:   {} ({}), commit {}",
            c.sundial_bin,
            c.sundial_version,
            c.git_commit.as_deref().unwrap_or("?")
        );
        let _ = writeln!(s, "database:  {}", c.database_server);
        let _ = writeln!(s, "machine:   {} cores, {}", c.nproc, c.cpu_model);
        if c.env_overrides.is_empty() {
            let _ = writeln!(s, "config:    Sundial defaults (no --env overrides)");
        } else {
            let _ = writeln!(s, "config:    NON-DEFAULT settings: {}", c.env_overrides.join(" "));
        }
        self.creation.lines(&mut s);
        let _ = writeln!(
            s,
            "window:    fires scheduled {:.1} s to {:.1} s after creation ended ({} s), grace {} s{}",
            c.window_start_after_creation_s,
            c.window_start_after_creation_s + c.window_s as f64,
            c.window_s,
            c.grace_s,
            match c.cpu_span.start_ms < c.window.start_ms {
                true => format!(
                    "; cpu read over as long from {:.1} s before it",
                    (c.window.start_ms - c.cpu_span.start_ms) as f64 / 1000.0
                ),
                false => String::new(),
            }
        );
        let _ = writeln!(s);
        let how = match f.kind {
            FloorKind::PerSecond => "in 5 whole seconds".to_string(),
            FloorKind::Burst => {
                format!("in one burst at a whole second (after a warm-up of {})", f.sent_with_warm_up - f.sent)
            }
        };
        let _ = writeln!(
            s,
            "floor:     {} POSTs {how}, {} received, {} errors; lateness p50 {:.1} / p90 {:.1} / p99 {:.1} / max {:.1} ms; sender cpu {} a POST",
            f.sent,
            f.received,
            f.errors,
            f.lateness_ms.p50,
            f.lateness_ms.p90,
            f.lateness_ms.p99,
            f.lateness_ms.max,
            f.cpu_us_per_post.map_or("?".into(), |u| format!("{u:.1} µs"))
        );
        let r = &self.raw_inserts;
        let _ = writeln!(
            s,
            "raw insert: {} rows ({} a statement, one commit each) in {:.3} s = {:.0} rows/s",
            r.rows, r.rows_per_statement, r.secs, r.rows_per_sec
        );
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "sundial:   expected {}, delivered {} within the grace, MISSED {} ({} after the grace)",
            o.expected, o.delivered, o.missed, o.after_grace
        );
        let _ = writeln!(
            s,
            "           lateness p50 {:.1} / p90 {:.1} / p99 {:.1} / max {:.1} ms; {:.1} fires/s",
            l.p50, l.p90, l.p99, l.max, o.fires_per_sec
        );
        let _ = writeln!(
            s,
            "           duplicate runs (exactly-once breach) {}, redeliveries (same webhook-id) {}, unexpected {}, bad signatures {}, unreadable {}, cancels {}",
            o.duplicate_runs,
            o.redeliveries,
            o.unexpected,
            self.sink.bad_signatures,
            self.sink.unreadable,
            self.sink.cancels
        );
        let _ = writeln!(s, "cpu:       {}", cpu_line(&self.cpu));
        let us = |v: Option<f64>| v.map_or("?".into(), |v| format!("{v:.1} µs"));
        let p = &self.cpu_per_fire;
        let _ = writeln!(
            s,
            "cpu/fire:  sundial {} + database {} = {} a fire delivered; floor {} a POST; ratio {}",
            us(p.sundial_us),
            if c.database.starts_with("sqlite") { "(in sundial)".into() } else { us(p.database_us) },
            us(p.sum_us),
            us(p.floor_us_per_post),
            p.ratio.map_or("?".into(), |r| format!("{r:.2}"))
        );
        if let Some(a) = &self.accounting {
            let states: Vec<String> = a.runs_by_state.iter().map(|(s, n)| format!("{s} {n}")).collect();
            let _ = writeln!(
                s,
                "database:  runs in the window by state: {}; fires counted expired: {}",
                states.join(", "),
                a.expired_fires
            );
            if o.missed > 0 {
                let rec: Vec<String> = a.undelivered_recorded.iter().map(|(s, n)| format!("{s} {n}")).collect();
                let _ = writeln!(
                    s,
                    "           undelivered but recorded: {}",
                    if rec.is_empty() { "none".into() } else { rec.join(", ") }
                );
            }
            if a.unaccounted == 0 {
                let _ = writeln!(s, "           none lost: every expected fire was delivered or recorded");
            } else {
                let states: Vec<String> = a.unaccounted_by_state.iter().map(|(s, n)| format!("{s} {n}")).collect();
                let _ = writeln!(
                    s,
                    "           UNACCOUNTED: {} fires neither delivered nor in a final state ({}), e.g. {}",
                    a.unaccounted,
                    states.join(", "),
                    a.unaccounted_examples.join(", ")
                );
            }
        }
        if let Some(e) = &self.accounting_error {
            let _ = writeln!(s, "database:  accounting failed: {e}");
        }
        if let Some(st) = &self.stall {
            let _ = writeln!(
                s,
                "stall:     mariadbd stopped at +{:.1} s, resumed at +{:.1} s; on time again {}",
                st.stopped_at_s,
                st.resumed_at_s,
                st.on_time_again_after_s.map_or("NOT within the window".into(), |n| format!("after {n:.0} s"))
            );
        }
        let _ = writeln!(s);
        let _ = writeln!(s, "per scheduled second (from the window's start): delivered/expected p50 p99 ms");
        // A cron window's seconds without a fire (between herds) are left out.
        for sec in o.series.iter().filter(|sec| sec.expected > 0 || sec.delivered > 0) {
            let _ = writeln!(
                s,
                "  {:>4} s  {:>7}/{:<7} {:>9.1} {:>9.1}",
                sec.at, sec.delivered, sec.expected, sec.p50_ms, sec.p99_ms
            );
        }
        let _ = writeln!(s);
        let rt = &self.ratios;
        let _ = writeln!(
            s,
            "ratios:    p99 / floor p99 = {:.2}; p50 / floor p50 = {:.2}; fires/s / J = {:.3}; fires/s / raw insert rows/s = {:.3}",
            rt.p99_over_floor_p99,
            rt.p50_over_floor_p50,
            rt.fires_per_sec_over_jobs,
            rt.fires_per_sec_over_raw_insert_rows_per_sec
        );
        let v = &self.verdict;
        if self.case.phase.ends_with("hung executor") {
            let _ = writeln!(
                s,
                "herd:      its executor never answers (--hung): the figures above only show that none of its fires \
                 was answered (they wait, time out, fail `saturated` or queue behind their job's last run); the \
                 verdict is the small tenant's"
            );
        }
        let _ = writeln!(
            s,
            "verdict:   {} (missed = 0: {}; p99 {:.1} ms ≤ 2 × floor p99 {:.1} ms: {})",
            if v.pass { "PASS" } else { "FAIL" },
            if v.missed_zero { "yes" } else { "no" },
            l.p99,
            2.0 * f.lateness_ms.p99,
            if v.p99_within_2x_floor { "yes" } else { "no" }
        );
        if let Some(t) = &self.small_tenant {
            let (i, l) = (&t.idle.lateness_ms, &t.loaded.lateness_ms);
            let _ = writeln!(
                s,
                "small tenant (1 job on the same second, own sink): alone p50/p99 {:.1}/{:.1} ms ({}/{}); beside the herd p50/p99 {:.1}/{:.1} ms ({}/{})",
                i.p50, i.p99, t.idle.delivered, t.idle.expected, l.p50, l.p99, t.loaded.delivered, t.loaded.expected
            );
            let each = |v: &[f64]| v.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(" ");
            let _ = writeln!(
                s,
                "small, each fire (ms late): alone {}; beside the herd {}",
                each(&t.idle.each_ms),
                each(&t.loaded.each_ms)
            );
            let _ = writeln!(
                s,
                "small verdict: {} (p99 {:.1} ms ≤ max(1.5 × alone, alone + 50) = {:.1} ms, none missed)",
                if t.pass { "PASS" } else { "FAIL" },
                l.p99,
                t.bound_ms
            );
            for (at, ms) in &t.loaded.late {
                let _ = writeln!(s, "small, late: scheduled {at}, {ms:.0} ms late");
            }
            for r in &t.not_succeeded {
                let _ = writeln!(s, "small, not succeeded: {r}");
            }
        }
        let _ = writeln!(s, "sundial:   {}", self.sundial_exit);
        if let Some(log) = &self.sundial_log {
            let _ = writeln!(s, "log kept:  {log}");
        }
        s
    }
}
