//! [`AppStore`] for [`SqlStore`]: apps and their executors.

use async_trait::async_trait;
use serde_json::Value;
use sqlx::any::AnyRow;
use sundial_core::types::ExecutorState;

use super::rows::executor_row;
use super::{SqlStore, col, json_col, to_json};
use crate::error::conflict_on;
use crate::secrets::{SEALED_PREFIX, Sealed, SecretColumn};
use crate::{App, AppStore, Dialect, Executor, Page, RekeyReport, Result, StoreError};

impl SqlStore {
    /// An app from its row, its secrets opened with the store's keys.
    pub(super) fn app_row(&self, r: &AnyRow) -> Result<App> {
        let id: String = col(r, "id")?;
        let secret: String = col(r, "secret")?;
        let previous: Option<String> = col(r, "previous_secret")?;
        Ok(App {
            secret: self.open_secret(&id, SecretColumn::Secret, &secret)?,
            previous_secret: previous.map(|p| self.open_secret(&id, SecretColumn::PreviousSecret, &p)).transpose()?,
            tenant_id: col(r, "tenant_id")?,
            name: col(r, "name")?,
            description: col(r, "description")?,
            endpoints: json_col(r, "endpoints")?,
            previous_expires_ms: col(r, "previous_expires_ms")?,
            created_at_ms: col(r, "created_at_ms")?,
            updated_at_ms: col(r, "updated_at_ms")?,
            id,
        })
    }

    /// A secret as stored: sealed under the current key (as given when the store has no keys).
    fn seal_secret(&self, app_id: &str, column: SecretColumn, plain: &str) -> String {
        match &self.secrets {
            Some(ring) => ring.seal(app_id, column, plain),
            None => plain.to_string(),
        }
    }

    fn open_secret(&self, app_id: &str, column: SecretColumn, stored: &str) -> Result<String> {
        match &self.secrets {
            Some(ring) => ring.open(app_id, column, stored),
            None if stored.starts_with(SEALED_PREFIX) => Err(StoreError::Secret(format!(
                "app {app_id}: {} is encrypted, and this store was opened without a secret key",
                column.as_str()
            ))),
            None => Ok(stored.to_string()),
        }
    }

    /// Seal every app secret not sealed under the current key: rows written before secrets
    /// were encrypted, and rows under a previous key (key rotation). Each row is rewritten only
    /// if it still holds what was read (another node may be doing the same). A value under a
    /// key the ring does not have, or one that does not open, is an error naming the app: this
    /// node could not serve that app. Does nothing on a store without keys.
    ///
    /// SQLite: the rewrite runs with `secure_delete` on and ends with a WAL checkpoint that
    /// truncates the log, so no plain-text secret stays in the file's free space or the WAL.
    pub async fn secrets_rekey(&self) -> Result<RekeyReport> {
        let mut report = RekeyReport::default();
        let Some(ring) = &self.secrets else { return Ok(report) };
        let mut conn = self.pool.acquire().await?;
        if self.dialect == Dialect::Sqlite {
            sqlx::query("PRAGMA secure_delete = ON").execute(&mut *conn).await?;
        }
        let mut after = String::new();
        loop {
            let rows = sqlx::query("SELECT id, secret, previous_secret FROM apps WHERE id > ? ORDER BY id LIMIT 500")
                .bind(&after)
                .fetch_all(&mut *conn)
                .await?;
            let Some(last) = rows.last() else { break };
            after = col(last, "id")?;
            for r in &rows {
                let id: String = col(r, "id")?;
                let secret: String = col(r, "secret")?;
                let previous: Option<String> = col(r, "previous_secret")?;
                let columns = [(SecretColumn::Secret, Some(secret)), (SecretColumn::PreviousSecret, previous)];
                for (column, stored) in columns {
                    let Some(stored) = stored else { continue };
                    let (plain, count) = match ring.sealed_by(&stored) {
                        Sealed::Current => continue,
                        Sealed::Plain => (stored.clone(), &mut report.encrypted),
                        Sealed::OtherKey(_) => (ring.open(&id, column, &stored)?, &mut report.rekeyed),
                    };
                    let sql = match column {
                        SecretColumn::Secret => "UPDATE apps SET secret = ? WHERE id = ? AND secret = ?",
                        SecretColumn::PreviousSecret => {
                            "UPDATE apps SET previous_secret = ? WHERE id = ? AND previous_secret = ?"
                        }
                    };
                    let r = sqlx::query(sql)
                        .bind(ring.seal(&id, column, &plain))
                        .bind(&id)
                        .bind(&stored)
                        .execute(&mut *conn)
                        .await?;
                    *count += r.rows_affected();
                }
            }
        }
        if self.dialect == Dialect::Sqlite {
            sqlx::query("PRAGMA secure_delete = OFF").execute(&mut *conn).await?;
            if report.encrypted > 0 {
                sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&mut *conn).await?;
            }
        }
        Ok(report)
    }
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
        .bind(self.seal_secret(&a.id, SecretColumn::Secret, &a.secret))
        .bind(a.previous_secret.as_deref().map(|p| self.seal_secret(&a.id, SecretColumn::PreviousSecret, p)))
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
        .fetch_optional(self.reader())
        .await?
        .as_ref()
        .map(|r| self.app_row(r))
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
        .fetch_all(self.reader())
        .await?
        .iter()
        .map(|r| self.app_row(r))
        .collect()
    }

    async fn app_update(&self, a: &App) -> Result<bool> {
        let r = sqlx::query(
            "UPDATE apps SET description = ?, endpoints = ?, secret = ?, previous_secret = ?, previous_expires_ms = ?, updated_at_ms = ? \
             WHERE id = ? AND tenant_id = ?",
        )
        .bind(&a.description)
        .bind(to_json(&a.endpoints))
        .bind(self.seal_secret(&a.id, SecretColumn::Secret, &a.secret))
        .bind(a.previous_secret.as_deref().map(|p| self.seal_secret(&a.id, SecretColumn::PreviousSecret, p)))
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
        .fetch_optional(self.reader())
        .await?
        .as_ref()
        .map(|r| self.app_row(r))
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
            .fetch_all(self.reader())
            .await?
            .iter()
            .map(executor_row)
            .collect()
    }
}
