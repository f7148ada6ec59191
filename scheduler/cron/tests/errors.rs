//! Every error names its field, the offending token and the problem.

use sundial_cron::{Cron, CronError, CronField};

#[track_caller]
fn err(expr: &str) -> CronError {
    match Cron::parse(expr) {
        Ok(c) => panic!("{expr:?} should not parse, got {c:?}"),
        Err(e) => e,
    }
}

#[track_caller]
fn check(expr: &str, field: CronField, value: &str, message: &str) {
    let e = err(expr);
    assert_eq!((e.field, e.value.as_str(), e.message.as_str()), (field, value, message), "{expr:?}");
}

use CronField::*;

#[test]
fn wrong_field_count() {
    check("* * * *", Expression, "* * * *", "expected 5, 6 or 7 fields, found 4");
    check("1 2 3 4 5 6 7 8", Expression, "1 2 3 4 5 6 7 8", "expected 5, 6 or 7 fields, found 8");
    check("", Expression, "", "expected 5, 6 or 7 fields, found 0");
    check("   \t ", Expression, "", "expected 5, 6 or 7 fields, found 0");
    check(" 0  0 ", Expression, "0  0", "expected 5, 6 or 7 fields, found 2");
}

#[test]
fn value_out_of_range() {
    check("61 * * * *", Minute, "61", "value 61 is out of range 0-59");
    check("60 * * * * ?", Second, "60", "value 60 is out of range 0-59");
    check("0 24 * * *", Hour, "24", "value 24 is out of range 0-23");
    check("0 0 32 * *", DayOfMonth, "32", "value 32 is out of range 1-31");
    check("0 0 0 * *", DayOfMonth, "0", "value 0 is out of range 1-31");
    check("0 0 1 13 *", Month, "13", "value 13 is out of range 1-12");
    check("0 0 1 0 *", Month, "0", "value 0 is out of range 1-12");
    check("0 0 * * 8", DayOfWeek, "8", "value 8 is out of range 0-7");
    check("0 0 0 ? * 8", DayOfWeek, "8", "value 8 is out of range 1-7");
    check("0 0 0 ? * 0", DayOfWeek, "0", "value 0 is out of range 1-7");
    check("1-61 * * * *", Minute, "1-61", "value 61 is out of range 0-59");
    check("99999999999 * * * *", Minute, "99999999999", "value 99999999999 is out of range 0-59");
}

#[test]
fn year_out_of_range() {
    check("0 0 0 1 1 ? 1969", Year, "1969", "value 1969 is out of range 1970-2099");
    check("0 0 0 1 1 ? 2100", Year, "2100", "value 2100 is out of range 1970-2099");
    check("0 0 0 1 1 ? 2020-2100", Year, "2020-2100", "value 2100 is out of range 1970-2099");
}

#[test]
fn unknown_names() {
    check("0 0 1 FOO *", Month, "FOO", "unknown name 'FOO'; expected JAN-DEC or 1-12");
    check("0 0 * * FOO", DayOfWeek, "FOO", "unknown name 'FOO'; expected SUN-SAT or 0-7");
    check("0 0 0 ? * MONDAY", DayOfWeek, "MONDAY", "unknown name 'MONDAY'; expected SUN-SAT or 1-7");
    check("0 0 1 JAN-FOO *", Month, "JAN-FOO", "unknown name 'FOO'; expected JAN-DEC or 1-12");
    // Names belong to their own field.
    check("0 0 1 MON *", Month, "MON", "unknown name 'MON'; expected JAN-DEC or 1-12");
    check("abc * * * *", Minute, "abc", "invalid value 'abc'; expected a number 0-59");
    check("0 JAN * * *", Hour, "JAN", "invalid value 'JAN'; expected a number 0-23");
}

#[test]
fn bad_steps() {
    check("*/0 * * * *", Minute, "*/0", "step must be at least 1, found 0");
    check("0 0 0 1/0 * ?", DayOfMonth, "1/0", "step must be at least 1, found 0");
    check("*/61 * * * *", Minute, "*/61", "step 61 is larger than the range 0-59");
    check("1/ * * * *", Minute, "1/", "missing step after '/'");
    check("*/x * * * *", Minute, "*/x", "invalid step 'x'; expected a number");
    check("*/1/2 * * * *", Minute, "*/1/2", "invalid step '1/2'; expected a number");
    check("/5 * * * *", Minute, "/5", "missing value before '/'");
}

#[test]
fn reversed_ranges_where_wrap_is_not_allowed() {
    let why = "(wrap-around ranges are only allowed in second, minute, hour, month and day_of_week)";
    check("0 0 20-10 * *", DayOfMonth, "20-10", &format!("range start 20 is greater than end 10 {why}"));
    check("0 0 0 1 1 ? 2030-2020", Year, "2030-2020", &format!("range start 2030 is greater than end 2020 {why}"));
    check("-5 * * * *", Minute, "-5", "missing range start in '-5'");
    check("5- * * * *", Minute, "5-", "missing range end in '5-'");
    check("1-5-7 * * * *", Minute, "1-5-7", "invalid character '-' in '5-7'");
}

#[test]
fn question_mark() {
    check("? * * * *", Minute, "?", "'?' is only allowed in day_of_month and day_of_week");
    check("0 0 ? * * *", Hour, "?", "'?' is only allowed in day_of_month and day_of_week");
    check("0 0 1 ? *", Month, "?", "'?' is only allowed in day_of_month and day_of_week");
    check("0 0 0 1 1 ? ?", Year, "?", "'?' is only allowed in day_of_month and day_of_week");
    check("0 0 ?,1 * *", DayOfMonth, "?", "'?' must be the whole field");
    check("0 0 0 1 * 1?", DayOfWeek, "1?", "'?' must be the whole field");
    check("0 0 0 ? * ?", DayOfWeek, "?", "'?' can't be used in both day_of_month and day_of_week");
    check("0 0 ? * ?", DayOfWeek, "?", "'?' can't be used in both day_of_month and day_of_week");
}

#[test]
fn l_w_hash_in_wrong_places() {
    check("0 L * * *", Hour, "L", "'L' is only allowed in day_of_month and day_of_week");
    check("0 0 5L * * ?", Hour, "5L", "'L' is only allowed in day_of_month and day_of_week");
    check("0 0 1 L *", Month, "L", "'L' is only allowed in day_of_month and day_of_week");
    check("0 5W * * *", Hour, "5W", "'W' is only allowed in day_of_month");
    check("0 0 * * 5W", DayOfWeek, "5W", "'W' is only allowed in day_of_month");
    check("0 0 1#2 * *", DayOfMonth, "1#2", "'#' is only allowed in day_of_week");
    check("0 0 0 L/2 * ?", DayOfMonth, "L/2", "'L' must be written as L, L-n or LW");
    check("0 0 0 5L * ?", DayOfMonth, "5L", "'L' must be written as L, L-n or LW");
    check("0 0 0 1-15W * ?", DayOfMonth, "1-15W", "'W' must be written as nW (e.g. 15W) or LW");
    check("0 0 0 W * ?", DayOfMonth, "W", "'W' must be written as nW (e.g. 15W) or LW");
    check("0 0 0 ? * 1-L", DayOfWeek, "1-L", "'L' must be written as L or weekdayL, e.g. 5L or FRIL");
}

#[test]
fn quartz_day_forms_out_of_range() {
    check("0 0 0 ? * 6#6", DayOfWeek, "6#6", "occurrence 6 after '#' is out of range 1-5");
    check("0 0 0 ? * 6#0", DayOfWeek, "6#0", "occurrence 0 after '#' is out of range 1-5");
    check("0 0 0 ? * 6#", DayOfWeek, "6#", "invalid occurrence '' after '#'; expected 1-5");
    check("0 0 0 ? * 8#1", DayOfWeek, "8#1", "value 8 is out of range 1-7");
    check("0 0 0 ? * FOOL", DayOfWeek, "FOOL", "unknown name 'FOO'; expected SUN-SAT or 1-7");
    check("0 0 0 32W * ?", DayOfMonth, "32W", "day 32 is out of range 1-31");
    check("0 0 0 0W * ?", DayOfMonth, "0W", "day 0 is out of range 1-31");
    check("0 0 0 L-31 * ?", DayOfMonth, "L-31", "offset 31 is out of range 0-30");
    check("0 0 0 L-x * ?", DayOfMonth, "L-x", "invalid offset in 'L-x'; expected L-n with n 0-30");
}

#[test]
fn empty_list_elements() {
    check("1,,2 * * * *", Minute, "1,,2", "empty list element");
    check("1, * * * *", Minute, "1,", "empty list element");
    check("0 0 ,1 * *", DayOfMonth, ",1", "empty list element");
    check("0 0 0 ? * MON,", DayOfWeek, "MON,", "empty list element");
}

#[test]
fn garbage_characters() {
    check("5$ * * * *", Minute, "5$", "invalid character '$' in '5$'");
    check("0 0 1 JAN! *", Month, "JAN!", "invalid character '!' in 'JAN!'");
    check("0 0 * * MON;", DayOfWeek, "MON;", "invalid character ';' in 'MON;'");
    check("0 é * * *", Hour, "é", "invalid character 'é' in 'é'");
    check("** * * * *", Minute, "**", "invalid character '*' in '**'");
    check("1.5 * * * *", Minute, "1.5", "invalid character '.' in '1.5'");
    check("5a * * * *", Minute, "5a", "invalid value '5a'; expected a number 0-59");
}

#[test]
fn macros() {
    let e = err("@foo");
    assert_eq!((e.field, e.value.as_str()), (Expression, "@foo"));
    assert_eq!(
        e.message,
        "unknown macro '@foo'; expected @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly"
    );
    let e = err("@reboot");
    assert_eq!(e.field, Expression);
    check("@daily 5", Expression, "@daily 5", "macro @daily must be the whole expression");
    check("@", Expression, "@", &err("@").message);
}

#[test]
fn display_and_field_names() {
    let e = err("61 * * * *");
    assert_eq!(e.to_string(), "minute field: value 61 is out of range 0-59");
    let e = err("* * * *");
    assert_eq!(e.to_string(), "expression field: expected 5, 6 or 7 fields, found 4");
    let names = [
        (Expression, "expression"),
        (Second, "second"),
        (Minute, "minute"),
        (Hour, "hour"),
        (DayOfMonth, "day_of_month"),
        (Month, "month"),
        (DayOfWeek, "day_of_week"),
        (Year, "year"),
    ];
    for (field, name) in names {
        assert_eq!(field.as_str(), name);
        assert_eq!(field.to_string(), name);
    }
    // std::error::Error is implemented.
    let boxed: Box<dyn std::error::Error> = Box::new(err("x"));
    assert!(boxed.to_string().starts_with("expression field:"));
}
