//! Cancels: best-effort signed calls to an executor to stop an attempt ([`Canceller`]),
//! sent in the background within each app's share of the cancel slots, and the open
//! synchronous exchanges whose runs are cancelled elsewhere ([`OpenExchanges`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sundial_core::protocol;
use sundial_core::types::RunState;
use sundial_store::{App, Run, Store};
use tokio::sync::{Semaphore, mpsc};

use crate::bulkhead::semaphore;
use crate::transport::DeliveryClient;

/// Cancels are best effort: at most this many are in flight at once …
pub const CANCEL_CONCURRENCY: usize = 16;
/// … at most this many of them to one app (a hung executor's cancels each wait out
/// [`CANCEL_TIMEOUT`]: its app holds only its share, the other apps' cancels still go) …
pub const CANCEL_PER_APP: usize = 4;
/// … each given this long …
pub const CANCEL_TIMEOUT: Duration = Duration::from_secs(2);
/// … and at most this many wait to be sent; more are dropped (and counted) …
pub const CANCEL_QUEUE: usize = 4096;
/// … of which at most this many for one app waiting for its share (more are dropped).
pub const CANCEL_APP_WAITING: usize = 256;

/// One best-effort cancel to send.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // both variants are large (a run, an app); the queue is bounded
pub enum CancelTarget {
    /// A run's current attempt, wherever it went (for a sharded run: each shard attempt
    /// its end cancelled). The address is looked up when the cancel is sent.
    Run(Run),
    /// One shard attempt at a known address.
    Shard { app: App, run_id: String, shard_index: i64, attempt: i64, address: String },
    /// An unsharded attempt whose synchronous exchange this node holds open (its address is
    /// not stored until the answer): found cancelled by [`Engine::watch_exchanges_once`](crate::Engine::watch_exchanges_once).
    Open { app: App, run_id: String, attempt: i64, address: String },
}

/// An unsharded delivery whose HTTP exchange is open on this node: where it went, for which
/// attempt, since when (engine clock).
#[derive(Debug, Clone)]
pub struct OpenExchange {
    pub app: App,
    pub address: String,
    pub attempt: i64,
    pub opened_at_ms: i64,
}

#[derive(Debug)]
struct OpenEntry {
    exchange: OpenExchange,
    /// Tells this entry from a later one of the same run (the next target of a failover).
    token: u64,
    /// A cancel went to this exchange already.
    cancel_sent: bool,
}

/// This node's open exchanges of unsharded deliveries, by run id: the address of an attempt
/// whose answer has not come is known only here, so a cancel of such a run can reach its
/// executor. An entry lives while its exchange does ([`OpenGuard`]), each holding a delivery
/// slot: at most `max_inflight` entries.
#[derive(Debug, Clone, Default)]
pub struct OpenExchanges {
    inner: Arc<std::sync::Mutex<std::collections::HashMap<String, OpenEntry>>>,
    next_token: Arc<AtomicU64>,
}

/// Removes its entry from [`OpenExchanges`] when dropped: when the exchange ends, on every
/// path (an answer, an error, a panic unwinding the delivery).
#[derive(Debug)]
pub struct OpenGuard {
    exchanges: OpenExchanges,
    run_id: String,
    token: u64,
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        let mut map = self.exchanges.inner.lock().unwrap_or_else(|p| p.into_inner());
        if map.get(&self.run_id).is_some_and(|e| e.token == self.token) {
            map.remove(&self.run_id);
        }
    }
}

impl OpenExchanges {
    /// Enter an exchange about to be sent; it stays entered while the guard lives.
    pub fn open(&self, run_id: &str, exchange: OpenExchange) -> OpenGuard {
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let entry = OpenEntry { exchange, token, cancel_sent: false };
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).insert(run_id.to_string(), entry);
        OpenGuard { exchanges: self.clone(), run_id: run_id.to_string(), token }
    }

    /// How many exchanges are open.
    pub fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The exchanges opened at or before `opened_by_ms` that no cancel has gone to yet.
    pub fn uncancelled_since(&self, opened_by_ms: i64) -> Vec<(String, OpenExchange)> {
        let map = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        map.iter()
            .filter(|(_, e)| !e.cancel_sent && e.exchange.opened_at_ms <= opened_by_ms)
            .map(|(id, e)| (id.clone(), e.exchange.clone()))
            .collect()
    }

    /// The run's open exchange of `attempt`, if no cancel has gone to it yet; it is marked
    /// as cancelled (the caller sends the cancel), so each exchange gets at most one.
    pub fn take_for_cancel(&self, run_id: &str, attempt: i64) -> Option<OpenExchange> {
        let mut map = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let e = map.get_mut(run_id).filter(|e| e.exchange.attempt == attempt && !e.cancel_sent)?;
        e.cancel_sent = true;
        Some(e.exchange.clone())
    }
}

/// Best-effort signed `POST {address}/cancel` calls, sent in the background: queueing one
/// never waits (a full queue drops it, counted), at most [`CANCEL_CONCURRENCY`] are in flight,
/// each for at most [`CANCEL_TIMEOUT`]. Queue a cancel only after winning the write that
/// ended the attempt: the loser of a race has nothing to cancel.
#[derive(Debug, Clone)]
pub struct Canceller {
    tx: mpsc::Sender<CancelTarget>,
    /// Cancels dropped because the queue was full (logged at powers of two).
    dropped: Arc<AtomicU64>,
    /// This node's open exchanges: a cancel of a run with no stored address goes to its
    /// open exchange here, if any.
    exchanges: OpenExchanges,
}

impl Canceller {
    /// Start the sender task (on the current Tokio runtime). It ends when every clone of
    /// the `Canceller` is dropped.
    pub fn start(store: Arc<dyn Store>, client: DeliveryClient) -> Self {
        let (tx, mut rx) = mpsc::channel::<CancelTarget>(CANCEL_QUEUE);
        let exchanges = OpenExchanges::default();
        let dropped: Arc<AtomicU64> = Arc::default();
        let (open, lost) = (exchanges.clone(), dropped.clone());
        tokio::spawn(async move {
            // Finding where a cancel goes (a read or two) takes a slot of `lookups`; sending
            // it, its app's share and then a slot of `posts`, in that order.
            let lookups = Arc::new(Semaphore::new(CANCEL_CONCURRENCY));
            let sender = Arc::new(CancelSender {
                client,
                posts: Arc::new(Semaphore::new(CANCEL_CONCURRENCY)),
                admitted: Default::default(),
                shares: Default::default(),
                dropped: lost,
            });
            while let Some(target) = rx.recv().await {
                let Ok(lookup) = lookups.clone().acquire_owned().await else { break };
                let (store, open, sender) = (store.clone(), open.clone(), sender.clone());
                tokio::spawn(async move {
                    let calls = cancel_calls(store.as_ref(), &open, target).await;
                    drop(lookup);
                    for call in calls {
                        sender.send(call).await;
                    }
                });
            }
        });
        Self { tx, dropped, exchanges }
    }

    /// This node's open exchanges (the delivery enters each unsharded exchange here).
    pub fn exchanges(&self) -> &OpenExchanges {
        &self.exchanges
    }

    /// Queue a cancel; never waits.
    pub fn cancel(&self, target: CancelTarget) {
        if let Err(e) = self.tx.try_send(target) {
            {
                let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                let run_id = match e.into_inner() {
                    CancelTarget::Run(r) => r.id,
                    CancelTarget::Shard { run_id, .. } | CancelTarget::Open { run_id, .. } => run_id,
                };
                if n.is_power_of_two() {
                    tracing::warn!(%run_id, dropped = n, "cancel queue full: best-effort cancel dropped");
                }
            }
        }
    }

    /// Queue a cancel of the run's current attempt.
    pub fn cancel_run(&self, run: &Run) {
        self.cancel(CancelTarget::Run(run.clone()));
    }
}

/// One cancel call: the app it is signed for, the executor's address, the body.
struct CancelCall {
    app: App,
    address: String,
    cancel: protocol::Cancel,
}

/// Where a cancel goes: one call, several (a sharded run's cancelled shards) or none (the
/// attempt went nowhere, or its app is gone).
async fn cancel_calls(store: &dyn Store, open: &OpenExchanges, target: CancelTarget) -> Vec<CancelCall> {
    match target {
        CancelTarget::Shard { app, run_id, shard_index, attempt, address } => {
            vec![CancelCall { app, address, cancel: protocol::Cancel { run_id, attempt, shard: Some(shard_index) } }]
        }
        CancelTarget::Open { app, run_id, attempt, address } => {
            vec![CancelCall { app, address, cancel: protocol::Cancel { run_id, attempt, shard: None } }]
        }
        CancelTarget::Run(run) if run.shard_total.is_some() => shard_cancels(store, &run).await,
        CancelTarget::Run(run) => {
            let attempt = match store.run_attempts(&run.id).await {
                Ok(a) => a.into_iter().rev().find(|a| a.shard_index == 0 && a.attempt == run.attempt),
                Err(_) => None,
            };
            let cancel = protocol::Cancel { run_id: run.id.clone(), attempt: run.attempt, shard: None };
            match attempt.and_then(|a| a.address) {
                Some(address) => {
                    app_of(store, &run).await.map(|app| CancelCall { app, address, cancel }).into_iter().collect()
                }
                // Not stored: a synchronous exchange still open has no address yet. This
                // node's own, if it holds it (another node's finds the cancel by its watch).
                None => open
                    .take_for_cancel(&run.id, run.attempt)
                    .map(|ex| CancelCall { app: ex.app, address: ex.address, cancel })
                    .into_iter()
                    .collect(),
            }
        }
    }
}

/// Sends cancel calls, each app within its share of the slots.
struct CancelSender {
    client: DeliveryClient,
    posts: Arc<Semaphore>,
    /// Per app: its calls in flight or waiting for its share ([`CANCEL_PER_APP`] +
    /// [`CANCEL_APP_WAITING`]) …
    admitted: SemaphoreMap,
    /// … and its share of the slots ([`CANCEL_PER_APP`]).
    shares: SemaphoreMap,
    dropped: Arc<AtomicU64>,
}

type SemaphoreMap = std::sync::Mutex<std::collections::HashMap<String, Arc<Semaphore>>>;

impl CancelSender {
    /// Send one call (its outcome is logged); dropped, and counted, when its app already has
    /// [`CANCEL_APP_WAITING`] calls waiting for its share.
    async fn send(&self, call: CancelCall) {
        let app_id = call.app.id.as_str();
        let admitted = semaphore(&self.admitted, app_id, CANCEL_PER_APP + CANCEL_APP_WAITING);
        let Ok(_admitted) = admitted.try_acquire_owned() else {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                let run_id = &call.cancel.run_id;
                tracing::warn!(%run_id, %app_id, dropped = n, "cancels to this app are far behind: best-effort cancel dropped");
            }
            return;
        };
        let share = semaphore(&self.shares, app_id, CANCEL_PER_APP);
        let (Ok(_mine), Ok(_post)) = (share.acquire_owned().await, self.posts.clone().acquire_owned().await) else {
            return;
        };
        post_cancel(&self.client, &call.app, &call.address, call.cancel).await;
    }
}

async fn app_of(store: &dyn Store, run: &Run) -> Option<App> {
    let job = store.job_get(&run.tenant_id, &run.job_id).await.ok()??;
    store.app_by_id(&job.app_id).await.ok()?
}

/// Signed `POST {address}/cancel` with `cancel` as the body.
async fn post_cancel(client: &DeliveryClient, app: &App, address: &str, cancel: protocol::Cancel) {
    let url = format!("{}/cancel", address.trim_end_matches('/'));
    let msg_id = match cancel.shard {
        Some(shard) => format!("msg_cancel_{}_{shard}_{}", cancel.run_id, cancel.attempt),
        None => format!("msg_cancel_{}_{}", cancel.run_id, cancel.attempt),
    };
    let body = serde_json::to_vec(&cancel).expect("JSON");
    let (run_id, shard) = (cancel.run_id.as_str(), cancel.shard);
    match client.post_signed(app, &url, &msg_id, &body, &[], CANCEL_TIMEOUT).await {
        Ok(r) => tracing::info!(run_id, ?shard, status = r.status().as_u16(), "cancel sent"),
        Err(e) => tracing::info!(run_id, ?shard, error = %e, "cancel not delivered (best effort)"),
    }
}

/// Cancels for the shard attempts a run's end cancelled (a cancel through the API,
/// cover_early, a shard failed for good): each shard whose current attempt is `cancelled`
/// and went somewhere. Shards waiting to retry had nothing in flight.
async fn shard_cancels(store: &dyn Store, run: &Run) -> Vec<CancelCall> {
    let (Ok(shards), Ok(attempts)) = (store.shard_list(&run.id).await, store.run_attempts(&run.id).await) else {
        return Vec::new();
    };
    let Some(app) = app_of(store, run).await else {
        return Vec::new();
    };
    let mut calls = Vec::new();
    for shard in shards {
        let cancelled = attempts.iter().find(|a| {
            a.shard_index == shard.shard_index && a.attempt == shard.attempt && a.state == RunState::Cancelled.as_str()
        });
        if let Some(address) = cancelled.and_then(|a| a.address.clone()) {
            let cancel =
                protocol::Cancel { run_id: run.id.clone(), attempt: shard.attempt, shard: Some(shard.shard_index) };
            calls.push(CancelCall { app: app.clone(), address, cancel });
        }
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hung executor's app holds only its share of the cancel slots: another app's cancel
    /// goes while every one of the hung app's is still waiting for its answer, and the hung
    /// app's calls beyond what may wait for its share are dropped and counted.
    #[tokio::test]
    async fn a_hung_apps_cancels_hold_only_its_share_of_the_slots() {
        use std::sync::atomic::AtomicUsize;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // Accepts, reads, never answers; counts connections opened and closed by the caller.
        let hung = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let hung_addr = format!("http://{}", hung.local_addr().unwrap());
        let (opened, closed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (o, c) = (opened.clone(), closed.clone());
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = hung.accept().await {
                o.fetch_add(1, Ordering::SeqCst);
                let c = c.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    while matches!(sock.read(&mut buf).await, Ok(n) if n > 0) {}
                    c.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        // Answers every request at once; says when one came.
        let good = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let good_addr = format!("http://{}", good.local_addr().unwrap());
        let (came, mut arrived) = mpsc::channel::<()>(8);
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = good.accept().await {
                let came = came.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    if matches!(sock.read(&mut buf).await, Ok(n) if n > 0) {
                        let _ = came.send(()).await;
                        let _ = sock.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").await;
                    }
                });
            }
        });
        let app = |id: &str| App {
            id: id.into(),
            tenant_id: "t".into(),
            name: id.into(),
            description: String::new(),
            endpoints: vec![],
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
            previous_secret: None,
            previous_expires_ms: None,
            created_at_ms: 0,
            updated_at_ms: 0,
        };
        let call = |app: App, address: &str, i: usize| CancelCall {
            app,
            address: address.to_string(),
            cancel: protocol::Cancel { run_id: format!("run-{i}"), attempt: 1, shard: None },
        };
        let sender = Arc::new(CancelSender {
            client: DeliveryClient::new(Arc::new(sundial_core::clock::SystemClock)),
            posts: Arc::new(Semaphore::new(CANCEL_CONCURRENCY)),
            admitted: Default::default(),
            shares: Default::default(),
            dropped: Arc::default(),
        });
        let extra = 10;
        for i in 0..CANCEL_PER_APP + CANCEL_APP_WAITING + extra {
            let (s, c) = (sender.clone(), call(app("hung"), &hung_addr, i));
            tokio::spawn(async move { s.send(c).await });
        }
        let waited = tokio::time::timeout(Duration::from_secs(20), async {
            while opened.load(Ordering::SeqCst) < CANCEL_PER_APP || sender.dropped.load(Ordering::SeqCst) < extra as u64
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        assert!(waited.is_ok(), "the hung app's share never filled");
        assert_eq!(
            sender.dropped.load(Ordering::SeqCst),
            extra as u64,
            "only the calls past those that may wait are dropped"
        );
        let s = sender.clone();
        tokio::spawn(async move { s.send(call(app("good"), &good_addr, 0)).await });
        tokio::time::timeout(Duration::from_secs(20), arrived.recv())
            .await
            .expect("the other app's cancel went")
            .unwrap();
        assert_eq!(closed.load(Ordering::SeqCst), 0, "it went before any of the hung app's cancels gave up");
        assert_eq!(opened.load(Ordering::SeqCst), CANCEL_PER_APP, "the hung app never had more than its share");
    }
}
