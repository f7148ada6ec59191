//! [`NodeStore`] for [`SqlStore`]: node heartbeats, dead nodes and the hand-back of
//! their claims, settings.

use async_trait::async_trait;
use sqlx::{Any, Transaction};
use sundial_core::types::RunState;

use super::{SqlStore, col, sql_state, sql_states};
use crate::error::conflict_on;
use crate::{Node, NodeBeat, NodeStore, Result};

/// Return a node's claims: `queued` → `pending`, retrying runs lose their owner, and the
/// leases of its `dispatching` runs end so any node redelivers them. Returns rows changed.
/// The scans go through `ix_runs_wake` (queued and dispatching runs under `lease`, retrying
/// ones under `retry`: runs in flight only) rather than an index on the owner that every
/// claim and result would rewrite.
async fn hand_back(tx: &mut Transaction<'static, Any>, id: &str, now_ms: i64) -> Result<u64> {
    let (from, to) = super::writes::release_states()?;
    let r = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE runs SET state = CASE WHEN state = ? THEN ? ELSE state END, owner_node = NULL, \
                 lease_until_ms = NULL, updated_at_ms = ? WHERE wake_kind IN ('lease', 'retry') AND lease_until_ms IS NOT NULL \
                 AND owner_node = ? AND state IN ({})",
        sql_states(&[RunState::Queued, RunState::Retrying])
    )))
    .bind(from)
    .bind(to)
    .bind(now_ms)
    .bind(id)
    .execute(&mut **tx)
    .await?;
    let d = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE runs SET lease_until_ms = 0 WHERE wake_kind = 'lease' AND lease_until_ms IS NOT NULL AND owner_node = ? \
         AND state = {}",
        sql_state(RunState::Dispatching)
    )))
        .bind(id)
        .execute(&mut **tx)
        .await?;
    Ok(r.rows_affected() + d.rows_affected())
}

#[async_trait]
impl NodeStore for SqlStore {
    async fn node_heartbeat(&self, b: &NodeBeat) -> Result<()> {
        let now = self.now_expr();
        let updated = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE nodes SET address = ?, version = ?, state = 'alive', claimed = ?, lateness_ms = ?, backlog = ?, \
             misfired = ?, heartbeat_at_ms = {now} WHERE id = ?"
        )))
        .bind(&b.address)
        .bind(&b.version)
        .bind(b.claimed)
        .bind(b.lateness_ms)
        .bind(b.backlog)
        .bind(b.misfired)
        .bind(&b.id)
        .execute(&self.pool)
        .await?;
        if updated.rows_affected() == 0 {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "INSERT INTO nodes (id, address, version, state, claimed, lateness_ms, backlog, misfired, started_at_ms, \
                 heartbeat_at_ms) VALUES (?, ?, ?, 'alive', ?, ?, ?, ?, ?, {now})"
            )))
            .bind(&b.id)
            .bind(&b.address)
            .bind(&b.version)
            .bind(b.claimed)
            .bind(b.lateness_ms)
            .bind(b.backlog)
            .bind(b.misfired)
            .bind(b.started_at_ms)
            .execute(&self.pool)
            .await
            .map_err(conflict_on("node_id", format!("node id `{}` is in use", b.id)))?;
        }
        Ok(())
    }

    async fn node_leave(&self, id: &str) -> Result<()> {
        sqlx::query("UPDATE nodes SET state = 'left' WHERE id = ?").bind(id).execute(&self.pool).await?;
        Ok(())
    }

    async fn node_list(&self) -> Result<Vec<Node>> {
        sqlx::query("SELECT * FROM nodes ORDER BY started_at_ms, id")
            .fetch_all(self.reader())
            .await?
            .iter()
            .map(|r| {
                Ok(Node {
                    id: col(r, "id")?,
                    address: col(r, "address")?,
                    version: col(r, "version")?,
                    state: col(r, "state")?,
                    claimed: col(r, "claimed")?,
                    started_at_ms: col(r, "started_at_ms")?,
                    heartbeat_at_ms: col(r, "heartbeat_at_ms")?,
                    lateness_ms: col(r, "lateness_ms")?,
                    backlog: col(r, "backlog")?,
                    misfired: col(r, "misfired")?,
                })
            })
            .collect()
    }

    async fn node_live_ids(&self, alive_since_ms: i64) -> Result<Vec<String>> {
        sqlx::query("SELECT id FROM nodes WHERE state = 'alive' AND heartbeat_at_ms >= ? ORDER BY id")
            .bind(alive_since_ms)
            .fetch_all(self.reader())
            .await?
            .iter()
            .map(|r| col(r, "id"))
            .collect()
    }

    async fn node_reap_dead(&self, dead_before_ms: i64, now_ms: i64) -> Result<Vec<String>> {
        let mut tx = self.begin().await?;
        let dead: Vec<String> = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT id FROM nodes WHERE state = 'alive' AND heartbeat_at_ms < ?{}",
            self.lock_clause()
        )))
        .bind(dead_before_ms)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| col(r, "id"))
        .collect::<Result<_>>()?;
        for id in &dead {
            hand_back(&mut tx, id, now_ms).await?;
            sqlx::query("UPDATE nodes SET state = 'dead' WHERE id = ?").bind(id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(dead)
    }

    async fn node_recover_own(&self, id: &str, now_ms: i64) -> Result<u64> {
        let mut tx = self.begin().await?;
        let n = hand_back(&mut tx, id, now_ms).await?;
        tx.commit().await?;
        Ok(n)
    }

    // ---- settings ----

    async fn setting_get(&self, name: &str) -> Result<Option<String>> {
        sqlx::query("SELECT value FROM settings WHERE name = ?")
            .bind(name)
            .fetch_optional(self.reader())
            .await?
            .as_ref()
            .map(|r| col(r, "value"))
            .transpose()
    }

    async fn setting_set(&self, name: &str, value: &str, now_ms: i64) -> Result<()> {
        let mut tx = self.begin().await?;
        sqlx::query("DELETE FROM settings WHERE name = ?").bind(name).execute(&mut *tx).await?;
        sqlx::query("INSERT INTO settings (name, value, updated_at_ms) VALUES (?, ?, ?)")
            .bind(name)
            .bind(value)
            .bind(now_ms)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }
}
