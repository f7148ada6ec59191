//! Deleting old data: [`RetentionStore`]. SQL in `sql/retention.rs`.

use async_trait::async_trait;

use crate::Result;

/// Retention of finished runs (with their attempts, shards and logs), silent
/// executors and nodes gone.
#[async_trait]
pub trait RetentionStore: Send + Sync {
    /// Delete finished runs (with their attempts and logs) finished and scheduled before
    /// `before_ms` (a run cancelled ahead of its time stays until that time has passed too),
    /// and executors silent since then, at most `batch` runs per call. Returns runs deleted.
    async fn retention_cleanup(&self, before_ms: i64, batch: i64) -> Result<u64>;
}
