//! [`ScriptStore`] for [`SqlStore`]: scripts and their versions.

use async_trait::async_trait;
use sqlx::any::AnyRow;

use super::{SqlStore, col, parse_col};
use crate::error::conflict_on;
use crate::{Page, Result, Script, ScriptPick, ScriptStore, ScriptVersion, StoreError};

const SCRIPT_COLS: &str = "id, tenant_id, name, runtime, current_version, created_at_ms, updated_at_ms";
const VERSION_META_COLS: &str = "script_id, version, encoding, sha256, size_bytes, author, note, created_at_ms";

fn script_row(r: &AnyRow) -> Result<Script> {
    Ok(Script {
        id: col(r, "id")?,
        tenant_id: col(r, "tenant_id")?,
        name: col(r, "name")?,
        runtime: parse_col(r, "runtime")?,
        current_version: col(r, "current_version")?,
        created_at_ms: col(r, "created_at_ms")?,
        updated_at_ms: col(r, "updated_at_ms")?,
    })
}

fn version_row(r: &AnyRow, with_source: bool) -> Result<ScriptVersion> {
    Ok(ScriptVersion {
        script_id: col(r, "script_id")?,
        version: col(r, "version")?,
        source: if with_source { col(r, "source")? } else { String::new() },
        encoding: col(r, "encoding")?,
        sha256: col(r, "sha256")?,
        size_bytes: col(r, "size_bytes")?,
        author: col(r, "author")?,
        note: col(r, "note")?,
        created_at_ms: col(r, "created_at_ms")?,
    })
}

impl SqlStore {
    /// One version of the tenant's script, with or without its source (one statement text each).
    async fn version_of(
        &self,
        tenant_id: &str,
        script_id: &str,
        version: i64,
        with_source: bool,
    ) -> Result<Option<ScriptVersion>> {
        let source = if with_source { ", v.source" } else { "" };
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT v.{}{source} FROM script_versions v JOIN scripts s ON s.id = v.script_id \
             WHERE s.tenant_id = ? AND v.script_id = ? AND v.version = ?",
            VERSION_META_COLS.replace(", ", ", v.")
        )))
        .bind(tenant_id)
        .bind(script_id)
        .bind(version)
        .fetch_optional(self.reader())
        .await?
        .as_ref()
        .map(|r| version_row(r, with_source))
        .transpose()
    }

    /// The tenant's script, locked for the rest of the transaction ([`SqlStore::lock_clause`]).
    async fn lock_script(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        tenant_id: &str,
        script_id: &str,
    ) -> Result<Option<Script>> {
        let lock = self.lock_clause();
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {SCRIPT_COLS} FROM scripts WHERE tenant_id = ? AND id = ?{lock}"
        )))
        .bind(tenant_id)
        .bind(script_id)
        .fetch_optional(&mut **tx)
        .await?
        .as_ref()
        .map(script_row)
        .transpose()
    }
}

async fn insert_version(tx: &mut sqlx::Transaction<'static, sqlx::Any>, v: &ScriptVersion) -> Result<()> {
    sqlx::query(
        "INSERT INTO script_versions (script_id, version, source, encoding, sha256, size_bytes, author, note, created_at_ms) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&v.script_id)
    .bind(v.version)
    .bind(&v.source)
    .bind(&v.encoding)
    .bind(&v.sha256)
    .bind(v.size_bytes)
    .bind(&v.author)
    .bind(&v.note)
    .bind(v.created_at_ms)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

#[async_trait]
impl ScriptStore for SqlStore {
    async fn script_create(&self, s: &Script, first: &ScriptVersion) -> Result<()> {
        let mut tx = self.begin().await?;
        sqlx::query(sqlx::AssertSqlSafe(format!("INSERT INTO scripts ({SCRIPT_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)")))
            .bind(&s.id)
            .bind(&s.tenant_id)
            .bind(&s.name)
            .bind(s.runtime.as_str())
            .bind(s.current_version)
            .bind(s.created_at_ms)
            .bind(s.updated_at_ms)
            .execute(&mut *tx)
            .await
            .map_err(conflict_on("script_name", format!("a script named `{}` exists in this tenant", s.name)))?;
        insert_version(&mut tx, first).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn script_get(&self, tenant_id: &str, id_or_name: &str) -> Result<Option<Script>> {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {SCRIPT_COLS} FROM scripts WHERE tenant_id = ? AND (id = ? OR name = ?)"
        )))
        .bind(tenant_id)
        .bind(id_or_name)
        .bind(id_or_name)
        .fetch_optional(self.reader())
        .await?
        .as_ref()
        .map(script_row)
        .transpose()
    }

    async fn script_list(&self, tenant_id: &str, page: &Page) -> Result<Vec<Script>> {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {SCRIPT_COLS} FROM scripts WHERE tenant_id = ? AND (? IS NULL OR id > ?) ORDER BY id LIMIT ?"
        )))
        .bind(tenant_id)
        .bind(&page.after)
        .bind(&page.after)
        .bind(page.limit)
        .fetch_all(self.reader())
        .await?
        .iter()
        .map(script_row)
        .collect()
    }

    async fn script_add_version(
        &self,
        tenant_id: &str,
        script_id: &str,
        v: &ScriptVersion,
    ) -> Result<Option<(Script, ScriptVersion)>> {
        let mut tx = self.begin().await?;
        let Some(mut script) = self.lock_script(&mut tx, tenant_id, script_id).await? else {
            return Ok(None);
        };
        let last = sqlx::query("SELECT COALESCE(MAX(version), 0) AS v FROM script_versions WHERE script_id = ?")
            .bind(script_id)
            .fetch_one(&mut *tx)
            .await?;
        let next: i64 = col::<i64>(&last, "v")? + 1;
        let version = ScriptVersion { script_id: script_id.to_string(), version: next, ..v.clone() };
        insert_version(&mut tx, &version).await?;
        sqlx::query("UPDATE scripts SET current_version = ?, updated_at_ms = ? WHERE id = ?")
            .bind(next)
            .bind(version.created_at_ms)
            .bind(script_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        script.current_version = next;
        script.updated_at_ms = version.created_at_ms;
        Ok(Some((script, version)))
    }

    async fn script_versions(&self, tenant_id: &str, script_id: &str, page: &Page) -> Result<Vec<ScriptVersion>> {
        let after: Option<i64> = page.after.as_deref().and_then(|a| a.parse().ok());
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT v.{} FROM script_versions v JOIN scripts s ON s.id = v.script_id \
             WHERE s.tenant_id = ? AND v.script_id = ? AND (? IS NULL OR v.version < ?) \
             ORDER BY v.version DESC LIMIT ?",
            VERSION_META_COLS.replace(", ", ", v.")
        )))
        .bind(tenant_id)
        .bind(script_id)
        .bind(after)
        .bind(after)
        .bind(page.limit)
        .fetch_all(self.reader())
        .await?
        .iter()
        .map(|r| version_row(r, false))
        .collect()
    }

    async fn script_version_get(
        &self,
        tenant_id: &str,
        script_id: &str,
        version: i64,
    ) -> Result<Option<ScriptVersion>> {
        self.version_of(tenant_id, script_id, version, true).await
    }

    async fn script_version_meta(
        &self,
        tenant_id: &str,
        script_id: &str,
        version: i64,
    ) -> Result<Option<ScriptVersion>> {
        self.version_of(tenant_id, script_id, version, false).await
    }

    async fn script_pick_for_run(
        &self,
        run_id: &str,
        script_id: &str,
        pinned: Option<i64>,
    ) -> Result<Option<ScriptPick>> {
        let mut tx = self.begin().await?;
        let Some(script) = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {SCRIPT_COLS} FROM scripts WHERE id = ?")))
            .bind(script_id)
            .fetch_optional(&mut *tx)
            .await?
            .as_ref()
            .map(script_row)
            .transpose()?
        else {
            return Ok(None);
        };
        let wanted = pinned.unwrap_or(script.current_version);
        let Some(version) = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {VERSION_META_COLS} FROM script_versions WHERE script_id = ? AND version = ?"
        )))
        .bind(script_id)
        .bind(wanted)
        .fetch_optional(&mut *tx)
        .await?
        .as_ref()
        .map(|r| version_row(r, false))
        .transpose()?
        else {
            return Ok(None);
        };
        sqlx::query("UPDATE runs SET script_version = ? WHERE id = ?")
            .bind(wanted)
            .bind(run_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Some(ScriptPick { script, version }))
    }

    async fn script_set_current(
        &self,
        tenant_id: &str,
        script_id: &str,
        version: i64,
        now_ms: i64,
    ) -> Result<Option<Script>> {
        let mut tx = self.begin().await?;
        let Some(mut script) = self.lock_script(&mut tx, tenant_id, script_id).await? else {
            return Ok(None);
        };
        let exists = sqlx::query("SELECT 1 AS one FROM script_versions WHERE script_id = ? AND version = ?")
            .bind(script_id)
            .bind(version)
            .fetch_optional(&mut *tx)
            .await?
            .is_some();
        if !exists {
            return Err(StoreError::Refused {
                field: "version".into(),
                message: format!("script `{}` has no version {version}", script.name),
            });
        }
        sqlx::query("UPDATE scripts SET current_version = ?, updated_at_ms = ? WHERE id = ?")
            .bind(version)
            .bind(now_ms)
            .bind(script_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        script.current_version = version;
        script.updated_at_ms = now_ms;
        Ok(Some(script))
    }

    async fn script_delete(&self, tenant_id: &str, script_id: &str) -> Result<bool> {
        let mut tx = self.begin().await?;
        let jobs = sqlx::query("SELECT COUNT(*) AS n FROM jobs WHERE script_id = ? AND tenant_id = ?")
            .bind(script_id)
            .bind(tenant_id)
            .fetch_one(&mut *tx)
            .await?;
        let n: i64 = col(&jobs, "n")?;
        if n > 0 {
            return Err(StoreError::Conflict {
                what: "script_in_use",
                message: format!("{n} job(s) run this script; delete them or point them elsewhere first"),
            });
        }
        let r = sqlx::query("DELETE FROM scripts WHERE id = ? AND tenant_id = ?")
            .bind(script_id)
            .bind(tenant_id)
            .execute(&mut *tx)
            .await?;
        if r.rows_affected() > 0 {
            sqlx::query("DELETE FROM script_versions WHERE script_id = ?").bind(script_id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(r.rows_affected() > 0)
    }
}
