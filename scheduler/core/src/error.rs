//! The one error type of the domain crate: a value was refused, and why.

/// A refused input value: which field (a dotted path such as `schedule.expression`),
/// a stable machine code, and a human message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    pub field: String,
    pub code: &'static str,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, code: &'static str, message: impl Into<String>) -> Self {
        Self { field: field.into(), code, message: message.into() }
    }

    /// An invalid value (`code = "invalid"`).
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(field, "invalid", message)
    }

    /// Prefix the field path, e.g. `expression` → `schedule.expression`.
    pub fn within(mut self, parent: &str) -> Self {
        self.field = format!("{parent}.{}", self.field);
        self
    }
}

pub type Result<T, E = FieldError> = std::result::Result<T, E>;
