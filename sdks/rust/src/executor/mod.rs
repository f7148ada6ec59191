//! The executor: handlers by name, verified deliveries, once per `webhook-id`, sync or async
//! answers, cancels, registration and heartbeats, draining. Split by duty into the modules
//! below; their public items are re-exported here.

mod answers;
mod builder;
mod delivery;
mod handlers;
mod lifecycle;
mod state;

pub use builder::Builder;
pub use handlers::{HandlerOptions, Mode};
pub use lifecycle::shutdown_signal;
pub use state::{Executor, ExecutorError};
