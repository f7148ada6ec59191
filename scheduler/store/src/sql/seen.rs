//! [`SeenStore`] for [`SqlStore`]: seen webhook ids.

use async_trait::async_trait;

use super::SqlStore;
use crate::{Result, SeenStore};

#[async_trait]
impl SeenStore for SqlStore {
    async fn webhook_seen(&self, app_id: &str, webhook_id: &str, now_ms: i64) -> Result<bool> {
        let r = sqlx::query("INSERT INTO seen_webhooks (app_id, webhook_id, seen_at_ms) VALUES (?, ?, ?)")
            .bind(app_id)
            .bind(webhook_id)
            .bind(now_ms)
            .execute(&self.pool)
            .await;
        match r {
            Ok(_) => Ok(true),
            Err(sqlx::Error::Database(d)) if d.is_unique_violation() => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    async fn webhook_forget(&self, before_ms: i64) -> Result<u64> {
        let r =
            sqlx::query("DELETE FROM seen_webhooks WHERE seen_at_ms < ?").bind(before_ms).execute(&self.pool).await?;
        Ok(r.rows_affected())
    }
}
