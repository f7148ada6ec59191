//! What a sandbox is configured with ([`SandboxConfig`]) and what one run is given
//! ([`ShellRun`], [`Shell`]), with the fixed environment inside and the check of a run's input.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use sundial_core::script_output::OutputCallback;

use crate::error::SandboxError;
use crate::limits::Rlimits;

/// The fixed `PATH` inside the sandbox.
pub const SANDBOX_PATH: &str = "/usr/bin:/bin";
/// The fixed `HOME` (and working directory) inside the sandbox.
pub const SANDBOX_HOME: &str = "/work";
/// The uid/gid the script runs as inside the sandbox's user namespace.
pub const SANDBOX_UID: u32 = 65534;

/// Sandbox configuration.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// Path of the `bwrap` binary; `None` searches `$PATH`, then `/usr/bin/bwrap`.
    pub bwrap_path: Option<PathBuf>,
    /// Memory limit of a run as a whole: cgroup v1 `memory.limit_in_bytes` (and
    /// `memory.memsw.limit_in_bytes` if present), v2 `memory.max` (and `memory.swap.max` 0).
    pub memory_limit_bytes: u64,
    /// cgroup `pids.max` per run (counts bwrap's own two processes too).
    pub pids_limit: u64,
    /// CPU bandwidth of a run as a whole, in thousandths of a CPU (1000 = one core): cgroup v1
    /// `cpu.cfs_quota_us` per 100 ms `cpu.cfs_period_us`, v2 `cpu.max`. 0: no CPU bandwidth
    /// limit. Used only where the `cpu` controller is available.
    pub cpu_millis: u64,
    /// Per-process `setrlimit` limits (CPU time, address space, file size, open files).
    pub rlimits: Rlimits,
    /// Bytes kept per stream (stdout, stderr); the rest is read and discarded.
    pub output_cap_bytes: usize,
    /// Disk quota of a run: `/work` and `/tmp` (one directory inside `/work`) are one tmpfs
    /// of this size, so the run as a whole holds at most this much (in memory, charged to the
    /// run's memory cgroup; nothing of it is written to the host's disk).
    pub disk_bytes: u64,
    /// Where cgroups are mounted: a cgroup v2 hierarchy if `<root>/cgroup.controllers` exists,
    /// else cgroup v1 hierarchies `<root>/memory`, `<root>/pids` (and `<root>/cpu`).
    pub cgroup_root: PathBuf,
    /// Parent of the per-run temp directories; `None` means `std::env::temp_dir()`.
    pub temp_root: Option<PathBuf>,
    /// When this process runs as root, bwrap is started as this unprivileged host `(uid, gid)`
    /// (default nobody, 65534). Without it the sandbox's user namespace would map to host root,
    /// and files owned by host root (such as host-global sysctls under `/proc/sys`) would be
    /// writable from inside. Ignored when this process is not root. `None` keeps root (unsafe:
    /// level [`IsolationLevel::HostRoot`], refused unless `accept_weaker`).
    ///
    /// [`IsolationLevel::HostRoot`]: crate::IsolationLevel::HostRoot
    pub host_ids_when_root: Option<(u32, u32)>,
    /// Accept an isolation weaker than [`IsolationLevel::Strong`] (no cgroup limits, or host
    /// root). Default false: [`ShellSandbox::new`] then fails with [`SandboxError::TooWeak`].
    /// bwrap with working user and network namespaces is required either way.
    ///
    /// [`IsolationLevel::Strong`]: crate::IsolationLevel::Strong
    /// [`ShellSandbox::new`]: crate::ShellSandbox::new
    pub accept_weaker: bool,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            bwrap_path: None,
            memory_limit_bytes: 256 * 1024 * 1024,
            pids_limit: 64,
            cpu_millis: 1000,
            rlimits: Rlimits::default(),
            output_cap_bytes: 1024 * 1024,
            disk_bytes: 64 * 1024 * 1024,
            cgroup_root: PathBuf::from("/sys/fs/cgroup"),
            temp_root: None,
            host_ids_when_root: Some((65534, 65534)),
            accept_weaker: false,
        }
    }
}

/// Which interpreter runs the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    /// `/bin/bash`
    Bash,
    /// `/bin/sh`
    Sh,
    /// The host's `/usr/bin/python3` (with whatever packages the host has), when the operator
    /// allows host interpreters.
    Python3,
    /// The host's `/usr/bin/node`, when the operator allows host interpreters. Its run has no
    /// `RLIMIT_AS` (V8 reserves far more address space than it uses); the cgroup's memory
    /// limit bounds it.
    Node,
}

impl Shell {
    /// The interpreter's path (the same inside the sandbox: `/usr` is bound read-only).
    pub fn interpreter(self) -> &'static str {
        match self {
            Shell::Bash => "/bin/bash",
            Shell::Sh => "/bin/sh",
            Shell::Python3 => "/usr/bin/python3",
            Shell::Node => "/usr/bin/node",
        }
    }

    /// Does this host have the interpreter?
    pub fn on_host(self) -> bool {
        Path::new(self.interpreter()).exists()
    }
}

/// One script run.
#[derive(Clone)]
pub struct ShellRun {
    pub shell: Shell,
    /// The script text, written to `/work/.job.sh` inside the sandbox.
    pub source: String,
    /// Positional arguments (`$1`, `$2`, ...).
    pub args: Vec<String>,
    /// Environment variables; nothing of the host's environment is passed. `PATH` and `HOME` are
    /// fixed and override any given here.
    pub env: Vec<(String, String)>,
    /// Bytes fed to the script's stdin (then closed).
    pub stdin: Vec<u8>,
    /// Wall-clock limit; the whole sandbox is SIGKILLed when it passes.
    pub timeout: Duration,
    /// `RLIMIT_CPU` seconds for this run, overriding [`Rlimits::cpu_seconds`] (whose default is
    /// `ceil(timeout) + 1`).
    pub cpu_seconds: Option<u64>,
    /// This run's disk quota, lowering [`SandboxConfig::disk_bytes`] (never raising it).
    pub disk_bytes: Option<u64>,
    /// This run's `RLIMIT_NOFILE`, lowering [`Rlimits::open_files`] (never raising it).
    pub open_files: Option<u64>,
    /// This run's memory limit, lowering [`SandboxConfig::memory_limit_bytes`] (never raising it).
    pub memory_bytes: Option<u64>,
    /// Bytes kept per stream for this run, lowering [`SandboxConfig::output_cap_bytes`].
    pub output_cap_bytes: Option<usize>,
    /// A run stopped by its timeout or a cancel gets SIGTERM (every process of the run but
    /// the sandbox's own) this long before SIGKILL, within its timeout (at most half of it):
    /// time to clean up. Zero (default): SIGKILL at once. Needs cgroups (which list the run's
    /// processes); without them the run is SIGKILLed at once.
    pub kill_grace: Duration,
    /// Set to true (from any thread) to stop the run: within about 20 ms the sandbox is
    /// SIGKILLed like on a timeout and the result is `Killed { Cancelled }`. Already true at the
    /// start: nothing is started.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Called with each chunk of stdout/stderr as it is read, from the reader threads (one per
    /// stream, so calls for the two streams can overlap), besides the captured buffers. Only the
    /// bytes within `output_cap_bytes` are passed. A slow callback slows the script down (its
    /// pipe fills); a panicking one is not called again.
    pub on_output: Option<OutputCallback>,
}

impl Default for ShellRun {
    /// An empty bash script with a 60 s timeout.
    fn default() -> Self {
        ShellRun {
            shell: Shell::Bash,
            source: String::new(),
            args: vec![],
            env: vec![],
            stdin: vec![],
            timeout: Duration::from_secs(60),
            cpu_seconds: None,
            disk_bytes: None,
            open_files: None,
            memory_bytes: None,
            output_cap_bytes: None,
            kill_grace: Duration::ZERO,
            cancel: None,
            on_output: None,
        }
    }
}

impl fmt::Debug for ShellRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShellRun")
            .field("shell", &self.shell)
            .field("source", &self.source)
            .field("args", &self.args)
            .field("env", &self.env)
            .field("stdin", &format_args!("{} bytes", self.stdin.len()))
            .field("timeout", &self.timeout)
            .field("cpu_seconds", &self.cpu_seconds)
            .field("disk_bytes", &self.disk_bytes)
            .field("open_files", &self.open_files)
            .field("memory_bytes", &self.memory_bytes)
            .field("output_cap_bytes", &self.output_cap_bytes)
            .field("kill_grace", &self.kill_grace)
            .field("cancel", &self.cancel)
            .field("on_output", &self.on_output.as_ref().map(|_| "Fn"))
            .finish()
    }
}

pub(crate) fn validate(input: &ShellRun) -> Result<(), SandboxError> {
    let bad = |what: &str| Err(SandboxError::InvalidInput(what.to_string()));
    if input.source.as_bytes().contains(&0) {
        return bad("script source contains a NUL byte");
    }
    if input.args.iter().any(|a| a.as_bytes().contains(&0)) {
        return bad("an argument contains a NUL byte");
    }
    for (k, v) in &input.env {
        if k.is_empty() || k.contains('=') || k.as_bytes().contains(&0) {
            return bad(&format!("invalid environment variable name {k:?}"));
        }
        if v.as_bytes().contains(&0) {
            return bad(&format!("environment variable {k} contains a NUL byte"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_env() {
        let run = ShellRun {
            source: "true".into(),
            env: vec![("A=B".into(), "x".into())],
            timeout: Duration::from_secs(1),
            ..ShellRun::default()
        };
        assert!(matches!(validate(&run), Err(SandboxError::InvalidInput(_))));
    }

    #[test]
    fn run_debug_hides_the_callback() {
        let run = ShellRun { on_output: Some(Arc::new(|_, _| {})), ..ShellRun::default() };
        let s = format!("{run:?}");
        assert!(s.contains("on_output: Some(\"Fn\")"), "{s}");
    }
}
