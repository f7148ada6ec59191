//! Cron-expression parser and evaluator for Sundial.
//!
//! [`Cron::parse`] turns an expression into a [`Cron`]; [`Cron::next_after`] and
//! [`Cron::iter_after`] compute fire instants, evaluating the expression as
//! wall-clock time in a given IANA time zone.
//!
//! This crate is pure computation: **no IO and no clock**. It never reads the
//! current time; callers pass the instant to search from. It does not store,
//! lock or run jobs.
//!
//! ```
//! use chrono::{TimeZone, Utc};
//! use sundial_cron::Cron;
//!
//! let cron = Cron::parse("0 9 * * MON-FRI").unwrap();
//! let after = Utc.with_ymd_and_hms(2026, 3, 27, 12, 0, 0).unwrap(); // a Friday
//! let next = cron.next_after(after, chrono_tz::Europe::Berlin).unwrap();
//! assert_eq!(next, Utc.with_ymd_and_hms(2026, 3, 30, 7, 0, 0).unwrap()); // Monday 09:00 CEST
//! ```
//!
//! # Syntax
//!
//! | fields | layout |
//! |---|---|
//! | 5 (Unix) | `minute hour day-of-month month day-of-week` (second is 0) |
//! | 6 (Quartz) | `second minute hour day-of-month month day-of-week` |
//! | 7 (Quartz) | as 6, plus `year` (1970-2099) |
//!
//! Fields are separated by any run of whitespace; the ends are trimmed.
//!
//! ## Day-of-week numbering differs by field count
//!
//! * **5 fields (Unix):** `0-7`, where **0 and 7 are Sunday**, 1 = Monday … 6 = Saturday.
//! * **6/7 fields (Quartz):** `1-7`, where **1 = Sunday**, 2 = Monday … 7 = Saturday.
//!
//! So `0 9 * * 1` (Unix) is Monday but `0 0 9 ? * 1` (Quartz) is Sunday.
//! Names (`SUN`-`SAT`) mean the same in both and are recommended.
//!
//! ## Elements
//!
//! * Numbers, and names (case-insensitive) `JAN`-`DEC` in month, `SUN`-`SAT` in day-of-week.
//! * `*` (any); lists `a,b`; ranges `a-b`; steps `*/n`, `a/n` (a to the field's
//!   maximum), `a-b/n`. The step must be 1 to the size of the field's range.
//! * **Wrap-around ranges** (`a-b` with a > b) mean a..max then min..b, e.g. hours
//!   `22-2` = 22,23,0,1,2 and `FRI-MON`. They are allowed in second, minute, hour,
//!   month and day-of-week (cyclic fields). They are **rejected** in day-of-month
//!   (month lengths vary) and year (not cyclic).
//! * `?` ("no specific value") is allowed only as the whole day-of-month or
//!   day-of-week field, and not in both.
//! * Day-of-month (Quartz): `L` last day; `L-n` n days before the last day
//!   (n 0-30; no fire if that is before the 1st); `LW` last weekday (Mon-Fri);
//!   `nW` weekday nearest to day n without leaving the month (1W on a Saturday
//!   → Monday 3rd, 31W on a Sunday → Friday 29th; no fire in months shorter than n).
//! * Day-of-week (Quartz): `nL` / `FRIL` last such weekday of the month; `n#k` /
//!   `FRI#3` k-th such weekday (k 1-5; no fire in a month without a 5th).
//!   **Plain `L` in day-of-week means Saturday** (the last day of the week), as in Quartz.
//! * `L`, `W` and `#` forms may appear as list elements (`1,L`) but not in ranges
//!   or with steps. They are accepted in 5-field expressions too (day-of-week
//!   numbers then use Unix numbering: `5L` = last Friday).
//! * Macros (case-insensitive, must be the whole expression): `@yearly` /
//!   `@annually` (Jan 1st 00:00), `@monthly` (1st 00:00), `@weekly` (Sunday
//!   00:00), `@daily` / `@midnight` (00:00), `@hourly` (minute 0).
//!   They are minute-granular: [`Cron::has_seconds`] is false.
//!
//! ## Day-of-month and day-of-week together
//!
//! A field is *unrestricted* only when it is exactly `*` or `?`. If both
//! fields are restricted, a day matches when **either** matches (Vixie cron OR
//! semantics): `0 0 1 * MON` fires on the 1st and on every Monday. If one is
//! unrestricted, the other decides; if both are, every day matches.
//!
//! # Time zones and daylight-saving time
//!
//! Candidate times are generated as local wall-clock times in the zone and then
//! mapped to instants:
//!
//! * A local time that exists once maps to that instant.
//! * A local time that occurs twice (autumn fall-back) maps to the **earlier**
//!   instant only. Each wall-clock time fires at most once: a daily 01:30 job
//!   fires once on a fall-back night, and an every-15-minutes job fires during
//!   the first pass of the repeated hour and not during the second.
//! * A local time that does not exist (spring-forward gap) maps to the **first
//!   instant after the gap** (Europe/Berlin 2026-03-29 02:30 → 03:00 CEST =
//!   01:00:00Z). All candidates in one gap, and the gap's end itself if it
//!   matches, collapse into **one** fire: a gap is never fired zero times or twice.
//!
//! This mapping is monotone in local time, so [`Cron::next_after`] returns the
//! mapped instant of the first candidate (in local order, from the local time
//! of `after`) that is strictly later than `after`.
//!
//! # Range and performance
//!
//! The search covers years 1970-2099; past 2099 (or for impossible dates like
//! `0 0 0 30 2 ?`) [`Cron::next_after`] returns `None`. The search advances
//! field by field (year → month → day → hour → minute → second) and evaluates
//! `L`/`W`/`#` once per month, so it never scans second by second.

mod error;
mod parse;
mod schedule;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

pub use error::{CronError, CronField};

/// A parsed cron expression. See the [crate docs](crate) for the syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    source: String,
    has_seconds: bool,
    /// Bit s for seconds 0-59.
    seconds: u64,
    /// Bit m for minutes 0-59.
    minutes: u64,
    /// Bit h for hours 0-23.
    hours: u64,
    /// Bit m for months 1-12.
    months: u64,
    /// `None` when unrestricted (`*` or `?`).
    dom: Option<schedule::DomSet>,
    /// `None` when unrestricted (`*` or `?`).
    dow: Option<schedule::DowSet>,
    /// `None` when there is no year field or it is `*`.
    years: Option<schedule::YearSet>,
}

impl Cron {
    /// Parses a 5-, 6- or 7-field expression or a macro such as `@daily`.
    pub fn parse(expr: &str) -> Result<Cron, CronError> {
        parse::parse(expr)
    }

    /// The first fire strictly after `after`, evaluating the expression as
    /// wall-clock time in `tz`. `None` if no fire exists (e.g. past year 2099
    /// or an impossible date like 30 Feb).
    pub fn next_after(&self, after: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
        self.next_after_impl(after, tz)
    }

    /// Iterator of successive fires strictly after `after` (each strictly
    /// greater than the previous).
    pub fn iter_after(&self, after: DateTime<Utc>, tz: Tz) -> impl Iterator<Item = DateTime<Utc>> + '_ {
        std::iter::successors(self.next_after(after, tz), move |&prev| self.next_after(prev, tz))
    }

    /// The expression as given (trimmed).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the expression has a seconds field (6 or 7 fields). False for
    /// 5-field expressions and macros, which fire at second 0.
    pub fn has_seconds(&self) -> bool {
        self.has_seconds
    }

    /// How many seconds of a matching minute fire (1 for 5-field expressions and macros).
    pub fn seconds_per_minute(&self) -> u32 {
        self.seconds.count_ones()
    }
}

impl std::str::FromStr for Cron {
    type Err = CronError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Cron::parse(s)
    }
}

impl std::fmt::Display for Cron {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source)
    }
}
