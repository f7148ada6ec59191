//! The operator (bootstrap) key: created on first start, or taken from `SUNDIAL_ADMIN_KEY`.

use sundial_core::ids::{self, new_id};
use sundial_core::keys::{display_prefix, generate_api_key, hash_api_key};
use sundial_core::types::Role;
use sundial_store::{ApiKey, Store, StoreError};

/// Make sure an operator key exists. With `given`, that key is registered (if new).
/// Without, a key is generated only when no operator key exists yet; the new key is
/// returned so the caller can print it once.
pub async fn ensure_operator_key(
    store: &dyn Store,
    given: Option<&str>,
    now_ms: i64,
) -> Result<Option<String>, StoreError> {
    let key = match given {
        Some(k) => {
            if store.api_key_by_hash(&hash_api_key(k)).await?.is_some() {
                return Ok(None);
            }
            k.to_string()
        }
        None => {
            if store.api_key_count(None, Role::Operator).await? > 0 {
                return Ok(None);
            }
            generate_api_key()
        }
    };
    store
        .api_key_insert(&ApiKey {
            id: new_id(ids::API_KEY),
            tenant_id: None,
            name: "bootstrap operator".into(),
            role: Role::Operator,
            key_hash: hash_api_key(&key),
            display_prefix: display_prefix(&key),
            created_at_ms: now_ms,
        })
        .await?;
    Ok(if given.is_some() { None } else { Some(key) })
}
