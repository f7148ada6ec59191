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
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self { max_body_bytes: 1024 * 1024, secret_grace_ms: 24 * 3_600_000 }
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
    /// Signed calls to executors (cancels).
    pub delivery: sundial_engine::DeliveryClient,
}

impl AppState {
    pub fn new(store: Arc<dyn Store>, clock: SharedClock, config: ApiConfig, wake: Arc<tokio::sync::Notify>) -> Self {
        let delivery = sundial_engine::DeliveryClient::new(clock.clone());
        Self { store, clock, config: Arc::new(config), wake, delivery }
    }

    /// Name this node in the calls it makes to executors (`sundial-node`).
    pub fn for_node(mut self, node_id: &str) -> Self {
        self.delivery = self.delivery.for_node(node_id);
        self
    }
}

impl AppState {
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }
}
