//! The isolation report and the refusal of weaker isolation. Skipped (with the reason printed)
//! only where bwrap cannot run.

use std::path::Path;

use sundial_shell_sandbox::{CgroupMode, IsolationLevel, SandboxConfig, SandboxError, ShellResult, ShellSandbox};

mod common;

use common::*;

fn is_root() -> bool {
    // SAFETY: plain syscall.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn report_of_the_default_sandbox() {
    let Some(sb) = strong() else { return };
    let iso = sb.isolation();
    eprintln!("{iso}");
    eprintln!("{iso:#?}");
    assert_eq!(iso.level, IsolationLevel::Strong);
    assert_eq!(iso.level.as_str(), "strong");
    assert!(iso.bwrap_path.ends_with("bwrap"));
    let version = iso.bwrap_version.as_deref().expect("bwrap --version");
    assert!(version.chars().next().unwrap().is_ascii_digit(), "{version}");
    assert!(iso.user_namespace && iso.network_namespace);
    assert!(matches!(iso.cgroup, CgroupMode::V1 | CgroupMode::V2), "{:?}", iso.cgroup);
    assert!(iso.controllers.starts_with(&["memory".to_string(), "pids".to_string()]), "{:?}", iso.controllers);
    assert_eq!(iso.rlimits.cpu_seconds, None);
    assert_eq!(iso.rlimits.address_space_bytes, Some(512 * 1024 * 1024));
    assert_eq!(iso.rlimits.file_size_bytes, 8 * 1024 * 1024);
    assert_eq!(iso.rlimits.open_files, 256);
    assert_eq!(iso.rlimits.core_bytes, 0);
    assert_eq!(iso.sandbox_uid, 65534);
    if is_root() {
        assert_eq!((iso.runs_as_uid, iso.runs_as_gid), (65534, 65534));
    }
    let line = iso.to_string();
    assert!(line.starts_with("strong: bwrap "), "{line}");
    assert!(line.contains("fsize=8192KiB nofile=256 core=0"), "{line}");
    // On this kind of host (cgroup v1 with a cpu hierarchy) the cpu controller is used.
    if Path::new("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists() && is_root() {
        assert_eq!(iso.cgroup, CgroupMode::V1);
        assert_eq!(iso.controllers, vec!["memory", "pids", "cpu"]);
    }
    // cpu_millis 0: no cpu controller.
    let Some(sb) = strong_with(SandboxConfig { cpu_millis: 0, ..Default::default() }) else { return };
    assert_eq!(sb.isolation().controllers, vec!["memory", "pids"]);
}

#[test]
fn no_cgroups_is_refused_unless_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let config = SandboxConfig { cgroup_root: dir.path().into(), ..Default::default() };
    match ShellSandbox::new(config.clone()) {
        Err(SandboxError::TooWeak { level, reason }) => {
            assert_eq!(level, IsolationLevel::NamespacesOnly);
            assert!(reason.contains("no cgroup limits"), "{reason}");
            let msg = SandboxError::TooWeak { level, reason }.to_string();
            assert!(msg.contains("`namespaces_only`") && msg.contains("accept_weaker"), "{msg}");
        }
        Err(SandboxError::Unavailable { reason }) => {
            eprintln!("SKIPPED: bwrap unavailable: {reason}");
            return;
        }
        other => panic!("expected TooWeak: {other:?}"),
    }
    let Some(sb) = sandbox_with(config) else { return };
    let iso = sb.isolation();
    eprintln!("{iso}");
    assert_eq!(iso.level, IsolationLevel::NamespacesOnly);
    assert!(matches!(&iso.cgroup, CgroupMode::None { reason } if reason.contains(&dir.path().display().to_string())));
    assert!(iso.controllers.is_empty());
    assert!(iso.to_string().starts_with("namespaces_only: "));
    // Still the full namespace sandbox, and the rlimits.
    let o = run(&sb, bash("id -u; ulimit -f"));
    assert_eq!(text(&o.stdout), "65534\n8192\n");
    assert!(!o.limits_enforced);
}

/// Started as root with `host_ids_when_root: None`, bwrap would run as host root: refused unless
/// accepted, and reported.
#[test]
fn host_root_is_refused_unless_accepted() {
    if !is_root() {
        eprintln!("SKIPPED: not root");
        return;
    }
    let config = SandboxConfig { host_ids_when_root: None, ..Default::default() };
    match ShellSandbox::new(config.clone()) {
        Err(SandboxError::TooWeak { level, reason }) => {
            assert_eq!(level, IsolationLevel::HostRoot);
            assert!(reason.contains("host root"), "{reason}");
        }
        Err(SandboxError::Unavailable { reason }) => {
            eprintln!("SKIPPED: bwrap unavailable: {reason}");
            return;
        }
        other => panic!("expected TooWeak: {other:?}"),
    }
    let Some(sb) = sandbox_with(config) else { return };
    assert_eq!(sb.isolation().level, IsolationLevel::HostRoot);
    assert_eq!(sb.isolation().runs_as_uid, 0);
    // The namespace maps to host root (the first uid_map line: inside, outside, count).
    let o = run(&sb, bash("cat /proc/self/uid_map"));
    let map: Vec<String> = text(&o.stdout).split_whitespace().map(String::from).collect();
    assert_eq!(map, ["65534", "0", "1"]);
}

/// A cgroup v2 hierarchy is detected by its `cgroup.controllers`. On a hybrid host (cgroup v1
/// controllers, an empty v2 tree at /sys/fs/cgroup/unified) it has no controllers: refused, with
/// the reason. On a real v2 host the sandbox works with it.
#[test]
fn cgroup_v2_detection() {
    let unified = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.join("cgroup.controllers").exists());
    let Some(root) = unified else {
        eprintln!("SKIPPED: no cgroup v2 hierarchy on this host");
        return;
    };
    match ShellSandbox::new(SandboxConfig { cgroup_root: root.into(), ..Default::default() }) {
        Ok(sb) => {
            eprintln!("{}", sb.isolation());
            assert_eq!(sb.isolation().cgroup, CgroupMode::V2);
            assert_eq!(sb.isolation().level, IsolationLevel::Strong);
            let o = run(&sb, bash("cat /proc/self/cgroup"));
            assert_eq!(o.result, ShellResult::Exited(0));
            assert!(o.limits_enforced);
        }
        Err(SandboxError::TooWeak { level, reason }) => {
            eprintln!("{reason}");
            assert_eq!(level, IsolationLevel::NamespacesOnly);
            assert!(reason.contains("cgroup v2"), "{reason}");
        }
        Err(SandboxError::Unavailable { reason }) => eprintln!("SKIPPED: bwrap unavailable: {reason}"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn unavailable_without_working_bwrap() {
    for bwrap in ["/nonexistent/bwrap", "/bin/false", "/bin/true"] {
        let err = ShellSandbox::new(SandboxConfig {
            bwrap_path: Some(bwrap.into()),
            accept_weaker: true,
            ..Default::default()
        })
        .unwrap_err();
        eprintln!("{bwrap}: {err}");
        assert!(matches!(err, SandboxError::Unavailable { .. }), "{bwrap}: {err}");
    }
}

/// An address-space limit too small for bwrap itself is found by the trial run at start-up
/// (not by the first job), and the smallest workable one is far below the default.
#[test]
fn address_space_too_small_for_bwrap_is_unavailable() {
    if sandbox().is_none() {
        return;
    }
    let with_as = |bytes: u64| {
        ShellSandbox::new(SandboxConfig {
            rlimits: sundial_shell_sandbox::Rlimits { address_space_bytes: Some(bytes), ..Default::default() },
            accept_weaker: true,
            ..Default::default()
        })
    };
    let err = with_as(1024 * 1024).unwrap_err();
    eprintln!("{err}");
    assert!(matches!(err, SandboxError::Unavailable { ref reason } if reason.contains("trial sandboxed run")), "{err}");
    let sb = with_as(64 * 1024 * 1024).expect("bwrap and sh start within 64 MiB of address space");
    assert_eq!(text(&run(&sb, bash("ulimit -v")).stdout), "65536\n");
}
