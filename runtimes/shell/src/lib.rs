//! Runs an uploaded `bash` or `sh` script inside a default-deny bubblewrap sandbox.
//!
//! The API is **synchronous** (std::process and threads, no async runtime): [`ShellSandbox::run`]
//! blocks for up to the run's timeout, so async callers should wrap it in
//! `tokio::task::spawn_blocking`. A [`ShellSandbox`] is `Send + Sync` and can serve concurrent
//! runs; every run gets its own temp dir and cgroups.
//!
//! See the crate README for what is isolated, how, and what is not covered.

mod cgroup;
mod config;
mod error;
mod isolation;
mod limits;
mod outcome;
mod output;
mod probe;
mod run;
mod sandbox;
mod spawn;

pub use config::{SANDBOX_HOME, SANDBOX_PATH, SANDBOX_UID, SandboxConfig, Shell, ShellRun};
pub use error::SandboxError;
pub use isolation::{CgroupMode, Isolation, IsolationLevel, RlimitsReport};
pub use limits::Rlimits;
pub use outcome::{KillReason, ShellOutcome, ShellResult, signal_name};
pub use sandbox::ShellSandbox;
pub use sundial_core::script_output::{OutputCallback, OutputStream};
