use std::sync::Arc;

use sundial_core::clock::SharedClock;
use sundial_store::Store;

/// Settings the API needs (the binary fills them from its configuration).
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// Largest accepted request body, bytes.
    pub max_body_bytes: usize,
    /// How long a rotated-out app secret still verifies signatures, ms.
    pub secret_grace_ms: i64,
    /// Where deliveries may go: endpoints and executor addresses it refuses (IP literals,
    /// `localhost`) are refused at registration.
    pub outbound: sundial_core::outbound::OutboundPolicy,
    /// What script uploads may be.
    pub scripts: ScriptLimits,
    /// Largest run output a result call may report, bytes (its compact JSON): larger is 413.
    pub max_output_bytes: usize,
    /// The script runtimes this install offers (`GET /api/v1/runtimes`); a script of a
    /// runtime that is not available is refused at upload. The binary fills this from
    /// what its runner detected at start-up; the default offers every runtime.
    pub runtimes: Vec<RuntimeOffer>,
    /// Every tenant's quotas unless the operator set others for it (`PUT /tenants/{id}/quotas`).
    pub quotas: sundial_core::quota::Quotas,
    /// New handlers (each a new job) one registration call may add. Default 100.
    pub max_new_handlers_per_registration: usize,
    /// Log bytes (the messages) one `POST /runs/{id}/logs` call may carry. Default 256 KiB.
    pub max_log_bytes_per_call: usize,
    /// How long after a run ended its executor may still send log lines, ms. Default 60 s.
    pub log_grace_ms: i64,
    /// Compiles Python and JavaScript sources at upload, so a source that does not compile
    /// is refused then (422 on `source`, with the interpreter's message and line). The
    /// binary provides it with its runner's interpreters; `None` (or an interpreter it does
    /// not have) accepts the source unchecked.
    pub source_checker: Option<Arc<dyn SourceChecker>>,
}

/// Why a script's source does not compile: the interpreter's message and the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceProblem {
    pub message: String,
    /// From 1, when the interpreter names one.
    pub line: Option<u32>,
}

/// Compiles a script's source without running it (blocking: the API calls it off its
/// async threads).
pub trait SourceChecker: Send + Sync + std::fmt::Debug {
    /// `Err` when `source` does not compile as a `runtime` script; `Ok` when it does, or
    /// when this checker cannot tell (no interpreter for it here).
    fn check(&self, runtime: sundial_core::types::ScriptRuntime, source: &str) -> Result<(), SourceProblem>;
}

/// A script runtime as this install offers it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct RuntimeOffer {
    pub runtime: sundial_core::types::ScriptRuntime,
    /// Scripts of this runtime can be uploaded and run here.
    pub available: bool,
    /// How runs are isolated: `wasm` (inside wasmtime: no host files, network or
    /// environment; deadline, fuel and memory caps), `strong` (bubblewrap namespaces plus
    /// cgroup limits), `namespaces_only` (bubblewrap without cgroup limits, accepted by
    /// the operator), or `none` (not available).
    pub isolation: String,
    /// What was detected (engine, interpreter, sandbox layers), or why it is not available.
    pub detail: String,
}

impl RuntimeOffer {
    /// Every runtime, available (the default of a bare [`ApiConfig`]).
    pub fn all_available() -> Vec<RuntimeOffer> {
        use sundial_core::types::ScriptRuntime::*;
        [Wasm, Python, Javascript, Bash, Sh]
            .into_iter()
            .map(|runtime| RuntimeOffer {
                runtime,
                available: true,
                isolation: if matches!(runtime, Bash | Sh) { "strong" } else { "wasm" }.to_string(),
                detail: String::new(),
            })
            .collect()
    }
}

/// Upload limits for scripts.
#[derive(Debug, Clone)]
pub struct ScriptLimits {
    /// Largest `wasm` module (binary, or `.wat` text), bytes. Default 10 MiB.
    pub max_wasm_bytes: usize,
    /// Largest text script (Python, JavaScript, shell), bytes. Default 1 MiB.
    pub max_text_bytes: usize,
}

impl Default for ScriptLimits {
    fn default() -> Self {
        Self { max_wasm_bytes: 10 * 1024 * 1024, max_text_bytes: 1024 * 1024 }
    }
}

impl ScriptLimits {
    /// The request body a script upload may need: the largest module in base64, plus room for the rest.
    pub fn max_body_bytes(&self) -> usize {
        self.max_wasm_bytes.max(self.max_text_bytes) / 3 * 4 + 64 * 1024
    }
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: 1024 * 1024,
            secret_grace_ms: 24 * 3_600_000,
            outbound: sundial_core::outbound::OutboundPolicy::default(),
            scripts: ScriptLimits::default(),
            max_output_bytes: sundial_core::protocol::DEFAULT_MAX_OUTPUT_BYTES,
            runtimes: RuntimeOffer::all_available(),
            quotas: sundial_core::quota::Quotas::default(),
            max_new_handlers_per_registration: 100,
            max_log_bytes_per_call: 256 * 1024,
            log_grace_ms: 60_000,
            source_checker: None,
        }
    }
}

/// Shared by every handler.
#[derive(Debug, Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub clock: SharedClock,
    pub config: Arc<ApiConfig>,
    /// Wakes this node's engine when runs become due (triggers, results).
    pub wake: Arc<tokio::sync::Notify>,
    /// Best-effort cancels to executors, sent in the background (never awaited by a request).
    pub cancels: sundial_engine::Canceller,
    /// Tenants' quotas (cached) and the per-key request rate.
    pub limits: Arc<crate::limits::Limiter>,
}

impl AppState {
    /// Needs a Tokio runtime (it starts a cancel sender of its own; a node shares its
    /// engine's instead, see [`AppState::with_cancels`]).
    pub fn new(store: Arc<dyn Store>, clock: SharedClock, config: ApiConfig, wake: Arc<tokio::sync::Notify>) -> Self {
        let cancels =
            sundial_engine::Canceller::start(store.clone(), sundial_engine::DeliveryClient::new(clock.clone()));
        let limits = Arc::new(crate::limits::Limiter::new(config.quotas));
        Self { store, clock, config: Arc::new(config), wake, cancels, limits }
    }

    /// Send cancels through this sender (the node's engine's, which names the node in
    /// `sundial-node` and bounds the cancels of the whole node together).
    pub fn with_cancels(mut self, cancels: sundial_engine::Canceller) -> Self {
        self.cancels = cancels;
        self
    }
}

impl AppState {
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// A tenant's quotas (the node's defaults with the operator's settings; cached).
    pub async fn quotas_of(&self, tenant_id: &str) -> crate::error::ApiResult<sundial_core::quota::Quotas> {
        self.limits.quotas_of(self.store.as_ref(), tenant_id, self.now_ms()).await
    }
}
