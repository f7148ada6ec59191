//! What a handler knows about its run, and what it can do besides returning: log, report
//! progress, notice a cancel, answer later.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde_json::Value;
use sundial_core::protocol::{Delivery, ParentRef, ParentRun, ShardRef};
use sundial_core::types::TriggerKind;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::calls::{Calls, LogLine, LogsRequest};
use crate::error::Error;

/// Log levels Sundial keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

/// At most this many lines per logs call (the server's limit is 1000).
const MAX_LINES_PER_CALL: usize = 500;

/// The run a handler is working on. Cheap to clone; every clone is the same run.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

struct Inner {
    delivery: Delivery,
    webhook_id: String,
    cancel: CancellationToken,
    answer_later: Arc<Notify>,
    logs: Mutex<Vec<LogLine>>,
    flushing: tokio::sync::Mutex<()>,
    calls: Option<Arc<Calls>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("run_id", &self.inner.delivery.run_id)
            .field("attempt", &self.inner.delivery.attempt)
            .field("shard", &self.inner.delivery.shard)
            .finish_non_exhaustive()
    }
}

impl Context {
    pub(crate) fn new(
        delivery: Delivery,
        webhook_id: String,
        cancel: CancellationToken,
        answer_later: Arc<Notify>,
        calls: Option<Arc<Calls>>,
    ) -> Self {
        Context {
            inner: Arc::new(Inner {
                delivery,
                webhook_id,
                cancel,
                answer_later,
                logs: Mutex::new(Vec::new()),
                flushing: tokio::sync::Mutex::new(()),
                calls,
            }),
        }
    }

    /// A context for a delivery outside a running executor (tests of your own handlers):
    /// logs are kept in memory and dropped, the cancel token is never fired by Sundial.
    pub fn detached(delivery: Delivery) -> Self {
        let id = format!("msg_{}_{}_{}", delivery.run_id, delivery.shard.index, delivery.attempt);
        Self::new(delivery, id, CancellationToken::new(), Arc::new(Notify::new()), None)
    }

    /// The delivery as Sundial sent it.
    pub fn delivery(&self) -> &Delivery {
        &self.inner.delivery
    }
    pub fn run_id(&self) -> &str {
        &self.inner.delivery.run_id
    }
    pub fn job_id(&self) -> &str {
        &self.inner.delivery.job_id
    }
    /// The job's name.
    pub fn job(&self) -> &str {
        &self.inner.delivery.job
    }
    pub fn handler(&self) -> Option<&str> {
        self.inner.delivery.handler.as_deref()
    }
    /// This attempt (for a shard: the shard's attempt), from 1.
    pub fn attempt(&self) -> i64 {
        self.inner.delivery.attempt
    }
    /// `{index, total}`; `{0, 1}` for an unsharded run.
    pub fn shard(&self) -> ShardRef {
        self.inner.delivery.shard
    }
    pub fn trigger(&self) -> TriggerKind {
        self.inner.delivery.trigger
    }
    /// The instant the run is for, as sent (RFC 3339 UTC with milliseconds).
    pub fn scheduled_at(&self) -> &str {
        &self.inner.delivery.scheduled_at
    }
    /// [`Context::scheduled_at`] parsed.
    pub fn scheduled_at_utc(&self) -> Option<DateTime<Utc>> {
        DateTime::parse_from_rfc3339(&self.inner.delivery.scheduled_at).ok().map(|t| t.with_timezone(&Utc))
    }
    /// The params as JSON (the handler also receives them typed).
    pub fn params(&self) -> &Value {
        &self.inner.delivery.params
    }
    /// `webhook-id` of this delivery: `msg_<run>_<shard>_<attempt>`.
    pub fn webhook_id(&self) -> &str {
        &self.inner.webhook_id
    }
    /// For a run fired by one parent: its run and output.
    pub fn parent(&self) -> Option<&ParentRef> {
        self.inner.delivery.parent.as_ref()
    }
    /// The parent's output (`None` without a parent or when it had none).
    pub fn parent_output(&self) -> Option<&Value> {
        self.inner.delivery.parent.as_ref().and_then(|p| p.output.as_ref()).filter(|v| !v.is_null())
    }
    /// The parent's output as `T`; a mismatch is a `no_retry` error naming the field.
    pub fn parent_output_as<T: DeserializeOwned>(&self) -> Result<Option<T>, Error> {
        self.parent_output().map(|v| typed("the parent's output", v)).transpose()
    }
    /// For a fan-in run: every parent that had ended in the chain, sorted by `job_id`.
    pub fn parents(&self) -> Option<&[ParentRun]> {
        self.inner.delivery.parents.as_deref()
    }
    /// The params the chain's root was triggered with (already merged into the params).
    pub fn chain_params(&self) -> Option<&Value> {
        self.inner.delivery.chain_params.as_ref()
    }
    /// [`Context::chain_params`] as `T`; a mismatch is a `no_retry` error naming the field.
    pub fn chain_params_as<T: DeserializeOwned>(&self) -> Result<Option<T>, Error> {
        self.chain_params().map(|v| typed("chain_params", v)).transpose()
    }

    /// Fired when Sundial cancels this attempt (`POST <address>/cancel`): the attempt timed
    /// out, was cancelled through the API, was covered by a newer run, or its sharded run
    /// failed. Use it in `tokio::select!`, or pass [`Context::cancellation_token`] along.
    pub fn cancelled(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.inner.cancel.cancelled()
    }
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }
    pub fn cancellation_token(&self) -> CancellationToken {
        self.inner.cancel.clone()
    }

    /// Answer Sundial `202` now; the handler's result goes by the signed callback when it
    /// returns. For work known to be long, whatever the time budget.
    pub fn answer_later(&self) {
        self.inner.answer_later.notify_one();
    }

    /// An `info` log line, batched to `POST /api/v1/runs/{id}/logs` (flushed at least every
    /// second and before the result).
    pub fn log(&self, message: impl Into<String>) {
        self.log_at(Level::Info, message)
    }
    pub fn debug(&self, message: impl Into<String>) {
        self.log_at(Level::Debug, message)
    }
    pub fn warn(&self, message: impl Into<String>) {
        self.log_at(Level::Warn, message)
    }
    pub fn error(&self, message: impl Into<String>) {
        self.log_at(Level::Error, message)
    }
    pub fn log_at(&self, level: Level, message: impl Into<String>) {
        let line = LogLine { level: level.as_str(), message: message.into(), at: now_rfc3339() };
        let full = {
            let mut logs = self.inner.logs.lock().unwrap();
            logs.push(line);
            logs.len() >= MAX_LINES_PER_CALL
        };
        if full && let Ok(rt) = tokio::runtime::Handle::try_current() {
            let ctx = self.clone();
            rt.spawn(async move { ctx.flush().await });
        }
    }

    /// A progress line (`progress 3/10: message`), sent at once: Sundial shows it with the
    /// run's logs, and it tells Sundial the executor is alive.
    pub async fn progress(&self, done: u64, total: u64, message: impl AsRef<str>) {
        let m = message.as_ref();
        let text =
            if m.is_empty() { format!("progress {done}/{total}") } else { format!("progress {done}/{total}: {m}") };
        self.log_at(Level::Info, text);
        self.flush().await;
    }

    /// Send the log lines buffered so far.
    pub async fn flush(&self) {
        let Some(calls) = self.inner.calls.clone() else {
            self.inner.logs.lock().unwrap().clear();
            return;
        };
        let _one_at_a_time = self.inner.flushing.lock().await;
        loop {
            let batch: Vec<LogLine> = {
                let mut logs = self.inner.logs.lock().unwrap();
                let n = logs.len().min(MAX_LINES_PER_CALL);
                logs.drain(..n).collect()
            };
            if batch.is_empty() {
                return;
            }
            let d = &self.inner.delivery;
            let path = format!("/api/v1/runs/{}/logs", d.run_id);
            let body = LogsRequest { attempt: d.attempt, shard: d.shard.index, lines: &batch };
            match calls.post(&path, &body).await {
                Ok((200..=299, _)) => {}
                Ok((status, answer)) => {
                    tracing::warn!(run_id = %d.run_id, status, %answer, "sundial refused log lines");
                }
                Err(e) => tracing::warn!(run_id = %d.run_id, error = %e, "log lines not sent"),
            }
        }
    }

    pub(crate) fn has_logs(&self) -> bool {
        !self.inner.logs.lock().unwrap().is_empty()
    }
}

fn typed<T: DeserializeOwned>(what: &str, v: &Value) -> Result<T, Error> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        Error::no_retry(format!("{what} do not match the expected type: {path}: {}", e.into_inner()))
    })
}

pub(crate) fn now_rfc3339() -> String {
    Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
