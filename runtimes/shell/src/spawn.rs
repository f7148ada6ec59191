//! Starting one run: its directory, its cgroups, the bwrap command line (binds, tmpfs, the
//! launcher) and the forked child's set-up before `exec` (session, rlimits, cgroups, ids).

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use crate::cgroup::{self, RunCgroup};
use crate::config::{SANDBOX_HOME, SANDBOX_PATH, SANDBOX_UID, Shell, ShellRun};
use crate::error::SandboxError;
use crate::limits::{self, RunRlimits};
use crate::output::status_pipe;
use crate::sandbox::ShellSandbox;

impl ShellSandbox {
    /// The run's directory and its `work`, with the script in it as `.job.sh`.
    pub(crate) fn make_run_dir(&self, input: &ShellRun) -> Result<(RunDir, PathBuf), SandboxError> {
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
    pub(crate) fn make_cgroup(&self, input: &ShellRun) -> Result<Option<RunCgroup>, SandboxError> {
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
    pub(crate) fn spawn(
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

/// Runs the script (`$1`, with its arguments) without fd 3, then writes `status free total` (the
/// free and total blocks of /work) to fd 3 and exits with the script's status. A SIGTERM (the
/// kill grace) is the script's: the launcher catches it (a handler, not an ignore, so the script
/// starts with the default action and may trap it) and carries on to report.
const LAUNCHER: &str = r#"trap : TERM; i="$1"; shift; "$i" "$@" 3>&-; s=$?; echo "$s $(stat -f -c '%a %b' /work 2>/dev/null)" >&3; exit $s"#;

/// Removes the per-run directory even if the script left unwritable subdirectories.
pub(crate) struct RunDir(tempfile::TempDir);

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

/// What the forked child does before `exec` of bwrap, prepared before the fork.
pub(crate) struct PreExec {
    /// New session and process group (the child becomes their leader).
    pub(crate) setsid: bool,
    pub(crate) rlimits: Vec<(limits::Resource, libc::rlimit)>,
    /// The per-run cgroups' `cgroup.procs` files.
    pub(crate) procs_files: Vec<CString>,
    /// Drop to these host ids last.
    pub(crate) host_ids: Option<(u32, u32)>,
    /// Given to bwrap as fd 3 (the launcher's report).
    pub(crate) status_fd: Option<RawFd>,
}

impl PreExec {
    /// Own session, rlimits (incl. no core dumps), join the per-run cgroups (as root, so before
    /// anything of the job runs), then drop to the unprivileged host ids.
    pub(crate) fn run(&self) -> io::Result<()> {
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
}
