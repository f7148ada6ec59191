//! Bulkheads: each app's and each tenant's share of the node's delivery slots (issue 26).
//!
//! Every HTTP exchange with an executor holds one of the node's delivery slots
//! (`max_inflight`) until the executor answers or the job's timeout passes. An executor that
//! accepts connections and never answers would hold every slot of the node for the length
//! of its jobs' timeout, and every other tenant's deliveries would wait behind it. So an
//! exchange first takes a share of its app (`max_inflight_per_app`) and of its tenant
//! (`max_inflight_per_tenant`), both below the node's total: a hung or slow executor holds
//! at most its app's share, a tenant at most its tenant's share, and the rest of the slots
//! stay free for everyone else.
//!
//! A tenant's quota `max_inflight` (its operator setting, else the node default) lowers its
//! share further: the tenant's semaphore is sized `min(max_inflight_per_tenant, quota)`
//! and resized when the quota changes ([`TenantQuotas`], read every few seconds). The
//! quota is enforced per node: a cluster of N nodes lets a tenant have N times it in flight.
//!
//! A run that finds its app's or tenant's share in use waits for it a bounded time
//! ([`Bulkheads::wait_for`]); past that the attempt fails without being sent, reason
//! `saturated`, and the job's failure policy decides (a retry after its backoff). Memory
//! stays bounded: a tenant's waiting runs are at most its fire rate times that wait.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The longest a run waits for its app's or tenant's share before its attempt fails
/// `saturated` (less when the job's timeout is shorter).
pub const SHARE_WAIT_MAX_MS: i64 = 5_000;

/// The shares a delivery holds while its exchange is open (released when dropped).
#[derive(Debug)]
pub struct Share {
    _app: OwnedSemaphorePermit,
    _tenant: OwnedSemaphorePermit,
}

/// Which share stayed in use for the whole wait.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "not sent: the {scope}'s {limit} delivery slots (max_inflight_per_{scope}, or the tenant's max_inflight quota) stayed in use for {waited_ms} ms — its executors are slow or not answering"
)]
pub struct Saturated {
    pub scope: &'static str,
    pub limit: usize,
    pub waited_ms: i64,
}

/// Per-app and per-tenant semaphores, made on first use.
#[derive(Debug)]
pub struct Bulkheads {
    per_app: usize,
    per_tenant: usize,
    apps: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// Each tenant's semaphore and the number of permits it was sized to.
    tenants: Mutex<HashMap<String, (Arc<Semaphore>, usize)>>,
}

/// Each tenant's `max_inflight` quota, by tenant id.
type QuotaMap = Arc<HashMap<String, i64>>;

/// Every tenant's quota `max_inflight` as last read from the store (operator settings over
/// the node defaults), re-read at most every [`TenantQuotas::TTL_MS`].
#[derive(Debug)]
pub struct TenantQuotas {
    defaults: sundial_core::quota::Quotas,
    /// (read at, engine ms; tenant → quota), `None` until first read.
    read: Mutex<Option<(i64, QuotaMap)>>,
    reading: tokio::sync::Mutex<()>,
}

impl TenantQuotas {
    pub const TTL_MS: i64 = 5_000;

    pub fn new(defaults: sundial_core::quota::Quotas) -> Self {
        Self { defaults, read: Mutex::default(), reading: tokio::sync::Mutex::new(()) }
    }

    /// The tenant's `max_inflight`, reading the store when the copy is older than the TTL (one
    /// reader at a time; a failed read keeps the last copy, or the default).
    pub async fn max_inflight(&self, store: &dyn sundial_store::Store, tenant_id: &str, now_ms: i64) -> usize {
        let fresh = |now: i64| {
            self.read
                .lock()
                .expect("quota lock")
                .as_ref()
                .filter(|(at, _)| now - at < Self::TTL_MS && now >= *at)
                .map(|(_, m)| m.clone())
        };
        let map = match fresh(now_ms) {
            Some(m) => Some(m),
            None => {
                let _one = self.reading.lock().await;
                match fresh(now_ms) {
                    Some(m) => Some(m),
                    None => match store.quota_all().await {
                        Ok(all) => {
                            let m: HashMap<String, i64> =
                                all.into_iter().map(|(t, o)| (t, self.defaults.with(&o).max_inflight)).collect();
                            let m = Arc::new(m);
                            *self.read.lock().expect("quota lock") = Some((now_ms, m.clone()));
                            Some(m)
                        }
                        Err(err) => {
                            tracing::warn!(error = %err, "could not read tenant quotas; keeping the last");
                            self.read.lock().expect("quota lock").as_ref().map(|(_, m)| m.clone())
                        }
                    },
                }
            }
        };
        let q = map.and_then(|m| m.get(tenant_id).copied()).unwrap_or(self.defaults.max_inflight);
        q.max(0) as usize
    }
}

/// Forget idle semaphores once a map holds this many (apps and tenants come and go).
const SWEEP_AT: usize = 4_096;

/// The semaphore of `key` in `map` (`limit` permits), made on first use; idle ones are
/// forgotten as the map grows. Also the cancel sender's per-app shares (`transport.rs`).
pub(crate) fn semaphore(map: &Mutex<HashMap<String, Arc<Semaphore>>>, key: &str, limit: usize) -> Arc<Semaphore> {
    let mut g = map.lock().expect("bulkhead lock");
    if let Some(s) = g.get(key) {
        return s.clone();
    }
    if g.len() >= SWEEP_AT {
        // Idle: no permit out and no one else holding the semaphore.
        g.retain(|_, s| Arc::strong_count(s) > 1 || s.available_permits() < limit);
    }
    let s = Arc::new(Semaphore::new(limit));
    g.insert(key.to_string(), s.clone());
    s
}

impl Bulkheads {
    /// `per_app` and `per_tenant` exchanges in flight at most (each at least 1).
    pub fn new(per_app: usize, per_tenant: usize) -> Self {
        Self {
            per_app: per_app.max(1),
            per_tenant: per_tenant.max(1),
            apps: Mutex::default(),
            tenants: Mutex::default(),
        }
    }

    /// How long a run of a job with this timeout waits for its shares at most.
    pub fn wait_for(timeout_ms: i64) -> Duration {
        Duration::from_millis(timeout_ms.clamp(1, SHARE_WAIT_MAX_MS) as u64)
    }

    /// The tenant's semaphore, sized `min(per_tenant, quota)` (resized if the quota changed:
    /// permits added, or idle ones forgotten — those in use are forgotten as they come back).
    fn tenant(&self, tenant_id: &str, quota: usize) -> (Arc<Semaphore>, usize) {
        let want = self.per_tenant.min(quota).max(1);
        let mut g = self.tenants.lock().expect("bulkhead lock");
        if g.len() >= SWEEP_AT && !g.contains_key(tenant_id) {
            g.retain(|_, (s, size)| Arc::strong_count(s) > 1 || s.available_permits() < *size);
        }
        let (sem, size) = g.entry(tenant_id.to_string()).or_insert_with(|| (Arc::new(Semaphore::new(want)), want));
        if want > *size {
            sem.add_permits(want - *size);
            *size = want;
        } else if want < *size {
            *size -= sem.forget_permits(*size - want);
        }
        (sem.clone(), *size)
    }

    /// Take the app's share, then the tenant's (at most `tenant_quota` for this tenant),
    /// waiting at most `wait` for both.
    pub async fn acquire(
        &self,
        tenant_id: &str,
        app_id: &str,
        tenant_quota: usize,
        wait: Duration,
    ) -> Result<Share, Saturated> {
        let started = tokio::time::Instant::now();
        let waited = || started.elapsed().as_millis() as i64;
        let app = semaphore(&self.apps, app_id, self.per_app);
        let app = tokio::time::timeout(wait, app.acquire_owned())
            .await
            .map_err(|_| Saturated { scope: "app", limit: self.per_app, waited_ms: waited() })?
            .expect("never closed");
        let (tenant, limit) = self.tenant(tenant_id, tenant_quota);
        let left = wait.saturating_sub(started.elapsed());
        let tenant = tokio::time::timeout(left, tenant.acquire_owned())
            .await
            .map_err(|_| Saturated { scope: "tenant", limit, waited_ms: waited() })?
            .expect("never closed");
        Ok(Share { _app: app, _tenant: tenant })
    }

    /// Exchanges in flight for this app and this tenant (for tests and the node's view).
    pub fn in_use(&self, tenant_id: &str, app_id: &str) -> (usize, usize) {
        let app =
            self.apps.lock().expect("bulkhead lock").get(app_id).map_or(0, |s| self.per_app - s.available_permits());
        let tenant = self
            .tenants
            .lock()
            .expect("bulkhead lock")
            .get(tenant_id)
            .map_or(0, |(s, size)| size.saturating_sub(s.available_permits()));
        (app, tenant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_app_waits_then_fails_while_other_apps_and_tenants_go() {
        let b = Bulkheads::new(2, 3);
        let wait = Duration::from_millis(100);
        const NO_QUOTA: usize = usize::MAX;
        let a1 = b.acquire("ten_a", "app_1", NO_QUOTA, wait).await.unwrap();
        let a2 = b.acquire("ten_a", "app_1", NO_QUOTA, wait).await.unwrap();
        assert_eq!(b.in_use("ten_a", "app_1"), (2, 2));
        // app_1's share is in use: the third waits its 100 ms, then is refused.
        let e = b.acquire("ten_a", "app_1", NO_QUOTA, wait).await.unwrap_err();
        assert_eq!((e.scope, e.limit), ("app", 2));
        assert!(e.waited_ms >= 100, "{e:?}");
        assert!(e.to_string().contains("max_inflight_per_app"), "{e}");
        // Another app of the same tenant takes the tenant's last slot; then the tenant is full.
        let a3 = b.acquire("ten_a", "app_2", NO_QUOTA, wait).await.unwrap();
        let e = b.acquire("ten_a", "app_2", NO_QUOTA, wait).await.unwrap_err();
        assert_eq!((e.scope, e.limit), ("tenant", 3));
        // Another tenant is not held up at all.
        let other = b.acquire("ten_b", "app_9", NO_QUOTA, Duration::ZERO).await;
        assert!(other.is_ok());
        // A share freed goes to the next waiter.
        let waiter =
            tokio::spawn(async move { b.acquire("ten_a", "app_1", NO_QUOTA, Duration::from_secs(10)).await.is_ok() });
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(a1);
        assert!(waiter.await.unwrap());
        drop((a2, a3));
    }

    /// A tenant's quota lowers its share below the node's, and a changed quota resizes it.
    #[tokio::test]
    async fn a_tenants_quota_lowers_its_share_and_a_change_resizes_it() {
        let b = Bulkheads::new(10, 10);
        let wait = Duration::from_millis(50);
        let held: Vec<Share> = futures_take(&b, 2, 2).await;
        let e = b.acquire("ten_q", "app_x", 2, wait).await.unwrap_err();
        assert_eq!((e.scope, e.limit), ("tenant", 2));
        assert!(e.to_string().contains("max_inflight quota"), "{e}");
        // Raised to 3: one more goes.
        let third = b.acquire("ten_q", "app_y", 3, wait).await.unwrap();
        assert_eq!(b.in_use("ten_q", "app_y"), (1, 3));
        // Lowered to 1 while 3 are out: nothing more until they come back below 1.
        drop(held);
        assert!(b.acquire("ten_q", "app_z", 1, wait).await.is_err(), "one still out fills a share of 1");
        drop(third);
        assert!(b.acquire("ten_q", "app_z", 1, wait).await.is_ok());
    }

    async fn futures_take(b: &Bulkheads, n: usize, quota: usize) -> Vec<Share> {
        let mut out = Vec::new();
        for i in 0..n {
            out.push(b.acquire("ten_q", &format!("app_{i}"), quota, Duration::from_millis(50)).await.unwrap());
        }
        out
    }

    #[test]
    fn the_wait_is_the_jobs_timeout_up_to_five_seconds() {
        assert_eq!(Bulkheads::wait_for(30_000), Duration::from_millis(5_000));
        assert_eq!(Bulkheads::wait_for(800), Duration::from_millis(800));
        assert_eq!(Bulkheads::wait_for(0), Duration::from_millis(1));
    }
}
