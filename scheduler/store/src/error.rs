use thiserror::Error;

/// The one error type of the store.
#[derive(Debug, Error)]
pub enum StoreError {
    /// A uniqueness rule refused the write (`what` names the rule, e.g. `app_name`).
    #[error("conflict on {what}: {message}")]
    Conflict { what: &'static str, message: String },
    /// A conditional write found the row changed (optimistic concurrency).
    #[error("{0} was changed concurrently; reload and retry")]
    Stale(&'static str),
    /// A request the store refuses for a reason of the data (e.g. a cycle of child jobs).
    #[error("{field}: {message}")]
    Refused { field: String, message: String },
    #[error("another process holds the database lock {path}: {hint}")]
    Locked { path: String, hint: String },
    #[error("unsupported database URL `{0}`: use sqlite://PATH or mysql://USER@HOST/DB")]
    BadUrl(String),
    #[error("migration {version} ({name}) failed: {source}")]
    Migration { version: i64, name: String, source: sqlx::Error },
    #[error("stored data is not what the schema promises: {0}")]
    Corrupt(String),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

impl StoreError {
    /// A transaction the database rolled back to break a deadlock or a lock wait: nothing
    /// was written, and running it again is the remedy.
    pub fn is_retryable(&self) -> bool {
        match self {
            StoreError::Database(sqlx::Error::Database(d)) => {
                let msg = d.message().to_ascii_lowercase();
                d.code().is_some_and(|c| c == "40001" || c == "1213" || c == "1205")
                    || msg.contains("deadlock")
                    || msg.contains("lock wait timeout")
                    || msg.contains("database is locked")
            }
            _ => false,
        }
    }
}

/// Map a unique-key violation to [`StoreError::Conflict`], leave other errors alone.
pub(crate) fn conflict_on(what: &'static str, message: impl Into<String>) -> impl FnOnce(sqlx::Error) -> StoreError {
    let message = message.into();
    move |e| match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => StoreError::Conflict { what, message },
        _ => StoreError::Database(e),
    }
}
