//! Per-process resource limits (`setrlimit`) set in the forked child before `exec` of bwrap, and
//! so inherited by everything in the sandbox.

use std::io;
use std::time::Duration;

/// Resource limits set with `setrlimit` on bwrap (before `exec`) and inherited by the script and
/// every process it starts. They are per process: they bound each process, not the run as a
/// whole (that is the cgroups' job). Both the soft and the hard limit are set (for CPU time the
/// hard limit is one second above the soft one), so the script cannot raise them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rlimits {
    /// `RLIMIT_CPU` in seconds of CPU time per process: SIGXCPU at this (a shell reports status
    /// 152), SIGKILL one second later (137). `None`: `ceil(timeout) + 1` of each run (a run's
    /// [`ShellRun::cpu_seconds`](crate::ShellRun::cpu_seconds) overrides both).
    pub cpu_seconds: Option<u64>,
    /// `RLIMIT_AS` (virtual address space per process) in bytes. `None`: twice
    /// [`SandboxConfig::memory_limit_bytes`](crate::SandboxConfig::memory_limit_bytes).
    /// `Some(u64::MAX)`: unlimited. It is the memory bound when cgroups are unavailable and a
    /// backstop otherwise; programs that reserve much more address space than they use (JVMs,
    /// some runtimes) need it raised.
    pub address_space_bytes: Option<u64>,
    /// `RLIMIT_FSIZE`: largest file a process may write, in bytes (default 8 MiB). Writing past
    /// it raises SIGXFSZ (status 153), or fails with `EFBIG` if the signal is ignored. Applies to
    /// `/work` and `/tmp`.
    pub file_size_bytes: u64,
    /// `RLIMIT_NOFILE`: open file descriptors per process (default 256).
    pub open_files: u64,
}

impl Default for Rlimits {
    fn default() -> Self {
        Rlimits { cpu_seconds: None, address_space_bytes: None, file_size_bytes: 8 * 1024 * 1024, open_files: 256 }
    }
}

/// The limits one run gets, resolved from the config and the run (`u64::MAX` = unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunRlimits {
    pub cpu_seconds: u64,
    pub address_space: u64,
    pub file_size: u64,
    pub open_files: u64,
}

impl RunRlimits {
    pub(crate) fn resolve(config: &Rlimits, memory_limit: u64, run_cpu: Option<u64>, timeout: Duration) -> Self {
        RunRlimits {
            cpu_seconds: run_cpu.or(config.cpu_seconds).unwrap_or_else(|| cpu_seconds_for(timeout)).max(1),
            address_space: config.address_space_bytes.unwrap_or(memory_limit.saturating_mul(2)),
            file_size: config.file_size_bytes,
            open_files: config.open_files,
        }
    }

    /// The `setrlimit` calls to make, each capped at the current hard limit (an unprivileged
    /// process may lower but not raise it).
    pub(crate) fn plan(&self) -> Vec<(Resource, libc::rlimit)> {
        let cpu_hard = self.cpu_seconds.saturating_add(1);
        [
            (libc::RLIMIT_CPU, self.cpu_seconds, cpu_hard),
            (libc::RLIMIT_AS, self.address_space, self.address_space),
            (libc::RLIMIT_FSIZE, self.file_size, self.file_size),
            (libc::RLIMIT_NOFILE, self.open_files, self.open_files),
            (libc::RLIMIT_CORE, 0, 0),
        ]
        .into_iter()
        .map(|(resource, soft, hard)| {
            let current = current_hard(resource);
            let hard = to_rlim(hard).min(current);
            (resource, libc::rlimit { rlim_cur: to_rlim(soft).min(hard), rlim_max: hard })
        })
        .collect()
    }
}

/// `ceil(timeout) + 1` seconds.
pub(crate) fn cpu_seconds_for(timeout: Duration) -> u64 {
    timeout.as_secs().saturating_add(u64::from(timeout.subsec_nanos() > 0)).saturating_add(1)
}

#[cfg(target_env = "gnu")]
pub(crate) type Resource = libc::__rlimit_resource_t;
#[cfg(not(target_env = "gnu"))]
pub(crate) type Resource = libc::c_int;

fn to_rlim(v: u64) -> libc::rlim_t {
    if v == u64::MAX { libc::RLIM_INFINITY } else { v as libc::rlim_t }
}

fn current_hard(resource: Resource) -> libc::rlim_t {
    let mut cur = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: plain syscall writing into a local.
    if unsafe { libc::getrlimit(resource, &mut cur) } == 0 { cur.rlim_max } else { libc::RLIM_INFINITY }
}

/// Sets each limit; async-signal-safe (for `pre_exec`).
pub(crate) fn apply(plan: &[(Resource, libc::rlimit)]) -> io::Result<()> {
    for (resource, limit) in plan {
        // SAFETY: plain syscall reading a value prepared before the fork.
        if unsafe { libc::setrlimit(*resource, limit) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_seconds_default_is_ceil_timeout_plus_one() {
        assert_eq!(cpu_seconds_for(Duration::from_secs(30)), 31);
        assert_eq!(cpu_seconds_for(Duration::from_millis(30_001)), 32);
        assert_eq!(cpu_seconds_for(Duration::from_millis(300)), 2);
        assert_eq!(cpu_seconds_for(Duration::ZERO), 1);
    }

    #[test]
    fn resolve_defaults_and_overrides() {
        let d = Rlimits::default();
        let r = RunRlimits::resolve(&d, 256 << 20, None, Duration::from_secs(10));
        assert_eq!(r, RunRlimits { cpu_seconds: 11, address_space: 512 << 20, file_size: 8 << 20, open_files: 256 });
        let c = Rlimits { cpu_seconds: Some(5), address_space_bytes: Some(u64::MAX), ..d };
        let r = RunRlimits::resolve(&c, 256 << 20, None, Duration::from_secs(10));
        assert_eq!((r.cpu_seconds, r.address_space), (5, u64::MAX));
        // The run's own value wins; 0 is taken as 1 (the kernel's own reading of 0).
        assert_eq!(RunRlimits::resolve(&c, 1, Some(2), Duration::from_secs(10)).cpu_seconds, 2);
        assert_eq!(RunRlimits::resolve(&c, 1, Some(0), Duration::from_secs(10)).cpu_seconds, 1);
    }

    #[test]
    fn plan_sets_soft_and_hard() {
        let r = RunRlimits { cpu_seconds: 3, address_space: u64::MAX, file_size: 100, open_files: 64 };
        let plan = r.plan();
        let get = |res: Resource| plan.iter().find(|(x, _)| *x == res).unwrap().1;
        assert_eq!((get(libc::RLIMIT_CPU).rlim_cur, get(libc::RLIMIT_CPU).rlim_max), (3, 4));
        assert_eq!(get(libc::RLIMIT_FSIZE).rlim_cur, 100);
        assert_eq!(get(libc::RLIMIT_NOFILE).rlim_max, 64.min(current_hard(libc::RLIMIT_NOFILE)));
        assert_eq!(get(libc::RLIMIT_CORE).rlim_max, 0);
        assert_eq!(get(libc::RLIMIT_AS).rlim_cur, current_hard(libc::RLIMIT_AS));
    }
}
