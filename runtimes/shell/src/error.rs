//! The setup errors of a sandbox or a run (a script that fails is not one: it is a
//! [`ShellOutcome`](crate::ShellOutcome)).

use std::io;

use crate::isolation::IsolationLevel;

/// Setup errors. A script that fails, times out or is killed is not an error: it is a
/// [`ShellOutcome`](crate::ShellOutcome).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// bubblewrap is missing or does not work on this host (no user or network namespaces, ...);
    /// the shell runtime should not be offered. Never a fallback to an unsandboxed run.
    #[error("shell sandbox unavailable: {reason}")]
    Unavailable { reason: String },
    /// bwrap works, but the isolation is weaker than [`IsolationLevel::Strong`] (no usable
    /// cgroups, or bwrap would run as host root) and [`SandboxConfig::accept_weaker`] is false.
    ///
    /// [`SandboxConfig::accept_weaker`]: crate::SandboxConfig::accept_weaker
    #[error("shell sandbox isolation would only be `{level}`, refused (set accept_weaker to run with it): {reason}")]
    TooWeak { level: IsolationLevel, reason: String },
    /// The run's input cannot be passed to the sandbox (bad env name, NUL byte, ...).
    #[error("invalid shell run: {0}")]
    InvalidInput(String),
    /// The per-run cgroups could not be created or configured.
    #[error("cgroup setup failed: {0}")]
    Cgroup(#[source] io::Error),
    /// The per-run directory or script file could not be created.
    #[error("run directory setup failed: {0}")]
    RunDir(#[source] io::Error),
    /// bwrap could not be started (or could not set its limits or join the cgroups).
    #[error("failed to start bwrap: {0}")]
    Spawn(#[source] io::Error),
    /// Waiting for the sandbox failed.
    #[error("failed to wait for bwrap: {0}")]
    Wait(#[source] io::Error),
}

pub(crate) fn unavailable(reason: String) -> SandboxError {
    SandboxError::Unavailable { reason }
}
