//! Per-run cgroups: cgroup v1 (`memory`, `pids`, and `cpu` when present) or cgroup v2 (one
//! group with `memory.max`, `pids.max`, `cpu.max`).
//!
//! A run gets its own uniquely named group(s). The child (bwrap) writes its own pid into every
//! `cgroup.procs` file from a `pre_exec` hook, i.e. after `fork` and before `exec`, so bwrap and
//! everything it starts are confined before any of the script runs. The directories are removed
//! when the [`RunCgroup`] is dropped, after every process still in them has been sent SIGKILL.
//!
//! **Which mode.** If `<root>/cgroup.controllers` exists, `<root>` is a cgroup v2 (unified)
//! hierarchy; otherwise `<root>/memory`, `<root>/pids` (and optionally `<root>/cpu`) are taken as
//! cgroup v1 hierarchies. `memory` and `pids` are required; `cpu` is used when it is there.
//!
//! **v2 layout.** The per-run groups are children of `<root>/sundial-shell` (created once, shared
//! by every sandbox of the host, never removed). cgroup v2 only allows a controller's files in a
//! group whose parent enabled it in `cgroup.subtree_control`, and ("no internal processes") a
//! group that enables controllers for its children may not hold processes itself, so: `<root>`
//! enables `+memory +pids (+cpu)` for `sundial-shell`, `sundial-shell` enables them for the runs
//! and holds no process, and each run group is a leaf holding the run's processes.

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// `cpu.cfs_period_us` (v1) and the period of `cpu.max` (v2): 100 ms, the kernel's default.
pub(crate) const CPU_PERIOD_US: u64 = 100_000;
/// The smallest quota the kernel accepts (1 ms per period).
const CPU_MIN_QUOTA_US: u64 = 1_000;
/// The parent of the per-run groups in cgroup v2.
pub(crate) const V2_PARENT: &str = "sundial-shell";

/// A usable cgroup hierarchy, found at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Backend {
    /// cgroup v1: one hierarchy per controller under `root`.
    V1 { root: PathBuf, cpu: bool },
    /// cgroup v2: run groups under `parent` (`<root>/sundial-shell`).
    V2 { parent: PathBuf, cpu: bool },
}

impl Backend {
    /// The controllers a run is confined by.
    pub(crate) fn controllers(&self) -> Vec<&'static str> {
        let cpu = match self {
            Backend::V1 { cpu, .. } | Backend::V2 { cpu, .. } => *cpu,
        };
        let mut c = vec!["memory", "pids"];
        if cpu {
            c.push("cpu");
        }
        c
    }
}

/// The limits of one run's group(s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    pub memory_bytes: u64,
    pub pids: u64,
    /// Thousandths of a CPU; 0 means no CPU limit.
    pub cpu_millis: u64,
}

/// The CPU quota per [`CPU_PERIOD_US`] for `cpu_millis` thousandths of a CPU (`None`: no limit).
pub(crate) fn cpu_quota_us(cpu_millis: u64) -> Option<u64> {
    (cpu_millis > 0).then(|| (cpu_millis.saturating_mul(CPU_PERIOD_US) / 1000).max(CPU_MIN_QUOTA_US))
}

/// The files a v1 run writes, per controller: `(controller, file, contents)`, in order.
/// `memory.memsw.limit_in_bytes` is written only where swap accounting exists.
pub(crate) fn v1_files(limits: &Limits, cpu: bool) -> Vec<(&'static str, &'static str, String)> {
    let mut files = vec![
        ("memory", "memory.limit_in_bytes", limits.memory_bytes.to_string()),
        ("memory", "memory.memsw.limit_in_bytes", limits.memory_bytes.to_string()),
        ("pids", "pids.max", limits.pids.to_string()),
    ];
    if cpu && let Some(quota) = cpu_quota_us(limits.cpu_millis) {
        // The period first: a quota is checked against the current period.
        files.push(("cpu", "cpu.cfs_period_us", CPU_PERIOD_US.to_string()));
        files.push(("cpu", "cpu.cfs_quota_us", quota.to_string()));
    }
    files
}

/// The files a v2 run group gets: `(file, contents)`, in order. `memory.swap.max` is written
/// only where swap accounting exists.
pub(crate) fn v2_files(limits: &Limits, cpu: bool) -> Vec<(&'static str, String)> {
    let mut files = vec![
        ("memory.max", limits.memory_bytes.to_string()),
        // No swapping past the limit (v2's swap limit is on swap alone).
        ("memory.swap.max", "0".to_string()),
        ("pids.max", limits.pids.to_string()),
    ];
    if cpu && let Some(quota) = cpu_quota_us(limits.cpu_millis) {
        files.push(("cpu.max", format!("{quota} {CPU_PERIOD_US}")));
    }
    files
}

/// Finds a usable hierarchy under `root`: v2 if `<root>/cgroup.controllers` exists, else v1.
/// Creates (and removes) a probe group to prove it is writable. `want_cpu` false skips the cpu
/// controller. Returns the reason when no usable hierarchy is found.
pub(crate) fn detect(root: &Path, want_cpu: bool) -> Result<Backend, String> {
    if root.join("cgroup.controllers").exists() { probe_v2(root, want_cpu) } else { probe_v1(root, want_cpu) }
}

fn probe_v1(root: &Path, want_cpu: bool) -> Result<Backend, String> {
    let check = |controller: &str, limit_file: &str| -> Result<(), String> {
        let dir = root.join(controller);
        // A v1 hierarchy has the controller's files in a child group; check on the probe group.
        let probe = dir.join(unique_name("sundial-probe"));
        if let Err(e) = fs::create_dir(&probe) {
            return Err(format!("cgroup v1: cannot create a cgroup under {}: {e}", dir.display()));
        }
        let has_limit = probe.join(limit_file).exists() && probe.join("cgroup.procs").exists();
        let _ = fs::remove_dir(&probe);
        if has_limit {
            Ok(())
        } else {
            Err(format!(
                "{} is not a cgroup v1 `{controller}` hierarchy (no {limit_file} in a child group)",
                dir.display()
            ))
        }
    };
    check("memory", "memory.limit_in_bytes")?;
    check("pids", "pids.max")?;
    let cpu = want_cpu && check("cpu", "cpu.cfs_quota_us").is_ok();
    Ok(Backend::V1 { root: root.to_path_buf(), cpu })
}

fn probe_v2(root: &Path, want_cpu: bool) -> Result<Backend, String> {
    let available = read_words(&root.join("cgroup.controllers"));
    for needed in ["memory", "pids"] {
        if !available.iter().any(|c| c == needed) {
            return Err(format!(
                "cgroup v2 at {}: the `{needed}` controller is not available (cgroup.controllers: {:?})",
                root.display(),
                available.join(" ")
            ));
        }
    }
    let cpu = want_cpu && available.iter().any(|c| c == "cpu");
    let parent = root.join(V2_PARENT);
    if let Err(e) = fs::create_dir(&parent)
        && e.kind() != io::ErrorKind::AlreadyExists
    {
        return Err(format!("cgroup v2: cannot create {}: {e}", parent.display()));
    }
    let mut wanted = vec!["memory", "pids"];
    if cpu {
        wanted.push("cpu");
    }
    // Enable the controllers for `sundial-shell` (in the root) and for the runs (in it).
    let mut cpu_ok = cpu;
    for dir in [root, parent.as_path()] {
        for c in &wanted {
            if let Err(e) = enable_v2(dir, c) {
                if *c == "cpu" {
                    cpu_ok = false;
                    continue;
                }
                let hint = if e.raw_os_error() == Some(libc::EBUSY) {
                    " (the group holds processes itself: cgroup v2 allows controllers for children only in a \
                     group without processes; run the service in a child group, e.g. under systemd)"
                } else {
                    ""
                };
                return Err(format!(
                    "cgroup v2: cannot enable `{c}` in {}: {e}{hint}",
                    dir.join("cgroup.subtree_control").display()
                ));
            }
        }
    }
    // A probe run group must show the limit files.
    let probe = parent.join(unique_name("sundial-probe"));
    if let Err(e) = fs::create_dir(&probe) {
        return Err(format!("cgroup v2: cannot create a cgroup under {}: {e}", parent.display()));
    }
    let missing: Vec<&str> =
        ["memory.max", "pids.max", "cgroup.procs"].into_iter().filter(|f| !probe.join(f).exists()).collect();
    let cpu_ok = cpu_ok && probe.join("cpu.max").exists();
    let _ = fs::remove_dir(&probe);
    if !missing.is_empty() {
        return Err(format!("cgroup v2: a group under {} has no {}", parent.display(), missing.join(", ")));
    }
    Ok(Backend::V2 { parent, cpu: cpu_ok })
}

/// Adds `+controller` to `dir/cgroup.subtree_control` unless it is already enabled.
fn enable_v2(dir: &Path, controller: &str) -> io::Result<()> {
    let file = dir.join("cgroup.subtree_control");
    if read_words(&file).iter().any(|c| c == controller) {
        return Ok(());
    }
    fs::write(&file, format!("+{controller}"))
}

fn read_words(path: &Path) -> Vec<String> {
    fs::read_to_string(path).map(|s| s.split_whitespace().map(String::from).collect()).unwrap_or_default()
}

pub(crate) fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut random = [0u8; 8];
    // getrandom(2) never blocks once the pool is initialised. Should it fail, the standard
    // library's hash keys (drawn from the OS once per thread) stand in; pid and counter keep
    // the name unique within this process either way.
    // SAFETY: the buffer is valid for 8 bytes.
    let got = unsafe { libc::getrandom(random.as_mut_ptr().cast(), random.len(), libc::GRND_NONBLOCK) };
    let random = if got == 8 {
        u64::from_ne_bytes(random)
    } else {
        std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), count)
    };
    format!("{prefix}-{}-{count}-{random:016x}", std::process::id())
}

/// The cgroups of one run.
pub(crate) struct RunCgroup {
    /// Every group directory of the run (v1: one per controller; v2: one).
    dirs: Vec<PathBuf>,
    /// The group holding the memory controller's files.
    memory: PathBuf,
    v2: bool,
}

impl RunCgroup {
    pub(crate) fn create(backend: &Backend, limits: &Limits) -> io::Result<Self> {
        let name = unique_name("sundial");
        match backend {
            Backend::V1 { root, cpu } => {
                let mut controllers = vec!["memory", "pids"];
                if *cpu && cpu_quota_us(limits.cpu_millis).is_some() {
                    controllers.push("cpu");
                }
                let memory = root.join("memory").join(&name);
                let mut cg = RunCgroup { dirs: Vec::new(), memory, v2: false };
                for c in &controllers {
                    let dir = root.join(c).join(&name);
                    fs::create_dir(&dir)?;
                    cg.dirs.push(dir);
                }
                for (controller, file, value) in v1_files(limits, *cpu) {
                    let path = root.join(controller).join(&name).join(file);
                    // With swap accounting, also cap memory+swap so the job cannot swap its
                    // way past the limit. Absent (no swap accounting) is fine.
                    if file == "memory.memsw.limit_in_bytes" && !path.exists() {
                        continue;
                    }
                    write_file(&path, &value)?;
                }
                Ok(cg)
            }
            Backend::V2 { parent, cpu } => {
                let dir = parent.join(&name);
                fs::create_dir(&dir)?;
                let cg = RunCgroup { dirs: vec![dir.clone()], memory: dir.clone(), v2: true };
                for (file, value) in v2_files(limits, *cpu) {
                    let path = dir.join(file);
                    if file == "memory.swap.max" && !path.exists() {
                        continue;
                    }
                    write_file(&path, &value)?;
                }
                Ok(cg)
            }
        }
    }

    /// The `cgroup.procs` files the child must write its pid into, as C strings for `pre_exec`.
    pub(crate) fn procs_files(&self) -> Vec<CString> {
        self.dirs
            .iter()
            .map(|d| CString::new(d.join("cgroup.procs").as_os_str().as_bytes()).expect("no NUL in cgroup path"))
            .collect()
    }

    /// Whether the memory controller recorded an OOM kill (or hit the limit, for kernels without
    /// the `oom_kill` counter): `(oom_killed, limit_hit)`.
    pub(crate) fn memory_events(&self) -> (bool, bool) {
        if self.v2 {
            let events = fs::read_to_string(self.memory.join("memory.events")).unwrap_or_default();
            let (oom_kill, max) = parse_v2_memory_events(&events);
            return (oom_kill > 0, max > 0);
        }
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

    /// Sends SIGKILL once to every process in the groups (v2: `cgroup.kill` where the kernel has
    /// it). Returns whether any process was found.
    pub(crate) fn kill_once(&self) -> bool {
        let mut any = false;
        for dir in &self.dirs {
            let pids = read_pids(dir);
            if pids.is_empty() {
                continue;
            }
            any = true;
            if self.v2 && fs::write(dir.join("cgroup.kill"), "1").is_ok() {
                continue;
            }
            for pid in pids {
                // SAFETY: plain syscall; the pid was read from our own per-run cgroup.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        any
    }

    /// Sends `signal` once to every process in the groups but bubblewrap's own (`except`, and
    /// any named `bwrap`: its death would take the sandbox down at once).
    pub(crate) fn signal_once(&self, signal: libc::c_int, except: libc::pid_t) {
        // v1 lists a process in each hierarchy: signal it once.
        let pids: std::collections::BTreeSet<libc::pid_t> = self.dirs.iter().flat_map(|d| read_pids(d)).collect();
        let is_bwrap =
            |pid: libc::pid_t| fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "bwrap");
        for pid in pids.into_iter().filter(|p| *p != except && !is_bwrap(*p)) {
            // SAFETY: plain syscall; the pid was read from our own per-run cgroup.
            unsafe { libc::kill(pid, signal) };
        }
    }

    /// SIGKILLs every process left in the groups until they are empty (or `timeout` passes).
    /// Returns true when all are empty.
    pub(crate) fn kill_all(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if !self.kill_once() {
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
        for dir in &self.dirs {
            // rmdir can fail with EBUSY for a moment after the last task exits.
            for _ in 0..200 {
                match fs::remove_dir(dir) {
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) => std::thread::sleep(Duration::from_millis(5)),
                    _ => break,
                }
            }
        }
    }
}

/// `(oom_kill, max)` from a v2 `memory.events` file.
fn parse_v2_memory_events(s: &str) -> (u64, u64) {
    let (mut oom_kill, mut max) = (0, 0);
    for line in s.lines() {
        let mut it = line.split_whitespace();
        match (it.next(), it.next().and_then(|v| v.parse::<u64>().ok())) {
            (Some("oom_kill"), Some(n)) => oom_kill = n,
            (Some("max"), Some(n)) => max = n,
            _ => {}
        }
    }
    (oom_kill, max)
}

fn read_pids(dir: &Path) -> Vec<libc::pid_t> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

fn write_file(path: &Path, value: &str) -> io::Result<()> {
    fs::write(path, value).map_err(|e| io::Error::new(e.kind(), format!("writing {value} to {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits { memory_bytes: 256 * 1024 * 1024, pids: 64, cpu_millis: 1000 };

    #[test]
    fn cpu_quota() {
        assert_eq!(cpu_quota_us(0), None);
        assert_eq!(cpu_quota_us(1000), Some(100_000));
        assert_eq!(cpu_quota_us(250), Some(25_000));
        assert_eq!(cpu_quota_us(2500), Some(250_000));
        // Below the kernel's 1 ms minimum: clamped.
        assert_eq!(cpu_quota_us(1), Some(1_000));
        assert_eq!(cpu_quota_us(u64::MAX), Some(u64::MAX / 1000));
    }

    #[test]
    fn v1_file_contents() {
        assert_eq!(
            v1_files(&LIMITS, true),
            vec![
                ("memory", "memory.limit_in_bytes", "268435456".to_string()),
                ("memory", "memory.memsw.limit_in_bytes", "268435456".to_string()),
                ("pids", "pids.max", "64".to_string()),
                ("cpu", "cpu.cfs_period_us", "100000".to_string()),
                ("cpu", "cpu.cfs_quota_us", "100000".to_string()),
            ]
        );
        assert_eq!(v1_files(&LIMITS, false).len(), 3);
        assert_eq!(v1_files(&Limits { cpu_millis: 0, ..LIMITS }, true).len(), 3);
    }

    #[test]
    fn v2_file_contents() {
        assert_eq!(
            v2_files(&Limits { cpu_millis: 1500, ..LIMITS }, true),
            vec![
                ("memory.max", "268435456".to_string()),
                ("memory.swap.max", "0".to_string()),
                ("pids.max", "64".to_string()),
                ("cpu.max", "150000 100000".to_string()),
            ]
        );
        assert_eq!(v2_files(&LIMITS, false).len(), 3);
        assert_eq!(v2_files(&Limits { cpu_millis: 0, ..LIMITS }, true).len(), 3);
    }

    #[test]
    fn v2_memory_events() {
        let s = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(parse_v2_memory_events(s), (1, 12));
        assert_eq!(parse_v2_memory_events(""), (0, 0));
    }

    /// A fake cgroup v2 tree (plain files): detection enables the controllers in the root and in
    /// `sundial-shell`, and a run group gets the limit files.
    #[test]
    fn v2_on_a_fake_tree() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        fs::write(r.join("cgroup.controllers"), "cpuset cpu io memory hugetlb pids rdma misc\n").unwrap();
        fs::write(r.join("cgroup.subtree_control"), "memory\n").unwrap();
        let parent = r.join(V2_PARENT);
        // The kernel creates the limit files in every new group; plain directories have none, so
        // detection gets as far as the probe group and reports what is missing there.
        let err = detect(r, true).unwrap_err();
        assert!(err.contains("has no memory.max, pids.max, cgroup.procs"), "{err}");
        // What it wrote on the way: only the missing controllers, one at a time (each write
        // replaces the fake file's contents, so the last one is what remains).
        assert_eq!(fs::read_to_string(r.join("cgroup.subtree_control")).unwrap(), "+cpu");
        assert_eq!(fs::read_to_string(parent.join("cgroup.subtree_control")).unwrap(), "+cpu");

        // A run group's files, written into the fake tree.
        let backend = Backend::V2 { parent: parent.clone(), cpu: true };
        assert_eq!(backend.controllers(), vec!["memory", "pids", "cpu"]);
        let cg = RunCgroup::create(&backend, &Limits { cpu_millis: 500, ..LIMITS }).unwrap();
        let dir = cg.dirs[0].clone();
        assert!(dir.starts_with(&parent));
        assert_eq!(fs::read_to_string(dir.join("memory.max")).unwrap(), "268435456");
        assert_eq!(fs::read_to_string(dir.join("pids.max")).unwrap(), "64");
        assert_eq!(fs::read_to_string(dir.join("cpu.max")).unwrap(), "50000 100000");
        // No swap accounting file in the fake group: not written.
        assert!(!dir.join("memory.swap.max").exists());
        assert_eq!(cg.procs_files(), vec![CString::new(dir.join("cgroup.procs").as_os_str().as_bytes()).unwrap()]);
        fs::write(dir.join("memory.events"), "max 3\noom_kill 2\n").unwrap();
        assert_eq!(cg.memory_events(), (true, true));
        drop(cg);
    }

    #[test]
    fn v2_without_memory_controller() {
        let root = tempfile::tempdir().unwrap();
        fs::write(root.path().join("cgroup.controllers"), "cpu io pids\n").unwrap();
        let err = detect(root.path(), true).unwrap_err();
        assert!(err.contains("`memory` controller is not available"), "{err}");
        assert!(!root.path().join(V2_PARENT).exists());
    }

    #[test]
    fn v1_missing() {
        let root = tempfile::tempdir().unwrap();
        let err = detect(root.path(), true).unwrap_err();
        assert!(err.starts_with("cgroup v1: cannot create a cgroup under"), "{err}");
    }
}
