//! How the services' loops run: the two shapes every service uses, each returning the
//! task's handle (the node keeps them and awaits them when it stops).

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::Result;

/// A step every `every`, backing off on failure (doubling, at most 30 s) and back to
/// `every` after a success; ends when `cancel` fires (never in the middle of a step).
pub(crate) fn every<F, Fut>(
    name: &'static str,
    every: Duration,
    cancel: CancellationToken,
    mut step: F,
) -> JoinHandle<()>
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<()>> + Send,
{
    tokio::spawn(async move {
        let mut backoff = every;
        loop {
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep(backoff) => {}
            }
            match step().await {
                Ok(()) => backoff = every,
                Err(err) => {
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                    tracing::warn!(service = name, error = %err, retry_in_ms = backoff.as_millis() as u64, "step failed");
                }
            }
        }
    })
}
