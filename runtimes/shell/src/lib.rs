//! Runs an uploaded `bash` or `sh` script inside a default-deny bubblewrap sandbox.
//!
//! The API is **synchronous** (std::process and threads, no async runtime): [`ShellSandbox::run`]
//! blocks for up to the run's timeout, so async callers should wrap it in
//! `tokio::task::spawn_blocking`. A [`ShellSandbox`] is `Send + Sync` and can serve concurrent
//! runs; every run gets its own temp dir and cgroups.
//!
//! See the crate README for what is isolated, how, and what is not covered.

mod cgroup;
mod isolation;
mod limits;

use std::ffi::CString;
use std::fmt;
use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use cgroup::{Backend, RunCgroup};
pub use isolation::{CgroupMode, Isolation, IsolationLevel, RlimitsReport};
pub use limits::Rlimits;
use limits::RunRlimits;
pub use sundial_core::script_output::{OutputCallback, OutputStream};

/// The fixed `PATH` inside the sandbox.
pub const SANDBOX_PATH: &str = "/usr/bin:/bin";
/// The fixed `HOME` (and working directory) inside the sandbox.
pub const SANDBOX_HOME: &str = "/work";
/// The uid/gid the script runs as inside the sandbox's user namespace.
pub const SANDBOX_UID: u32 = 65534;

/// How often the waiting loop looks at the run's cancel flag (and bwrap's state), at most.
const POLL: Duration = Duration::from_millis(20);

/// Setup errors. A script that fails, times out or is killed is not an error: it is a
/// [`ShellOutcome`].
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// bubblewrap is missing or does not work on this host (no user or network namespaces, ...);
    /// the shell runtime should not be offered. Never a fallback to an unsandboxed run.
    #[error("shell sandbox unavailable: {reason}")]
    Unavailable { reason: String },
    /// bwrap works, but the isolation is weaker than [`IsolationLevel::Strong`] (no usable
    /// cgroups, or bwrap would run as host root) and [`SandboxConfig::accept_weaker`] is false.
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
    pub host_ids_when_root: Option<(u32, u32)>,
    /// Accept an isolation weaker than [`IsolationLevel::Strong`] (no cgroup limits, or host
    /// root). Default false: [`ShellSandbox::new`] then fails with [`SandboxError::TooWeak`].
    /// bwrap with working user and network namespaces is required either way.
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

/// Why the sandbox was killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillReason {
    /// The wall-clock timeout passed.
    Timeout,
    /// [`ShellRun::cancel`] was set.
    Cancelled,
    /// The memory cgroup's OOM killer fired (or bwrap died by SIGKILL with the limit hit).
    Memory,
    /// bwrap itself died of this signal (not sent by us).
    Signal(i32),
}

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellResult {
    /// The script's exit status (0-128).
    Exited(i32),
    /// The script died of this signal: e.g. 9 SIGKILL (also the hard CPU limit), 24 SIGXCPU
    /// (the CPU-time rlimit), 25 SIGXFSZ (the file-size rlimit). bwrap, like a shell, reports
    /// such a death as the status 128+N, which is what this is read from: a script that calls
    /// `exit 137` itself is reported the same way.
    Signalled(i32),
    Killed {
        reason: KillReason,
    },
}

/// The result of [`ShellSandbox::run`].
#[derive(Debug, Clone)]
pub struct ShellOutcome {
    pub result: ShellResult,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub elapsed: Duration,
    /// Whether the cgroup limits (memory, pids, and cpu if available) applied to this run.
    pub limits_enforced: bool,
    /// The memory cgroup's OOM killer killed some process of the run (even if the script went on
    /// and exited on its own, which is then reported as `Exited`).
    pub oom_killed: bool,
    /// `/work` (with `/tmp`) was full when the script ended: it wrote up to its disk quota.
    pub disk_full: bool,
    /// The run's disk quota, in bytes.
    pub disk_bytes: u64,
}

/// A checked bubblewrap installation plus limits.
#[derive(Debug)]
pub struct ShellSandbox {
    bwrap: PathBuf,
    config: SandboxConfig,
    disable_userns: bool,
    /// The host uid/gid bwrap is started as, if it is switched away from ours.
    host_ids: Option<(u32, u32)>,
    /// The cgroup hierarchy runs are confined in, or why there is none.
    cgroups: Result<Backend, String>,
    isolation: Isolation,
}

impl ShellSandbox {
    /// Finds bwrap, checks that it works with user and network namespaces, detects cgroups
    /// (v2, else v1) and does a full trial run. Fails with [`SandboxError::Unavailable`] when
    /// bwrap or the namespaces do not work, and with [`SandboxError::TooWeak`] when the
    /// isolation is below [`IsolationLevel::Strong`] and `accept_weaker` is false.
    pub fn new(config: SandboxConfig) -> Result<Self, SandboxError> {
        let bwrap = find_bwrap(&config)?;
        // SAFETY: plain syscalls.
        let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let host_ids = if euid == 0 { config.host_ids_when_root } else { None };
        let trial = |extra: &[&str]| trial_run(&bwrap, host_ids, extra);
        // Layer by layer, so the reason names the one that is missing.
        trial(&["--unshare-user"]).map_err(|e| unavailable(format!("no user namespaces: {e}")))?;
        trial(&["--unshare-user", "--unshare-net"]).map_err(|e| unavailable(format!("no network namespace: {e}")))?;
        trial(&["--unshare-all", "--unshare-user"]).map_err(|e| unavailable(format!("namespaces unavailable: {e}")))?;
        // bwrap >= 0.8: forbid nested user namespaces inside the sandbox.
        let disable_userns = trial(&["--unshare-all", "--unshare-user", "--disable-userns"]).is_ok();
        let bwrap_version = bwrap_version(&bwrap);
        let cgroups = cgroup::detect(&config.cgroup_root, config.cpu_millis > 0);
        let (runs_as_uid, runs_as_gid) = host_ids.unwrap_or((euid, egid));
        let level = isolation_level(runs_as_uid, &cgroups, config.accept_weaker)?;
        let isolation = Isolation {
            level,
            bwrap_path: bwrap.clone(),
            bwrap_version,
            user_namespace: true,
            network_namespace: true,
            nested_user_namespaces_blocked: disable_userns,
            cgroup: match &cgroups {
                Ok(Backend::V1 { .. }) => CgroupMode::V1,
                Ok(Backend::V2 { .. }) => CgroupMode::V2,
                Err(reason) => CgroupMode::None { reason: reason.clone() },
            },
            controllers: match &cgroups {
                Ok(b) => b
                    .controllers()
                    .into_iter()
                    .filter(|c| *c != "cpu" || config.cpu_millis > 0)
                    .map(String::from)
                    .collect(),
                Err(_) => vec![],
            },
            rlimits: rlimits_report(&config),
            disk_bytes: config.disk_bytes,
            runs_as_uid,
            runs_as_gid,
            sandbox_uid: SANDBOX_UID,
        };
        ShellSandbox { bwrap, config, disable_userns, host_ids, cgroups, isolation }.probed()
    }

    /// The sandbox, once a full run of a small script in it printed what it should.
    fn probed(self) -> Result<Self, SandboxError> {
        // A full run of a small script checks everything a real run needs (binds, the temp root
        // being reachable for the sandbox's uid, the rlimits, cgroup placement): bwrap's own
        // setup failures would otherwise look like a script exiting with status 1. Its output
        // shows that it really ran inside (a `bwrap` that only exits 0 does not pass).
        let probe = self.run(ShellRun {
            shell: Shell::Sh,
            source: "echo \"sundial-probe $(id -u) $(cat /proc/sys/kernel/hostname)\"\n".into(),
            timeout: Duration::from_secs(30),
            ..ShellRun::default()
        });
        let expected = format!("sundial-probe {SANDBOX_UID} sundial\n");
        match probe {
            Ok(o) if o.result == ShellResult::Exited(0) && o.stdout == expected.as_bytes() => Ok(self),
            Ok(o) if o.result == ShellResult::Exited(0) => Err(unavailable(format!(
                "trial sandboxed run printed {:?} instead of {expected:?}: {}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr).trim()
            ))),
            Ok(o) => Err(unavailable(format!(
                "trial sandboxed run failed ({:?}): {}",
                o.result,
                String::from_utf8_lossy(&o.stderr).trim()
            ))),
            Err(e) => Err(unavailable(format!("trial sandboxed run failed: {e}"))),
        }
    }

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

    /// Runs one script. Blocks until it ends, its timeout passes or it is cancelled (plus
    /// cleanup).
    pub fn run(&self, input: ShellRun) -> Result<ShellOutcome, SandboxError> {
        validate(&input)?;
        let cancelled = |c: &Option<Arc<AtomicBool>>| c.as_ref().is_some_and(|c| c.load(Ordering::SeqCst));
        if cancelled(&input.cancel) {
            return Ok(cancelled_before_start(self.disk_bytes(&input)));
        }
        let (run_dir, work) = self.make_run_dir(&input)?;
        let cgroup = self.make_cgroup(&input)?;
        let disk_bytes = self.disk_bytes(&input);
        let (mut child, start, status_read) = self.spawn(&input, &work, disk_bytes, cgroup.as_ref())?;
        let pid = child.id() as libc::pid_t;

        let cap = input.output_cap_bytes.map_or(self.config.output_cap_bytes, |c| c.min(self.config.output_cap_bytes));
        let rx = start_io(&mut child, cap, &input.on_output, input.stdin);

        let deadline = start + input.timeout;
        // With a kill grace (and the cgroups that list the run's processes): SIGTERM first.
        let grace = match &cgroup {
            Some(_) => input.kill_grace.min(input.timeout / 2),
            None => Duration::ZERO,
        };
        let ending = wait_then_kill(pid, cgroup.as_ref(), deadline, grace, || cancelled(&input.cancel));
        let status = child.wait();
        let elapsed = start.elapsed();
        let (ending, status) = match (ending, status) {
            (Ok(e), Ok(s)) => (e, s),
            (Err(e), _) | (_, Err(e)) => {
                if let Some(cg) = &cgroup {
                    cg.kill_all(Duration::from_secs(5));
                }
                return Err(SandboxError::Wait(e));
            }
        };
        // Make sure nothing is left in the cgroups either (also after a normal exit: background
        // processes never outlive the run).
        let memory_events = cgroup.as_ref().map(|cg| {
            let events = cg.memory_events();
            cg.kill_all(Duration::from_secs(5));
            events
        });
        let (out, err) = collect_output(&rx);

        let result = match ending {
            Ending::Timeout => ShellResult::Killed { reason: KillReason::Timeout },
            Ending::Cancelled => ShellResult::Killed { reason: KillReason::Cancelled },
            Ending::Exited => classify(status, memory_events.unwrap_or((false, false))),
        };
        let limits_enforced = cgroup.is_some();
        let oom_killed = memory_events.is_some_and(|(oom, _)| oom);
        let disk_full = matches!(ending, Ending::Exited) && work_was_full(status_read);
        drop(cgroup);
        drop(run_dir);
        Ok(ShellOutcome {
            result,
            stdout: out.0,
            stdout_truncated: out.1,
            stderr: err.0,
            stderr_truncated: err.1,
            elapsed,
            limits_enforced,
            oom_killed,
            disk_full,
            disk_bytes,
        })
    }

    /// The run's directory and its `work`, with the script in it as `.job.sh`.
    fn make_run_dir(&self, input: &ShellRun) -> Result<(RunDir, PathBuf), SandboxError> {
        // Per-run directory: <tmp>/sundial-shell-XXXX/work, bound at /work; removed on drop.
        let temp_root = self.config.temp_root.clone().unwrap_or_else(std::env::temp_dir);
        let run_dir = RunDir(
            tempfile::Builder::new().prefix("sundial-shell-").tempdir_in(&temp_root).map_err(SandboxError::RunDir)?,
        );
        let work = run_dir.0.path().join("work");
        fs::create_dir(&work).map_err(SandboxError::RunDir)?;
        fs::write(work.join(".job.sh"), input.source.as_bytes()).map_err(SandboxError::RunDir)?;
        if let Some((uid, gid)) = self.host_ids {
            // bwrap runs as (uid, gid): it must traverse the run dir and own /work.
            fs::set_permissions(run_dir.0.path(), fs::Permissions::from_mode(0o711)).map_err(SandboxError::RunDir)?;
            std::os::unix::fs::chown(&work, Some(uid), Some(gid)).map_err(SandboxError::RunDir)?;
            std::os::unix::fs::chown(work.join(".job.sh"), Some(uid), Some(gid)).map_err(SandboxError::RunDir)?;
        }
        fs::set_permissions(&work, fs::Permissions::from_mode(0o700)).map_err(SandboxError::RunDir)?;
        Ok((run_dir, work))
    }

    /// The run's cgroups with its limits, when the host has cgroups.
    fn make_cgroup(&self, input: &ShellRun) -> Result<Option<RunCgroup>, SandboxError> {
        Ok(match &self.cgroups {
            Ok(backend) => {
                let limits = cgroup::Limits {
                    memory_bytes: self.memory_bytes(input),
                    pids: self.config.pids_limit,
                    cpu_millis: self.config.cpu_millis,
                };
                Some(RunCgroup::create(backend, &limits).map_err(SandboxError::Cgroup)?)
            }
            Err(_) => None,
        })
    }

    /// bwrap started with the run's rlimits, in its cgroups: the child, when it started, and
    /// the read end of the pipe the launcher reports the state of `/work` on.
    fn spawn(
        &self,
        input: &ShellRun,
        work: &Path,
        disk_bytes: u64,
        cgroup: Option<&RunCgroup>,
    ) -> Result<(Child, Instant, OwnedFd), SandboxError> {
        let mut cmd = self.command(input, work, disk_bytes);
        let mut rlimits =
            RunRlimits::resolve(&self.config.rlimits, self.memory_bytes(input), input.cpu_seconds, input.timeout);
        if let Some(open_files) = input.open_files {
            rlimits.open_files = rlimits.open_files.min(open_files.max(8));
        }
        // The launcher reports the state of `/work` on fd 3 when the script ends.
        let (status_read, status_write) = status_pipe().map_err(SandboxError::Spawn)?;
        if input.shell == Shell::Node {
            rlimits.address_space = u64::MAX; // V8 reserves address space it never uses: the cgroup bounds memory
        }
        let hook = PreExec {
            setsid: true,
            rlimits: rlimits.plan(),
            procs_files: cgroup.map(RunCgroup::procs_files).unwrap_or_default(),
            host_ids: self.host_ids,
            status_fd: Some(status_write.as_raw_fd()),
        };
        // SAFETY: the hook runs between fork and exec and only makes async-signal-safe syscalls
        // (setsid, setrlimit, getpid, open, write, close, setgroups, setresgid, setresuid, dup2,
        // fcntl) on memory prepared before the fork.
        unsafe {
            cmd.pre_exec(move || hook.run());
        }
        let start = Instant::now();
        let spawned = cmd.spawn();
        drop(status_write); // only the sandbox holds the write end now
        let child = spawned.map_err(SandboxError::Spawn)?;
        Ok((child, start, status_read))
    }

    /// The run's disk quota: the config's, or the run's own when lower.
    fn memory_bytes(&self, input: &ShellRun) -> u64 {
        input.memory_bytes.map_or(self.config.memory_limit_bytes, |m| m.min(self.config.memory_limit_bytes))
    }

    fn disk_bytes(&self, input: &ShellRun) -> u64 {
        input.disk_bytes.map_or(self.config.disk_bytes, |d| d.min(self.config.disk_bytes)).max(64 * 1024)
    }

    fn command(&self, input: &ShellRun, work: &Path, disk_bytes: u64) -> Command {
        let mut cmd = Command::new(&self.bwrap);
        cmd.args(["--unshare-all", "--unshare-user"]);
        if self.disable_userns {
            cmd.arg("--disable-userns");
        }
        cmd.args(["--die-with-parent", "--new-session", "--hostname", "sundial"]);
        let (uid, gid) = (SANDBOX_UID.to_string(), SANDBOX_UID.to_string());
        cmd.args(["--uid", &uid, "--gid", &gid]);
        cmd.arg("--clearenv");
        for (k, v) in &input.env {
            if k != "PATH" && k != "HOME" {
                cmd.args(["--setenv", k, v]);
            }
        }
        cmd.args(["--setenv", "PATH", SANDBOX_PATH, "--setenv", "HOME", SANDBOX_HOME]);
        cmd.args(["--ro-bind", "/usr", "/usr"]);
        // On merged-/usr systems /bin, /lib, /lib64 are symlinks into /usr: recreate the links.
        for top in ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"] {
            let p = Path::new(top);
            match fs::symlink_metadata(p) {
                Ok(m) if m.file_type().is_symlink() => {
                    if let Ok(target) = fs::read_link(p) {
                        cmd.arg("--symlink").arg(target).arg(top);
                    }
                }
                Ok(m) if m.is_dir() => {
                    cmd.args(["--ro-bind", top, top]);
                }
                _ => {}
            }
        }
        if Path::new("/etc/alternatives").is_dir() {
            cmd.args(["--ro-bind", "/etc/alternatives", "/etc/alternatives"]);
        }
        cmd.args(["--proc", "/proc", "--dev", "/dev"]);
        // /work is a tmpfs of the run's disk quota, and /tmp a directory in it: the run as a
        // whole holds at most `disk_bytes` (ENOSPC past it), and nothing reaches the host's disk.
        cmd.args(["--size", &disk_bytes.to_string(), "--perms", "0700", "--tmpfs", "/work"]);
        cmd.args(["--dir", "/work/.tmp", "--symlink", "/work/.tmp", "/tmp"]);
        cmd.arg("--ro-bind").arg(work.join(".job.sh")).arg("/work/.job.sh");
        // The root is bwrap's own tmpfs (holding the mount points): make it read-only too, so
        // only /work (and /tmp in it) is writable.
        cmd.args(["--remount-ro", "/", "--chdir", "/work", "--cap-drop", "ALL"]);
        // The launcher runs the script (without fd 3), then reports on fd 3 its status and
        // the free and total blocks of /work.
        cmd.args(["/bin/sh", "-c", LAUNCHER, "sundial-run", input.shell.interpreter(), "/work/.job.sh"]);
        cmd.args(&input.args);
        // Own session and process group (setsid in the pre_exec hook): terminal signals for the
        // host process do not reach it, and the timeout can kill the whole group.
        cmd.env_clear().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd
    }
}

/// The outcome of a run cancelled before it started: nothing ran.
fn cancelled_before_start(disk_bytes: u64) -> ShellOutcome {
    ShellOutcome {
        result: ShellResult::Killed { reason: KillReason::Cancelled },
        stdout: vec![],
        stderr: vec![],
        stdout_truncated: false,
        stderr_truncated: false,
        elapsed: Duration::ZERO,
        limits_enforced: false,
        oom_killed: false,
        disk_full: false,
        disk_bytes,
    }
}

/// Readers for the child's stdout and stderr (each kept up to `cap`, passed to `on_output`),
/// and a writer of `data` to its stdin; the kept output arrives on the channel returned.
fn start_io(
    child: &mut Child,
    cap: usize,
    on_output: &Option<OutputCallback>,
    data: Vec<u8>,
) -> mpsc::Receiver<(OutputStream, Vec<u8>, bool)> {
    let (tx, rx) = mpsc::channel::<(OutputStream, Vec<u8>, bool)>();
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    spawn_reader(stdout, cap, OutputStream::Stdout, on_output.clone(), tx.clone());
    spawn_reader(stderr, cap, OutputStream::Stderr, on_output.clone(), tx);
    if let Some(mut stdin) = child.stdin.take() {
        thread::spawn(move || {
            // EPIPE if the script does not read its stdin: not an error.
            let _ = stdin.write_all(&data);
        });
    }
    rx
}

/// Waits for bwrap (`pid`) to exit, or stops it at `deadline` or on `cancelled()`: SIGTERM
/// to the run's processes `grace` before, then SIGKILL. Either way its process group is
/// SIGKILLed after, and on timeout or cancel everything in its cgroups; bwrap is left unreaped.
fn wait_then_kill(
    pid: libc::pid_t,
    cgroup: Option<&RunCgroup>,
    deadline: Instant,
    grace: Duration,
    cancelled: impl Fn() -> bool,
) -> io::Result<Ending> {
    let mut ending = wait_for_exit(pid, deadline - grace, cancelled);
    if let (Some(cg), Ok(stop @ (Ending::Timeout | Ending::Cancelled))) = (cgroup, &ending)
        && !grace.is_zero()
    {
        let stop = *stop;
        // Not bubblewrap's own processes (their death would SIGKILL the sandbox at once):
        // the script's.
        cg.signal_once(libc::SIGTERM, pid);
        ending = wait_for_exit(pid, Instant::now() + grace, || false).map(|e| match e {
            // Ended by the SIGTERM, or still running at the end of the grace: either way
            // the run was stopped for its timeout (or cancel).
            Ending::Exited | Ending::Timeout | Ending::Cancelled => stop,
        });
    }
    // bwrap has exited (not yet reaped, so its pid and process group cannot be reused) or
    // must be stopped. SIGKILL its whole process group (bwrap and its pid-1 child; the
    // script has its own session inside) and, on timeout or cancel, everything in the run's
    // cgroups. --die-with-parent makes the kernel kill bwrap's pid-1 child, which takes the
    // whole pid namespace with it.
    // SAFETY: plain syscall; `pid` is our unreaped child, the leader of its own group.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    if !matches!(ending, Ok(Ending::Exited))
        && let Some(cg) = cgroup
    {
        cg.kill_once();
    }
    ending
}

/// The kept stdout and stderr, each with whether it was truncated. All writers are dead, so
/// the pipes hit EOF promptly; the bound only guards against a leaked writer.
fn collect_output(rx: &mpsc::Receiver<(OutputStream, Vec<u8>, bool)>) -> ((Vec<u8>, bool), (Vec<u8>, bool)) {
    let (mut out, mut err) = ((Vec::new(), false), (Vec::new(), false));
    let collect_deadline = Instant::now() + Duration::from_secs(5);
    for _ in 0..2 {
        let left = collect_deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((OutputStream::Stdout, buf, t)) => out = (buf, t),
            Ok((OutputStream::Stderr, buf, t)) => err = (buf, t),
            Err(_) => break,
        }
    }
    (out, err)
}

fn unavailable(reason: String) -> SandboxError {
    SandboxError::Unavailable { reason }
}

/// The configured bwrap, else the one in `$PATH` or `/usr/bin`.
fn find_bwrap(config: &SandboxConfig) -> Result<PathBuf, SandboxError> {
    let bwrap = match &config.bwrap_path {
        Some(p) => p.clone(),
        None => find_in_path("bwrap").ok_or_else(|| {
            unavailable(
                "bwrap (bubblewrap) not found in $PATH or /usr/bin; install it (apt-get install bubblewrap)".into(),
            )
        })?,
    };
    if !bwrap.is_file() {
        return Err(unavailable(format!("bwrap not found at {}", bwrap.display())));
    }
    Ok(bwrap)
}

/// `bwrap <extra> --ro-bind / / true` (as `host_ids`, if given): does this layer work here?
fn trial_run(bwrap: &Path, host_ids: Option<(u32, u32)>, extra: &[&str]) -> Result<(), String> {
    let mut cmd = Command::new(bwrap);
    let hook = PreExec { setsid: false, rlimits: vec![], procs_files: vec![], host_ids, status_fd: None };
    // SAFETY: the hook only makes async-signal-safe syscalls (see `PreExec::run`).
    unsafe { cmd.pre_exec(move || hook.run()) };
    let out = cmd
        .args(extra)
        .args(["--ro-bind", "/", "/", "true"])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bwrap.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "trial run `{} {} --ro-bind / / true`{} failed ({}): {}",
            bwrap.display(),
            extra.join(" "),
            host_ids.map(|(u, g)| format!(" as uid {u} gid {g}")).unwrap_or_default(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The isolation runs get: host root or no cgroups is weaker than strong, refused
/// ([`SandboxError::TooWeak`]) unless `accept_weaker`.
fn isolation_level(
    runs_as_uid: u32,
    cgroups: &Result<Backend, String>,
    accept_weaker: bool,
) -> Result<IsolationLevel, SandboxError> {
    let (level, weaker_reason) = if runs_as_uid == 0 {
        let reason = "bwrap would run as host root, so the sandbox's user namespace maps to host root \
                      (host_ids_when_root is None)";
        (IsolationLevel::HostRoot, Some(reason.to_string()))
    } else if let Err(why) = cgroups {
        (IsolationLevel::NamespacesOnly, Some(format!("no cgroup limits (memory, pids): {why}")))
    } else {
        (IsolationLevel::Strong, None)
    };
    if let Some(reason) = weaker_reason
        && !accept_weaker
    {
        return Err(SandboxError::TooWeak { level, reason });
    }
    Ok(level)
}

/// The rlimits a run gets, as the isolation report shows them.
fn rlimits_report(config: &SandboxConfig) -> RlimitsReport {
    let rl = &config.rlimits;
    RlimitsReport {
        cpu_seconds: rl.cpu_seconds,
        address_space_bytes: Some(rl.address_space_bytes.unwrap_or(config.memory_limit_bytes.saturating_mul(2)))
            .filter(|b| *b != u64::MAX),
        file_size_bytes: rl.file_size_bytes,
        open_files: rl.open_files,
        core_bytes: 0,
    }
}

/// Runs the script (`$1`, with its arguments) without fd 3, then writes `status free total` (the
/// free and total blocks of /work) to fd 3 and exits with the script's status. A SIGTERM (the
/// kill grace) is the script's: the launcher catches it (a handler, not an ignore, so the script
/// starts with the default action and may trap it) and carries on to report.
const LAUNCHER: &str = r#"trap : TERM; i="$1"; shift; "$i" "$@" 3>&-; s=$?; echo "$s $(stat -f -c '%a %b' /work 2>/dev/null)" >&3; exit $s"#;

/// Highest signal number (Linux `SIGRTMAX`).
const MAX_SIGNAL: i32 = 64;

/// The result of a run that ended on its own: the exit status (128+N: died of signal N),
/// corrected to a memory kill when the memory cgroup saw one.
fn classify(status: ExitStatus, (oom_killed, limit_hit): (bool, bool)) -> ShellResult {
    match (status.code(), status.signal()) {
        (_, Some(sig)) if oom_killed || (limit_hit && sig == libc::SIGKILL) => {
            ShellResult::Killed { reason: KillReason::Memory }
        }
        (_, Some(sig)) => ShellResult::Killed { reason: KillReason::Signal(sig) },
        (Some(code), _) if code > 128 && (oom_killed || (limit_hit && code == 128 + libc::SIGKILL)) => {
            ShellResult::Killed { reason: KillReason::Memory }
        }
        (Some(code), _) if (129..=128 + MAX_SIGNAL).contains(&code) => ShellResult::Signalled(code - 128),
        (Some(code), _) => ShellResult::Exited(code),
        (None, None) => ShellResult::Exited(-1),
    }
}

/// The conventional name of a signal (`SIGKILL`), or `SIG<n>`.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("SIG{signal}"),
    };
    name.to_string()
}

/// A pipe whose ends are close-on-exec (the hook gives the write end to bwrap as fd 3).
fn status_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: plain syscall writing two descriptors into a local array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both were just opened and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Reads the launcher's report (every writer is gone by now): was /work full at the end?
fn work_was_full(read: OwnedFd) -> bool {
    let mut text = String::new();
    let _ = fs::File::from(read).read_to_string(&mut text);
    let mut fields = text.split_whitespace().skip(1).map(|f| f.parse::<u64>().ok());
    matches!((fields.next(), fields.next()), (Some(Some(0)), Some(Some(total))) if total > 0)
}

/// `bwrap --version`, e.g. `bubblewrap 0.8.0` -> `0.8.0`.
fn bwrap_version(bwrap: &Path) -> Option<String> {
    let out = Command::new(bwrap).arg("--version").env_clear().stdin(Stdio::null()).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next()?.trim();
    let version = line.strip_prefix("bubblewrap").unwrap_or(line).trim();
    (out.status.success() && !version.is_empty()).then(|| version.to_string())
}

/// Removes the per-run directory even if the script left unwritable subdirectories.
struct RunDir(tempfile::TempDir);

impl Drop for RunDir {
    fn drop(&mut self) {
        let path = self.0.path().to_path_buf();
        if fs::remove_dir_all(&path).is_err() {
            make_writable(&path);
            let _ = fs::remove_dir_all(&path);
        }
    }
}

fn make_writable(dir: &Path) {
    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                make_writable(&e.path());
            }
        }
    }
}

fn spawn_reader<R: Read + Send + 'static>(
    mut r: R,
    cap: usize,
    which: OutputStream,
    mut on_output: Option<OutputCallback>,
    tx: mpsc::Sender<(OutputStream, Vec<u8>, bool)>,
) {
    thread::spawn(move || {
        let mut kept = Vec::new();
        let mut truncated = false;
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            match r.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    let room = cap.saturating_sub(kept.len());
                    if n > room {
                        truncated = true;
                    }
                    let keep = &chunk[..n.min(room)];
                    if !keep.is_empty()
                        && let Some(f) = &on_output
                        && catch_unwind(AssertUnwindSafe(|| f(which, keep))).is_err()
                    {
                        on_output = None;
                    }
                    kept.extend_from_slice(keep);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = tx.send((which, kept, truncated));
    });
}

/// Why the waiting loop stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// bwrap exited on its own (not reaped yet).
    Exited,
    Timeout,
    Cancelled,
}

/// Waits until the child exits, `deadline` passes or `cancelled()` is true, polling every
/// 1..20 ms. The child is left unreaped (`WNOWAIT`), so its pid and process group stay ours.
fn wait_for_exit(pid: libc::pid_t, deadline: Instant, cancelled: impl Fn() -> bool) -> io::Result<Ending> {
    let mut nap = Duration::from_millis(1);
    loop {
        // SAFETY: zeroed siginfo_t is a valid out-parameter; plain syscall on our own child.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT)
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        // SAFETY: si_pid is set by waitid (0 when the child has not exited).
        if unsafe { info.si_pid() } != 0 {
            return Ok(Ending::Exited);
        }
        if cancelled() {
            return Ok(Ending::Cancelled);
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(Ending::Timeout);
        }
        thread::sleep(nap.min(deadline - now));
        nap = (nap * 2).min(POLL);
    }
}

/// What the forked child does before `exec` of bwrap, prepared before the fork.
struct PreExec {
    /// New session and process group (the child becomes their leader).
    setsid: bool,
    rlimits: Vec<(limits::Resource, libc::rlimit)>,
    /// The per-run cgroups' `cgroup.procs` files.
    procs_files: Vec<CString>,
    /// Drop to these host ids last.
    host_ids: Option<(u32, u32)>,
    /// Given to bwrap as fd 3 (the launcher's report).
    status_fd: Option<RawFd>,
}

impl PreExec {
    /// Own session, rlimits (incl. no core dumps), join the per-run cgroups (as root, so before
    /// anything of the job runs), then drop to the unprivileged host ids.
    fn run(&self) -> io::Result<()> {
        // SAFETY: async-signal-safe syscalls only; every pointer is into memory owned by `self`.
        unsafe {
            if self.setsid && libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            if self.rlimits.is_empty() {
                let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
                libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            }
            limits::apply(&self.rlimits)?;
            if let Some(fd) = self.status_fd {
                if fd == 3 {
                    // dup2 onto itself keeps close-on-exec: clear it.
                    if libc::fcntl(3, libc::F_SETFD, 0) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                } else if libc::dup2(fd, 3) != 3 {
                    return Err(io::Error::last_os_error());
                }
            }
            let mut buf = [0u8; 20];
            let digits = format_pid(libc::getpid() as u32, &mut buf);
            for path in &self.procs_files {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                let written = libc::write(fd, digits.as_ptr().cast(), digits.len());
                let err = io::Error::last_os_error();
                libc::close(fd);
                if written != digits.len() as isize {
                    return Err(err);
                }
            }
            if let Some((uid, gid)) = self.host_ids
                && (libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setresgid(gid, gid, gid) != 0
                    || libc::setresuid(uid, uid, uid) != 0)
            {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

fn format_pid(mut n: u32, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

fn validate(input: &ShellRun) -> Result<(), SandboxError> {
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

fn find_in_path(name: &str) -> Option<PathBuf> {
    let from_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(name))
        .find(|p| p.is_file() && fs::metadata(p).map(|m| m.permissions().mode() & 0o111 != 0).unwrap_or(false));
    from_path.or_else(|| {
        let p = PathBuf::from("/usr/bin").join(name);
        p.is_file().then_some(p)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_pids() {
        let mut b = [0u8; 20];
        assert_eq!(format_pid(0, &mut b), b"0");
        assert_eq!(format_pid(4294967295, &mut b), b"4294967295");
        assert_eq!(format_pid(1234, &mut b), b"1234");
    }

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
    fn classifies_statuses() {
        let exited = |c: i32| ExitStatus::from_raw(c << 8);
        let signalled = ExitStatus::from_raw;
        assert_eq!(classify(exited(1), (false, false)), ShellResult::Exited(1));
        // bwrap reports a death by signal N as 128+N.
        assert_eq!(classify(exited(137), (false, false)), ShellResult::Signalled(libc::SIGKILL));
        assert_eq!(classify(exited(152), (false, false)), ShellResult::Signalled(libc::SIGXCPU));
        assert_eq!(classify(exited(128), (false, false)), ShellResult::Exited(128));
        assert_eq!(classify(exited(200), (false, false)), ShellResult::Exited(200));
        assert_eq!(classify(exited(137), (false, true)), ShellResult::Killed { reason: KillReason::Memory });
        assert_eq!(classify(exited(152), (true, true)), ShellResult::Killed { reason: KillReason::Memory });
        assert_eq!(classify(exited(1), (true, true)), ShellResult::Exited(1));
        assert_eq!(classify(signalled(9), (false, false)), ShellResult::Killed { reason: KillReason::Signal(9) });
        assert_eq!(classify(signalled(9), (false, true)), ShellResult::Killed { reason: KillReason::Memory });
    }

    #[test]
    fn names_signals() {
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(24), "SIGXCPU");
        assert_eq!(signal_name(40), "SIG40");
    }

    #[test]
    fn run_debug_hides_the_callback() {
        let run = ShellRun { on_output: Some(Arc::new(|_, _| {})), ..ShellRun::default() };
        let s = format!("{run:?}");
        assert!(s.contains("on_output: Some(\"Fn\")"), "{s}");
    }
}
