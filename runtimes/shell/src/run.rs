//! One run from start to end: start it, wait for it (to its timeout or a cancel, SIGTERM
//! first with a kill grace, then SIGKILL), clean up, and read how it ended.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::cgroup::RunCgroup;
use crate::config::{ShellRun, validate};
use crate::error::SandboxError;
use crate::outcome::{KillReason, ShellOutcome, ShellResult, cancelled_before_start, classify};
use crate::output::{collect_output, start_io, work_was_full};
use crate::sandbox::ShellSandbox;

/// How often the waiting loop looks at the run's cancel flag (and bwrap's state), at most.
const POLL: Duration = Duration::from_millis(20);

impl ShellSandbox {
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
