//! When a job fires: the schedule kinds, their validation, and fire-time computation.
//!
//! [`ScheduleSpec`] is the wire and storage form (what a user sends, what the
//! store keeps as JSON); [`Schedule`] is the parsed domain value that computes
//! fire times. All instants are UTC epoch milliseconds.

use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use sundial_cron::Cron;

use crate::FieldError;
use crate::time::{ms_to_utc, parse_rfc3339, parse_timezone, rfc3339_in, rfc3339_utc};
use crate::types::ScheduleKind;

pub const MIN_EVERY_MS: i64 = 1_000;
pub const MAX_EVERY_MS: i64 = 366 * 24 * 3_600_000;
pub const MAX_PREVIEW: usize = 100;

/// A schedule as sent by a user and stored with the job. One flat struct, so a field that
/// does not apply to the kind is refused by name; the OpenAPI document describes it as a
/// `oneOf` per `kind` (see `openapi_schema` below).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleSpec {
    /// `cron`, `fixed_rate`, `once` or `manual`.
    pub kind: ScheduleKind,
    /// Cron expression (kind `cron`): 5 fields (Unix), 6 with seconds, 7 with year; Quartz `? L W #`; `@hourly`-style macros.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
    /// IANA time zone the cron expression is read in (kind `cron`); default `UTC`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// Interval in milliseconds (kind `fixed_rate`), one second to 366 days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every_ms: Option<i64>,
    /// RFC 3339 instant fixed-rate fires count from (`anchor + k·every_ms`); default: when the job was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<String>,
    /// RFC 3339 instant of the single fire (kind `once`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// RFC 3339: no fire before this instant (inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// RFC 3339: no fire at or after this instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Trigger {
    Cron { cron: Cron, tz: Tz },
    FixedRate { every_ms: i64, anchor_ms: i64 },
    Once { at_ms: i64 },
    Manual,
}

/// Fixed-rate schedules this frequent or more are [`Schedule::fires_at_dispatch`].
pub const AT_DISPATCH_MAX_EVERY_MS: i64 = 10_000;
/// Cron schedules firing at least this many seconds of a minute are [`Schedule::fires_at_dispatch`].
pub const AT_DISPATCH_MIN_SECONDS: u32 = 6;

/// A validated schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub trigger: Trigger,
    pub start_ms: Option<i64>,
    pub end_ms: Option<i64>,
}

fn refuse_extra(kind: ScheduleKind, field: &str, present: bool) -> Result<(), FieldError> {
    if present {
        return Err(FieldError::invalid(field, format!("does not apply to schedule kind `{kind}`")));
    }
    Ok(())
}

fn required<'a, T>(kind: ScheduleKind, field: &str, v: &'a Option<T>) -> Result<&'a T, FieldError> {
    v.as_ref().ok_or_else(|| FieldError::new(field, "missing_field", format!("is required for schedule kind `{kind}`")))
}

impl Schedule {
    /// Validate a spec. Field paths in errors are relative (`expression`); callers
    /// prefix them with [`FieldError::within`]. `now_ms` is the default fixed-rate anchor.
    pub fn parse(spec: &ScheduleSpec, now_ms: i64) -> Result<Schedule, FieldError> {
        let kind = spec.kind;
        let trigger = match kind {
            ScheduleKind::Cron => {
                refuse_extra(kind, "every_ms", spec.every_ms.is_some())?;
                refuse_extra(kind, "anchor", spec.anchor.is_some())?;
                refuse_extra(kind, "at", spec.at.is_some())?;
                let expr = required(kind, "expression", &spec.expression)?;
                let cron = Cron::parse(expr).map_err(|e| {
                    FieldError::new(
                        "expression",
                        "invalid_cron",
                        format!("{} field `{}`: {}", e.field.as_str(), e.value, e.message),
                    )
                })?;
                let tz = match &spec.timezone {
                    Some(t) => parse_timezone("timezone", t)?,
                    None => Tz::UTC,
                };
                Trigger::Cron { cron, tz }
            }
            ScheduleKind::FixedRate => {
                refuse_extra(kind, "expression", spec.expression.is_some())?;
                refuse_extra(kind, "timezone", spec.timezone.is_some())?;
                refuse_extra(kind, "at", spec.at.is_some())?;
                let every_ms = *required(kind, "every_ms", &spec.every_ms)?;
                if !(MIN_EVERY_MS..=MAX_EVERY_MS).contains(&every_ms) {
                    return Err(FieldError::invalid(
                        "every_ms",
                        format!("{every_ms} is out of range {MIN_EVERY_MS}-{MAX_EVERY_MS} (one second to 366 days)"),
                    ));
                }
                let anchor_ms = match &spec.anchor {
                    Some(a) => parse_rfc3339("anchor", a)?,
                    None => now_ms,
                };
                Trigger::FixedRate { every_ms, anchor_ms }
            }
            ScheduleKind::Once => {
                refuse_extra(kind, "expression", spec.expression.is_some())?;
                refuse_extra(kind, "timezone", spec.timezone.is_some())?;
                refuse_extra(kind, "every_ms", spec.every_ms.is_some())?;
                refuse_extra(kind, "anchor", spec.anchor.is_some())?;
                let at = required(kind, "at", &spec.at)?;
                Trigger::Once { at_ms: parse_rfc3339("at", at)? }
            }
            ScheduleKind::Manual => {
                refuse_extra(kind, "expression", spec.expression.is_some())?;
                refuse_extra(kind, "timezone", spec.timezone.is_some())?;
                refuse_extra(kind, "every_ms", spec.every_ms.is_some())?;
                refuse_extra(kind, "anchor", spec.anchor.is_some())?;
                refuse_extra(kind, "at", spec.at.is_some())?;
                refuse_extra(kind, "start_at", spec.start_at.is_some())?;
                refuse_extra(kind, "end_at", spec.end_at.is_some())?;
                Trigger::Manual
            }
        };
        let start_ms = spec.start_at.as_deref().map(|s| parse_rfc3339("start_at", s)).transpose()?;
        let end_ms = spec.end_at.as_deref().map(|s| parse_rfc3339("end_at", s)).transpose()?;
        if let (Some(s), Some(e)) = (start_ms, end_ms)
            && e <= s
        {
            return Err(FieldError::invalid("end_at", "must be later than start_at"));
        }
        Ok(Schedule { trigger, start_ms, end_ms })
    }

    /// The canonical spec: what is stored, with defaults (anchor, time zone) made explicit.
    pub fn to_spec(&self) -> ScheduleSpec {
        let mut spec = ScheduleSpec {
            kind: self.kind(),
            expression: None,
            timezone: None,
            every_ms: None,
            anchor: None,
            at: None,
            start_at: self.start_ms.map(rfc3339_utc),
            end_at: self.end_ms.map(rfc3339_utc),
        };
        match &self.trigger {
            Trigger::Cron { cron, tz } => {
                spec.expression = Some(cron.source().to_string());
                spec.timezone = Some(tz.name().to_string());
            }
            Trigger::FixedRate { every_ms, anchor_ms } => {
                spec.every_ms = Some(*every_ms);
                spec.anchor = Some(rfc3339_utc(*anchor_ms));
            }
            Trigger::Once { at_ms } => spec.at = Some(rfc3339_utc(*at_ms)),
            Trigger::Manual => {}
        }
        spec
    }

    pub fn kind(&self) -> ScheduleKind {
        match self.trigger {
            Trigger::Cron { .. } => ScheduleKind::Cron,
            Trigger::FixedRate { .. } => ScheduleKind::FixedRate,
            Trigger::Once { .. } => ScheduleKind::Once,
            Trigger::Manual => ScheduleKind::Manual,
        }
    }

    /// The zone fire times are shown in: the cron zone, else UTC.
    pub fn display_tz(&self) -> Tz {
        match &self.trigger {
            Trigger::Cron { tz, .. } => *tz,
            _ => Tz::UTC,
        }
    }

    pub fn format(&self, ms: i64) -> String {
        rfc3339_in(ms, self.display_tz())
    }

    /// Is this a high-frequency schedule, whose run rows are written when each fire is
    /// dispatched rather than ahead of time? A fixed rate of at most
    /// [`AT_DISPATCH_MAX_EVERY_MS`], or a cron expression firing at least
    /// [`AT_DISPATCH_MIN_SECONDS`] seconds of each minute it matches. Depends on the
    /// schedule alone (never on the time it is asked), so every node and every pass agree.
    pub fn fires_at_dispatch(&self) -> bool {
        match &self.trigger {
            Trigger::Cron { cron, .. } => cron.seconds_per_minute() >= AT_DISPATCH_MIN_SECONDS,
            Trigger::FixedRate { every_ms, .. } => *every_ms <= AT_DISPATCH_MAX_EVERY_MS,
            Trigger::Once { .. } | Trigger::Manual => false,
        }
    }

    /// The first fire strictly after `after_ms`, inside the start/end window.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        // Start the search just before the window opens so a fire exactly at start_at counts.
        let after = match self.start_ms {
            Some(s) if s - 1 > after_ms => s - 1,
            _ => after_ms,
        };
        let next = match &self.trigger {
            Trigger::Cron { cron, tz } => cron.next_after(ms_to_utc(after), *tz).map(|t| t.timestamp_millis()),
            Trigger::FixedRate { every_ms, anchor_ms } => {
                if after < *anchor_ms {
                    Some(*anchor_ms)
                } else {
                    let k = (after - anchor_ms) / every_ms + 1;
                    anchor_ms.checked_add(k.checked_mul(*every_ms)?)
                }
            }
            Trigger::Once { at_ms } => (*at_ms > after).then_some(*at_ms),
            Trigger::Manual => None,
        }?;
        match self.end_ms {
            Some(end) if next >= end => None,
            _ => Some(next),
        }
    }

    /// Up to `count` successive fires strictly after `after_ms`.
    pub fn fires_after(&self, after_ms: i64, count: usize) -> Vec<i64> {
        let mut out = Vec::with_capacity(count.min(MAX_PREVIEW));
        let mut t = after_ms;
        while out.len() < count {
            match self.next_after(t) {
                Some(n) => {
                    out.push(n);
                    t = n;
                }
                None => break,
            }
        }
        out
    }

    /// Fires in `(after_ms, until_ms]`, at most `cap` of them.
    pub fn fires_between(&self, after_ms: i64, until_ms: i64, cap: usize) -> Vec<i64> {
        let mut out = Vec::new();
        let mut t = after_ms;
        while out.len() < cap {
            match self.next_after(t) {
                Some(n) if n <= until_ms => {
                    out.push(n);
                    t = n;
                }
                _ => break,
            }
        }
        out
    }
}

/// The OpenAPI schema of [`ScheduleSpec`]: a `oneOf` of one object per `kind`
/// (`CronSchedule`, `FixedRateSchedule`, `OnceSchedule`, `ManualSchedule`) with `kind` as
/// the discriminator, each listing only the fields its kind accepts (what
/// [`Schedule::parse`] enforces), so generated clients get one precise type per kind.
#[cfg(feature = "openapi")]
mod openapi_schema {
    use utoipa::openapi::schema::{
        Discriminator, KnownFormat, ObjectBuilder, OneOfBuilder, Schema, SchemaFormat, Type,
    };
    use utoipa::openapi::{Ref, RefOr};

    use super::{MAX_EVERY_MS, MIN_EVERY_MS, ScheduleSpec};

    const KINDS: [(&str, &str); 4] = [
        ("cron", "CronSchedule"),
        ("fixed_rate", "FixedRateSchedule"),
        ("once", "OnceSchedule"),
        ("manual", "ManualSchedule"),
    ];

    fn string(description: &str) -> ObjectBuilder {
        ObjectBuilder::new().schema_type(Type::String).description(Some(description))
    }

    fn instant(description: &str) -> ObjectBuilder {
        string(description).format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
    }

    fn variant(kind: &str) -> Schema {
        let (description, required, fields): (&str, &[&str], Vec<(&str, ObjectBuilder)>) = match kind {
            "cron" => (
                "Fires on a cron expression, read in a time zone.",
                &["expression"],
                vec![
                    (
                        "expression",
                        string(
                            "5 fields (Unix), 6 with seconds, 7 with year; Quartz `? L W #`; `@hourly`-style macros.",
                        ),
                    ),
                    ("timezone", string("IANA time zone the expression is read in; default `UTC`.")),
                ],
            ),
            "fixed_rate" => (
                "Fires every `every_ms` milliseconds, on a grid counted from `anchor`.",
                &["every_ms"],
                vec![
                    (
                        "every_ms",
                        ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                            .minimum(Some(MIN_EVERY_MS))
                            .maximum(Some(MAX_EVERY_MS))
                            .description(Some("Interval in milliseconds, one second to 366 days.")),
                    ),
                    (
                        "anchor",
                        instant(
                            "RFC 3339 instant fires count from (`anchor + k·every_ms`); default: when the job was created.",
                        ),
                    ),
                ],
            ),
            "once" => ("Fires once, at `at`.", &["at"], vec![("at", instant("RFC 3339 instant of the single fire."))]),
            _ => ("Never fires on its own; runs only when triggered.", &[], vec![]),
        };
        let mut o = ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(description))
            .property("kind", ObjectBuilder::new().schema_type(Type::String).enum_values(Some([kind])))
            .required("kind");
        for r in required {
            o = o.required(*r);
        }
        let window = match kind {
            "manual" => vec![],
            _ => vec![
                ("start_at", instant("RFC 3339: no fire before this instant (inclusive).")),
                ("end_at", instant("RFC 3339: no fire at or after this instant.")),
            ],
        };
        for (name, schema) in fields.into_iter().chain(window) {
            o = o.property(name, schema);
        }
        o.additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false))).build().into()
    }

    impl utoipa::PartialSchema for ScheduleSpec {
        fn schema() -> RefOr<Schema> {
            let mut discriminator = Discriminator::new("kind");
            let mut one_of = OneOfBuilder::new()
                .description(Some("When a job fires: one object per `kind` (`cron`, `fixed_rate`, `once`, `manual`)."));
            for (kind, name) in KINDS {
                discriminator.mapping.insert(kind.to_string(), format!("#/components/schemas/{name}"));
                one_of = one_of.item(Ref::from_schema_name(name));
            }
            RefOr::T(Schema::OneOf(one_of.discriminator(Some(discriminator)).build()))
        }
    }

    impl utoipa::ToSchema for ScheduleSpec {
        fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
            for (kind, name) in KINDS {
                schemas.push((name.to_string(), variant(kind).into()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    const T0: i64 = 1_790_000_000_000; // 2026-09-21T14:13:20Z

    #[test]
    fn high_frequency_schedules_fire_at_dispatch_by_their_definition_alone() {
        let cron = |e: &str| {
            let mut s = spec(ScheduleKind::Cron);
            s.expression = Some(e.into());
            Schedule::parse(&s, T0).unwrap().fires_at_dispatch()
        };
        let every = |ms: i64| {
            let mut s = spec(ScheduleKind::FixedRate);
            s.every_ms = Some(ms);
            Schedule::parse(&s, T0).unwrap().fires_at_dispatch()
        };
        assert!(cron("* * * * * *"));
        assert!(cron("*/10 * * * * *"), "six seconds a minute");
        assert!(!cron("*/15 * * * * *"), "four seconds a minute");
        assert!(
            cron("* * 9-17 * * MON-FRI"),
            "dense in office hours: decided by the seconds field, never by the hour asked"
        );
        assert!(!cron("* * * * *"), "five fields: once a minute");
        assert!(!cron("@hourly"));
        assert!(every(1_000) && every(10_000));
        assert!(!every(10_001) && !every(60_000));
        let mut once = spec(ScheduleKind::Once);
        once.at = Some("2026-09-22T00:00:00Z".into());
        assert!(!Schedule::parse(&once, T0).unwrap().fires_at_dispatch());
    }

    #[test]
    fn fixed_rate_counts_from_the_anchor_not_from_now() {
        let mut s = spec(ScheduleKind::FixedRate);
        s.every_ms = Some(60_000);
        let sch = Schedule::parse(&s, T0).unwrap();
        assert_eq!(sch.fires_after(T0 + 1, 3), vec![T0 + 60_000, T0 + 120_000, T0 + 180_000]);
        assert_eq!(sch.next_after(T0 - 5), Some(T0));
        // The anchor is made explicit, so a reload computes the same grid.
        let again = Schedule::parse(&sch.to_spec(), T0 + 12_345).unwrap();
        assert_eq!(again, sch);
    }

    #[test]
    fn cron_in_a_time_zone_with_a_window() {
        let mut s = spec(ScheduleKind::Cron);
        s.expression = Some("0 0 9 * * *".into());
        s.timezone = Some("Europe/Berlin".into());
        s.start_at = Some("2026-07-01T00:00:00Z".into());
        s.end_at = Some("2026-07-03T00:00:00Z".into());
        let sch = Schedule::parse(&s, T0).unwrap();
        let fires = sch.fires_after(0, 10);
        let shown: Vec<String> = fires.iter().map(|t| sch.format(*t)).collect();
        assert_eq!(shown, vec!["2026-07-01T09:00:00.000+02:00", "2026-07-02T09:00:00.000+02:00"]);
    }

    #[test]
    fn once_and_manual() {
        let mut s = spec(ScheduleKind::Once);
        s.at = Some("2026-12-24T18:00:00+01:00".into());
        let sch = Schedule::parse(&s, T0).unwrap();
        // `date -u -d '2026-12-24T18:00:00+01:00' +%s` = 1798131600: one fire, at that instant.
        const AT: i64 = 1_798_131_600_000;
        assert_eq!(sch.fires_after(T0, 5), vec![AT]);
        assert_eq!(sch.fires_after(AT - 1, 5), vec![AT]);
        assert_eq!(sch.fires_after(AT, 5), Vec::<i64>::new(), "strictly after");
        assert_eq!(sch.fires_between(T0, AT - 1, 5), Vec::<i64>::new());
        assert_eq!(sch.fires_between(T0, AT, 5), vec![AT]);
        assert_eq!(sch.format(AT), "2026-12-24T17:00:00.000+00:00");
        assert_eq!(Schedule::parse(&spec(ScheduleKind::Manual), T0).unwrap().fires_after(T0, 5), Vec::<i64>::new());
    }

    #[test]
    fn errors_name_the_field() {
        let mut s = spec(ScheduleKind::Cron);
        assert_eq!(Schedule::parse(&s, T0).unwrap_err().field, "expression");
        s.expression = Some("0 61 * * * *".into());
        let e = Schedule::parse(&s, T0).unwrap_err();
        assert_eq!((e.field.as_str(), e.code), ("expression", "invalid_cron"));
        assert!(e.message.contains("minute"), "{}", e.message);
        s.expression = Some("@hourly".into());
        s.timezone = Some("Mars/Olympus".into());
        assert_eq!(Schedule::parse(&s, T0).unwrap_err().field, "timezone");
        s.timezone = None;
        s.every_ms = Some(1000);
        assert_eq!(Schedule::parse(&s, T0).unwrap_err().field, "every_ms");
        let mut f = spec(ScheduleKind::FixedRate);
        f.every_ms = Some(10);
        assert_eq!(Schedule::parse(&f, T0).unwrap_err().field, "every_ms");
        let mut o = spec(ScheduleKind::Once);
        o.at = Some("tomorrow".into());
        assert_eq!(Schedule::parse(&o, T0).unwrap_err().field, "at");
        let mut w = spec(ScheduleKind::FixedRate);
        w.every_ms = Some(1000);
        w.start_at = Some("2026-01-02T00:00:00Z".into());
        w.end_at = Some("2026-01-01T00:00:00Z".into());
        assert_eq!(Schedule::parse(&w, T0).unwrap_err().field, "end_at");
    }
}
