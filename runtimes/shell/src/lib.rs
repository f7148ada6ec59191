//! Runs an uploaded `bash` or `sh` script inside a default-deny bubblewrap sandbox.
//!
//! The API is **synchronous** (std::process and threads, no async runtime): [`ShellSandbox::run`]
//! blocks for up to the run's timeout, so async callers should wrap it in
//! `tokio::task::spawn_blocking`. A [`ShellSandbox`] is `Send + Sync` and can serve concurrent
//! runs; every run gets its own temp dir and cgroups.
//!
//! See the crate README for what is isolated, how, and what is not covered.

mod cgroup;

use std::ffi::CString;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use cgroup::RunCgroup;

/// The fixed `PATH` inside the sandbox.
pub const SANDBOX_PATH: &str = "/usr/bin:/bin";
/// The fixed `HOME` (and working directory) inside the sandbox.
pub const SANDBOX_HOME: &str = "/work";
/// The uid/gid the script runs as inside the sandbox's user namespace.
pub const SANDBOX_UID: u32 = 65534;

/// Setup errors. A script that fails, times out or is killed is not an error: it is a
/// [`ShellOutcome`].
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// bubblewrap is missing or does not work on this host; the shell runtime should not be offered.
    #[error("shell sandbox unavailable: {0}")]
    Unavailable(String),
    /// The run's input cannot be passed to the sandbox (bad env name, NUL byte, ...).
    #[error("invalid shell run: {0}")]
    InvalidInput(String),
    /// The per-run cgroups could not be created or configured.
    #[error("cgroup setup failed: {0}")]
    Cgroup(#[source] io::Error),
    /// The per-run directory or script file could not be created.
    #[error("run directory setup failed: {0}")]
    RunDir(#[source] io::Error),
    /// bwrap could not be started (or could not place itself in the cgroups).
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
    /// cgroup v1 `memory.limit_in_bytes` per run (and `memory.memsw.limit_in_bytes` if present).
    pub memory_limit_bytes: u64,
    /// cgroup v1 `pids.max` per run (counts bwrap's own two processes too).
    pub pids_limit: u64,
    /// Bytes kept per stream (stdout, stderr); the rest is read and discarded.
    pub output_cap_bytes: usize,
    /// Where the cgroup v1 controllers are mounted (`<root>/memory`, `<root>/pids`).
    pub cgroup_root: PathBuf,
    /// Parent of the per-run temp directories; `None` means `std::env::temp_dir()`.
    pub temp_root: Option<PathBuf>,
    /// When this process runs as root, bwrap is started as this unprivileged host `(uid, gid)`
    /// (default nobody, 65534). Without it the sandbox's user namespace would map to host root,
    /// and files owned by host root (such as host-global sysctls under `/proc/sys`) would be
    /// writable from inside. Ignored when this process is not root. `None` keeps root (unsafe).
    pub host_ids_when_root: Option<(u32, u32)>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            bwrap_path: None,
            memory_limit_bytes: 256 * 1024 * 1024,
            pids_limit: 64,
            output_cap_bytes: 1024 * 1024,
            cgroup_root: PathBuf::from("/sys/fs/cgroup"),
            temp_root: None,
            host_ids_when_root: Some((65534, 65534)),
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
}

impl Shell {
    fn interpreter(self) -> &'static str {
        match self {
            Shell::Bash => "/bin/bash",
            Shell::Sh => "/bin/sh",
        }
    }
}

/// One script run.
#[derive(Debug, Clone)]
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
}

/// Why the sandbox was killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillReason {
    /// The wall-clock timeout passed.
    Timeout,
    /// The memory cgroup's OOM killer fired (or bwrap died by SIGKILL with the limit hit).
    Memory,
    /// bwrap itself died of this signal (not sent by us).
    Signal(i32),
}

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellResult {
    /// The script's exit status as bwrap reports it. Like a shell, bwrap reports a script that
    /// died of signal N as 128+N, so `Exited(137)` may mean SIGKILL.
    Exited(i32),
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
    /// Whether the memory and pids cgroup limits applied to this run.
    pub limits_enforced: bool,
    /// The memory cgroup's OOM killer killed some process of the run (even if the script went on
    /// and exited on its own, which is then reported as `Exited`).
    pub oom_killed: bool,
}

/// A checked bubblewrap installation plus limits.
#[derive(Debug)]
pub struct ShellSandbox {
    bwrap: PathBuf,
    config: SandboxConfig,
    disable_userns: bool,
    /// The host uid/gid bwrap is started as, if it is switched away from ours.
    host_ids: Option<(u32, u32)>,
    /// `None` when cgroup limits are enforced, else why not.
    limits_skipped: Option<String>,
}

impl ShellSandbox {
    /// Finds bwrap, checks it works (`bwrap --unshare-all --ro-bind / / true`) and whether the
    /// cgroup v1 memory and pids controllers are writable.
    pub fn new(config: SandboxConfig) -> Result<Self, SandboxError> {
        let bwrap = match &config.bwrap_path {
            Some(p) => p.clone(),
            None => find_in_path("bwrap").ok_or_else(|| {
                SandboxError::Unavailable(
                    "bwrap (bubblewrap) not found in $PATH or /usr/bin; install it (apt-get install bubblewrap)".into(),
                )
            })?,
        };
        if !bwrap.is_file() {
            return Err(SandboxError::Unavailable(format!("bwrap not found at {}", bwrap.display())));
        }
        // SAFETY: plain syscall.
        let host_ids = if unsafe { libc::geteuid() } == 0 { config.host_ids_when_root } else { None };
        let trial = |extra: &[&str]| -> Result<(), String> {
            let mut cmd = Command::new(&bwrap);
            // SAFETY: the hook only makes async-signal-safe syscalls (see `pre_exec_hook`).
            unsafe { cmd.pre_exec(move || pre_exec_hook(&[], host_ids)) };
            let out = cmd
                .args(["--unshare-all", "--unshare-user"])
                .args(extra)
                .args(["--ro-bind", "/", "/", "true"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output()
                .map_err(|e| format!("cannot run {}: {e}", bwrap.display()))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "trial run `{} --unshare-all --ro-bind / / true`{} failed ({}): {}",
                    bwrap.display(),
                    host_ids.map(|(u, g)| format!(" as uid {u} gid {g}")).unwrap_or_default(),
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        };
        trial(&[]).map_err(SandboxError::Unavailable)?;
        // bwrap >= 0.8: forbid nested user namespaces inside the sandbox.
        let disable_userns = trial(&["--disable-userns"]).is_ok();
        let limits_skipped = cgroup::probe(&config.cgroup_root).err();
        let sandbox = ShellSandbox { bwrap, config, disable_userns, host_ids, limits_skipped };
        // A full run of an empty script checks everything a real run needs (binds, the temp root
        // being reachable for the sandbox's uid, cgroup placement): bwrap's own setup failures
        // would otherwise look like a script exiting with status 1.
        let probe = sandbox.run(ShellRun {
            shell: Shell::Sh,
            source: "exit 0\n".into(),
            args: vec![],
            env: vec![],
            stdin: vec![],
            timeout: Duration::from_secs(30),
        });
        match probe {
            Ok(o) if o.result == ShellResult::Exited(0) => Ok(sandbox),
            Ok(o) => Err(SandboxError::Unavailable(format!(
                "trial sandboxed run failed ({:?}): {}",
                o.result,
                String::from_utf8_lossy(&o.stderr).trim()
            ))),
            Err(e) => Err(SandboxError::Unavailable(format!("trial sandboxed run failed: {e}"))),
        }
    }

    /// Whether runs get the memory and pids cgroup limits.
    pub fn limits_enforced(&self) -> bool {
        self.limits_skipped.is_none()
    }

    /// Why cgroup limits are not enforced, if they are not.
    pub fn limits_skip_reason(&self) -> Option<&str> {
        self.limits_skipped.as_deref()
    }

    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// Runs one script. Blocks until it ends or its timeout passes (plus cleanup).
    pub fn run(&self, input: ShellRun) -> Result<ShellOutcome, SandboxError> {
        validate(&input)?;

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

        let cgroup = if self.limits_enforced() {
            Some(
                RunCgroup::create(&self.config.cgroup_root, self.config.memory_limit_bytes, self.config.pids_limit)
                    .map_err(SandboxError::Cgroup)?,
            )
        } else {
            None
        };

        let mut cmd = self.command(&input, &work);
        let procs_files = cgroup.as_ref().map(RunCgroup::procs_files).unwrap_or_default();
        let host_ids = self.host_ids;
        // SAFETY: the hook runs between fork and exec and only makes async-signal-safe syscalls
        // (getpid, setrlimit, open, write, close, setgroups, setgid, setuid) on memory prepared
        // before the fork.
        unsafe {
            cmd.pre_exec(move || pre_exec_hook(&procs_files, host_ids));
        }
        let start = Instant::now();
        let mut child = cmd.spawn().map_err(SandboxError::Spawn)?;

        let cap = self.config.output_cap_bytes;
        let (tx, rx) = mpsc::channel::<(Stream, Vec<u8>, bool)>();
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        spawn_reader(stdout, cap, Stream::Out, tx.clone());
        spawn_reader(stderr, cap, Stream::Err, tx);
        if let Some(mut stdin) = child.stdin.take() {
            let data = input.stdin;
            thread::spawn(move || {
                // EPIPE if the script does not read its stdin: not an error.
                let _ = stdin.write_all(&data);
            });
        }

        let (status, timed_out) = wait_with_timeout(&mut child, input.timeout).map_err(SandboxError::Wait)?;
        let elapsed = start.elapsed();
        // bwrap is gone; with --die-with-parent its pid-1 child and the pid namespace go with it.
        // Make sure nothing is left in the cgroups either.
        let memory_events = cgroup.as_ref().map(|cg| {
            let events = cg.memory_events();
            cg.kill_all(Duration::from_secs(5));
            events
        });

        // Collect output. All writers are dead, so the pipes hit EOF promptly; the bound only
        // guards against a leaked writer.
        let (mut out, mut err) = ((Vec::new(), false), (Vec::new(), false));
        let collect_deadline = Instant::now() + Duration::from_secs(5);
        for _ in 0..2 {
            let left = collect_deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok((Stream::Out, buf, t)) => out = (buf, t),
                Ok((Stream::Err, buf, t)) => err = (buf, t),
                Err(_) => break,
            }
        }

        let result = if timed_out {
            ShellResult::Killed { reason: KillReason::Timeout }
        } else {
            let (oom_killed, limit_hit) = memory_events.unwrap_or((false, false));
            match (status.code(), status.signal()) {
                (_, Some(sig)) if oom_killed || (limit_hit && sig == libc::SIGKILL) => {
                    ShellResult::Killed { reason: KillReason::Memory }
                }
                (_, Some(sig)) => ShellResult::Killed { reason: KillReason::Signal(sig) },
                (Some(code), _) if code > 128 && (oom_killed || (limit_hit && code == 128 + libc::SIGKILL)) => {
                    ShellResult::Killed { reason: KillReason::Memory }
                }
                (Some(code), _) => ShellResult::Exited(code),
                (None, None) => ShellResult::Exited(-1),
            }
        };
        let limits_enforced = cgroup.is_some();
        let oom_killed = memory_events.is_some_and(|(oom, _)| oom);
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
        })
    }

    fn command(&self, input: &ShellRun, work: &Path) -> Command {
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
        cmd.args(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]);
        cmd.arg("--bind").arg(work).arg("/work");
        // The root is bwrap's own tmpfs (holding the mount points): make it read-only too, so
        // only /work and /tmp are writable.
        cmd.args(["--remount-ro", "/", "--chdir", "/work", "--cap-drop", "ALL"]);
        cmd.args([input.shell.interpreter(), "/work/.job.sh"]);
        cmd.args(&input.args);
        cmd.env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Own process group: terminal signals for the host process do not reach it.
            .process_group(0);
        cmd
    }
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

#[derive(Clone, Copy)]
enum Stream {
    Out,
    Err,
}

fn spawn_reader<R: Read + Send + 'static>(
    mut r: R,
    cap: usize,
    which: Stream,
    tx: mpsc::Sender<(Stream, Vec<u8>, bool)>,
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
                    kept.extend_from_slice(&chunk[..n.min(room)]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = tx.send((which, kept, truncated));
    });
}

fn wait_with_timeout(child: &mut Child, timeout: Duration) -> io::Result<(std::process::ExitStatus, bool)> {
    let deadline = Instant::now() + timeout;
    let mut nap = Duration::from_millis(1);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok((status, false));
        }
        let now = Instant::now();
        if now >= deadline {
            // SIGKILL bwrap (not yet reaped, so the pid is still ours). --die-with-parent makes
            // the kernel kill bwrap's pid-1 child, which takes the whole pid namespace with it.
            let _ = child.kill();
            return Ok((child.wait()?, true));
        }
        thread::sleep(nap.min(deadline - now));
        nap = (nap * 2).min(Duration::from_millis(20));
    }
}

/// Runs in the forked child before exec: no core dumps, join the per-run cgroups (as root, so
/// before anything of the job runs), then drop to the unprivileged host ids.
fn pre_exec_hook(procs_files: &[CString], host_ids: Option<(u32, u32)>) -> io::Result<()> {
    // SAFETY: async-signal-safe syscalls only; every pointer is into memory owned by the caller.
    unsafe {
        let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        let mut buf = [0u8; 20];
        let digits = format_pid(libc::getpid() as u32, &mut buf);
        for path in procs_files {
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
        if let Some((uid, gid)) = host_ids
            && (libc::setgroups(0, std::ptr::null()) != 0
                || libc::setresgid(gid, gid, gid) != 0
                || libc::setresuid(uid, uid, uid) != 0)
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
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
            shell: Shell::Sh,
            source: "true".into(),
            args: vec![],
            env: vec![("A=B".into(), "x".into())],
            stdin: vec![],
            timeout: Duration::from_secs(1),
        };
        assert!(matches!(validate(&run), Err(SandboxError::InvalidInput(_))));
    }
}
