//! [`AppStore`] for [`SqlStore`]: apps and their executors.

use async_trait::async_trait;
use serde_json::Value;
use sqlx::any::AnyRow;
use sundial_core::types::ExecutorState;

use super::{SqlStore, col, json_col, parse_col, to_json};
use crate::error::conflict_on;
use crate::{App, AppStore, Executor, Page, Result, StoreError};

pub(super) fn app_row(r: &AnyRow) -> Result<App> {
    Ok(App {
        id: col(r, "id")?,
        tenant_id: col(r, "tenant_id")?,
        name: col(r, "name")?,
        description: col(r, "description")?,
        endpoints: json_col(r, "endpoints")?,
        secret: col(r, "secret")?,
        previous_secret: col(r, "previous_secret")?,
        previous_expires_ms: col(r, "previous_expires_ms")?,
        created_at_ms: col(r, "created_at_ms")?,
        updated_at_ms: col(r, "updated_at_ms")?,
    })
}

pub(super) fn executor_row(r: &AnyRow) -> Result<Executor> {
    Ok(Executor {
        id: col(r, "id")?,
        tenant_id: col(r, "tenant_id")?,
        app_id: col(r, "app_id")?,
        name: col(r, "name")?,
        address: col(r, "address")?,
        tags: json_col(r, "tags")?,
        metadata: json_col(r, "metadata")?,
        handlers: json_col(r, "handlers")?,
        runtimes: json_col(r, "runtimes")?,
        state: parse_col(r, "state")?,
        running: col(r, "running")?,
        registered_at_ms: col(r, "registered_at_ms")?,
        last_heartbeat_ms: col(r, "last_heartbeat_ms")?,
        last_metadata_ms: col(r, "last_metadata_ms")?,
    })
}

fn sha256_hex(s: &str) -> String {
    sundial_core::keys::hash_api_key(s)
}

#[async_trait]
impl AppStore for SqlStore {
    // ---- apps ----

    async fn app_insert(&self, a: &App) -> Result<()> {
        sqlx::query(
            "INSERT INTO apps (id, tenant_id, name, description, endpoints, secret, previous_secret, previous_expires_ms, created_at_ms, updated_at_ms) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&a.id)
        .bind(&a.tenant_id)
        .bind(&a.name)
        .bind(&a.description)
        .bind(to_json(&a.endpoints))
        .bind(&a.secret)
        .bind(&a.previous_secret)
        .bind(a.previous_expires_ms)
        .bind(a.created_at_ms)
        .bind(a.updated_at_ms)
        .execute(&self.pool)
        .await
        .map_err(conflict_on("app_name", format!("an app named `{}` exists in this tenant", a.name)))?;
        Ok(())
    }

    async fn app_get(&self, tenant_id: &str, id_or_name: &str) -> Result<Option<App>> {
        sqlx::query(
            "SELECT id, tenant_id, name, description, endpoints, secret, previous_secret, previous_expires_ms, created_at_ms, updated_at_ms \
             FROM apps WHERE tenant_id = ? AND (id = ? OR name = ?)",
        )
        .bind(tenant_id)
        .bind(id_or_name)
        .bind(id_or_name)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(app_row)
        .transpose()
    }

    async fn app_list(&self, tenant_id: &str, page: &Page) -> Result<Vec<App>> {
        sqlx::query(
            "SELECT id, tenant_id, name, description, endpoints, secret, previous_secret, previous_expires_ms, created_at_ms, updated_at_ms \
             FROM apps WHERE tenant_id = ? AND (? IS NULL OR id > ?) ORDER BY id LIMIT ?",
        )
        .bind(tenant_id)
        .bind(&page.after)
        .bind(&page.after)
        .bind(page.limit)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(app_row)
        .collect()
    }

    async fn app_update(&self, a: &App) -> Result<bool> {
        let r = sqlx::query(
            "UPDATE apps SET description = ?, endpoints = ?, secret = ?, previous_secret = ?, previous_expires_ms = ?, updated_at_ms = ? \
             WHERE id = ? AND tenant_id = ?",
        )
        .bind(&a.description)
        .bind(to_json(&a.endpoints))
        .bind(&a.secret)
        .bind(&a.previous_secret)
        .bind(a.previous_expires_ms)
        .bind(a.updated_at_ms)
        .bind(&a.id)
        .bind(&a.tenant_id)
        .execute(&self.pool)
        .await?;
        Ok(r.rows_affected() > 0)
    }

    async fn app_delete(&self, tenant_id: &str, id: &str) -> Result<bool> {
        let mut tx = self.begin().await?;
        let jobs = sqlx::query("SELECT COUNT(*) AS n FROM jobs WHERE app_id = ? AND tenant_id = ?")
            .bind(id)
            .bind(tenant_id)
            .fetch_one(&mut *tx)
            .await?;
        let n: i64 = col(&jobs, "n")?;
        if n > 0 {
            return Err(StoreError::Conflict {
                what: "app_in_use",
                message: format!("{n} job(s) use this app; delete or move them first"),
            });
        }
        let r = sqlx::query("DELETE FROM apps WHERE id = ? AND tenant_id = ?")
            .bind(id)
            .bind(tenant_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM executors WHERE app_id = ? AND tenant_id = ?")
            .bind(id)
            .bind(tenant_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(r.rows_affected() > 0)
    }

    // ---- executors ----

    async fn app_by_id(&self, id: &str) -> Result<Option<App>> {
        sqlx::query(
            "SELECT id, tenant_id, name, description, endpoints, secret, previous_secret, previous_expires_ms, created_at_ms, updated_at_ms \
             FROM apps WHERE id = ?",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(app_row)
        .transpose()
    }

    async fn executor_upsert(&self, e: &Executor) -> Result<Executor> {
        let address_hash = sha256_hex(&e.address);
        let mut tx = self.begin().await?;
        let existing: Option<String> = sqlx::query("SELECT id FROM executors WHERE app_id = ? AND address_hash = ?")
            .bind(&e.app_id)
            .bind(&address_hash)
            .fetch_optional(&mut *tx)
            .await?
            .as_ref()
            .map(|r| col(r, "id"))
            .transpose()?;
        let id = match existing {
            Some(id) => {
                sqlx::query(
                    "UPDATE executors SET name = ?, tags = ?, metadata = ?, handlers = ?, runtimes = ?, state = ?, running = ?, registered_at_ms = ?, \
                     last_heartbeat_ms = ?, last_metadata_ms = ? WHERE id = ?",
                )
                .bind(&e.name)
                .bind(to_json(&e.tags))
                .bind(to_json(&e.metadata))
                .bind(to_json(&e.handlers))
                .bind(to_json(&e.runtimes))
                .bind(e.state.as_str())
                .bind(e.running)
                .bind(e.registered_at_ms)
                .bind(e.last_heartbeat_ms)
                .bind(e.last_metadata_ms)
                .bind(&id)
                .execute(&mut *tx)
                .await?;
                id
            }
            None => {
                sqlx::query(
                    "INSERT INTO executors (id, tenant_id, app_id, name, address, address_hash, tags, metadata, handlers, runtimes, state, \
                     running, registered_at_ms, last_heartbeat_ms, last_metadata_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                )
                .bind(&e.id)
                .bind(&e.tenant_id)
                .bind(&e.app_id)
                .bind(&e.name)
                .bind(&e.address)
                .bind(&address_hash)
                .bind(to_json(&e.tags))
                .bind(to_json(&e.metadata))
                .bind(to_json(&e.handlers))
                .bind(to_json(&e.runtimes))
                .bind(e.state.as_str())
                .bind(e.running)
                .bind(e.registered_at_ms)
                .bind(e.last_heartbeat_ms)
                .bind(e.last_metadata_ms)
                .execute(&mut *tx)
                .await?;
                e.id.clone()
            }
        };
        tx.commit().await?;
        Ok(Executor { id, ..e.clone() })
    }

    async fn executor_heartbeat(
        &self,
        app_id: &str,
        executor_id: &str,
        running: i64,
        running_runs: Option<&[String]>,
        metadata: Option<&Value>,
        now_ms: i64,
    ) -> Result<bool> {
        let r = sqlx::query(
            "UPDATE executors SET state = 'online', running = ?, running_runs = ?, last_heartbeat_ms = ?, \
             metadata = COALESCE(?, metadata), last_metadata_ms = CASE WHEN ? IS NULL THEN last_metadata_ms ELSE ? END \
             WHERE id = ? AND app_id = ?",
        )
        .bind(running)
        .bind(running_runs.map(|r| to_json(&r)))
        .bind(now_ms)
        .bind(metadata.map(to_json))
        .bind(metadata.map(|_| now_ms))
        .bind(now_ms)
        .bind(executor_id)
        .bind(app_id)
        .execute(&self.pool)
        .await?;
        Ok(r.rows_affected() > 0)
    }

    async fn executor_set_state(
        &self,
        app_id: &str,
        executor_id: &str,
        state: ExecutorState,
        _now_ms: i64,
    ) -> Result<bool> {
        let r = sqlx::query("UPDATE executors SET state = ? WHERE id = ? AND app_id = ?")
            .bind(state.as_str())
            .bind(executor_id)
            .bind(app_id)
            .execute(&self.pool)
            .await?;
        Ok(r.rows_affected() > 0)
    }

    async fn executor_list(&self, app_id: &str) -> Result<Vec<Executor>> {
        sqlx::query("SELECT * FROM executors WHERE app_id = ? ORDER BY registered_at_ms, id")
            .bind(app_id)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(executor_row)
            .collect()
    }
}
