//! Evaluation: finding the next matching wall-clock time and mapping it to an instant.

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;

use crate::Cron;

/// First year searched (and first accepted in the year field).
pub(crate) const MIN_YEAR: i32 = 1970;
/// Last year searched (and last accepted in the year field).
pub(crate) const MAX_YEAR: i32 = 2099;

/// Set of years `MIN_YEAR..=MAX_YEAR` (130 values).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct YearSet([u64; 3]);

impl YearSet {
    pub(crate) fn insert(&mut self, year: i32) {
        let i = (year - MIN_YEAR) as usize;
        self.0[i / 64] |= 1 << (i % 64);
    }

    /// Smallest year in the set that is `>= year`.
    fn next_from(&self, year: i32) -> Option<i32> {
        let from = year.max(MIN_YEAR);
        (from..=MAX_YEAR).find(|y| {
            let i = (y - MIN_YEAR) as usize;
            self.0[i / 64] & (1 << (i % 64)) != 0
        })
    }
}

/// Restricted day-of-month field (all bit sets indexed by day or offset).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct DomSet {
    /// Plain days 1-31 (bit d).
    pub(crate) days: u32,
    /// `L` (bit 0) and `L-n` (bit n): n days before the last day.
    pub(crate) last_offsets: u32,
    /// `LW`: last weekday (Mon-Fri) of the month.
    pub(crate) last_weekday: bool,
    /// `nW` (bit n): weekday nearest to day n, within the month.
    pub(crate) nearest_weekday: u32,
}

/// Restricted day-of-week field; weekdays are 0 = Sunday .. 6 = Saturday.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct DowSet {
    /// Plain weekdays (bit wd).
    pub(crate) days: u8,
    /// `wdL` (bit wd): last such weekday of the month.
    pub(crate) last: u8,
    /// `wd#k` (bit wd*8+k): k-th such weekday of the month.
    pub(crate) nth: u64,
}

fn is_leap(y: i32) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i32, m: u32) -> u32 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Weekday (0 = Sunday) of a Gregorian date; Sakamoto's method.
fn weekday(y: i32, m: u32, d: u32) -> u32 {
    const T: [i32; 12] = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4];
    let y = if m < 3 { y - 1 } else { y };
    (y + y / 4 - y / 100 + y / 400 + T[(m - 1) as usize] + d as i32).rem_euclid(7) as u32
}

impl DomSet {
    /// Matching days of a month with `dim` days whose 1st is weekday `wd1`.
    fn mask(&self, dim: u32, wd1: u32) -> u32 {
        let wd = |d: u32| (wd1 + d - 1) % 7;
        let mut mask = self.days;
        let mut offsets = self.last_offsets;
        while offsets != 0 {
            let n = offsets.trailing_zeros();
            offsets &= offsets - 1;
            if n < dim {
                mask |= 1 << (dim - n);
            }
        }
        if self.last_weekday {
            let day = match wd(dim) {
                6 => dim - 1,
                0 => dim - 2,
                _ => dim,
            };
            mask |= 1 << day;
        }
        let mut nearest = self.nearest_weekday;
        while nearest != 0 {
            let n = nearest.trailing_zeros();
            nearest &= nearest - 1;
            if n > dim {
                continue; // e.g. 31W in a 30-day month: no such day, no fire
            }
            let day = match wd(n) {
                6 if n == 1 => 3,       // Saturday 1st -> Monday 3rd
                6 => n - 1,             // Saturday -> Friday before
                0 if n == dim => n - 2, // Sunday last day -> Friday before
                0 => n + 1,             // Sunday -> Monday after
                _ => n,
            };
            mask |= 1 << day;
        }
        mask
    }
}

impl DowSet {
    /// Matching days of a month with `dim` days whose 1st is weekday `wd1`.
    fn mask(&self, dim: u32, wd1: u32) -> u32 {
        let mut mask = 0u32;
        if self.days != 0 {
            for d in 1..=dim {
                if self.days & (1 << ((wd1 + d - 1) % 7)) != 0 {
                    mask |= 1 << d;
                }
            }
        }
        let wd_last = (wd1 + dim - 1) % 7;
        for wd in 0..7u32 {
            if self.last & (1 << wd) != 0 {
                mask |= 1 << (dim - (wd_last + 7 - wd) % 7);
            }
            let ks = (self.nth >> (wd * 8)) & 0xff;
            if ks != 0 {
                let first = 1 + (wd + 7 - wd1) % 7;
                for k in 1..=5u32 {
                    let day = first + 7 * (k - 1);
                    if ks & (1 << k) != 0 && day <= dim {
                        mask |= 1 << day;
                    }
                }
            }
        }
        mask
    }
}

/// Smallest set bit of `mask` that is `>= from`.
fn next_bit(mask: u64, from: u32) -> Option<u32> {
    if from >= 64 {
        return None;
    }
    let m = mask & (!0u64 << from);
    (m != 0).then(|| m.trailing_zeros())
}

impl Cron {
    /// Matching days (bit d) of month `m` of year `y`.
    fn day_mask(&self, y: i32, m: u32) -> u32 {
        let dim = days_in_month(y, m);
        let all = ((1u64 << (dim + 1)) - 2) as u32;
        let wd1 = weekday(y, m, 1);
        let mask = match (&self.dom, &self.dow) {
            (None, None) => all,
            (Some(dom), None) => dom.mask(dim, wd1),
            (None, Some(dow)) => dow.mask(dim, wd1),
            // Both restricted: Vixie cron OR semantics.
            (Some(dom), Some(dow)) => dom.mask(dim, wd1) | dow.mask(dim, wd1),
        };
        mask & all
    }

    /// The first local wall-clock time `>= start` matching the expression,
    /// advancing field by field; `None` past `MAX_YEAR`.
    pub(crate) fn next_local(&self, start: NaiveDateTime) -> Option<NaiveDateTime> {
        use chrono::{Datelike, Timelike};
        let (mut y, mut mo, mut d) = (start.year(), start.month(), start.day());
        let (mut h, mut mi, mut s) = (start.hour(), start.minute(), start.second());
        if y < MIN_YEAR {
            (y, mo, d, h, mi, s) = (MIN_YEAR, 1, 1, 0, 0, 0);
        }
        loop {
            if y > MAX_YEAR {
                return None;
            }
            if let Some(years) = &self.years {
                let ny = years.next_from(y)?;
                if ny != y {
                    (y, mo, d, h, mi, s) = (ny, 1, 1, 0, 0, 0);
                }
            }
            match next_bit(self.months, mo) {
                None => {
                    (y, mo, d, h, mi, s) = (y + 1, 1, 1, 0, 0, 0);
                    continue;
                }
                Some(m) if m != mo => (mo, d, h, mi, s) = (m, 1, 0, 0, 0),
                Some(_) => {}
            }
            match next_bit(u64::from(self.day_mask(y, mo)), d) {
                None => {
                    (mo, d, h, mi, s) = (mo + 1, 1, 0, 0, 0);
                    continue;
                }
                Some(nd) if nd != d => (d, h, mi, s) = (nd, 0, 0, 0),
                Some(_) => {}
            }
            match next_bit(self.hours, h) {
                None => {
                    (d, h, mi, s) = (d + 1, 0, 0, 0);
                    continue;
                }
                Some(nh) if nh != h => (h, mi, s) = (nh, 0, 0),
                Some(_) => {}
            }
            match next_bit(self.minutes, mi) {
                None => {
                    (h, mi, s) = (h + 1, 0, 0);
                    continue;
                }
                Some(nm) if nm != mi => (mi, s) = (nm, 0),
                Some(_) => {}
            }
            match next_bit(self.seconds, s) {
                None => {
                    (mi, s) = (mi + 1, 0);
                    continue;
                }
                Some(ns) => {
                    return NaiveDate::from_ymd_opt(y, mo, d)?.and_hms_opt(h, mi, ns);
                }
            }
        }
    }

    pub(crate) fn next_after_impl(&self, after: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
        use chrono::{Datelike, Timelike};
        // Local time is within a day of UTC, so nothing after 2100 can match.
        if after.year() > MAX_YEAR + 1 {
            return None;
        }
        let mut cursor = if after.year() < MIN_YEAR - 1 {
            NaiveDate::from_ymd_opt(MIN_YEAR, 1, 1)?.and_hms_opt(0, 0, 0)?
        } else {
            // Whole seconds; a candidate equal to the truncated time maps to an
            // instant <= `after` and is skipped below.
            let local = after.with_timezone(&tz).naive_local();
            local.with_nanosecond(0)?
        };
        // The local→instant mapping is monotone non-decreasing and maps
        // local(after) itself to an instant <= after, so no candidate before
        // local(after) can fire after `after`. Candidates at or after it that
        // map to <= after only occur inside a repeated (fall-back) period.
        loop {
            let candidate = self.next_local(cursor)?;
            let instant = resolve(tz, candidate);
            if instant > after {
                return Some(instant);
            }
            cursor = candidate.checked_add_signed(chrono::TimeDelta::seconds(1))?;
        }
    }
}

/// Maps a local wall-clock time to an instant: the earlier one if it occurs
/// twice, the end of the gap if it does not exist.
pub(crate) fn resolve(tz: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    match tz.from_local_datetime(&local).earliest() {
        Some(dt) => dt.with_timezone(&Utc),
        None => gap_end(tz, local),
    }
}

/// First instant whose local time is later than the non-existent `local`,
/// i.e. the instant at which the gap containing `local` ends.
fn gap_end(tz: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    let local_of = |ts: i64| DateTime::from_timestamp(ts, 0).map(|dt| dt.with_timezone(&tz).naive_local());
    let t = local.and_utc().timestamp();
    // Offsets are within ±30h, so local(lo) < local < local(hi).
    let (mut lo, mut hi) = (t - 30 * 3600, t + 30 * 3600);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match local_of(mid) {
            Some(l) if l > local => hi = mid,
            _ => lo = mid,
        }
    }
    DateTime::from_timestamp(hi, 0).unwrap_or_else(|| local.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weekday_matches_chrono() {
        use chrono::Datelike;
        for y in [1970, 2000, 2024, 2026, 2099] {
            for m in 1..=12 {
                for d in 1..=days_in_month(y, m) {
                    let date = NaiveDate::from_ymd_opt(y, m, d).unwrap();
                    assert_eq!(weekday(y, m, d), date.weekday().num_days_from_sunday());
                }
            }
        }
    }

    #[test]
    fn next_bit_works() {
        assert_eq!(next_bit(0b1010, 0), Some(1));
        assert_eq!(next_bit(0b1010, 2), Some(3));
        assert_eq!(next_bit(0b1010, 4), None);
        assert_eq!(next_bit(u64::MAX, 64), None);
        assert_eq!(next_bit(1 << 63, 63), Some(63));
    }

    #[test]
    fn year_set() {
        let mut s = YearSet::default();
        s.insert(1970);
        s.insert(2034);
        s.insert(2099);
        assert_eq!(s.next_from(1900), Some(1970));
        assert_eq!(s.next_from(1971), Some(2034));
        assert_eq!(s.next_from(2035), Some(2099));
        assert_eq!(s.next_from(2100), None);
    }
}
