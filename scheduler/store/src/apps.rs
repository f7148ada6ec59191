//! Apps and their executors: [`AppStore`]. SQL in `sql/apps.rs`.

use async_trait::async_trait;

use crate::{App, Executor, Page, Result};

/// An app and its executors: what routing a delivery needs.
#[derive(Debug, Clone, PartialEq)]
pub struct AppRouting {
    pub app: App,
    pub executors: Vec<Executor>,
}

/// What sealing the app secrets again (`SqlStore::secrets_rekey`) did: values found in
/// plain text and sealed, values under a previous key sealed under the current one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RekeyReport {
    pub encrypted: u64,
    pub rekeyed: u64,
}

/// Apps (tenant-scoped, plus `app_by_id` for signed executor calls) and the executors
/// registered to them.
#[async_trait]
pub trait AppStore: Send + Sync {
    async fn app_insert(&self, app: &App) -> Result<()>;
    /// By id or by name, within the tenant.
    async fn app_get(&self, tenant_id: &str, id_or_name: &str) -> Result<Option<App>>;
    async fn app_list(&self, tenant_id: &str, page: &Page) -> Result<Vec<App>>;
    /// Write the mutable fields (description, endpoints, secrets, updated_at). False if gone.
    async fn app_update(&self, app: &App) -> Result<bool>;
    /// Refused with a conflict while jobs use the app.
    async fn app_delete(&self, tenant_id: &str, id: &str) -> Result<bool>;

    /// An app by id alone, for executor calls authenticated by the app's signature.
    async fn app_by_id(&self, id: &str) -> Result<Option<App>>;
    /// Insert or refresh an executor by (app, address); returns the stored row (its id is stable).
    async fn executor_upsert(&self, e: &Executor) -> Result<Executor>;
    /// `running_runs`: the run ids the executor says it is working on (`None`: not reported).
    async fn executor_heartbeat(
        &self,
        app_id: &str,
        executor_id: &str,
        running: i64,
        running_runs: Option<&[String]>,
        metadata: Option<&serde_json::Value>,
        now_ms: i64,
    ) -> Result<bool>;
    async fn executor_set_state(
        &self,
        app_id: &str,
        executor_id: &str,
        state: sundial_core::types::ExecutorState,
        now_ms: i64,
    ) -> Result<bool>;
    async fn executor_list(&self, app_id: &str) -> Result<Vec<Executor>>;
}
