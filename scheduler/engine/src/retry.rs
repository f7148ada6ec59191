//! Running a store transaction again when the database rolled it back (deadlocks, lock waits).

use std::time::Duration;

/// Transactions run again after the database rolled them back (deadlocks), in this process.
static DEADLOCK_RETRIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many times, in this process, a transaction was run again after the database rolled
/// it back to break a deadlock (all engines together).
pub fn deadlock_retries() -> u64 {
    DEADLOCK_RETRIES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Run a store transaction again when the database rolled it back to break a deadlock
/// or a lock wait (nothing was written): a few times, with a short growing pause.
pub(crate) async fn retry_deadlock<T, F, Fut>(op: F) -> sundial_store::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = sundial_store::Result<T>>,
{
    retry_if(sundial_store::StoreError::is_retryable, op).await
}

/// [`retry_deadlock`] for the cluster heartbeat's calls: only a deadlock (reported at once)
/// is run again. A lock wait that timed out has already cost its wait, longer than a beat,
/// and retrying it could keep a live node silent until the others declare it dead; the
/// next beat comes sooner.
pub(crate) async fn retry_deadlock_only<T, F, Fut>(op: F) -> sundial_store::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = sundial_store::Result<T>>,
{
    retry_if(sundial_store::StoreError::is_deadlock, op).await
}

async fn retry_if<T, F, Fut>(retry: fn(&sundial_store::StoreError) -> bool, mut op: F) -> sundial_store::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = sundial_store::Result<T>>,
{
    let mut pause = Duration::from_millis(5);
    let mut tries = 0;
    loop {
        match op().await {
            Err(e) if retry(&e) && tries < 6 => {
                tries += 1;
                DEADLOCK_RETRIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::debug!(error = %e, tries, "transaction rolled back by the database; running it again");
                tokio::time::sleep(pause).await;
                pause *= 2;
            }
            other => return other,
        }
    }
}
