//! [`TenantStore`] for [`SqlStore`]: tenants and API keys.

use async_trait::async_trait;
use sqlx::any::AnyRow;
use sundial_core::types::Role;

use super::{SqlStore, col, parse_col};
use crate::error::conflict_on;
use crate::{ApiKey, Page, Result, Tenant, TenantStore};

fn tenant_row(r: &AnyRow) -> Result<Tenant> {
    Ok(Tenant { id: col(r, "id")?, name: col(r, "name")?, created_at_ms: col(r, "created_at_ms")? })
}

fn api_key_row(r: &AnyRow) -> Result<ApiKey> {
    Ok(ApiKey {
        id: col(r, "id")?,
        tenant_id: col(r, "tenant_id")?,
        name: col(r, "name")?,
        role: parse_col(r, "role")?,
        key_hash: col(r, "key_hash")?,
        display_prefix: col(r, "display_prefix")?,
        created_at_ms: col(r, "created_at_ms")?,
    })
}

#[async_trait]
impl TenantStore for SqlStore {
    // ---- tenants ----

    async fn tenant_insert(&self, t: &Tenant) -> Result<()> {
        sqlx::query("INSERT INTO tenants (id, name, created_at_ms) VALUES (?, ?, ?)")
            .bind(&t.id)
            .bind(&t.name)
            .bind(t.created_at_ms)
            .execute(&self.pool)
            .await
            .map_err(conflict_on("tenant_name", format!("a tenant named `{}` exists", t.name)))?;
        Ok(())
    }

    async fn tenant_get(&self, id: &str) -> Result<Option<Tenant>> {
        sqlx::query("SELECT id, name, created_at_ms FROM tenants WHERE id = ?")
            .bind(id)
            .fetch_optional(self.reader())
            .await?
            .as_ref()
            .map(tenant_row)
            .transpose()
    }

    async fn tenant_list(&self, page: &Page) -> Result<Vec<Tenant>> {
        sqlx::query("SELECT id, name, created_at_ms FROM tenants WHERE (? IS NULL OR id > ?) ORDER BY id LIMIT ?")
            .bind(&page.after)
            .bind(&page.after)
            .bind(page.limit)
            .fetch_all(self.reader())
            .await?
            .iter()
            .map(tenant_row)
            .collect()
    }

    // ---- api keys ----

    async fn api_key_insert(&self, k: &ApiKey) -> Result<()> {
        sqlx::query(
            "INSERT INTO api_keys (id, tenant_id, name, role, key_hash, display_prefix, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&k.id)
        .bind(&k.tenant_id)
        .bind(&k.name)
        .bind(k.role.as_str())
        .bind(&k.key_hash)
        .bind(&k.display_prefix)
        .bind(k.created_at_ms)
        .execute(&self.pool)
        .await
        .map_err(conflict_on("api_key", "this key already exists"))?;
        Ok(())
    }

    async fn api_key_by_hash(&self, key_hash: &str) -> Result<Option<ApiKey>> {
        sqlx::query("SELECT id, tenant_id, name, role, key_hash, display_prefix, created_at_ms FROM api_keys WHERE key_hash = ?")
            .bind(key_hash)
            .fetch_optional(self.reader())
            .await?
            .as_ref()
            .map(api_key_row)
            .transpose()
    }

    async fn api_key_list(&self, tenant_id: Option<&str>, page: &Page) -> Result<Vec<ApiKey>> {
        sqlx::query(
            "SELECT id, tenant_id, name, role, key_hash, display_prefix, created_at_ms FROM api_keys \
             WHERE ((? IS NULL AND tenant_id IS NULL) OR tenant_id = ?) AND (? IS NULL OR id > ?) ORDER BY id LIMIT ?",
        )
        .bind(tenant_id)
        .bind(tenant_id)
        .bind(&page.after)
        .bind(&page.after)
        .bind(page.limit)
        .fetch_all(self.reader())
        .await?
        .iter()
        .map(api_key_row)
        .collect()
    }

    async fn api_key_get(&self, tenant_id: &str, id: &str) -> Result<Option<ApiKey>> {
        sqlx::query("SELECT id, tenant_id, name, role, key_hash, display_prefix, created_at_ms FROM api_keys WHERE id = ? AND tenant_id = ?")
            .bind(id)
            .bind(tenant_id)
            .fetch_optional(self.reader())
            .await?
            .as_ref()
            .map(api_key_row)
            .transpose()
    }

    async fn api_key_count(&self, tenant_id: Option<&str>, role: Role) -> Result<i64> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS n FROM api_keys WHERE ((? IS NULL AND tenant_id IS NULL) OR tenant_id = ?) AND role = ?",
        )
        .bind(tenant_id)
        .bind(tenant_id)
        .bind(role.as_str())
        .fetch_one(self.reader())
        .await?;
        col(&row, "n")
    }

    async fn api_key_delete(&self, tenant_id: &str, id: &str) -> Result<bool> {
        let r = sqlx::query("DELETE FROM api_keys WHERE id = ? AND tenant_id = ?")
            .bind(id)
            .bind(tenant_id)
            .execute(&self.pool)
            .await?;
        Ok(r.rows_affected() > 0)
    }
}
