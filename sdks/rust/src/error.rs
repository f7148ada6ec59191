//! A handler's failure: ordinary (the job's failure policy may retry it) or "do not retry".

use std::fmt;

/// What a handler returns when its run failed.
///
/// - [`Error::new`] (or `?` on any `std::error::Error`): `{"status": "failed", "message"}`;
///   the job's failure policy decides on a retry.
/// - [`Error::no_retry`]: `{"status": "failed", "message", "retry": false}`; the run fails
///   for good whatever the policy (bad params, a missing record: a retry cannot fix it).
///
/// Like `anyhow::Error`, it does not implement `std::error::Error` itself, so that `?`
/// converts every error type into it.
pub struct Error {
    message: String,
    retry: bool,
}

impl Error {
    /// An ordinary failure: the job's failure policy may retry it.
    pub fn new(message: impl Into<String>) -> Self {
        Error { message: message.into(), retry: true }
    }

    /// A failure a retry cannot fix: answered with `"retry": false`.
    pub fn no_retry(message: impl Into<String>) -> Self {
        Error { message: message.into(), retry: false }
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// `false` for [`Error::no_retry`].
    pub fn retry(&self) -> bool {
        self.retry
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for Error {
    fn from(e: E) -> Self {
        let mut message = e.to_string();
        let mut source = e.source();
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        Error::new(message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error").field("message", &self.message).field("retry", &self.retry).finish()
    }
}

/// A handler's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
