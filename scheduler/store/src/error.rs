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
    /// A write that would take a tenant over a quota; nothing was written.
    #[error("{0}")]
    QuotaExceeded(sundial_core::quota::Exceeded),
    /// Items of a batch write refused for a reason of the data (a name taken, a child job
    /// that does not exist), every one found; nothing was written.
    #[error("{}", items_message(.0))]
    Items(Vec<ItemRefusal>),
    #[error("another process holds the database lock {path}: {hint}")]
    Locked { path: String, hint: String },
    #[error("unsupported database URL `{0}`: use sqlite://PATH or mysql://USER@HOST/DB")]
    BadUrl(String),
    #[error("migration {version} ({name}) failed: {message}")]
    Migration { version: i64, name: String, message: String },
    /// An applied migration's file differs from what was applied (its recorded SHA-256).
    #[error(
        "migration {version:04} {name} was edited after it was applied (recorded checksum {recorded}, \
         file checksum {current}); restore the file or write a new migration"
    )]
    MigrationEdited { version: i64, name: String, recorded: String, current: String },
    /// The database records a migration this binary does not have: a newer release migrated it.
    #[error(
        "the database records migration {version:04} {name}, which this binary does not know (it knows up to \
         {latest:04}): a newer Sundial migrated this database; run that release or a later one"
    )]
    MigrationUnknown { version: i64, name: String, latest: i64 },
    /// The migration lock could not be taken (another node kept it too long, or the server refused).
    #[error("cannot take the migration lock: {0}")]
    MigrationLock(String),
    /// An app secret could not be sealed or opened with the configured keys, or a key is
    /// malformed (the message names the app, column and key id, never the secret).
    #[error("app secret: {0}")]
    Secret(String),
    #[error("stored data is not what the schema promises: {0}")]
    Corrupt(String),
    /// The database refused or failed a statement. `kind` is what callers act on (retry, 503);
    /// `message` is the driver's, for logs. No driver type leaves the store.
    #[error("database error: {message}")]
    Database { kind: DbFailure, message: String },
}

/// One item of a batch write the store refused ([`StoreError::Items`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemRefusal {
    /// The item's position in the batch.
    pub index: usize,
    /// The refused field of the item, named as a single write names it (`name`, `children[0]`).
    pub field: String,
    /// `Some` for a uniqueness rule (as [`StoreError::Conflict`]'s `what`, e.g. `job_name`),
    /// `None` for a value refused (as [`StoreError::Refused`]).
    pub conflict: Option<&'static str>,
    pub message: String,
}

fn items_message(items: &[ItemRefusal]) -> String {
    match items.first() {
        Some(i) => format!("{} item(s) refused; item {}: {}: {}", items.len(), i.index, i.field, i.message),
        None => "no item refused".into(),
    }
}

/// What kind of failure a [`StoreError::Database`] is: what the callers tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbFailure {
    /// The database could not be reached: no connection within the pool's wait, the pool
    /// closed, or the connection failed (IO). The API answers 503.
    Unavailable,
    /// The database rolled the transaction back at once to break a deadlock (MySQL 1213,
    /// SQLSTATE 40001): nothing was written, and running it again is the remedy.
    Deadlock,
    /// A lock wait timed out (MySQL 1205) or SQLite's file was locked: nothing was written,
    /// and running it again may work, but the wait has already been spent.
    LockTimeout,
    /// Anything else (a constraint, a statement the server refused, a decoding failure).
    Other,
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

impl StoreError {
    /// A deadlock the database broke by rolling this transaction back at once (not a lock
    /// wait that timed out, which has already cost its wait).
    pub fn is_deadlock(&self) -> bool {
        matches!(self, StoreError::Database { kind: DbFailure::Deadlock, .. })
    }

    /// A transaction the database rolled back to break a deadlock or a lock wait: nothing
    /// was written, and running it again is the remedy.
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Database { kind: DbFailure::Deadlock | DbFailure::LockTimeout, .. })
    }
}

/// The only way a driver error becomes a [`StoreError`]: classified here, in the store.
impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        StoreError::Database { kind: db_failure(&e), message: driver_message(&e) }
    }
}

/// The kind of a driver error, by its variant, then by the database's code or message.
fn db_failure(e: &sqlx::Error) -> DbFailure {
    match e {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => DbFailure::Unavailable,
        sqlx::Error::Database(d) => {
            let code = d.code();
            let code = code.as_deref();
            let msg = d.message().to_ascii_lowercase();
            if matches!(code, Some("40001" | "1213")) || msg.contains("deadlock") {
                DbFailure::Deadlock
            } else if code == Some("1205") || msg.contains("lock wait timeout") || msg.contains("database is locked") {
                DbFailure::LockTimeout
            } else {
                DbFailure::Other
            }
        }
        _ => DbFailure::Other,
    }
}

/// A driver error and its causes as one line (a cause already in the text is not repeated).
pub(crate) fn driver_message(e: &sqlx::Error) -> String {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let s_text = s.to_string();
        if !message.contains(&s_text) {
            message.push_str(": ");
            message.push_str(&s_text);
        }
        source = s.source();
    }
    message
}

/// Map a unique-key violation to [`StoreError::Conflict`], leave other errors alone.
pub(crate) fn conflict_on(what: &'static str, message: impl Into<String>) -> impl FnOnce(sqlx::Error) -> StoreError {
    let message = message.into();
    move |e| match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => StoreError::Conflict { what, message },
        _ => e.into(),
    }
}

/// Which unique key of `jobs` a violation hit: `job_name` (`uq_jobs_tenant_name`, migration
/// 0010) or `job_registration` (`uq_jobs_registration`). Read from the key named in the
/// driver's message — MySQL/MariaDB: `Duplicate entry '…' for key '[jobs.]uq_jobs_tenant_name'`,
/// SQLite: `UNIQUE constraint failed: jobs.tenant_id, jobs.name` — never from the duplicated
/// value, which is a user's name and may contain anything.
pub(crate) fn job_unique_key(message: &str) -> &'static str {
    let key = message.rsplit_once("for key").map_or(message, |(_, key)| key);
    if key.contains("registration") {
        "job_registration"
    } else if key.contains("name") {
        "job_name"
    } else {
        "job_id"
    }
}

/// [`conflict_on`] for `jobs`, whose unique keys are told apart by [`job_unique_key`].
pub(crate) fn job_conflict(name: &str) -> impl FnOnce(sqlx::Error) -> StoreError {
    let name = name.to_string();
    move |e| match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => match job_unique_key(d.message()) {
            "job_name" => StoreError::Conflict {
                what: "job_name",
                message: format!("a job named `{name}` exists in this tenant"),
            },
            "job_registration" => StoreError::Conflict {
                what: "job_registration",
                message: "a job for this app and handler exists".into(),
            },
            _ => StoreError::Conflict { what: "job_id", message: "a job with this id exists".into() },
        },
        _ => e.into(),
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::{DbFailure, StoreError};

    /// A database error as a driver reports it: a code and a message.
    #[derive(Debug)]
    struct DbError(&'static str, &'static str);

    impl std::fmt::Display for DbError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.1)
        }
    }
    impl std::error::Error for DbError {}
    impl sqlx::error::DatabaseError for DbError {
        fn message(&self) -> &str {
            self.1
        }
        fn code(&self) -> Option<Cow<'_, str>> {
            Some(Cow::Borrowed(self.0))
        }
        fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
            self
        }
        fn kind(&self) -> sqlx::error::ErrorKind {
            sqlx::error::ErrorKind::Other
        }
    }

    fn db(code: &'static str, message: &'static str) -> StoreError {
        sqlx::Error::Database(Box::new(DbError(code, message))).into()
    }

    #[test]
    fn a_deadlock_is_retried_by_every_caller_a_lock_wait_timeout_only_by_the_hot_path() {
        let deadlock = db("1213", "Deadlock found when trying to get lock; try restarting transaction");
        let serialization = db("40001", "Deadlock found when trying to get lock");
        let lock_wait = db("1205", "Lock wait timeout exceeded; try restarting transaction");
        let busy = db("5", "database is locked");
        let duplicate = db("1062", "Duplicate entry 'x' for key 'PRIMARY'");
        for e in [&deadlock, &serialization] {
            assert!(e.is_deadlock() && e.is_retryable(), "{e}");
        }
        for e in [&lock_wait, &busy] {
            assert!(!e.is_deadlock() && e.is_retryable(), "{e}");
        }
        assert!(!duplicate.is_deadlock() && !duplicate.is_retryable());
        assert!(!StoreError::Stale("x").is_deadlock());
        assert!(matches!(duplicate, StoreError::Database { kind: DbFailure::Other, .. }));
        assert_eq!(busy.to_string(), "database error: error returned from database: database is locked");
    }

    #[test]
    fn an_unreachable_database_is_unavailable_and_not_retried_as_a_rollback() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        for e in [sqlx::Error::PoolTimedOut, sqlx::Error::PoolClosed, sqlx::Error::Io(io)] {
            let e = StoreError::from(e);
            assert!(matches!(e, StoreError::Database { kind: DbFailure::Unavailable, .. }), "{e}");
            assert!(!e.is_retryable() && !e.is_deadlock(), "{e}");
        }
        let other = StoreError::from(sqlx::Error::RowNotFound);
        assert!(matches!(other, StoreError::Database { kind: DbFailure::Other, .. }) && !other.is_retryable());
    }

    #[test]
    fn a_jobs_unique_violation_is_told_apart_by_its_key_not_its_value() {
        use super::job_unique_key;
        assert_eq!(job_unique_key("Duplicate entry 'ten_1-nightly' for key 'uq_jobs_tenant_name'"), "job_name");
        assert_eq!(
            job_unique_key("Duplicate entry 'ten_1-registration' for key 'jobs.uq_jobs_tenant_name'"),
            "job_name"
        );
        assert_eq!(job_unique_key("Duplicate entry 'app_1:name' for key 'uq_jobs_registration'"), "job_registration");
        assert_eq!(job_unique_key("UNIQUE constraint failed: jobs.tenant_id, jobs.name"), "job_name");
        assert_eq!(job_unique_key("UNIQUE constraint failed: jobs.registration_key"), "job_registration");
        assert_eq!(job_unique_key("UNIQUE constraint failed: jobs.id"), "job_id");
        assert_eq!(job_unique_key("Duplicate entry 'job_1' for key 'PRIMARY'"), "job_id");
    }
}
