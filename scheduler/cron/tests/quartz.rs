//! Quartz day rules: L, L-n, LW, nW, nL, n#k, plain L in day-of-week.

mod common;

use common::{fires, utc};

// Calendar 2026: Jan 1 Thu, Feb 1 Sun, Mar 1 Sun, Apr 1 Wed, May 1 Fri (May 31 Sun),
// Jul 1 Wed, Aug 1 Sat, Nov 1 Sun.

#[test]
fn last_day_of_month() {
    assert_eq!(
        fires("0 15 10 L * ?", utc(2026, 1, 1, 0, 0, 0), 4),
        vec![
            utc(2026, 1, 31, 10, 15, 0),
            utc(2026, 2, 28, 10, 15, 0),
            utc(2026, 3, 31, 10, 15, 0),
            utc(2026, 4, 30, 10, 15, 0)
        ]
    );
    assert_eq!(fires("0 15 10 L 2 ?", utc(2027, 3, 1, 0, 0, 0), 1), vec![utc(2028, 2, 29, 10, 15, 0)]);
    // 5-field and lower case.
    assert_eq!(fires("0 0 l * *", utc(2026, 1, 1, 0, 0, 0), 1), vec![utc(2026, 1, 31, 0, 0, 0)]);
}

#[test]
fn days_before_last_day() {
    assert_eq!(
        fires("0 15 10 L-2 * ?", utc(2026, 1, 1, 0, 0, 0), 4),
        vec![
            utc(2026, 1, 29, 10, 15, 0),
            utc(2026, 2, 26, 10, 15, 0),
            utc(2026, 3, 29, 10, 15, 0),
            utc(2026, 4, 28, 10, 15, 0)
        ]
    );
    // L-30 is the 1st of 31-day months only; no fire in shorter months.
    assert_eq!(
        fires("0 0 0 L-30 * ?", utc(2026, 1, 1, 0, 0, 0), 3),
        vec![utc(2026, 3, 1, 0, 0, 0), utc(2026, 5, 1, 0, 0, 0), utc(2026, 7, 1, 0, 0, 0)]
    );
    assert_eq!(fires("0 0 0 L-0 * ?", utc(2026, 1, 1, 0, 0, 0), 1), vec![utc(2026, 1, 31, 0, 0, 0)]);
}

#[test]
fn last_weekday_of_month() {
    // Jan 31 is Sat -> Fri 30; Feb 28 Sat -> Fri 27; Mar 31 Tue; Apr 30 Thu; May 31 Sun -> Fri 29.
    assert_eq!(
        fires("0 0 12 LW * ?", utc(2026, 1, 1, 0, 0, 0), 5),
        vec![
            utc(2026, 1, 30, 12, 0, 0),
            utc(2026, 2, 27, 12, 0, 0),
            utc(2026, 3, 31, 12, 0, 0),
            utc(2026, 4, 30, 12, 0, 0),
            utc(2026, 5, 29, 12, 0, 0),
        ]
    );
}

#[test]
fn nearest_weekday() {
    // Jan 15 Thu; Feb 15 Sun -> Mon 16; Mar 15 Sun -> Mon 16; Apr 15 Wed.
    assert_eq!(
        fires("0 0 12 15W * ?", utc(2026, 1, 1, 0, 0, 0), 4),
        vec![
            utc(2026, 1, 15, 12, 0, 0),
            utc(2026, 2, 16, 12, 0, 0),
            utc(2026, 3, 16, 12, 0, 0),
            utc(2026, 4, 15, 12, 0, 0)
        ]
    );
    // Aug 15 2026 is a Saturday -> Friday 14th.
    assert_eq!(fires("0 0 12 15W * ?", utc(2026, 8, 1, 0, 0, 0), 1), vec![utc(2026, 8, 14, 12, 0, 0)]);
}

#[test]
fn nearest_weekday_does_not_leave_the_month() {
    // Aug 2026 starts on a Saturday: 1W -> Monday 3rd (not Friday July 31st).
    assert_eq!(fires("0 0 12 1W * ?", utc(2026, 7, 15, 0, 0, 0), 1), vec![utc(2026, 8, 3, 12, 0, 0)]);
    // Nov 1 2026 is a Sunday -> Monday 2nd.
    assert_eq!(fires("0 0 12 1W * ?", utc(2026, 10, 15, 0, 0, 0), 1), vec![utc(2026, 11, 2, 12, 0, 0)]);
    // May 31 2026 is a Sunday: 31W -> Friday 29th (not Monday June 1st).
    assert_eq!(fires("0 0 12 31W * ?", utc(2026, 5, 1, 0, 0, 0), 1), vec![utc(2026, 5, 29, 12, 0, 0)]);
    // 31W skips 30-day months: after May comes July 31 (a Friday).
    assert_eq!(fires("0 0 12 31W * ?", utc(2026, 5, 30, 0, 0, 0), 1), vec![utc(2026, 7, 31, 12, 0, 0)]);
}

#[test]
fn last_weekday_of_kind() {
    // Quartz 6 = Friday. Last Fridays 2026: Jan 30, Feb 27, Mar 27, Apr 24.
    let expected = vec![
        utc(2026, 1, 30, 10, 15, 0),
        utc(2026, 2, 27, 10, 15, 0),
        utc(2026, 3, 27, 10, 15, 0),
        utc(2026, 4, 24, 10, 15, 0),
    ];
    let after = utc(2026, 1, 1, 0, 0, 0);
    assert_eq!(fires("0 15 10 ? * 6L", after, 4), expected);
    assert_eq!(fires("0 15 10 ? * FRIL", after, 4), expected);
    assert_eq!(fires("0 15 10 ? * fril", after, 4), expected);
    // Unix numbering in 5-field expressions: 5 = Friday.
    assert_eq!(fires("15 10 * * 5L", after, 4), expected);
    // Last Saturday: Jan 31.
    assert_eq!(fires("0 0 0 ? * SATL", after, 1), vec![utc(2026, 1, 31, 0, 0, 0)]);
}

#[test]
fn nth_weekday() {
    // Third Friday: Jan 16, Feb 20, Mar 20, Apr 17.
    let expected = vec![
        utc(2026, 1, 16, 10, 15, 0),
        utc(2026, 2, 20, 10, 15, 0),
        utc(2026, 3, 20, 10, 15, 0),
        utc(2026, 4, 17, 10, 15, 0),
    ];
    let after = utc(2026, 1, 1, 0, 0, 0);
    assert_eq!(fires("0 15 10 ? * 6#3", after, 4), expected);
    assert_eq!(fires("0 15 10 ? * FRI#3", after, 4), expected);
    assert_eq!(fires("15 10 * * 5#3", after, 4), expected);
    // First Monday, in a list with the first Thursday.
    assert_eq!(
        fires("0 0 9 ? * MON#1,THU#1", after, 3),
        vec![utc(2026, 1, 1, 9, 0, 0), utc(2026, 1, 5, 9, 0, 0), utc(2026, 2, 2, 9, 0, 0)]
    );
}

#[test]
fn fifth_weekday_skips_months_without_one() {
    // Quartz 5 = Thursday: fifth Thursdays are Jan 29, Apr 30, Jul 30 2026.
    assert_eq!(
        fires("0 0 0 ? * 5#5", utc(2026, 1, 1, 0, 0, 0), 3),
        vec![utc(2026, 1, 29, 0, 0, 0), utc(2026, 4, 30, 0, 0, 0), utc(2026, 7, 30, 0, 0, 0)]
    );
}

#[test]
fn plain_l_in_day_of_week_is_saturday() {
    let saturdays = vec![utc(2026, 1, 3, 0, 0, 0), utc(2026, 1, 10, 0, 0, 0)];
    assert_eq!(fires("0 0 0 ? * L", utc(2026, 1, 1, 0, 0, 0), 2), saturdays);
    assert_eq!(fires("0 0 * * L", utc(2026, 1, 1, 0, 0, 0), 2), saturdays);
}

#[test]
fn specials_in_lists() {
    assert_eq!(
        fires("0 0 0 1,15,L * ?", utc(2026, 1, 1, 0, 0, 0), 5),
        vec![
            utc(2026, 1, 15, 0, 0, 0),
            utc(2026, 1, 31, 0, 0, 0),
            utc(2026, 2, 1, 0, 0, 0),
            utc(2026, 2, 15, 0, 0, 0),
            utc(2026, 2, 28, 0, 0, 0),
        ]
    );
    // Last day of month OR last Friday (Vixie OR with Quartz forms).
    assert_eq!(
        fires("0 0 L * 5L", utc(2026, 1, 1, 0, 0, 0), 4),
        vec![
            utc(2026, 1, 30, 0, 0, 0),
            utc(2026, 1, 31, 0, 0, 0),
            utc(2026, 2, 27, 0, 0, 0),
            utc(2026, 2, 28, 0, 0, 0)
        ]
    );
}
