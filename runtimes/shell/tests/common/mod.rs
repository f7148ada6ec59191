//! Helpers shared by the test binaries.
#![allow(dead_code)]

use std::fs;
use std::time::{Duration, Instant};

use sundial_shell_sandbox::{SandboxConfig, SandboxError, Shell, ShellOutcome, ShellRun, ShellSandbox};

/// A sandbox for tests that do not need cgroup limits (`accept_weaker`).
pub fn sandbox_with(config: SandboxConfig) -> Option<ShellSandbox> {
    match ShellSandbox::new(SandboxConfig { accept_weaker: true, ..config }) {
        Ok(s) => Some(s),
        Err(SandboxError::Unavailable { reason }) => {
            eprintln!("SKIPPED: bwrap unavailable: {reason}");
            None
        }
        Err(e) => panic!("sandbox setup failed: {e}"),
    }
}

pub fn sandbox() -> Option<ShellSandbox> {
    sandbox_with(SandboxConfig::default())
}

/// A sandbox with cgroup limits (no `accept_weaker`); see the module doc for when it skips.
pub fn strong_with(config: SandboxConfig) -> Option<ShellSandbox> {
    match ShellSandbox::new(SandboxConfig { accept_weaker: false, ..config }) {
        Ok(s) => {
            assert!(s.limits_enforced());
            Some(s)
        }
        Err(SandboxError::Unavailable { reason }) => {
            eprintln!("SKIPPED: bwrap unavailable: {reason}");
            None
        }
        Err(SandboxError::TooWeak { level, reason }) => {
            if std::env::var("SUNDIAL_SHELL_ALLOW_NO_CGROUPS").as_deref() == Ok("1") {
                eprintln!("SKIPPED: isolation only {level}: {reason}");
                return None;
            }
            panic!("isolation only {level} ({reason}); run as root, or set SUNDIAL_SHELL_ALLOW_NO_CGROUPS=1 to skip");
        }
        Err(e) => panic!("sandbox setup failed: {e}"),
    }
}

pub fn bash(source: &str) -> ShellRun {
    ShellRun { shell: Shell::Bash, source: source.into(), timeout: Duration::from_secs(20), ..ShellRun::default() }
}

pub fn run(sb: &ShellSandbox, r: ShellRun) -> ShellOutcome {
    let start = Instant::now();
    let o = sb.run(r).expect("run setup");
    eprintln!(
        "result={:?} elapsed={:?} (run returned after {:?}) limits={} stdout={:?} stderr={:?}",
        o.result,
        o.elapsed,
        start.elapsed(),
        o.limits_enforced,
        String::from_utf8_lossy(&o.stdout[..o.stdout.len().min(400)]),
        String::from_utf8_lossy(&o.stderr[..o.stderr.len().min(400)])
    );
    o
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Host processes whose command line contains `needle` (a pgrep -f without procps).
pub fn host_processes(needle: &str) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        if let Ok(cmd) = fs::read(e.path().join("cmdline")) {
            let cmd = text(&cmd).replace('\0', " ");
            if cmd.contains(needle) && pid != std::process::id() {
                found.push((pid, cmd));
            }
        }
    }
    found
}

pub fn thread_sleep(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}

/// A sandbox that needs cgroups, with the defaults.
pub fn strong() -> Option<ShellSandbox> {
    strong_with(SandboxConfig::default())
}

/// Processes on the host whose command line contains `marker`, polled until none is left
/// (or 2 s pass).
pub fn wait_no_processes(marker: &str) -> Vec<(u32, String)> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left = host_processes(marker);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        thread_sleep(20);
    }
}

/// A marker unique to this test process, to pass as a script argument: it shows in the
/// command line of bwrap and of every shell of the run on the host.
pub fn marker(name: &str) -> String {
    format!("sundial-test-{name}-{}", std::process::id())
}
