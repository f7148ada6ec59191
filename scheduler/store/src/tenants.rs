//! Tenants and their API keys: [`TenantStore`]. SQL in `sql/tenants.rs`.

use async_trait::async_trait;
use sundial_core::types::Role;

use crate::{ApiKey, Page, Result, Tenant};

/// Tenants (the operator's) and API keys (authentication and key management).
#[async_trait]
pub trait TenantStore: Send + Sync {
    async fn tenant_insert(&self, tenant: &Tenant) -> Result<()>;
    async fn tenant_get(&self, id: &str) -> Result<Option<Tenant>>;
    async fn tenant_list(&self, page: &Page) -> Result<Vec<Tenant>>;

    async fn api_key_insert(&self, key: &ApiKey) -> Result<()>;
    async fn api_key_by_hash(&self, key_hash: &str) -> Result<Option<ApiKey>>;
    /// Keys of a tenant, or operator keys when `tenant_id` is `None`.
    async fn api_key_list(&self, tenant_id: Option<&str>, page: &Page) -> Result<Vec<ApiKey>>;
    async fn api_key_get(&self, tenant_id: &str, id: &str) -> Result<Option<ApiKey>>;
    async fn api_key_count(&self, tenant_id: Option<&str>, role: Role) -> Result<i64>;
    async fn api_key_delete(&self, tenant_id: &str, id: &str) -> Result<bool>;
}
