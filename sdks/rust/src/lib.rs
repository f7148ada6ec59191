//! # sundial-sdk
//!
//! Write a [Sundial](https://github.com/) executor — the HTTP endpoint Sundial delivers runs
//! to — in a few lines, and drive Sundial from code.
//!
//! ```no_run
//! use sundial_sdk::{Context, Executor};
//!
//! #[derive(serde::Deserialize)]
//! struct Hello { to: String }
//!
//! #[tokio::main]
//! async fn main() -> std::io::Result<()> {
//!     Executor::builder().from_env() // SUNDIAL_SECRET, SUNDIAL_APP_ID, SUNDIAL_URL
//!         .handler("hello", |ctx: Context, p: Hello| async move {
//!             ctx.log(format!("hello {}", p.to));
//!             Ok(serde_json::json!({ "greeted": p.to }))
//!         })
//!         .build().expect("a secret").serve("127.0.0.1:9000").await
//! }
//! ```
//!
//! - [`Executor`]: handlers by name with serde-typed params, verified deliveries (several
//!   secrets, constant time, 5-minute window), once per `webhook-id`, `200` or `202` + the
//!   signed result callback, logs, cancellation, register / heartbeat / deregister, `503`
//!   while draining, `410` for retired handlers; [`Executor::router`] (axum) and
//!   [`Executor::serve`].
//! - [`Client`]: the management API (apps, jobs, runs, scripts) with typed errors and
//!   cursor pagination.
//! - [`verify`]: Standard Webhooks signing and verification as Sundial does it.
//! - [`protocol`]: the wire types, the server's own (`sundial_core::protocol`).

mod calls;
pub mod client;
mod context;
mod error;
mod executor;
pub mod verify;

pub use calls::{CallError, Registered};
pub use client::{ApiError, Client, ClientError, ClientResult, Page};
pub use context::{Context, Level};
pub use error::{Error, Result};
pub use executor::{Builder, Executor, ExecutorError, HandlerOptions, Mode, shutdown_signal};
pub use futures_util::{Stream, StreamExt, TryStreamExt};

/// The executor protocol's wire types and header names: the server's own.
pub mod protocol {
    pub use sundial_core::protocol::*;
    pub use sundial_core::signing::{HEADER_ID, HEADER_SIGNATURE, HEADER_TIMESTAMP, SigningKey};
    pub use sundial_core::types::{RunState, TriggerKind};
}

/// The protocol version this SDK speaks (`sdks/PROTOCOL.md`).
pub const PROTOCOL_VERSION: u32 = 1;
