//! Scripts and their immutable versions: [`ScriptStore`]. SQL in `sql/scripts.rs`.

use async_trait::async_trait;

use crate::{Page, Result, Script, ScriptVersion};

/// The script version an attempt of a script job runs, as [`ScriptStore::script_pick_for_run`]
/// chose and recorded it (no source: a runner fetches that by the run).
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptPick {
    pub script: Script,
    /// The version's metadata (`source` is empty).
    pub version: ScriptVersion,
}

/// Scripts (tenant-scoped, unique by name) and their versions. Every upload is a new
/// version, numbered from 1; the script's `current_version` is what jobs that follow it
/// run, and may be moved back to any earlier version (a rollback) and forward again.
#[async_trait]
pub trait ScriptStore: Send + Sync {
    /// Insert a script and its first version (`first.version` is 1). A name taken in the
    /// tenant is a [`StoreError::Conflict`](crate::StoreError::Conflict) (`script_name`).
    async fn script_create(&self, script: &Script, first: &ScriptVersion) -> Result<()>;
    /// By id or by name, within the tenant.
    async fn script_get(&self, tenant_id: &str, id_or_name: &str) -> Result<Option<Script>>;
    /// The tenant's scripts by id, after the page's cursor.
    async fn script_list(&self, tenant_id: &str, page: &Page) -> Result<Vec<Script>>;
    /// Add the next version (its number is chosen here: one more than the last) and make
    /// it current. `None` if the script is not in the tenant.
    async fn script_add_version(
        &self,
        tenant_id: &str,
        script_id: &str,
        version: &ScriptVersion,
    ) -> Result<Option<(Script, ScriptVersion)>>;
    /// Versions newest first, without their source (`source` is empty), after the page's
    /// cursor (a version number).
    async fn script_versions(&self, tenant_id: &str, script_id: &str, page: &Page) -> Result<Vec<ScriptVersion>>;
    /// One version with its source. `None` if the script is not in the tenant or has no such version.
    async fn script_version_get(&self, tenant_id: &str, script_id: &str, version: i64)
    -> Result<Option<ScriptVersion>>;
    /// One version's metadata, without its source (`source` is empty): what a listing or a
    /// script's current version shows. `None` as for [`ScriptStore::script_version_get`].
    async fn script_version_meta(
        &self,
        tenant_id: &str,
        script_id: &str,
        version: i64,
    ) -> Result<Option<ScriptVersion>>;
    /// Make an existing version current. `None` if the script is not in the tenant; a
    /// version it does not have is [`StoreError::Refused`](crate::StoreError::Refused) (`version`).
    async fn script_set_current(
        &self,
        tenant_id: &str,
        script_id: &str,
        version: i64,
        now_ms: i64,
    ) -> Result<Option<Script>>;
    /// The version an attempt of a script job runs — `pinned`, else the script's current
    /// one — recorded on the run (`runs.script_version`), read and written in one
    /// transaction. `None` if the script or that version no longer exists. The engine's own
    /// call on ids it read from the store (no tenant).
    async fn script_pick_for_run(
        &self,
        run_id: &str,
        script_id: &str,
        pinned: Option<i64>,
    ) -> Result<Option<ScriptPick>>;
    /// Delete a script and its versions; refused with a conflict (`script_in_use`) while jobs use it.
    async fn script_delete(&self, tenant_id: &str, script_id: &str) -> Result<bool>;
}
