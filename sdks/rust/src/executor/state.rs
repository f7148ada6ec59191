//! The [`Executor`] handle and the state its clones share; what it serves and runs now.
//! Deliveries are handled in `delivery.rs`, registration and shutdown in `lifecycle.rs`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use sundial_core::signing::SigningKey;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::calls::{CallError, Calls, Registered};
use crate::verify::BadSecret;

use super::answers::Answers;
use super::handlers::HandlerEntry;

/// The executor could not be built or started.
#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    #[error("no signing secret: give `.secret(\"whsec_…\")` or SUNDIAL_SECRET")]
    NoSecret,
    #[error(transparent)]
    BadSecret(#[from] BadSecret),
    #[error(
        "registering needs an app id (`.app_id(..)` or SUNDIAL_APP_ID) and a scheduler URL (`.scheduler_url(..)` or SUNDIAL_URL)"
    )]
    NotConfigured,
    #[error("registration refused: HTTP {status} {body}")]
    Refused { status: u16, body: Value },
    #[error(transparent)]
    Call(#[from] CallError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// An executor. Clone it freely: every clone is the same executor.
#[derive(Clone)]
pub struct Executor {
    pub(super) inner: Arc<Inner>,
}

/// (run id, shard index, attempt)
pub(super) type RunKey = (String, i64, i64);

pub(super) struct Inner {
    pub(super) keys: Vec<SigningKey>,
    pub(super) calls: Option<Arc<Calls>>,
    pub(super) handlers: HashMap<String, HandlerEntry>,
    pub(super) retired: Mutex<HashSet<String>>,
    pub(super) sync_budget: Duration,
    pub(super) remember: Duration,
    pub(super) remember_max: usize,
    pub(super) grace: Duration,
    pub(super) register: bool,
    pub(super) address: Option<String>,
    pub(super) name: Option<String>,
    pub(super) tags: Vec<String>,
    pub(super) metadata: Option<Value>,
    pub(super) answers: Mutex<Answers>,
    pub(super) running: Mutex<HashMap<RunKey, CancellationToken>>,
    pub(super) recent_cancels: Mutex<HashMap<RunKey, Instant>>,
    pub(super) idle: Notify,
    pub(super) draining: AtomicBool,
    pub(super) registration: Mutex<Option<Registered>>,
    pub(super) heartbeats: Mutex<Option<CancellationToken>>,
}

impl Executor {
    /// Stop serving `handler`: its deliveries get `410 handler_retired` (when every
    /// executor of the app says so, Sundial stops the job).
    pub fn retire(&self, handler: &str) {
        self.inner.retired.lock().unwrap().insert(handler.to_string());
    }

    /// The handler names served (not retired; the handler named `""`, which serves jobs
    /// without a handler, is not listed).
    pub fn handlers(&self) -> Vec<String> {
        let retired = self.inner.retired.lock().unwrap();
        let mut v: Vec<String> =
            self.inner.handlers.keys().filter(|h| !h.is_empty() && !retired.contains(*h)).cloned().collect();
        v.sort();
        v
    }

    /// The ids of the runs in progress here (sent with every heartbeat).
    pub fn running_runs(&self) -> Vec<String> {
        let mut v: Vec<String> = self.inner.running.lock().unwrap().keys().map(|k| k.0.clone()).collect();
        v.sort();
        v.dedup();
        v
    }

    /// From now on new deliveries get `503 executor_offline` (repeats still get their answer).
    pub fn drain(&self) {
        self.inner.draining.store(true, Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.inner.draining.load(Ordering::SeqCst)
    }

    /// This executor's registration, once [`Executor::start`] succeeded.
    pub fn registration(&self) -> Option<Registered> {
        self.inner.registration.lock().unwrap().clone()
    }
}
