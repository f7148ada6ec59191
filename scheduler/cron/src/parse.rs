//! Parser: expression text to [`Cron`].

use crate::Cron;
use crate::error::{CronError, CronField};
use crate::schedule::{DomSet, DowSet, MAX_YEAR, MIN_YEAR, YearSet};

/// Which dialect an expression is in; decides day-of-week numbering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// 5 fields, day-of-week 0-7 with 0 and 7 = Sunday.
    Unix,
    /// 6 or 7 fields, day-of-week 1-7 with 1 = Sunday.
    Quartz,
}

const MONTH_NAMES: &[&str] = &["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const DAY_NAMES: &[&str] = &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// Static description of one field.
struct Spec {
    field: CronField,
    /// Smallest accepted number.
    min: u32,
    /// Largest accepted number.
    max: u32,
    /// End used for `*` and `a/n` (differs from `max` only for Unix day-of-week,
    /// where 7 is accepted as an alias of Sunday but `*` means 0-6).
    star_max: u32,
    /// Names, the first one having value `name_base`.
    names: &'static [&'static str],
    name_base: u32,
    /// Text for "unknown name" errors, e.g. `JAN-DEC or 1-12`.
    names_hint: &'static str,
    /// Whether `a-b` with a > b wraps around (max → min).
    wrap: bool,
}

const SECOND: Spec = plain(CronField::Second, 0, 59, true);
const MINUTE: Spec = plain(CronField::Minute, 0, 59, true);
const HOUR: Spec = plain(CronField::Hour, 0, 23, true);
const DAY_OF_MONTH: Spec = plain(CronField::DayOfMonth, 1, 31, false);
const YEAR: Spec = plain(CronField::Year, MIN_YEAR as u32, MAX_YEAR as u32, false);
const MONTH: Spec = Spec {
    field: CronField::Month,
    min: 1,
    max: 12,
    star_max: 12,
    names: MONTH_NAMES,
    name_base: 1,
    names_hint: "JAN-DEC or 1-12",
    wrap: true,
};
const DOW_UNIX: Spec = Spec {
    field: CronField::DayOfWeek,
    min: 0,
    max: 7,
    star_max: 6,
    names: DAY_NAMES,
    name_base: 0,
    names_hint: "SUN-SAT or 0-7",
    wrap: true,
};
const DOW_QUARTZ: Spec = Spec {
    field: CronField::DayOfWeek,
    min: 1,
    max: 7,
    star_max: 7,
    names: DAY_NAMES,
    name_base: 1,
    names_hint: "SUN-SAT or 1-7",
    wrap: true,
};

const fn plain(field: CronField, min: u32, max: u32, wrap: bool) -> Spec {
    Spec { field, min, max, star_max: max, names: &[], name_base: 0, names_hint: "", wrap }
}

const WRAP_FIELDS: &str = "second, minute, hour, month and day_of_week";

pub(crate) fn parse(expr: &str) -> Result<Cron, CronError> {
    let source = expr.trim();
    let fields: Vec<&str> = source.split_whitespace().collect();
    if fields.first().is_some_and(|f| f.starts_with('@')) {
        return parse_macro(source, &fields);
    }
    let (mode, sec, rest, year) = match fields.len() {
        5 => (Mode::Unix, None, &fields[..], None),
        6 => (Mode::Quartz, Some(fields[0]), &fields[1..], None),
        7 => (Mode::Quartz, Some(fields[0]), &fields[1..6], Some(fields[6])),
        n => {
            return Err(CronError::new(CronField::Expression, source, format!("expected 5, 6 or 7 fields, found {n}")));
        }
    };
    let seconds = match sec {
        Some(tok) => mask_field(tok, &SECOND)?,
        None => 1,
    };
    let minutes = mask_field(rest[0], &MINUTE)?;
    let hours = mask_field(rest[1], &HOUR)?;
    let dom = parse_dom(rest[2])?;
    let months = mask_field(rest[3], &MONTH)?;
    let dow = parse_dow(rest[4], mode)?;
    if rest[2] == "?" && rest[4] == "?" {
        return Err(CronError::new(
            CronField::DayOfWeek,
            "?",
            "'?' can't be used in both day_of_month and day_of_week",
        ));
    }
    let years = match year {
        Some(tok) => parse_year(tok)?,
        None => None,
    };
    Ok(Cron {
        source: source.to_string(),
        has_seconds: sec.is_some(),
        seconds,
        minutes,
        hours,
        months,
        dom,
        dow,
        years,
    })
}

fn parse_macro(source: &str, fields: &[&str]) -> Result<Cron, CronError> {
    if fields.len() != 1 {
        return Err(CronError::new(
            CronField::Expression,
            source,
            format!("macro {} must be the whole expression", fields[0]),
        ));
    }
    let equivalent = match fields[0].to_ascii_lowercase().as_str() {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        _ => {
            return Err(CronError::new(
                CronField::Expression,
                source,
                format!(
                    "unknown macro '{}'; expected @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly",
                    fields[0]
                ),
            ));
        }
    };
    let mut cron = parse(equivalent)?;
    cron.source = source.to_string();
    cron.has_seconds = false;
    Ok(cron)
}

/// Parses a plain numeric/name field into a bit mask of its values.
fn mask_field(tok: &str, spec: &Spec) -> Result<u64, CronError> {
    let mut mask = 0u64;
    for_each_element(tok, spec, |elem| element_values(elem, spec, &mut |v| mask |= 1u64 << v))?;
    Ok(mask)
}

fn parse_year(tok: &str) -> Result<Option<YearSet>, CronError> {
    if tok == "*" {
        return Ok(None);
    }
    let mut set = YearSet::default();
    for_each_element(tok, &YEAR, |elem| element_values(elem, &YEAR, &mut |v| set.insert(v as i32)))?;
    Ok(Some(set))
}

/// Day of month. `None` means unrestricted (`*` or `?`).
fn parse_dom(tok: &str) -> Result<Option<DomSet>, CronError> {
    if tok == "*" || tok == "?" {
        return Ok(None);
    }
    let spec = &DAY_OF_MONTH;
    let mut set = DomSet::default();
    for_each_element(tok, spec, |elem| {
        let up = elem.to_ascii_uppercase();
        if up == "L" {
            set.last_offsets |= 1;
        } else if up == "LW" {
            set.last_weekday = true;
        } else if let Some(off) = up.strip_prefix("L-") {
            let n = parse_small(off).ok_or_else(|| format!("invalid offset in '{elem}'; expected L-n with n 0-30"))?;
            if n > 30 {
                return Err(format!("offset {off} is out of range 0-30"));
            }
            set.last_offsets |= 1 << n;
        } else if let Some(day) = up.strip_suffix('W').filter(|d| !d.is_empty()) {
            let n = parse_small(day).ok_or_else(|| "'W' must be written as nW (e.g. 15W) or LW".to_string())?;
            if !(1..=31).contains(&n) {
                return Err(format!("day {day} is out of range 1-31"));
            }
            set.nearest_weekday |= 1 << n;
        } else {
            element_values(elem, spec, &mut |v| set.days |= 1 << v)?;
        }
        Ok(())
    })?;
    Ok(Some(set))
}

/// Day of week, numbered per `mode`. `None` means unrestricted (`*` or `?`).
fn parse_dow(tok: &str, mode: Mode) -> Result<Option<DowSet>, CronError> {
    if tok == "*" || tok == "?" {
        return Ok(None);
    }
    let spec = match mode {
        Mode::Unix => &DOW_UNIX,
        Mode::Quartz => &DOW_QUARTZ,
    };
    // User numbering to 0 = Sunday .. 6 = Saturday.
    let internal = |v: u32| match mode {
        Mode::Unix => v % 7,
        Mode::Quartz => v - 1,
    };
    let mut set = DowSet::default();
    for_each_element(tok, spec, |elem| {
        let up = elem.to_ascii_uppercase();
        if up == "L" {
            // Plain `L`: the last day of the week, Saturday (Quartz semantics).
            set.days |= 1 << 6;
        } else if let Some((day, nth)) = up.split_once('#') {
            let wd = internal(parse_value(day, spec)?);
            let k = parse_small(nth).ok_or_else(|| format!("invalid occurrence '{nth}' after '#'; expected 1-5"))?;
            if !(1..=5).contains(&k) {
                return Err(format!("occurrence {nth} after '#' is out of range 1-5"));
            }
            set.nth |= 1 << (wd * 8 + k);
        } else if let Some(day) =
            up.strip_suffix('L').filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_alphanumeric()))
        {
            let wd = internal(parse_value(day, spec)?);
            set.last |= 1 << wd;
        } else {
            element_values(elem, spec, &mut |v| set.days |= 1 << internal(v))?;
        }
        Ok(())
    })?;
    Ok(Some(set))
}

/// Splits a field on commas and runs `f` on each element; errors from `f`
/// become [`CronError`]s naming the element.
fn for_each_element(tok: &str, spec: &Spec, mut f: impl FnMut(&str) -> Result<(), String>) -> Result<(), CronError> {
    for elem in tok.split(',') {
        if elem.is_empty() {
            return Err(CronError::new(spec.field, tok, "empty list element"));
        }
        if elem == "?" {
            let message = if matches!(spec.field, CronField::DayOfMonth | CronField::DayOfWeek) {
                "'?' must be the whole field"
            } else {
                "'?' is only allowed in day_of_month and day_of_week"
            };
            return Err(CronError::new(spec.field, elem, message));
        }
        f(elem).map_err(|message| CronError::new(spec.field, elem, message))?;
    }
    Ok(())
}

/// Values of one list element: `*`, `a`, `a-b`, each optionally with `/step`.
/// Values are reported in the field's user numbering.
fn element_values(elem: &str, spec: &Spec, out: &mut dyn FnMut(u32)) -> Result<(), String> {
    let (base, step) = match elem.split_once('/') {
        None => (elem, None),
        Some((base, step)) => (base, Some(parse_step(step, spec)?)),
    };
    let (start, end) = if base == "*" {
        (spec.min, spec.star_max)
    } else if let Some((a, b)) = base.split_once('-') {
        if a.is_empty() {
            return Err(format!("missing range start in '{base}'"));
        }
        if b.is_empty() {
            return Err(format!("missing range end in '{base}'"));
        }
        (parse_value(a, spec)?, parse_value(b, spec)?)
    } else if base.is_empty() {
        return Err("missing value before '/'".to_string());
    } else {
        let a = parse_value(base, spec)?;
        if step.is_none() {
            out(a);
            return Ok(());
        }
        (a, spec.star_max.max(a))
    };
    let step = step.unwrap_or(1) as usize;
    if start <= end {
        (start..=end).step_by(step).for_each(out);
    } else if spec.wrap {
        let size = spec.max - spec.min + 1;
        let len = end + size - start + 1;
        for k in (0..len).step_by(step) {
            out(spec.min + (start - spec.min + k) % size);
        }
    } else {
        return Err(format!(
            "range start {start} is greater than end {end} (wrap-around ranges are only allowed in {WRAP_FIELDS})"
        ));
    }
    Ok(())
}

fn parse_step(step: &str, spec: &Spec) -> Result<u32, String> {
    if step.is_empty() {
        return Err("missing step after '/'".to_string());
    }
    let size = spec.max - spec.min + 1;
    let Some(n) = parse_small(step) else {
        if step.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("step {step} is larger than the range {}-{}", spec.min, spec.max));
        }
        return Err(format!("invalid step '{step}'; expected a number"));
    };
    if n == 0 {
        return Err("step must be at least 1, found 0".to_string());
    }
    if n > size {
        return Err(format!("step {n} is larger than the range {}-{}", spec.min, spec.max));
    }
    Ok(n)
}

/// Parses an all-digit string of reasonable length.
fn parse_small(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 9 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// One number or name, range-checked, in the field's user numbering.
fn parse_value(tok: &str, spec: &Spec) -> Result<u32, String> {
    if tok.is_empty() {
        return Err("missing value".to_string());
    }
    if tok.bytes().all(|b| b.is_ascii_digit()) {
        return match parse_small(tok) {
            Some(v) if (spec.min..=spec.max).contains(&v) => Ok(v),
            _ => Err(format!("value {tok} is out of range {}-{}", spec.min, spec.max)),
        };
    }
    let up = tok.to_ascii_uppercase();
    if let Some(i) = spec.names.iter().position(|n| *n == up) {
        return Ok(spec.name_base + i as u32);
    }
    Err(misuse(tok, &up, spec))
}

/// Explains why `tok` (not a number, not a known name) is rejected.
fn misuse(tok: &str, up: &str, spec: &Spec) -> String {
    let dom = spec.field == CronField::DayOfMonth;
    let dow = spec.field == CronField::DayOfWeek;
    if up.contains('?') {
        return if dom || dow {
            "'?' must be the whole field".to_string()
        } else {
            "'?' is only allowed in day_of_month and day_of_week".to_string()
        };
    }
    if up.contains('#') {
        return if dow {
            format!("invalid use of '#' in '{tok}'; expected weekday#n, e.g. FRI#3")
        } else {
            "'#' is only allowed in day_of_week".to_string()
        };
    }
    if let Some(c) = tok.chars().find(|c| !c.is_ascii_alphanumeric()) {
        return format!("invalid character '{c}' in '{tok}'");
    }
    let alphabetic = up.bytes().all(|b| b.is_ascii_alphabetic());
    let has_l = if alphabetic { up == "L" || up == "LW" } else { up.contains('L') };
    let has_w = if alphabetic { up == "W" } else { up.contains('W') };
    if has_l {
        return if dom {
            "'L' must be written as L, L-n or LW".to_string()
        } else if dow {
            "'L' must be written as L or weekdayL, e.g. 5L or FRIL".to_string()
        } else {
            "'L' is only allowed in day_of_month and day_of_week".to_string()
        };
    }
    if has_w {
        return if dom {
            "'W' must be written as nW (e.g. 15W) or LW".to_string()
        } else {
            "'W' is only allowed in day_of_month".to_string()
        };
    }
    if alphabetic && !spec.names.is_empty() {
        return format!("unknown name '{tok}'; expected {}", spec.names_hint);
    }
    if spec.names.is_empty() {
        format!("invalid value '{tok}'; expected a number {}-{}", spec.min, spec.max)
    } else {
        format!("invalid value '{tok}'; expected {}", spec.names_hint)
    }
}
