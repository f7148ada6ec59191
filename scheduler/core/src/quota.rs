//! Tenant quotas: the limits a tenant works within, what a schedule counts towards
//! `max_fires_per_second`, and the rule that refuses a change going over a limit.
//!
//! The node's configuration holds the defaults ([`Quotas`]); the operator overrides any of
//! them per tenant ([`QuotaOverrides`], stored). Usage is counted by the store; the rules
//! here are pure.

use serde::{Deserialize, Serialize};

use crate::error::FieldError;
use crate::schedule::{Schedule, Trigger};

/// Fire rates are counted in millionths of a fire per second, so that sums are exact.
pub const MICROS_PER_FIRE: i64 = 1_000_000;

/// An upper bound of a schedule's fires per second at its busiest, in millionths of a fire
/// per second, rounded up.
///
/// - fixed rate: `1000 / every_ms` (a 1,000 ms job counts one fire per second);
/// - cron: the seconds of a minute it may fire, over 60: any 60-second window holds each
///   second-of-minute once, so no minute of the year has more fires than that (`* * * * * *`
///   counts 1, a 5-field minute cron or `@hourly` 1/60). Hours, days and months the
///   expression leaves out only lower the true rate, so the bound stays sound;
/// - one-shot and manual: 0 (they never fire on their own more than once).
pub fn peak_fire_rate_micros(schedule: &Schedule) -> i64 {
    match &schedule.trigger {
        Trigger::FixedRate { every_ms, .. } => ceil_div(1_000 * MICROS_PER_FIRE, (*every_ms).max(1)),
        Trigger::Cron { cron, .. } => ceil_div(i64::from(cron.seconds_per_minute()) * MICROS_PER_FIRE, 60),
        Trigger::Once { .. } | Trigger::Manual => 0,
    }
}

fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// Every quota, by the name the API uses (in `GET /usage`, in errors, in the settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Quota {
    /// Jobs of the tenant, whatever their state.
    MaxJobs,
    /// The sum of the active jobs' peak fires per second ([`peak_fire_rate_micros`]).
    MaxFiresPerSecond,
    /// Deliveries of the tenant in flight at once on each node: the engine sizes the tenant's
    /// share of the delivery slots to it (`sundial_engine::bulkhead`). Usage shows the
    /// tenant's runs `dispatching` or `running` across the cluster.
    MaxInflight,
    /// Scripts of the tenant.
    MaxScripts,
    /// Bytes of script source, every version of every script.
    MaxScriptBytes,
    /// Log bytes one run may receive.
    MaxLogBytesPerRun,
    /// Log bytes the tenant's runs may receive in one UTC day.
    MaxLogBytesPerDay,
    /// Jobs handler registrations may create for one app.
    MaxHandlersPerApp,
    /// API requests per second of one API key (a token bucket per node).
    MaxApiRequestsPerSecond,
}

impl Quota {
    pub const ALL: [Quota; 9] = [
        Quota::MaxJobs,
        Quota::MaxFiresPerSecond,
        Quota::MaxInflight,
        Quota::MaxScripts,
        Quota::MaxScriptBytes,
        Quota::MaxLogBytesPerRun,
        Quota::MaxLogBytesPerDay,
        Quota::MaxHandlersPerApp,
        Quota::MaxApiRequestsPerSecond,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Quota::MaxJobs => "max_jobs",
            Quota::MaxFiresPerSecond => "max_fires_per_second",
            Quota::MaxInflight => "max_inflight",
            Quota::MaxScripts => "max_scripts",
            Quota::MaxScriptBytes => "max_script_bytes",
            Quota::MaxLogBytesPerRun => "max_log_bytes_per_run",
            Quota::MaxLogBytesPerDay => "max_log_bytes_per_day",
            Quota::MaxHandlersPerApp => "max_handlers_per_app",
            Quota::MaxApiRequestsPerSecond => "max_api_requests_per_second",
        }
    }

    /// Usage of this quota is counted in millionths (fires per second).
    pub fn in_micros(self) -> bool {
        self == Quota::MaxFiresPerSecond
    }
}

impl std::fmt::Display for Quota {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tenant's limits, every one set: the node's defaults with the operator's overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Quotas {
    pub max_jobs: i64,
    /// Whole fires per second.
    pub max_fires_per_second: i64,
    pub max_inflight: i64,
    pub max_scripts: i64,
    pub max_script_bytes: i64,
    pub max_log_bytes_per_run: i64,
    pub max_log_bytes_per_day: i64,
    pub max_handlers_per_app: i64,
    pub max_api_requests_per_second: i64,
}

impl Default for Quotas {
    /// Defaults that protect a shared install while leaving room for real work.
    fn default() -> Self {
        Self {
            max_jobs: 10_000,
            max_fires_per_second: 1_000,
            max_inflight: 1_000,
            max_scripts: 1_000,
            max_script_bytes: 256 * 1024 * 1024,
            max_log_bytes_per_run: 10 * 1024 * 1024,
            max_log_bytes_per_day: 1024 * 1024 * 1024,
            max_handlers_per_app: 1_000,
            max_api_requests_per_second: 1_000,
        }
    }
}

impl Quotas {
    pub fn get(&self, q: Quota) -> i64 {
        match q {
            Quota::MaxJobs => self.max_jobs,
            Quota::MaxFiresPerSecond => self.max_fires_per_second,
            Quota::MaxInflight => self.max_inflight,
            Quota::MaxScripts => self.max_scripts,
            Quota::MaxScriptBytes => self.max_script_bytes,
            Quota::MaxLogBytesPerRun => self.max_log_bytes_per_run,
            Quota::MaxLogBytesPerDay => self.max_log_bytes_per_day,
            Quota::MaxHandlersPerApp => self.max_handlers_per_app,
            Quota::MaxApiRequestsPerSecond => self.max_api_requests_per_second,
        }
    }

    fn slot(&mut self, q: Quota) -> &mut i64 {
        match q {
            Quota::MaxJobs => &mut self.max_jobs,
            Quota::MaxFiresPerSecond => &mut self.max_fires_per_second,
            Quota::MaxInflight => &mut self.max_inflight,
            Quota::MaxScripts => &mut self.max_scripts,
            Quota::MaxScriptBytes => &mut self.max_script_bytes,
            Quota::MaxLogBytesPerRun => &mut self.max_log_bytes_per_run,
            Quota::MaxLogBytesPerDay => &mut self.max_log_bytes_per_day,
            Quota::MaxHandlersPerApp => &mut self.max_handlers_per_app,
            Quota::MaxApiRequestsPerSecond => &mut self.max_api_requests_per_second,
        }
    }

    /// These defaults with a tenant's overrides applied.
    pub fn with(mut self, o: &QuotaOverrides) -> Quotas {
        for q in Quota::ALL {
            if let Some(v) = o.get(q) {
                *self.slot(q) = v;
            }
        }
        self
    }

    /// The limit in the unit usage is counted in (millionths for fires per second).
    pub fn limit_counted(&self, q: Quota) -> i64 {
        let v = self.get(q);
        if q.in_micros() { v.saturating_mul(MICROS_PER_FIRE) } else { v }
    }

    /// Every limit is 0 or more (0 refuses everything the quota counts).
    pub fn check(&self) -> Result<(), FieldError> {
        for q in Quota::ALL {
            check_value(q, self.get(q))?;
        }
        Ok(())
    }
}

/// Largest value any quota takes (far beyond any real limit; keeps sums far from overflow).
pub const MAX_QUOTA_VALUE: i64 = 1 << 50;

fn check_value(q: Quota, v: i64) -> Result<(), FieldError> {
    if !(0..=MAX_QUOTA_VALUE).contains(&v) {
        return Err(FieldError::invalid(q.as_str(), format!("{v} is out of range 0-{MAX_QUOTA_VALUE}")));
    }
    Ok(())
}

/// The operator's settings for one tenant: `None` follows the node's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct QuotaOverrides {
    #[serde(default)]
    pub max_jobs: Option<i64>,
    #[serde(default)]
    pub max_fires_per_second: Option<i64>,
    #[serde(default)]
    pub max_inflight: Option<i64>,
    #[serde(default)]
    pub max_scripts: Option<i64>,
    #[serde(default)]
    pub max_script_bytes: Option<i64>,
    #[serde(default)]
    pub max_log_bytes_per_run: Option<i64>,
    #[serde(default)]
    pub max_log_bytes_per_day: Option<i64>,
    #[serde(default)]
    pub max_handlers_per_app: Option<i64>,
    #[serde(default)]
    pub max_api_requests_per_second: Option<i64>,
}

impl QuotaOverrides {
    pub fn get(&self, q: Quota) -> Option<i64> {
        match q {
            Quota::MaxJobs => self.max_jobs,
            Quota::MaxFiresPerSecond => self.max_fires_per_second,
            Quota::MaxInflight => self.max_inflight,
            Quota::MaxScripts => self.max_scripts,
            Quota::MaxScriptBytes => self.max_script_bytes,
            Quota::MaxLogBytesPerRun => self.max_log_bytes_per_run,
            Quota::MaxLogBytesPerDay => self.max_log_bytes_per_day,
            Quota::MaxHandlersPerApp => self.max_handlers_per_app,
            Quota::MaxApiRequestsPerSecond => self.max_api_requests_per_second,
        }
    }

    /// Every value set is 0 or more and at most [`MAX_QUOTA_VALUE`].
    pub fn check(&self) -> Result<(), FieldError> {
        for q in Quota::ALL {
            if let Some(v) = self.get(q) {
                check_value(q, v)?;
            }
        }
        Ok(())
    }
}

/// A change refused because it would take a quota over its limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exceeded {
    pub quota: Quota,
    /// The limit, in the quota's unit (whole fires per second, bytes, jobs…).
    pub limit: i64,
    /// What is used now, in the quota's unit (fires per second may be a fraction).
    pub usage: f64,
    /// What the refused change would have added.
    pub requested: f64,
}

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "quota {} exceeded: the limit is {}, {} used, this would add {}",
            self.quota,
            self.limit,
            display_amount(self.usage),
            display_amount(self.requested)
        )
    }
}

/// Whole numbers without a fraction, others to three decimals.
pub fn display_amount(v: f64) -> String {
    if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.3}") }
}

/// The rule every count-or-sum quota follows: `usage + adding` may reach the limit but not
/// pass it. A change that adds nothing (or frees something) is never refused, so a tenant
/// over a limit the operator lowered can still stop, delete and shrink. `usage` and
/// `adding` are in the counted unit ([`Quotas::limit_counted`]).
pub fn check(quotas: &Quotas, quota: Quota, usage: i64, adding: i64) -> Result<(), Exceeded> {
    let limit = quotas.limit_counted(quota);
    if adding <= 0 || usage.saturating_add(adding) <= limit {
        return Ok(());
    }
    let scale = if quota.in_micros() { MICROS_PER_FIRE as f64 } else { 1.0 };
    Err(Exceeded { quota, limit: quotas.get(quota), usage: usage as f64 / scale, requested: adding as f64 / scale })
}

/// The UTC day (its first millisecond) an instant falls in: log bytes per day are counted per day.
pub fn day_of(ms: i64) -> i64 {
    ms.div_euclid(86_400_000) * 86_400_000
}

/// A token bucket: `rate` tokens per second, holding at most `rate` (one second's worth of
/// burst). Pure: the caller passes the time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenBucket {
    tokens: f64,
    at_ms: i64,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(rate: i64, now_ms: i64) -> Self {
        Self { tokens: rate as f64, at_ms: now_ms }
    }

    /// Take one token: `Ok` if there was one, else `Err(ms)` to wait until there is.
    /// A rate of 0 never grants (and asks to wait a second).
    pub fn take(&mut self, rate: i64, now_ms: i64) -> Result<(), i64> {
        let rate_f = rate.max(0) as f64;
        let elapsed = (now_ms - self.at_ms).max(0) as f64;
        self.tokens = (self.tokens + elapsed * rate_f / 1000.0).min(rate_f);
        self.at_ms = self.at_ms.max(now_ms);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        if rate <= 0 {
            return Err(1_000);
        }
        Err((((1.0 - self.tokens) * 1000.0 / rate_f).ceil() as i64).max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::ScheduleSpec;
    use crate::types::ScheduleKind;

    fn spec(kind: ScheduleKind) -> ScheduleSpec {
        ScheduleSpec {
            kind,
            expression: None,
            timezone: None,
            every_ms: None,
            anchor: None,
            at: None,
            start_at: None,
            end_at: None,
        }
    }

    fn cron(expr: &str) -> i64 {
        let mut s = spec(ScheduleKind::Cron);
        s.expression = Some(expr.into());
        peak_fire_rate_micros(&Schedule::parse(&s, 0).unwrap())
    }

    fn every(ms: i64) -> i64 {
        let mut s = spec(ScheduleKind::FixedRate);
        s.every_ms = Some(ms);
        peak_fire_rate_micros(&Schedule::parse(&s, 0).unwrap())
    }

    #[test]
    fn fixed_rate_counts_its_frequency_rounded_up() {
        assert_eq!(every(1_000), 1_000_000);
        assert_eq!(every(2_000), 500_000);
        assert_eq!(every(1_500), 666_667);
        assert_eq!(every(60_000), 16_667);
        assert_eq!(every(366 * 86_400_000), 1);
    }

    #[test]
    fn cron_counts_its_seconds_per_minute_over_sixty() {
        assert_eq!(cron("* * * * * *"), 1_000_000);
        assert_eq!(cron("*/10 * * * * *"), 100_000);
        assert_eq!(cron("0,30 * * * * *"), 33_334);
        // Minute-granular forms fire at most once a minute.
        assert_eq!(cron("* * * * *"), 16_667);
        assert_eq!(cron("0 0 * * * *"), 16_667);
        assert_eq!(cron("@hourly"), 16_667);
        // Restricting hours or days never raises the bound.
        assert_eq!(cron("* * 3 * * *"), 1_000_000);
    }

    #[test]
    fn the_cron_bound_holds_over_every_minute_window_of_a_day() {
        // Brute force over a day of fires: no 60 s window holds more than the bound says.
        for expr in ["*/7 * * * * *", "0-5,50-59 * * * * *", "* 0 * * * *", "0 * * * * *"] {
            let mut s = spec(ScheduleKind::Cron);
            s.expression = Some(expr.into());
            let sched = Schedule::parse(&s, 0).unwrap();
            let fires = sched.fires_between(0, 86_400_000, 100_000);
            let bound = peak_fire_rate_micros(&sched) * 60;
            let mut start = 0;
            for end in 0..fires.len() {
                while fires[end] - fires[start] >= 60_000 {
                    start += 1;
                }
                let in_window = (end - start + 1) as i64 * MICROS_PER_FIRE;
                assert!(in_window <= bound, "{expr}: {in_window} fires in a minute over the bound {bound}");
            }
        }
    }

    #[test]
    fn one_shot_and_manual_count_nothing() {
        let mut s = spec(ScheduleKind::Once);
        s.at = Some("2030-01-01T00:00:00Z".into());
        assert_eq!(peak_fire_rate_micros(&Schedule::parse(&s, 0).unwrap()), 0);
        assert_eq!(peak_fire_rate_micros(&Schedule::parse(&spec(ScheduleKind::Manual), 0).unwrap()), 0);
    }

    #[test]
    fn check_allows_up_to_the_limit_and_names_what_passes_it() {
        let q = Quotas { max_jobs: 3, max_fires_per_second: 2, ..Quotas::default() };
        assert!(check(&q, Quota::MaxJobs, 2, 1).is_ok());
        let e = check(&q, Quota::MaxJobs, 3, 1).unwrap_err();
        assert_eq!(e, Exceeded { quota: Quota::MaxJobs, limit: 3, usage: 3.0, requested: 1.0 });
        assert!(e.to_string().contains("max_jobs"), "{e}");
        // Fires per second are counted in millionths, and reported in fires.
        assert!(check(&q, Quota::MaxFiresPerSecond, 1_000_000, 1_000_000).is_ok());
        let e = check(&q, Quota::MaxFiresPerSecond, 1_500_000, 1_000_000).unwrap_err();
        assert_eq!((e.limit, e.usage, e.requested), (2, 1.5, 1.0));
    }

    #[test]
    fn a_change_adding_nothing_passes_even_over_the_limit() {
        let q = Quotas { max_jobs: 1, ..Quotas::default() };
        assert!(check(&q, Quota::MaxJobs, 5, 0).is_ok());
        assert!(check(&q, Quota::MaxJobs, 5, -1).is_ok());
        let zero = Quotas { max_jobs: 0, ..Quotas::default() };
        assert!(check(&zero, Quota::MaxJobs, 0, 1).is_err());
    }

    #[test]
    fn overrides_replace_only_what_they_set() {
        let d = Quotas::default();
        let o = QuotaOverrides { max_jobs: Some(5), max_inflight: Some(0), ..QuotaOverrides::default() };
        let q = d.with(&o);
        assert_eq!((q.max_jobs, q.max_inflight, q.max_scripts), (5, 0, d.max_scripts));
        assert!(QuotaOverrides { max_jobs: Some(-1), ..QuotaOverrides::default() }.check().is_err());
        let err = QuotaOverrides { max_scripts: Some(MAX_QUOTA_VALUE + 1), ..Default::default() }.check().unwrap_err();
        assert_eq!(err.field, "max_scripts");
        assert!(d.check().is_ok());
    }

    #[test]
    fn token_bucket_grants_its_rate_then_says_how_long_to_wait() {
        let mut b = TokenBucket::new(2, 0);
        assert!(b.take(2, 0).is_ok());
        assert!(b.take(2, 0).is_ok());
        assert_eq!(b.take(2, 0), Err(500));
        assert_eq!(b.take(2, 250), Err(250));
        assert!(b.take(2, 500).is_ok());
        // Idle time never stores more than one second's worth.
        assert!(b.take(2, 100_000).is_ok());
        assert!(b.take(2, 100_000).is_ok());
        assert!(b.take(2, 100_000).is_err());
        assert_eq!(TokenBucket::new(0, 0).take(0, 0), Err(1_000));
    }

    #[test]
    fn day_of_is_the_utc_day() {
        assert_eq!(day_of(0), 0);
        assert_eq!(day_of(86_399_999), 0);
        assert_eq!(day_of(86_400_000), 86_400_000);
        assert_eq!(day_of(-1), -86_400_000);
    }
}
