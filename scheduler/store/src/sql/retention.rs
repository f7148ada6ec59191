//! [`RetentionStore`] for [`SqlStore`]: deleting old runs (with their attempts, shards and
//! logs), silent executors and nodes gone.

use async_trait::async_trait;

use super::{SqlStore, col};
use crate::{Result, RetentionStore};

#[async_trait]
impl RetentionStore for SqlStore {
    async fn retention_cleanup(&self, before_ms: i64, batch: i64) -> Result<u64> {
        let mut tx = self.begin().await?;
        let ids: Vec<String> = sqlx::query(
            "SELECT id FROM runs WHERE scheduled_at_ms < ? AND state IN ('succeeded', 'failed', 'cancelled', 'expired', 'skipped') \
             AND finished_at_ms IS NOT NULL AND finished_at_ms < ? LIMIT ?",
        )
        .bind(before_ms)
        .bind(before_ms)
        .bind(batch)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| col(r, "id"))
        .collect::<Result<_>>()?;
        for id in &ids {
            for sql in [
                "DELETE FROM run_logs WHERE run_id = ?",
                "DELETE FROM attempts WHERE run_id = ?",
                "DELETE FROM run_shards WHERE run_id = ?",
                "DELETE FROM chain_runs WHERE run_id = ?",
                "DELETE FROM chain_joins WHERE chain_id = ?",
                "DELETE FROM runs WHERE id = ?",
            ] {
                sqlx::query(sql).bind(id).execute(&mut *tx).await?;
            }
        }
        sqlx::query("DELETE FROM executors WHERE last_heartbeat_ms < ?").bind(before_ms).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM nodes WHERE state <> 'alive' AND heartbeat_at_ms < ?")
            .bind(before_ms)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(ids.len() as u64)
    }
}
