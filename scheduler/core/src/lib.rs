//! Sundial's domain: the types every other crate speaks, parsed and validated.
//!
//! What lives here: identifiers, the injected [`clock::Clock`], validated domain
//! values (app names, webhook URLs, signing secrets, schedules, job definitions),
//! API-key generation and hashing, and Standard Webhooks signing.
//!
//! What does not: any IO. No SQL, no HTTP, no file system, no reading of the
//! system time except through [`clock::SystemClock`]. Every function here is
//! deterministic given its inputs, which is what lets the scheduling logic be
//! tested without sleeping.

pub mod affinity;
pub mod clock;
pub mod dispatch;
pub mod error;
pub mod failure;
pub mod fan_in;
pub mod ids;
pub mod job;
pub mod keys;
pub mod misfire;
pub mod model;
pub mod outbound;
pub mod protocol;
pub mod quota;
pub mod route;
pub mod run_state;
pub mod schedule;
pub mod script_output;
pub mod signing;
pub mod time;
pub mod types;

pub use error::{FieldError, Result};
