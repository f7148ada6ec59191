//! Parse errors. Every error names the field it is about and the offending token.

use std::fmt;

/// The part of a cron expression an error refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CronField {
    /// The expression as a whole (field count, macros, emptiness).
    Expression,
    Second,
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
    Year,
}

impl CronField {
    /// Stable snake_case name: `"expression"`, `"second"`, `"minute"`, `"hour"`,
    /// `"day_of_month"`, `"month"`, `"day_of_week"`, `"year"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            CronField::Expression => "expression",
            CronField::Second => "second",
            CronField::Minute => "minute",
            CronField::Hour => "hour",
            CronField::DayOfMonth => "day_of_month",
            CronField::Month => "month",
            CronField::DayOfWeek => "day_of_week",
            CronField::Year => "year",
        }
    }
}

impl fmt::Display for CronField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an expression was rejected.
///
/// `Display` reads like `minute field: value 61 is out of range 0-59`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} field: {message}")]
pub struct CronError {
    /// Which part of the expression is wrong.
    pub field: CronField,
    /// The offending token: the list element (or the whole field for
    /// field-level problems such as an empty list element), or the whole
    /// expression for field-count and macro errors.
    pub value: String,
    /// Human explanation, e.g. `value 61 is out of range 0-59`.
    pub message: String,
}

impl CronError {
    pub(crate) fn new(field: CronField, value: &str, message: impl Into<String>) -> Self {
        CronError { field, value: value.to_string(), message: message.into() }
    }
}
