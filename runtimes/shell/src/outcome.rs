//! How a run ended: [`ShellOutcome`] and its [`ShellResult`], read from bwrap's exit status
//! and the memory cgroup's events; signal names.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

/// Why the sandbox was killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillReason {
    /// The wall-clock timeout passed.
    Timeout,
    /// [`ShellRun::cancel`](crate::ShellRun::cancel) was set.
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

/// The result of [`ShellSandbox::run`](crate::ShellSandbox::run).
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

/// The outcome of a run cancelled before it started: nothing ran.
pub(crate) fn cancelled_before_start(disk_bytes: u64) -> ShellOutcome {
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

/// Highest signal number (Linux `SIGRTMAX`).
const MAX_SIGNAL: i32 = 64;

/// The result of a run that ended on its own: the exit status (128+N: died of signal N),
/// corrected to a memory kill when the memory cgroup saw one.
pub(crate) fn classify(status: ExitStatus, (oom_killed, limit_hit): (bool, bool)) -> ShellResult {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
