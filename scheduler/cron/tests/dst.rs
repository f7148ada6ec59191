//! Time zones and daylight-saving transitions.
//!
//! Rules: an ambiguous (repeated) local time fires once, at the earlier
//! instant; a non-existent local time fires at the end of the gap, and all
//! candidates of one gap collapse into one fire.

mod common;

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use common::{cron, fires_between, fires_in, utc};

const BERLIN: Tz = Tz::Europe__Berlin;
const NEW_YORK: Tz = Tz::America__New_York;

fn minutes(from: DateTime<Utc>, count: i64) -> Vec<DateTime<Utc>> {
    (0..count).map(|i| from + TimeDelta::minutes(i)).collect()
}

// Europe/Berlin 2026-03-29: 02:00 CET -> 03:00 CEST at 01:00Z (02:00-02:59 missing).

#[test]
fn berlin_spring_daily_in_gap_fires_at_gap_end() {
    let after = utc(2026, 3, 27, 12, 0, 0);
    let expected = vec![utc(2026, 3, 28, 1, 30, 0), utc(2026, 3, 29, 1, 0, 0), utc(2026, 3, 30, 0, 30, 0)];
    assert_eq!(fires_in("30 2 * * *", after, BERLIN, 3), expected);
    assert_eq!(fires_in("0 30 2 * * ?", after, BERLIN, 3), expected);
}

#[test]
fn berlin_spring_gap_candidates_collapse_into_one_fire() {
    let after = utc(2026, 3, 28, 12, 0, 0);
    // 02:00, 02:15, 02:30, 02:45 are all missing: one fire at 03:00 CEST.
    assert_eq!(fires_in("*/15 2 * * *", after, BERLIN, 2), vec![utc(2026, 3, 29, 1, 0, 0), utc(2026, 3, 30, 0, 0, 0)]);
    // 02:00 and 02:30 are missing and 03:00 (the gap end) matches too: still one fire.
    assert_eq!(
        fires_in("0,30 2,3 * * *", after, BERLIN, 3),
        vec![utc(2026, 3, 29, 1, 0, 0), utc(2026, 3, 29, 1, 30, 0), utc(2026, 3, 30, 0, 0, 0)]
    );
}

#[test]
fn berlin_spring_every_minute() {
    // 01:00-01:59 CET, then the gap plus 03:00 CEST as one fire at 01:00Z, then 03:01...
    let fires = fires_between("* * * * *", BERLIN, utc(2026, 3, 29, 0, 0, 0), utc(2026, 3, 29, 2, 0, 0));
    assert_eq!(fires, minutes(utc(2026, 3, 29, 0, 0, 0), 120));
    // The 23-hour local day has 23 * 60 fires.
    let day = fires_between("* * * * *", BERLIN, utc(2026, 3, 28, 23, 0, 0), utc(2026, 3, 29, 22, 0, 0));
    assert_eq!(day.len(), 23 * 60);
    // Every second across the gap: no duplicate, no hole.
    assert_eq!(
        fires_in("* * * * * ?", utc(2026, 3, 29, 0, 59, 58), BERLIN, 3),
        vec![utc(2026, 3, 29, 0, 59, 59), utc(2026, 3, 29, 1, 0, 0), utc(2026, 3, 29, 1, 0, 1)]
    );
}

// Europe/Berlin 2026-10-25: 03:00 CEST -> 02:00 CET at 01:00Z (02:00-02:59 twice).

#[test]
fn berlin_autumn_daily_fires_once() {
    let after = utc(2026, 10, 24, 12, 0, 0);
    assert_eq!(
        fires_in("30 2 * * *", after, BERLIN, 2),
        vec![utc(2026, 10, 25, 0, 30, 0), utc(2026, 10, 26, 1, 30, 0)]
    );
    // 01:30 is not repeated in Berlin.
    assert_eq!(
        fires_in("30 1 * * *", after, BERLIN, 2),
        vec![utc(2026, 10, 24, 23, 30, 0), utc(2026, 10, 26, 0, 30, 0)]
    );
}

#[test]
fn berlin_autumn_every_minute_fires_first_pass_only() {
    let fires = fires_between("* * * * *", BERLIN, utc(2026, 10, 25, 0, 0, 0), utc(2026, 10, 25, 2, 1, 0));
    let mut expected = minutes(utc(2026, 10, 25, 0, 0, 0), 60);
    expected.push(utc(2026, 10, 25, 2, 0, 0));
    assert_eq!(fires, expected);
    // The 25-hour local day still has each wall-clock minute once.
    let day = fires_between("* * * * *", BERLIN, utc(2026, 10, 24, 22, 0, 0), utc(2026, 10, 25, 23, 0, 0));
    assert_eq!(day.len(), 24 * 60);
    assert_eq!(
        fires_in("*/15 * * * *", utc(2026, 10, 24, 23, 50, 0), BERLIN, 6),
        vec![
            utc(2026, 10, 25, 0, 0, 0),
            utc(2026, 10, 25, 0, 15, 0),
            utc(2026, 10, 25, 0, 30, 0),
            utc(2026, 10, 25, 0, 45, 0),
            utc(2026, 10, 25, 2, 0, 0),
            utc(2026, 10, 25, 2, 15, 0),
        ]
    );
}

#[test]
fn berlin_autumn_after_in_second_pass() {
    // `after` is 02:10 CET, in the repeated hour: 02:11 etc. already fired in the first pass.
    let after = utc(2026, 10, 25, 1, 10, 0);
    assert_eq!(cron("* * * * *").next_after(after, BERLIN), Some(utc(2026, 10, 25, 2, 0, 0)));
    assert_eq!(cron("* * * * * ?").next_after(after, BERLIN), Some(utc(2026, 10, 25, 2, 0, 0)));
    assert_eq!(cron("*/15 2 * * *").next_after(after, BERLIN), Some(utc(2026, 10, 26, 1, 0, 0)));
    // `after` in the first pass: the rest of the first pass fires.
    assert_eq!(cron("* * * * *").next_after(utc(2026, 10, 25, 0, 10, 0), BERLIN), Some(utc(2026, 10, 25, 0, 11, 0)));
}

// America/New_York 2026-03-08: 02:00 EST -> 03:00 EDT at 07:00Z.
// 2026-11-01: 02:00 EDT -> 01:00 EST at 06:00Z (01:00-01:59 twice).

#[test]
fn new_york_spring() {
    assert_eq!(
        fires_in("30 2 * * *", utc(2026, 3, 6, 12, 0, 0), NEW_YORK, 3),
        vec![utc(2026, 3, 7, 7, 30, 0), utc(2026, 3, 8, 7, 0, 0), utc(2026, 3, 9, 6, 30, 0)]
    );
    let fires = fires_between("* * * * *", NEW_YORK, utc(2026, 3, 8, 6, 0, 0), utc(2026, 3, 8, 8, 0, 0));
    assert_eq!(fires, minutes(utc(2026, 3, 8, 6, 0, 0), 120));
}

#[test]
fn new_york_autumn() {
    let after = utc(2026, 10, 31, 12, 0, 0);
    assert_eq!(
        fires_in("30 1 * * *", after, NEW_YORK, 2),
        vec![utc(2026, 11, 1, 5, 30, 0), utc(2026, 11, 2, 6, 30, 0)]
    );
    assert_eq!(
        fires_in("30 2 * * *", after, NEW_YORK, 2),
        vec![utc(2026, 11, 1, 7, 30, 0), utc(2026, 11, 2, 7, 30, 0)]
    );
    let fires = fires_between("* * * * *", NEW_YORK, utc(2026, 11, 1, 5, 0, 0), utc(2026, 11, 1, 7, 0, 0));
    assert_eq!(fires.len(), 60);
    assert_eq!(fires.last(), Some(&utc(2026, 11, 1, 5, 59, 0)));
    assert_eq!(cron("*/15 * * * *").next_after(utc(2026, 11, 1, 5, 59, 0), NEW_YORK), Some(utc(2026, 11, 1, 7, 0, 0)));
}

#[test]
fn utc_has_no_transitions() {
    assert_eq!(
        fires_in("30 2 * * *", utc(2026, 3, 28, 12, 0, 0), Tz::UTC, 2),
        vec![utc(2026, 3, 29, 2, 30, 0), utc(2026, 3, 30, 2, 30, 0)]
    );
    let fires = fires_between("* * * * *", Tz::UTC, utc(2026, 10, 25, 0, 0, 0), utc(2026, 10, 25, 2, 0, 0));
    assert_eq!(fires.len(), 120);
}

#[test]
fn kolkata_half_hour_offset() {
    let tz = Tz::Asia__Kolkata;
    let after = utc(2026, 1, 1, 0, 0, 0); // 05:30 IST
    assert_eq!(cron("0 9 * * *").next_after(after, tz), Some(utc(2026, 1, 1, 3, 30, 0)));
    assert_eq!(cron("30 0 * * *").next_after(after, tz), Some(utc(2026, 1, 1, 19, 0, 0)));
    assert_eq!(cron("@monthly").next_after(after, tz), Some(utc(2026, 1, 31, 18, 30, 0)));
}

#[test]
fn lord_howe_thirty_minute_shift() {
    let tz = Tz::Australia__Lord_Howe;
    // 2026-04-05 02:00 +11 -> 01:30 +10:30 at 15:00Z Apr 4: 01:30-01:59 twice.
    assert_eq!(
        fires_in("45 1 * * *", utc(2026, 4, 4, 0, 0, 0), tz, 2),
        vec![utc(2026, 4, 4, 14, 45, 0), utc(2026, 4, 5, 15, 15, 0)]
    );
    let fires = fires_between("* * * * *", tz, utc(2026, 4, 4, 14, 0, 0), utc(2026, 4, 4, 16, 0, 0));
    assert_eq!(fires.len(), 90);
    assert!(!fires.contains(&utc(2026, 4, 4, 15, 10, 0)));
    // 2026-10-04 02:00 +10:30 -> 02:30 +11 at 15:30Z Oct 3: 02:00-02:29 missing.
    assert_eq!(
        fires_in("15 2 * * *", utc(2026, 10, 3, 0, 0, 0), tz, 2),
        vec![utc(2026, 10, 3, 15, 30, 0), utc(2026, 10, 4, 15, 15, 0)]
    );
    let fires = fires_between("*/10 2 * * *", tz, utc(2026, 10, 3, 12, 0, 0), utc(2026, 10, 3, 16, 30, 0));
    assert_eq!(fires, vec![utc(2026, 10, 3, 15, 30, 0), utc(2026, 10, 3, 15, 40, 0), utc(2026, 10, 3, 15, 50, 0)]);
}

#[test]
fn apia_skipped_day() {
    // Samoa skipped 2011-12-30: 23:59:59 -10 on the 29th was followed by 00:00 +14 on the 31st.
    assert_eq!(
        fires_in("0 12 * * *", utc(2011, 12, 29, 0, 0, 0), Tz::Pacific__Apia, 3),
        vec![utc(2011, 12, 29, 22, 0, 0), utc(2011, 12, 30, 10, 0, 0), utc(2011, 12, 30, 22, 0, 0)]
    );
}
