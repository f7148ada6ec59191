//! Syntax forms, evaluated in UTC.

mod common;

use chrono::{TimeDelta, TimeZone, Utc};
use chrono_tz::Tz;
use common::{cron, fires, utc};
use sundial_cron::Cron;

#[test]
fn every_five_minutes_unix() {
    assert_eq!(
        fires("*/5 * * * *", utc(2026, 1, 1, 0, 2, 30), 3),
        vec![utc(2026, 1, 1, 0, 5, 0), utc(2026, 1, 1, 0, 10, 0), utc(2026, 1, 1, 0, 15, 0)]
    );
}

#[test]
fn weekdays_at_nine_unix() {
    // 2026-01-02 is a Friday.
    assert_eq!(
        fires("0 9 * * 1-5", utc(2026, 1, 2, 10, 0, 0), 6),
        vec![
            utc(2026, 1, 5, 9, 0, 0),
            utc(2026, 1, 6, 9, 0, 0),
            utc(2026, 1, 7, 9, 0, 0),
            utc(2026, 1, 8, 9, 0, 0),
            utc(2026, 1, 9, 9, 0, 0),
            utc(2026, 1, 12, 9, 0, 0),
        ]
    );
}

#[test]
fn unix_sunday_is_zero_and_seven() {
    let after = utc(2026, 1, 1, 0, 0, 0); // Thursday
    let sundays = vec![utc(2026, 1, 4, 0, 0, 0), utc(2026, 1, 11, 0, 0, 0)];
    assert_eq!(fires("0 0 * * 0", after, 2), sundays);
    assert_eq!(fires("0 0 * * 7", after, 2), sundays);
    assert_eq!(fires("0 0 * * SUN", after, 2), sundays);
    assert_eq!(fires("0 0 * * 1", after, 1), vec![utc(2026, 1, 5, 0, 0, 0)]);
    assert_eq!(fires("0 0 * * 6", after, 1), vec![utc(2026, 1, 3, 0, 0, 0)]);
}

#[test]
fn quartz_day_of_week_numbering() {
    let after = utc(2026, 1, 1, 0, 0, 0); // Thursday
    assert_eq!(fires("0 0 0 ? * 1", after, 1), vec![utc(2026, 1, 4, 0, 0, 0)]); // SUN
    assert_eq!(fires("0 0 0 ? * 2", after, 1), vec![utc(2026, 1, 5, 0, 0, 0)]); // MON
    assert_eq!(fires("0 0 0 ? * 7", after, 1), vec![utc(2026, 1, 3, 0, 0, 0)]); // SAT
    assert_eq!(fires("0 0 0 ? * SAT", after, 1), vec![utc(2026, 1, 3, 0, 0, 0)]);
    assert_eq!(fires("0 0 0 ? * sun", after, 1), vec![utc(2026, 1, 4, 0, 0, 0)]);
}

#[test]
fn month_and_day_names_case_insensitive() {
    let after = utc(2026, 1, 1, 0, 0, 0);
    let expected = vec![utc(2026, 3, 1, 0, 0, 0), utc(2027, 1, 1, 0, 0, 0), utc(2027, 3, 1, 0, 0, 0)];
    assert_eq!(fires("0 0 1 JAN,MAR *", after, 3), expected);
    assert_eq!(fires("0 0 1 jan,Mar *", after, 3), expected);
    assert_eq!(fires("0 0 0 1 JAN,MAR ?", after, 3), expected);
    let friday = utc(2026, 1, 2, 10, 0, 0);
    assert_eq!(fires("0 0 * * mon-fri", friday, 1), vec![utc(2026, 1, 5, 0, 0, 0)]);
    assert_eq!(fires("0 0 0 ? * MON-FRI", friday, 1), vec![utc(2026, 1, 5, 0, 0, 0)]);
    assert_eq!(fires("0 0 1 FEB-APR *", after, 4).last(), Some(&utc(2027, 2, 1, 0, 0, 0)));
}

#[test]
fn wrap_around_hours() {
    assert_eq!(
        fires("0 22-2 * * *", utc(2026, 1, 1, 12, 0, 0), 6),
        vec![
            utc(2026, 1, 1, 22, 0, 0),
            utc(2026, 1, 1, 23, 0, 0),
            utc(2026, 1, 2, 0, 0, 0),
            utc(2026, 1, 2, 1, 0, 0),
            utc(2026, 1, 2, 2, 0, 0),
            utc(2026, 1, 2, 22, 0, 0),
        ]
    );
}

#[test]
fn wrap_around_day_of_week() {
    let after = utc(2026, 1, 1, 0, 0, 0); // Thursday
    let expected = vec![
        utc(2026, 1, 2, 0, 0, 0),
        utc(2026, 1, 3, 0, 0, 0),
        utc(2026, 1, 4, 0, 0, 0),
        utc(2026, 1, 5, 0, 0, 0),
        utc(2026, 1, 9, 0, 0, 0),
    ];
    assert_eq!(fires("0 0 * * FRI-MON", after, 5), expected);
    assert_eq!(fires("0 0 * * 5-1", after, 5), expected);
    assert_eq!(fires("0 0 0 ? * FRI-MON", after, 5), expected);
    assert_eq!(fires("0 0 0 ? * 6-2", after, 5), expected);
    // SAT-SUN in Unix numbering goes 6,7,0.
    assert_eq!(
        fires("0 0 * * SAT-SUN", after, 3),
        vec![utc(2026, 1, 3, 0, 0, 0), utc(2026, 1, 4, 0, 0, 0), utc(2026, 1, 10, 0, 0, 0)]
    );
}

#[test]
fn wrap_around_months_minutes_seconds() {
    assert_eq!(
        fires("0 0 1 NOV-FEB *", utc(2026, 1, 15, 0, 0, 0), 6),
        vec![
            utc(2026, 2, 1, 0, 0, 0),
            utc(2026, 11, 1, 0, 0, 0),
            utc(2026, 12, 1, 0, 0, 0),
            utc(2027, 1, 1, 0, 0, 0),
            utc(2027, 2, 1, 0, 0, 0),
            utc(2027, 11, 1, 0, 0, 0),
        ]
    );
    assert_eq!(
        fires("50-10/5 * * * *", utc(2026, 1, 1, 0, 0, 0), 5),
        vec![
            utc(2026, 1, 1, 0, 5, 0),
            utc(2026, 1, 1, 0, 10, 0),
            utc(2026, 1, 1, 0, 50, 0),
            utc(2026, 1, 1, 0, 55, 0),
            utc(2026, 1, 1, 1, 0, 0),
        ]
    );
    assert_eq!(
        fires("58-1 * * * * *", utc(2026, 1, 1, 0, 0, 0), 5),
        vec![
            utc(2026, 1, 1, 0, 0, 1),
            utc(2026, 1, 1, 0, 0, 58),
            utc(2026, 1, 1, 0, 0, 59),
            utc(2026, 1, 1, 0, 1, 0),
            utc(2026, 1, 1, 0, 1, 1),
        ]
    );
}

#[test]
fn steps() {
    let after = utc(2026, 1, 1, 0, 0, 0);
    assert_eq!(
        fires("0 0 1/10 * *", after, 4),
        vec![utc(2026, 1, 11, 0, 0, 0), utc(2026, 1, 21, 0, 0, 0), utc(2026, 1, 31, 0, 0, 0), utc(2026, 2, 1, 0, 0, 0)]
    );
    assert_eq!(
        fires("10-30/10 * * * *", after, 4),
        vec![
            utc(2026, 1, 1, 0, 10, 0),
            utc(2026, 1, 1, 0, 20, 0),
            utc(2026, 1, 1, 0, 30, 0),
            utc(2026, 1, 1, 1, 10, 0)
        ]
    );
    assert_eq!(
        fires("*/15 * * * * *", after, 4),
        vec![utc(2026, 1, 1, 0, 0, 15), utc(2026, 1, 1, 0, 0, 30), utc(2026, 1, 1, 0, 0, 45), utc(2026, 1, 1, 0, 1, 0)]
    );
    assert_eq!(
        fires("0 0 */6 * * ?", after, 4),
        vec![utc(2026, 1, 1, 6, 0, 0), utc(2026, 1, 1, 12, 0, 0), utc(2026, 1, 1, 18, 0, 0), utc(2026, 1, 2, 0, 0, 0)]
    );
    // `a/n` in Unix day-of-week runs to 6 (Saturday): 1,3,5 = MON, WED, FRI.
    assert_eq!(
        fires("0 0 * * 1/2", after, 4),
        vec![utc(2026, 1, 2, 0, 0, 0), utc(2026, 1, 5, 0, 0, 0), utc(2026, 1, 7, 0, 0, 0), utc(2026, 1, 9, 0, 0, 0)]
    );
    assert_eq!(fires("0 0 1 */3 *", after, 3).last(), Some(&utc(2026, 10, 1, 0, 0, 0)));
}

#[test]
fn lists() {
    assert_eq!(
        fires("0 0,12 * * *", utc(2026, 1, 1, 6, 0, 0), 3),
        vec![utc(2026, 1, 1, 12, 0, 0), utc(2026, 1, 2, 0, 0, 0), utc(2026, 1, 2, 12, 0, 0)]
    );
    assert_eq!(
        fires("0 5,10-12,50-55/5 * * * ?", utc(2026, 1, 1, 0, 0, 0), 7),
        vec![
            utc(2026, 1, 1, 0, 5, 0),
            utc(2026, 1, 1, 0, 10, 0),
            utc(2026, 1, 1, 0, 11, 0),
            utc(2026, 1, 1, 0, 12, 0),
            utc(2026, 1, 1, 0, 50, 0),
            utc(2026, 1, 1, 0, 55, 0),
            utc(2026, 1, 1, 1, 5, 0),
        ]
    );
}

#[test]
fn macros() {
    let after = utc(2026, 3, 5, 10, 30, 0); // Thursday
    let cases = [
        ("@yearly", utc(2027, 1, 1, 0, 0, 0)),
        ("@annually", utc(2027, 1, 1, 0, 0, 0)),
        ("@monthly", utc(2026, 4, 1, 0, 0, 0)),
        ("@weekly", utc(2026, 3, 8, 0, 0, 0)),
        ("@daily", utc(2026, 3, 6, 0, 0, 0)),
        ("@midnight", utc(2026, 3, 6, 0, 0, 0)),
        ("@hourly", utc(2026, 3, 5, 11, 0, 0)),
        ("@DAILY", utc(2026, 3, 6, 0, 0, 0)),
    ];
    for (expr, expected) in cases {
        let c = cron(expr);
        assert_eq!(c.next_after(after, Tz::UTC), Some(expected), "{expr}");
        assert_eq!(c.source(), expr);
        assert!(!c.has_seconds(), "{expr}");
    }
    assert_eq!(cron("  @hourly ").source(), "@hourly");
}

#[test]
fn year_field() {
    let after = utc(2026, 1, 1, 0, 0, 0);
    assert_eq!(fires("0 0 0 1 1 ? 2030", after, 5), vec![utc(2030, 1, 1, 0, 0, 0)]);
    assert_eq!(
        fires("0 0 0 1 1 ? 2027-2029", after, 5),
        vec![utc(2027, 1, 1, 0, 0, 0), utc(2028, 1, 1, 0, 0, 0), utc(2029, 1, 1, 0, 0, 0)]
    );
    let decades = fires("0 0 0 1 1 ? 2030/10", after, 20);
    assert_eq!(decades.len(), 7);
    assert_eq!(decades.last(), Some(&utc(2090, 1, 1, 0, 0, 0)));
    assert_eq!(
        fires("0 30 12 4 7 ? 2026,2028", after, 5),
        vec![utc(2026, 7, 4, 12, 30, 0), utc(2028, 7, 4, 12, 30, 0)]
    );
    assert_eq!(fires("0 0 0 1 1 ? *", after, 2), vec![utc(2027, 1, 1, 0, 0, 0), utc(2028, 1, 1, 0, 0, 0)]);
    assert_eq!(cron("0 0 0 1 1 ? 2020").next_after(after, Tz::UTC), None);
    assert_eq!(cron("0 0 0 1 1 ? 1970").next_after(utc(1960, 1, 1, 0, 0, 0), Tz::UTC), Some(utc(1970, 1, 1, 0, 0, 0)));
    assert!(cron("0 0 0 1 1 ? 2099").has_seconds());
}

#[test]
fn leap_day_jumps_to_next_leap_year() {
    let after = utc(2026, 1, 1, 0, 0, 0);
    let expected = vec![utc(2028, 2, 29, 0, 0, 0), utc(2032, 2, 29, 0, 0, 0), utc(2036, 2, 29, 0, 0, 0)];
    assert_eq!(fires("0 0 0 29 2 ?", after, 3), expected);
    assert_eq!(fires("0 0 29 2 *", after, 3), expected);
    // 2096 is the last leap year before the 2099 horizon.
    assert_eq!(cron("0 0 29 2 *").next_after(utc(2096, 3, 1, 0, 0, 0), Tz::UTC), None);
}

#[test]
fn impossible_dates_return_none() {
    let after = utc(2026, 1, 1, 0, 0, 0);
    for expr in ["0 0 0 30 2 ?", "0 0 31 4 *", "0 0 0 31 2,4,6,9,11 ?", "0 0 0 30 FEB ? 2030-2040"] {
        assert_eq!(cron(expr).next_after(after, Tz::UTC), None, "{expr}");
    }
}

#[test]
fn horizon_is_2099() {
    let c = cron("0 0 * * *");
    assert_eq!(c.next_after(utc(2099, 12, 30, 12, 0, 0), Tz::UTC), Some(utc(2099, 12, 31, 0, 0, 0)));
    assert_eq!(c.next_after(utc(2099, 12, 31, 0, 0, 0), Tz::UTC), None);
    assert_eq!(c.next_after(utc(2150, 1, 1, 0, 0, 0), Tz::UTC), None);
    assert_eq!(c.next_after(chrono::DateTime::<Utc>::MAX_UTC, Tz::UTC), None);
    assert_eq!(c.next_after(chrono::DateTime::<Utc>::MIN_UTC, Tz::UTC), Some(utc(1970, 1, 1, 0, 0, 0)));
    assert_eq!(cron("0 0 1 1 *").next_after(utc(1960, 6, 1, 0, 0, 0), Tz::UTC), Some(utc(1970, 1, 1, 0, 0, 0)));
    assert_eq!(cron("0 0 1 1 *").iter_after(utc(2090, 6, 1, 0, 0, 0), Tz::UTC).count(), 9);
}

#[test]
fn day_of_month_or_day_of_week() {
    let after = utc(2026, 1, 1, 0, 0, 0); // Thursday; the 13th is a Tuesday
    // Both restricted: either matches (Vixie cron).
    assert_eq!(
        fires("0 0 13 * FRI", after, 6),
        vec![
            utc(2026, 1, 2, 0, 0, 0),
            utc(2026, 1, 9, 0, 0, 0),
            utc(2026, 1, 13, 0, 0, 0),
            utc(2026, 1, 16, 0, 0, 0),
            utc(2026, 1, 23, 0, 0, 0),
            utc(2026, 1, 30, 0, 0, 0),
        ]
    );
    assert_eq!(fires("0 0 0 13 * FRI", after, 3), fires("0 0 13 * FRI", after, 3));
    // One of them `?` or `*`: the other decides.
    let thirteenths = vec![utc(2026, 1, 13, 0, 0, 0), utc(2026, 2, 13, 0, 0, 0)];
    let fridays = vec![utc(2026, 1, 2, 0, 0, 0), utc(2026, 1, 9, 0, 0, 0)];
    assert_eq!(fires("0 0 0 13 * ?", after, 2), thirteenths);
    assert_eq!(fires("0 0 0 13 * *", after, 2), thirteenths);
    assert_eq!(fires("0 0 13 * *", after, 2), thirteenths);
    assert_eq!(fires("0 0 0 ? * FRI", after, 2), fridays);
    assert_eq!(fires("0 0 0 * * FRI", after, 2), fridays);
    assert_eq!(fires("0 0 * * FRI", after, 2), fridays);
    assert_eq!(fires("0 0 ? * FRI", after, 2), fridays);
    // Both unrestricted: every day.
    assert_eq!(fires("0 0 0 * * ?", after, 1), vec![utc(2026, 1, 2, 0, 0, 0)]);
    assert_eq!(fires("0 0 0 ? * *", after, 1), vec![utc(2026, 1, 2, 0, 0, 0)]);
}

#[test]
fn has_seconds_and_source() {
    assert!(!cron("* * * * *").has_seconds());
    assert!(cron("* * * * * ?").has_seconds());
    assert!(cron("* * * * * ? 2030").has_seconds());
    let c = cron("  */5\t *  * * *\t\n");
    assert_eq!(c.source(), "*/5\t *  * * *");
    assert_eq!(c.to_string(), c.source());
    assert_eq!(fires("\t0\t9 *   * 1-5 ", utc(2026, 1, 2, 10, 0, 0), 1), vec![utc(2026, 1, 5, 9, 0, 0)]);
    let parsed: Cron = "0 0 * * *".parse().unwrap();
    assert_eq!(parsed, cron("0 0 * * *"));
    assert_eq!(parsed.clone(), parsed);
    assert_ne!(cron("0 0 * * *"), cron("0 1 * * *"));
}

#[test]
fn strictly_after() {
    let c = cron("0 0 * * *");
    let midnight = utc(2026, 1, 1, 0, 0, 0);
    assert_eq!(c.next_after(midnight, Tz::UTC), Some(utc(2026, 1, 2, 0, 0, 0)));
    let half_past = midnight + TimeDelta::milliseconds(500);
    assert_eq!(c.next_after(half_past, Tz::UTC), Some(utc(2026, 1, 2, 0, 0, 0)));
    let just_before = midnight - TimeDelta::nanoseconds(1);
    assert_eq!(c.next_after(just_before, Tz::UTC), Some(midnight));
}

#[test]
fn every_second() {
    let c = cron("* * * * * ?");
    let t = Utc.with_ymd_and_hms(2026, 12, 31, 23, 59, 58).unwrap();
    assert_eq!(
        c.iter_after(t, Tz::UTC).take(3).collect::<Vec<_>>(),
        vec![utc(2026, 12, 31, 23, 59, 59), utc(2027, 1, 1, 0, 0, 0), utc(2027, 1, 1, 0, 0, 1)]
    );
}

#[test]
fn iteration_is_strictly_increasing() {
    let exprs = [
        "* * * * *",
        "*/7 * * * * ?",
        "0 15 10 L * ?",
        "0 0 12 LW * ?",
        "0 15 10 ? * 6#3",
        "30 2 * * *",
        "0 0,30 1-3 * * ?",
        "0 0 13 * FRI",
        "0 0 29 2 *",
    ];
    let zones = [Tz::UTC, Tz::Europe__Berlin, Tz::America__New_York, Tz::Australia__Lord_Howe];
    for expr in exprs {
        let c = cron(expr);
        for tz in zones {
            let start = utc(2026, 1, 1, 0, 0, 0);
            let mut prev = start;
            let mut n = 0;
            for t in c.iter_after(start, tz).take(500) {
                assert!(t > prev, "{expr} in {tz}: {t} after {prev}");
                prev = t;
                n += 1;
            }
            // 2028..=2096 holds 18 leap days; everything else has 500 fires.
            let expected = if expr == "0 0 29 2 *" { 18 } else { 500 };
            assert_eq!(n, expected, "{expr} in {tz}");
        }
    }
}
