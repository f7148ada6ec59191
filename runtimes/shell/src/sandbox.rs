//! [`ShellSandbox`]: a checked bubblewrap installation plus limits, what it found at start-up
//! and the limits of one run under it. Made in `probe.rs`, runs in `run.rs`.

use std::path::PathBuf;

use crate::cgroup::Backend;
use crate::config::{SandboxConfig, ShellRun};
use crate::isolation::Isolation;

/// A checked bubblewrap installation plus limits.
#[derive(Debug)]
pub struct ShellSandbox {
    pub(crate) bwrap: PathBuf,
    pub(crate) config: SandboxConfig,
    pub(crate) disable_userns: bool,
    /// The host uid/gid bwrap is started as, if it is switched away from ours.
    pub(crate) host_ids: Option<(u32, u32)>,
    /// The cgroup hierarchy runs are confined in, or why there is none.
    pub(crate) cgroups: Result<Backend, String>,
    pub(crate) isolation: Isolation,
}

impl ShellSandbox {
    /// The isolation layers found at start-up, and the overall level (a copy; its `Display` is
    /// one line for a start-up log).
    pub fn isolation(&self) -> Isolation {
        self.isolation.clone()
    }

    /// Whether runs get the cgroup limits (memory, pids, and cpu if available).
    pub fn limits_enforced(&self) -> bool {
        self.cgroups.is_ok()
    }

    /// Why cgroup limits are not enforced, if they are not.
    pub fn limits_skip_reason(&self) -> Option<&str> {
        self.cgroups.as_ref().err().map(String::as_str)
    }

    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// The run's memory limit: the config's, or the run's own when lower.
    pub(crate) fn memory_bytes(&self, input: &ShellRun) -> u64 {
        input.memory_bytes.map_or(self.config.memory_limit_bytes, |m| m.min(self.config.memory_limit_bytes))
    }

    /// The run's disk quota: the config's, or the run's own when lower (at least 64 KiB).
    pub(crate) fn disk_bytes(&self, input: &ShellRun) -> u64 {
        input.disk_bytes.map_or(self.config.disk_bytes, |d| d.min(self.config.disk_bytes)).max(64 * 1024)
    }
}
