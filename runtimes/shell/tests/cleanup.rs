//! Cleanup after a run: no process and no cgroup directory is left. In a binary of its own so
//! that no other run of this process is in flight while it looks for leftovers.

use std::fs;
use std::path::Path;
use std::time::Duration;

use sundial_shell_sandbox::{SandboxConfig, SandboxError, Shell, ShellResult, ShellRun, ShellSandbox};

fn leftover_cgroups(root: &Path) -> Vec<std::path::PathBuf> {
    let prefix = format!("sundial-{}-", std::process::id());
    // cgroup v1 controllers, and the cgroup v2 parent of the run groups.
    ["memory", "pids", "cpu", "sundial-shell"]
        .iter()
        .flat_map(|c| fs::read_dir(root.join(c)).into_iter().flatten().flatten())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

fn sleeping(needle: &str) -> bool {
    fs::read_dir("/proc").unwrap().flatten().any(|e| {
        fs::read(e.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " ").contains(needle))
            .unwrap_or(false)
    })
}

#[test]
fn no_processes_or_cgroups_left() {
    let sb = match ShellSandbox::new(SandboxConfig::default()) {
        Ok(s) => s,
        Err(SandboxError::Unavailable { reason }) => {
            eprintln!("SKIPPED: bwrap unavailable: {reason}");
            return;
        }
        Err(SandboxError::TooWeak { level, reason })
            if std::env::var("SUNDIAL_SHELL_ALLOW_NO_CGROUPS").as_deref() == Ok("1") =>
        {
            eprintln!("SKIPPED: isolation only {level}: {reason}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    for (source, timeout) in [("sleep 1017 & echo started", 10_000), ("sleep 1018 & sleep 1019", 300)] {
        let o = sb
            .run(ShellRun {
                shell: Shell::Bash,
                source: source.into(),
                timeout: Duration::from_millis(timeout),
                ..ShellRun::default()
            })
            .unwrap();
        eprintln!("{:?} {:?}", o.result, String::from_utf8_lossy(&o.stdout));
        if timeout == 10_000 {
            assert_eq!(o.result, ShellResult::Exited(0));
        }
        std::thread::sleep(Duration::from_millis(100));
        for n in ["sleep 1017", "sleep 1018", "sleep 1019"] {
            assert!(!sleeping(n), "{n} survived");
        }
        let left = leftover_cgroups(&sb.config().cgroup_root);
        assert!(left.is_empty(), "cgroups left: {left:?}");
    }
}
