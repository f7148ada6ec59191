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
    "not sent: the {scope}'s {limit} delivery slots (max_inflight_per_{scope}) stayed in use for {waited_ms} ms — its executors are slow or not answering"
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
    tenants: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// Forget idle semaphores once a map holds this many (apps and tenants come and go).
const SWEEP_AT: usize = 4_096;

fn semaphore(map: &Mutex<HashMap<String, Arc<Semaphore>>>, key: &str, limit: usize) -> Arc<Semaphore> {
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

    /// Take the app's share, then the tenant's, waiting at most `wait` for both.
    pub async fn acquire(&self, tenant_id: &str, app_id: &str, wait: Duration) -> Result<Share, Saturated> {
        let started = tokio::time::Instant::now();
        let waited = || started.elapsed().as_millis() as i64;
        let app = semaphore(&self.apps, app_id, self.per_app);
        let app = tokio::time::timeout(wait, app.acquire_owned())
            .await
            .map_err(|_| Saturated { scope: "app", limit: self.per_app, waited_ms: waited() })?
            .expect("never closed");
        let tenant = semaphore(&self.tenants, tenant_id, self.per_tenant);
        let left = wait.saturating_sub(started.elapsed());
        let tenant = tokio::time::timeout(left, tenant.acquire_owned())
            .await
            .map_err(|_| Saturated { scope: "tenant", limit: self.per_tenant, waited_ms: waited() })?
            .expect("never closed");
        Ok(Share { _app: app, _tenant: tenant })
    }

    /// Exchanges in flight for this app and this tenant (for tests and the node's view).
    pub fn in_use(&self, tenant_id: &str, app_id: &str) -> (usize, usize) {
        let used = |map: &Mutex<HashMap<String, Arc<Semaphore>>>, key: &str, limit: usize| {
            map.lock().expect("bulkhead lock").get(key).map_or(0, |s| limit - s.available_permits())
        };
        (used(&self.apps, app_id, self.per_app), used(&self.tenants, tenant_id, self.per_tenant))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_app_waits_then_fails_while_other_apps_and_tenants_go() {
        let b = Bulkheads::new(2, 3);
        let wait = Duration::from_millis(100);
        let a1 = b.acquire("ten_a", "app_1", wait).await.unwrap();
        let a2 = b.acquire("ten_a", "app_1", wait).await.unwrap();
        assert_eq!(b.in_use("ten_a", "app_1"), (2, 2));
        // app_1's share is in use: the third waits its 100 ms, then is refused.
        let e = b.acquire("ten_a", "app_1", wait).await.unwrap_err();
        assert_eq!((e.scope, e.limit), ("app", 2));
        assert!(e.waited_ms >= 100, "{e:?}");
        assert!(e.to_string().contains("max_inflight_per_app"), "{e}");
        // Another app of the same tenant takes the tenant's last slot; then the tenant is full.
        let a3 = b.acquire("ten_a", "app_2", wait).await.unwrap();
        let e = b.acquire("ten_a", "app_2", wait).await.unwrap_err();
        assert_eq!((e.scope, e.limit), ("tenant", 3));
        // Another tenant is not held up at all.
        let other = b.acquire("ten_b", "app_9", Duration::ZERO).await;
        assert!(other.is_ok());
        // A share freed goes to the next waiter.
        let waiter = tokio::spawn(async move { b.acquire("ten_a", "app_1", Duration::from_secs(10)).await.is_ok() });
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(a1);
        assert!(waiter.await.unwrap());
        drop((a2, a3));
    }

    #[test]
    fn the_wait_is_the_jobs_timeout_up_to_five_seconds() {
        assert_eq!(Bulkheads::wait_for(30_000), Duration::from_millis(5_000));
        assert_eq!(Bulkheads::wait_for(800), Duration::from_millis(800));
        assert_eq!(Bulkheads::wait_for(0), Duration::from_millis(1));
    }
}
