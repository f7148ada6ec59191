//! [`RetentionStore`] for [`SqlStore`]: deleting old runs (with their attempts, shards and
//! logs), silent executors and nodes gone.

use async_trait::async_trait;
use sundial_core::types::RunState;

use super::{IN_CHUNK, SqlStore, col, in_list, in_width, sql_states};
use crate::{Result, RetentionStore};

#[async_trait]
impl RetentionStore for SqlStore {
    async fn retention_cleanup(&self, before_ms: i64, batch: i64) -> Result<u64> {
        let mut tx = self.begin().await?;
        // Each tenant's old runs through `ix_runs_tenant (tenant_id, scheduled_at_ms)`: no
        // index of its own for retention, which every run's insert would write (issue 14).
        let tenants: Vec<String> = sqlx::query("SELECT id FROM tenants ORDER BY id")
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| col(r, "id"))
            .collect::<Result<_>>()?;
        let mut ids: Vec<String> = Vec::new();
        for tenant in &tenants {
            let room = batch - ids.len() as i64;
            if room <= 0 {
                break;
            }
            let old = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT id FROM runs WHERE tenant_id = ? AND scheduled_at_ms < ? \
                 AND state IN ({}) \
                 AND finished_at_ms IS NOT NULL AND finished_at_ms < ? LIMIT ?",
                sql_states(RunState::TERMINAL)
            )))
            .bind(tenant)
            .bind(before_ms)
            .bind(before_ms)
            .bind(room)
            .fetch_all(&mut *tx)
            .await?;
            for r in &old {
                ids.push(col(r, "id")?);
            }
        }
        // A statement per table per chunk of runs (it was one per table per run); `:ids` is
        // the id-list placeholder `in_list` sizes to the chunk.
        for chunk in ids.chunks(IN_CHUNK) {
            for table in [
                "DELETE FROM run_logs WHERE run_id IN (:ids)",
                "DELETE FROM run_log_usage WHERE run_id IN (:ids)",
                "DELETE FROM attempts WHERE run_id IN (:ids)",
                "DELETE FROM run_shards WHERE run_id IN (:ids)",
                "DELETE FROM chain_runs WHERE run_id IN (:ids)",
                "DELETE FROM chain_joins WHERE chain_id IN (:ids)",
                "DELETE FROM runs WHERE id IN (:ids)",
            ] {
                let mut q = sqlx::query(sqlx::AssertSqlSafe(in_list(table, chunk.len())));
                for i in 0..in_width(chunk.len()) {
                    q = q.bind(&chunk[i.min(chunk.len() - 1)]);
                }
                q.execute(&mut *tx).await?;
            }
        }
        // Days of log bytes long past (today's counts the daily quota).
        sqlx::query("DELETE FROM tenant_daily_usage WHERE day_ms < ?")
            .bind(sundial_core::quota::day_of(before_ms))
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM executors WHERE last_heartbeat_ms < ?").bind(before_ms).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM nodes WHERE state <> 'alive' AND heartbeat_at_ms < ?")
            .bind(before_ms)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(ids.len() as u64)
    }
}
