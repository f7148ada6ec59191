//! Tenant quotas as the API applies them: each tenant's limits (the node's defaults with
//! the operator's settings, cached a few seconds), and the per-key request rate (a token
//! bucket per API key, in this node's memory).

use std::collections::HashMap;
use std::sync::Mutex;

use sundial_core::quota::{Quota, Quotas, TokenBucket};
use sundial_store::Store;

use crate::error::{ApiError, ApiResult};

/// How long a tenant's limits are used before they are read again (an operator's change
/// applies on this node at once, on the others within this).
pub const QUOTA_CACHE_MS: i64 = 5_000;

/// Buckets kept before the idle ones are dropped (a full bucket is the same as none).
const MAX_BUCKETS: usize = 100_000;

#[derive(Debug)]
pub struct Limiter {
    defaults: Quotas,
    cache: Mutex<HashMap<String, (Quotas, i64)>>,
    buckets: Mutex<HashMap<String, TokenBucket>>,
}

impl Limiter {
    pub fn new(defaults: Quotas) -> Self {
        Self { defaults, cache: Mutex::default(), buckets: Mutex::default() }
    }

    /// The node's defaults (what a tenant without settings gets, and operator keys' rate).
    pub fn defaults(&self) -> &Quotas {
        &self.defaults
    }

    /// A tenant's limits.
    pub async fn quotas_of(&self, store: &dyn Store, tenant_id: &str, now_ms: i64) -> ApiResult<Quotas> {
        if let Some((q, at)) = self.cache.lock().expect("quota cache").get(tenant_id)
            && now_ms - at < QUOTA_CACHE_MS
            && now_ms >= *at
        {
            return Ok(*q);
        }
        let q = self.defaults.with(&store.quota_get(tenant_id).await?);
        let mut cache = self.cache.lock().expect("quota cache");
        if cache.len() >= MAX_BUCKETS {
            cache.clear();
        }
        cache.insert(tenant_id.to_string(), (q, now_ms));
        Ok(q)
    }

    /// Forget a tenant's cached limits (the operator just changed them).
    pub fn forget(&self, tenant_id: &str) {
        self.cache.lock().expect("quota cache").remove(tenant_id);
    }

    /// One request of `key_id` at `rate` per second: refused with 429 and `Retry-After`
    /// when the key's bucket is empty.
    pub fn take(&self, key_id: &str, rate: i64, now_ms: i64) -> ApiResult<()> {
        let mut buckets = self.buckets.lock().expect("rate buckets");
        if buckets.len() >= MAX_BUCKETS && !buckets.contains_key(key_id) {
            buckets.clear();
        }
        let bucket = buckets.entry(key_id.to_string()).or_insert_with(|| TokenBucket::new(rate, now_ms));
        bucket.take(rate, now_ms).map_err(|wait_ms| {
            let quota = Quota::MaxApiRequestsPerSecond;
            let mut e = ApiError::quota(&sundial_core::quota::Exceeded {
                quota,
                limit: rate,
                usage: rate as f64,
                requested: 1.0,
            });
            e.message = format!(
                "quota {quota} exceeded: this API key may make {rate} requests per second; retry in {wait_ms} ms"
            );
            e.retry_after_s = Some(((wait_ms + 999) / 1000).max(1) as u64);
            e
        })
    }
}
