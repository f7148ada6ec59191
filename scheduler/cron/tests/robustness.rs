//! Never panic on odd input; stay fast on hard expressions.

mod common;

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use common::{cron, utc};
use sundial_cron::Cron;

/// Small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

const PIECES: &[&str] = &[
    "*",
    "?",
    "L",
    "W",
    "#",
    "-",
    "/",
    ",",
    " ",
    "\t",
    "0",
    "1",
    "5",
    "7",
    "12",
    "15",
    "23",
    "29",
    "30",
    "31",
    "32",
    "59",
    "60",
    "99",
    "1970",
    "2099",
    "2100",
    "4294967296",
    "JAN",
    "feb",
    "DEC",
    "SUN",
    "mon",
    "SAT",
    "FOO",
    "LW",
    "L-",
    "5L",
    "6#3",
    "15W",
    "@",
    "@daily",
    "@foo",
    "é",
    "\u{0}",
    "💥",
    "-1",
    "//",
    ",,",
    "**",
    "??",
    "##",
    "LL",
    "WW",
];

fn poke(expr: &str, rng: &mut Rng) {
    // Parsing must not panic; whatever parses must evaluate without panicking.
    if let Ok(c) = Cron::parse(expr) {
        let zones = [Tz::UTC, Tz::Europe__Berlin, Tz::Australia__Lord_Howe, Tz::Pacific__Apia];
        let tz = zones[(rng.next() % zones.len() as u64) as usize];
        let after = utc(1965, 1, 1, 0, 0, 0) + TimeDelta::seconds((rng.next() % (140 * 365 * 86_400)) as i64);
        let mut prev = after;
        for t in c.iter_after(after, tz).take(3) {
            assert!(t > prev, "{expr:?}: {t} not after {prev}");
            prev = t;
        }
    }
}

#[test]
fn random_strings_never_panic() {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    for _ in 0..600 {
        let fields = 1 + rng.next() % 8;
        let mut expr = String::new();
        for f in 0..fields {
            if f > 0 {
                expr.push(' ');
            }
            for _ in 0..1 + rng.next() % 4 {
                expr.push_str(rng.pick(PIECES));
            }
        }
        poke(&expr, &mut rng);
    }
}

/// Plausible values per field: second, minute, hour, day-of-month, month, day-of-week, year.
const POOLS: [&[&str]; 7] = [
    &["0", "1", "15", "30", "59"],
    &["0", "5", "10", "30", "45", "59"],
    &["0", "1", "2", "3", "12", "22", "23"],
    &["1", "2", "13", "15", "28", "29", "30", "31"],
    &["1", "2", "6", "12", "JAN", "FEB", "NOV", "DEC"],
    &["1", "2", "5", "6", "7", "MON", "FRI", "SAT", "SUN"],
    &["1970", "2026", "2028", "2050", "2099"],
];
const DOM_SPECIALS: &[&str] = &["L", "LW", "L-2", "L-30", "15W", "1W", "31W"];
const DOW_SPECIALS: &[&str] = &["L", "6L", "FRIL", "6#3", "MON#5", "5L", "SUN#1"];

/// Mostly well-formed expressions, so that evaluation gets exercised too.
#[test]
fn random_structured_expressions_never_panic() {
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    let mut parsed = 0;
    for _ in 0..600 {
        let count = 5 + rng.next() % 3;
        // Field kinds (indices into POOLS) for this field count.
        let kinds: &[usize] = match count {
            5 => &[1, 2, 3, 4, 5],
            6 => &[0, 1, 2, 3, 4, 5],
            _ => &[0, 1, 2, 3, 4, 5, 6],
        };
        let mut parts = Vec::new();
        for &kind in kinds {
            let pool = POOLS[kind];
            let elements = 1 + rng.next() % 2;
            let mut field = Vec::new();
            for _ in 0..elements {
                let elem = match rng.next() % 10 {
                    0..=3 => "*".to_string(),
                    4 => rng.pick(pool).to_string(),
                    5 => format!("{}-{}", rng.pick(pool), rng.pick(pool)),
                    6 => format!("*/{}", 1 + rng.next() % 20),
                    7 => format!("{}-{}/{}", rng.pick(pool), rng.pick(pool), 1 + rng.next() % 5),
                    8 if kind == 3 => rng.pick(DOM_SPECIALS).to_string(),
                    8 if kind == 5 => rng.pick(DOW_SPECIALS).to_string(),
                    8 => rng.pick(PIECES).to_string(),
                    _ => format!("{}/{}", rng.pick(pool), 1 + rng.next() % 7),
                };
                field.push(elem);
            }
            parts.push(field.join(","));
        }
        let expr = parts.join(" ");
        if Cron::parse(&expr).is_ok() {
            parsed += 1;
        }
        poke(&expr, &mut rng);
    }
    assert!(parsed > 100, "only {parsed} generated expressions parsed");
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(42);
    for _ in 0..300 {
        let len = (rng.next() % 40) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| (rng.next() % 128) as u8).collect();
        poke(&String::from_utf8_lossy(&bytes), &mut rng);
    }
}

/// Odd strings the grammar refuses: each is an error, none panics.
#[test]
fn odd_strings_are_refused() {
    let odd = [
        "",
        " ",
        "@",
        "@@",
        "@ daily",
        "L",
        "? ? ? ? ?",
        "# # # # #",
        "W W W W W",
        "- - - - -",
        "/ / / / /",
        ", , , , ,",
        "* * * * * * * *",
        "0 0 0 LW-1 * ?",
        "0 0 0 L-W * ?",
        "0 0 0 ? * #",
        "0 0 0 ? * L#1",
        "0 0 0 ? * 1#",
        "0 0 0 ? * #1",
        "0 0 0 ? * 1L#2",
        "0 0 0 ? * LL",
        "0 0 0 W1 * ?",
        "0 0 0 1WW * ?",
        "*/ * * * *",
        "*/-1 * * * *",
        "1-/2 * * * *",
        "-0 * * * *",
        "💥 * * * *",
        "* * * * 💥",
        "\u{0} * * * *",
        "99999999999999999999 * * * *",
        "*/99999999999999999999 * * * *",
        "0 0 0 L-99999999999 * ?",
        "0 0 0 ? * 1#99999999999",
        "0 0 0 99999999999W * ?",
    ];
    for expr in odd {
        assert!(Cron::parse(expr).is_err(), "{expr:?} should be refused");
    }
}

/// Odd strings that are valid: each parses and fires exactly where the crate docs say
/// (first fire after 2026-01-01T00:00:00Z in UTC; `None` for one that never fires).
#[test]
fn odd_but_valid_strings_fire_where_they_should() {
    let long = "1,".repeat(5000) + "1 * * * *";
    let start = utc(2026, 1, 1, 0, 0, 0);
    let cases = [
        // `L-n` before the 1st: no fire in that month (February is the only month here).
        ("0 0 0 L-30 2 ?", None),
        ("0-0 * * * *", Some(utc(2026, 1, 1, 1, 0, 0))),
        // Wrap-around range 59..0 stepped by 59: minute 59 only.
        ("59-0/59 * * * *", Some(utc(2026, 1, 1, 0, 59, 0))),
        ("0 0 31 */2 *", Some(utc(2026, 1, 31, 0, 0, 0))),
        // `nW` in a month shorter than n: no fire.
        ("0 0 0 31W 2 ?", None),
        // 2099-02-01 is a Sunday: the nearest weekday within the month is Monday the 2nd.
        ("0 0 0 1W 2 ? 2099", Some(utc(2099, 2, 2, 0, 0, 0))),
        ("* * * * * * 2099", Some(utc(2099, 1, 1, 0, 0, 0))),
        ("* * * * * * 1970", None),
        (long.as_str(), Some(utc(2026, 1, 1, 0, 1, 0))),
    ];
    let mut rng = Rng(7);
    for (expr, next) in cases {
        assert_eq!(cron(expr).next_after(start, Tz::UTC), next, "{expr:.40}");
        poke(expr, &mut rng);
    }
}

/// The search range is local years 1970-2099: from the earliest instant the first fire is
/// the zone's local 1970-01-01 00:00:00, and nothing fires past local 2099. Expected
/// instants from Python's zoneinfo (Kiritimati was UTC-10:40 in 1970, +14 since 1995).
#[test]
fn extreme_instants_answer_within_the_search_range() {
    let c = cron("* * * * * ?");
    let end = utc(2099, 12, 31, 23, 59, 59);
    let after_end = utc(2100, 1, 1, 0, 0, 0);
    let cases = [
        (Tz::UTC, DateTime::<Utc>::MIN_UTC, Some(utc(1970, 1, 1, 0, 0, 0))),
        (Tz::UTC, DateTime::<Utc>::MAX_UTC, None),
        (Tz::UTC, end, None),
        (Tz::UTC, after_end, None),
        (Tz::Pacific__Kiritimati, DateTime::<Utc>::MIN_UTC, Some(utc(1970, 1, 1, 10, 40, 0))),
        (Tz::Pacific__Kiritimati, DateTime::<Utc>::MAX_UTC, None),
        // Local 2100-01-01 13:59:59 already.
        (Tz::Pacific__Kiritimati, end, None),
        (Tz::Pacific__Kiritimati, after_end, None),
        (Tz::Etc__GMTPlus12, DateTime::<Utc>::MIN_UTC, Some(utc(1970, 1, 1, 12, 0, 0))),
        (Tz::Etc__GMTPlus12, DateTime::<Utc>::MAX_UTC, None),
        // UTC-12: local 2099-12-31 11:59:59, so the next local second is still in 2099.
        (Tz::Etc__GMTPlus12, end, Some(after_end)),
        (Tz::Etc__GMTPlus12, after_end, Some(utc(2100, 1, 1, 0, 0, 1))),
    ];
    for (tz, after, next) in cases {
        assert_eq!(c.next_after(after, tz), next, "{tz} after {after}");
    }
}

/// 10,000 `next_after` calls on expressions that never fire.
#[test]
fn ten_thousand_calls_that_never_fire() {
    let start = utc(2026, 1, 1, 0, 0, 0);
    for expr in ["0 0 0 30 2 ?", "0 0 0 31 4 ? 2030-2099", "0 0 0 ? 2 5#5 2027"] {
        let c = cron(expr);
        for i in 0..10_000 {
            assert_eq!(c.next_after(start + TimeDelta::hours(i), Tz::Europe__Berlin), None, "{expr}");
        }
    }
}

/// 10,000 successive fires of a frequent expression: every five minutes, none missed.
#[test]
fn ten_thousand_fires_every_five_minutes() {
    let start = utc(2026, 1, 1, 0, 0, 0);
    let fires: Vec<_> = cron("*/5 * * * *").iter_after(start, Tz::Europe__Berlin).take(10_000).collect();
    assert_eq!(fires.len(), 10_000);
    assert_eq!(fires[0], utc(2026, 1, 1, 0, 5, 0));
    assert!(fires.windows(2).all(|w| w[1] - w[0] == TimeDelta::minutes(5)));
    // No DST change before 29 March, so exactly 10,000 × 5 minutes on.
    assert_eq!(fires[9_999], utc(2026, 2, 4, 17, 20, 0));
}

/// Monthly expressions asked for 10,000 fires run out at 2099: one a month from
/// January 2026 to December 2099, 74 × 12 = 888. First and last instants from Python's
/// calendar and zoneinfo.
#[test]
fn monthly_expressions_run_out_after_2099() {
    let start = utc(2026, 1, 1, 0, 0, 0);
    for (expr, tz, first, last) in [
        // Third Friday (Quartz 6 = Friday) at 10:15 New York time.
        ("0 15 10 ? * 6#3", Tz::America__New_York, utc(2026, 1, 16, 15, 15, 0), utc(2099, 12, 18, 15, 15, 0)),
        // Last weekday of the month at noon.
        ("0 0 12 LW * ?", Tz::UTC, utc(2026, 1, 30, 12, 0, 0), utc(2099, 12, 31, 12, 0, 0)),
        // Weekday nearest the 15th at noon Lord Howe time (UTC+11 in summer).
        ("0 0 12 15W * ?", Tz::Australia__Lord_Howe, utc(2026, 1, 15, 1, 0, 0), utc(2099, 12, 15, 1, 0, 0)),
    ] {
        let fires: Vec<_> = cron(expr).iter_after(start, tz).take(10_000).collect();
        assert_eq!(fires.len(), 888, "{expr}");
        assert!(fires.windows(2).all(|w| w[0] < w[1]), "{expr}");
        assert_eq!((fires[0], fires[887]), (first, last), "{expr}");
    }
}
