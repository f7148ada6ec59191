//! Seen webhook ids (replay protection of signed executor calls): [`SeenStore`].
//! SQL in `sql/seen.rs`.

use async_trait::async_trait;

use crate::Result;

/// The `webhook-id`s of signed executor calls already accepted.
#[async_trait]
pub trait SeenStore: Send + Sync {
    /// Remember a signed message id; false if it was already seen (a replay).
    async fn webhook_seen(&self, app_id: &str, webhook_id: &str, now_ms: i64) -> Result<bool>;
    /// Forget seen ids older than `before_ms`.
    async fn webhook_forget(&self, before_ms: i64) -> Result<u64>;
}
