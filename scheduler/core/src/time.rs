//! Conversions between UTC epoch milliseconds (how every instant is stored) and RFC 3339 text.

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use chrono_tz::Tz;

use crate::FieldError;

pub fn ms_to_utc(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// RFC 3339 with milliseconds, in UTC (`Z`).
pub fn rfc3339_utc(ms: i64) -> String {
    ms_to_utc(ms).to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// RFC 3339 with milliseconds and the zone's offset at that instant.
pub fn rfc3339_in(ms: i64, tz: Tz) -> String {
    ms_to_utc(ms).with_timezone(&tz).to_rfc3339_opts(SecondsFormat::Millis, false)
}

/// Parse an RFC 3339 timestamp (an offset is required) into epoch milliseconds.
pub fn parse_rfc3339(field: &str, s: &str) -> Result<i64, FieldError> {
    DateTime::parse_from_rfc3339(s).map(|t| t.timestamp_millis()).map_err(|e| {
        FieldError::invalid(
            field,
            format!("`{s}` is not an RFC 3339 timestamp with an offset (e.g. 2026-01-31T09:00:00Z): {e}"),
        )
    })
}

pub fn parse_timezone(field: &str, s: &str) -> Result<Tz, FieldError> {
    s.parse::<Tz>().map_err(|_| {
        FieldError::invalid(field, format!("`{s}` is not an IANA time zone name (e.g. Europe/Berlin, UTC)"))
    })
}
