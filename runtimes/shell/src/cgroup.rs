//! Per-run cgroup v1 groups (`memory` and `pids` controllers).
//!
//! A run gets `<root>/memory/sundial-<random>` and `<root>/pids/sundial-<random>`. The child
//! (bwrap) writes its own pid into both `cgroup.procs` files from a `pre_exec` hook, i.e. after
//! `fork` and before `exec`, so bwrap and everything it starts are confined before any of the
//! script runs. The directories are removed when the [`RunCgroup`] is dropped, after every
//! process still in them has been sent SIGKILL.

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Checks that the memory and pids controllers exist under `root` and that a child group can be
/// created (and removed) in each. Returns the reason when they cannot.
pub(crate) fn probe(root: &Path) -> Result<(), String> {
    for controller in ["memory", "pids"] {
        let dir = root.join(controller);
        let limit_file = if controller == "memory" { "memory.limit_in_bytes" } else { "pids.max" };
        // A v1 hierarchy has the controller's files in a child group; check on the probe group.
        let probe = dir.join(unique_name("sundial-probe"));
        if let Err(e) = fs::create_dir(&probe) {
            return Err(format!("cannot create a cgroup under {}: {e}", dir.display()));
        }
        let has_limit = probe.join(limit_file).exists() && probe.join("cgroup.procs").exists();
        let _ = fs::remove_dir(&probe);
        if !has_limit {
            return Err(format!(
                "{} is not a cgroup v1 `{controller}` hierarchy (no {limit_file} in a child group)",
                dir.display()
            ));
        }
    }
    Ok(())
}

pub(crate) fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let mut random = [0u8; 8];
    // getrandom(2) never blocks once the pool is initialised; on failure fall back to time/pid.
    // SAFETY: the buffer is valid for 8 bytes.
    let got = unsafe { libc::getrandom(random.as_mut_ptr().cast(), random.len(), libc::GRND_NONBLOCK) };
    let random = if got == 8 { u64::from_ne_bytes(random) } else { nanos as u64 };
    format!(
        "{prefix}-{}-{}-{:016x}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        random ^ (nanos as u64).rotate_left(17)
    )
}

/// The cgroups of one run.
pub(crate) struct RunCgroup {
    memory: PathBuf,
    pids: PathBuf,
}

impl RunCgroup {
    pub(crate) fn create(root: &Path, memory_limit: u64, pids_limit: u64) -> io::Result<Self> {
        let name = unique_name("sundial");
        let memory = root.join("memory").join(&name);
        let pids = root.join("pids").join(&name);
        fs::create_dir(&memory)?;
        let cg = RunCgroup { memory, pids };
        fs::create_dir(&cg.pids)?;
        write_file(&cg.memory.join("memory.limit_in_bytes"), &memory_limit.to_string())?;
        // With swap accounting, also cap memory+swap so the job cannot swap its way past the
        // limit. Absent (no swap accounting) is fine.
        let memsw = cg.memory.join("memory.memsw.limit_in_bytes");
        if memsw.exists() {
            write_file(&memsw, &memory_limit.to_string())?;
        }
        write_file(&cg.pids.join("pids.max"), &pids_limit.to_string())?;
        Ok(cg)
    }

    /// The `cgroup.procs` files the child must write its pid into, as C strings for `pre_exec`.
    pub(crate) fn procs_files(&self) -> Vec<CString> {
        [&self.memory, &self.pids]
            .iter()
            .map(|d| CString::new(d.join("cgroup.procs").as_os_str().as_bytes()).expect("no NUL in cgroup path"))
            .collect()
    }

    /// Whether the memory controller recorded an OOM kill (or hit the limit, for kernels without
    /// the `oom_kill` counter): `(oom_killed, limit_hit)`.
    pub(crate) fn memory_events(&self) -> (bool, bool) {
        let mut oom_kill = false;
        if let Ok(s) = fs::read_to_string(self.memory.join("memory.oom_control")) {
            for line in s.lines() {
                let mut it = line.split_whitespace();
                match (it.next(), it.next().and_then(|v| v.parse::<u64>().ok())) {
                    (Some("oom_kill"), Some(n)) | (Some("under_oom"), Some(n)) if n > 0 => oom_kill = true,
                    _ => {}
                }
            }
        }
        let failcnt = fs::read_to_string(self.memory.join("memory.failcnt"))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(0);
        (oom_kill, failcnt > 0)
    }

    /// SIGKILLs every process left in the groups until they are empty (or `timeout` passes).
    /// Returns true when both are empty.
    pub(crate) fn kill_all(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let mut any = false;
            for dir in [&self.pids, &self.memory] {
                for pid in read_pids(dir) {
                    any = true;
                    // SAFETY: plain syscall; the pid was read from our own per-run cgroup.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
            if !any {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        self.kill_all(Duration::from_secs(5));
        for dir in [&self.memory, &self.pids] {
            // rmdir can fail with EBUSY for a moment after the last task exits.
            for _ in 0..200 {
                match fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        }
    }
}

fn read_pids(dir: &Path) -> Vec<libc::pid_t> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

fn write_file(path: &Path, value: &str) -> io::Result<()> {
    fs::write(path, value).map_err(|e| io::Error::new(e.kind(), format!("writing {value} to {}: {e}", path.display())))
}
