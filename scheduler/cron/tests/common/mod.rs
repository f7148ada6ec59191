//! Shared helpers for the integration tests.
#![allow(dead_code)]

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use sundial_cron::Cron;

pub fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
}

pub fn cron(expr: &str) -> Cron {
    Cron::parse(expr).unwrap_or_else(|e| panic!("{expr:?} should parse: {e}"))
}

/// The first `n` fires after `after` in `tz`.
pub fn fires_in(expr: &str, after: DateTime<Utc>, tz: Tz, n: usize) -> Vec<DateTime<Utc>> {
    cron(expr).iter_after(after, tz).take(n).collect()
}

/// The first `n` fires after `after` in UTC.
pub fn fires(expr: &str, after: DateTime<Utc>, n: usize) -> Vec<DateTime<Utc>> {
    fires_in(expr, after, Tz::UTC, n)
}

/// All fires in `[from, to)` (searching strictly after `from - 1s`).
pub fn fires_between(expr: &str, tz: Tz, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    cron(expr).iter_after(from - chrono::TimeDelta::seconds(1), tz).take_while(|t| *t < to).collect()
}
