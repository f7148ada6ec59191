//! Making a [`ShellSandbox`]: find bwrap, try each isolation layer on this host, detect the
//! cgroups, judge the isolation level, and do a full trial run.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::cgroup::{self, Backend};
use crate::config::{SANDBOX_UID, SandboxConfig, Shell, ShellRun};
use crate::error::{SandboxError, unavailable};
use crate::isolation::{CgroupMode, Isolation, IsolationLevel, RlimitsReport};
use crate::outcome::ShellResult;
use crate::sandbox::ShellSandbox;
use crate::spawn::PreExec;

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

/// `bwrap --version`, e.g. `bubblewrap 0.8.0` -> `0.8.0`.
fn bwrap_version(bwrap: &Path) -> Option<String> {
    let out = Command::new(bwrap).arg("--version").env_clear().stdin(Stdio::null()).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next()?.trim();
    let version = line.strip_prefix("bubblewrap").unwrap_or(line).trim();
    (out.status.success() && !version.is_empty()).then(|| version.to_string())
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
