//! Hostile scripts against the bubblewrap sandbox. Each test is skipped (with a printed reason)
//! only when bwrap is unavailable on the host. Tests that need cgroup limits build their sandbox
//! without `accept_weaker` and fail when cgroups are not usable (not root, no writable cgroup
//! controllers), unless SUNDIAL_SHELL_ALLOW_NO_CGROUPS=1 is set: then they are skipped. The
//! others accept a weaker sandbox, so they run without root too.

use std::fs;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use sundial_shell_sandbox::{
    KillReason, Rlimits, SandboxConfig, SandboxError, Shell, ShellOutcome, ShellResult, ShellRun, ShellSandbox,
};

/// A sandbox for tests that do not need cgroup limits (`accept_weaker`).
fn sandbox_with(config: SandboxConfig) -> Option<ShellSandbox> {
    match ShellSandbox::new(SandboxConfig { accept_weaker: true, ..config }) {
        Ok(s) => Some(s),
        Err(SandboxError::Unavailable { reason }) => {
            eprintln!("SKIPPED: bwrap unavailable: {reason}");
            None
        }
        Err(e) => panic!("sandbox setup failed: {e}"),
    }
}

fn sandbox() -> Option<ShellSandbox> {
    sandbox_with(SandboxConfig::default())
}

/// A sandbox with cgroup limits (no `accept_weaker`); see the module doc for when it skips.
fn strong_with(config: SandboxConfig) -> Option<ShellSandbox> {
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

fn bash(source: &str) -> ShellRun {
    ShellRun { shell: Shell::Bash, source: source.into(), timeout: Duration::from_secs(20), ..ShellRun::default() }
}

fn run(sb: &ShellSandbox, r: ShellRun) -> ShellOutcome {
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

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Host processes whose command line contains `needle` (a pgrep -f without procps).
fn host_processes(needle: &str) -> Vec<(u32, String)> {
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

#[test]
fn hello_exit_code_args_env_stdin() {
    let Some(sb) = sandbox() else { return };
    // SAFETY: set before any thread of this test reads the environment; the name is unique.
    unsafe { std::env::set_var("SECRET_HOST_VAR", "leaked") };
    let o = run(&sb, bash("echo hi; exit 3"));
    assert_eq!(o.result, ShellResult::Exited(3));
    assert_eq!(text(&o.stdout), "hi\n");
    assert!(!o.stdout_truncated && !o.stderr_truncated);

    let mut r = bash(
        r#"echo "$1 $FOO"; echo "secret=[$SECRET_HOST_VAR]"; echo "path=$PATH home=$HOME pwd=$PWD"; read -r line; echo "stdin=$line"; echo err >&2"#,
    );
    r.args = vec!["one".into(), "two".into()];
    r.env = vec![("FOO".into(), "bar baz".into()), ("PATH".into(), "/evil".into())];
    r.stdin = b"from-stdin\n".to_vec();
    let o = run(&sb, r);
    assert_eq!(o.result, ShellResult::Exited(0));
    assert_eq!(text(&o.stdout), "one bar baz\nsecret=[]\npath=/usr/bin:/bin home=/work pwd=/work\nstdin=from-stdin\n");
    assert_eq!(text(&o.stderr), "err\n");

    // The whole environment is just what we set (+ what the shell itself adds).
    let o = run(&sb, bash("env | cut -d= -f1 | sort | tr '\\n' ' '"));
    let names: Vec<String> = text(&o.stdout).split_whitespace().map(String::from).collect();
    for n in &names {
        assert!(["HOME", "PATH", "PWD", "SHLVL", "_"].contains(&n.as_str()), "unexpected env var {n}: {names:?}");
    }

    // sh works too.
    let mut r = bash("echo \"sh:$1\"; exit 5");
    r.shell = Shell::Sh;
    r.args = vec!["x".into()];
    let o = run(&sb, r);
    assert_eq!(o.result, ShellResult::Exited(5));
    assert_eq!(text(&o.stdout), "sh:x\n");
}

#[test]
fn no_network() {
    let Some(sb) = sandbox() else { return };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let o = run(
        &sb,
        bash(&format!(
            "if ( exec 3<>/dev/tcp/127.0.0.1/{port} ) 2>/dev/null; then echo CONNECTED; else echo FAILED; fi\n\
             echo ---\ncat /proc/net/dev 2>/dev/null\necho ---\nls /sys/class/net 2>&1 | head -3"
        )),
    );
    let out = text(&o.stdout);
    assert!(out.starts_with("FAILED\n"), "connect must fail: {out}");
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the listener got a connection: {other:?}"),
    }
    let dev = out.split("---\n").nth(1).unwrap();
    let ifaces: Vec<&str> =
        dev.lines().skip(2).filter_map(|l| l.split(':').next()).map(str::trim).filter(|s| !s.is_empty()).collect();
    assert!(ifaces.iter().all(|i| *i == "lo"), "interfaces visible: {ifaces:?}");
}

#[test]
fn no_host_files() {
    let temp_root = tempfile::tempdir().unwrap();
    let Some(sb) = sandbox_with(SandboxConfig { temp_root: Some(temp_root.path().into()), ..Default::default() })
    else {
        return;
    };
    // A secret in the host's /tmp must not be visible (the sandbox gets a fresh tmpfs /tmp).
    let secret = tempfile::NamedTempFile::new_in("/tmp").unwrap();
    fs::write(secret.path(), "host-secret").unwrap();
    let secret_path = secret.path().display().to_string();
    let o = run(
        &sb,
        bash(&format!(
            "cat /root/.bashrc; echo \"root=$?\"\n\
             ls /home; echo \"home=$?\"\n\
             cat /etc/shadow; echo \"shadow=$?\"\n\
             cat /etc/passwd; echo \"passwd=$?\"\n\
             cat {secret_path}; echo \"tmpsecret=$?\"\n\
             echo x > /usr/x; echo \"usr=$?\"\n\
             echo x > /etc/x; echo \"etc=$?\"\n\
             echo data > /work/out && cat /work/out; echo \"work=$?\"\n\
             echo t > /tmp/t && cat /tmp/t; echo \"tmp=$?\"\n\
             ls /"
        )),
    );
    let out = text(&o.stdout);
    assert!(!out.contains("host-secret"), "{out}");
    for failing in ["root", "home", "shadow", "passwd", "tmpsecret", "usr", "etc"] {
        let line = out.lines().find(|l| l.starts_with(&format!("{failing}="))).unwrap();
        assert_ne!(line, format!("{failing}=0"), "{failing} must fail: {out}");
    }
    assert!(out.contains("data\nwork=0\n"), "{out}");
    assert!(out.contains("t\ntmp=0\n"), "{out}");
    let root_listing: Vec<&str> = out.lines().skip_while(|l| !l.starts_with("tmp=")).skip(1).collect();
    for forbidden in ["home", "root", "sys", "boot", "var", "srv", "opt"] {
        assert!(!root_listing.contains(&forbidden), "/{forbidden} visible: {root_listing:?}");
    }
    // The per-run dir (and /work/out with it) is gone after the run.
    let left: Vec<_> = fs::read_dir(temp_root.path()).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "run dirs left behind: {left:?}");
    // And a later run starts with an empty /work.
    let o = run(&sb, bash("test -e /work/out && echo present; ls -A /work"));
    assert_eq!(text(&o.stdout), ".job.sh\n");
    // Even a run dir the script made hard to delete is removed.
    let o = run(&sb, bash("mkdir -p /work/d/e && echo x > /work/d/e/f && chmod 000 /work/d/e /work/d; echo ok"));
    assert_eq!(text(&o.stdout), "ok\n");
    assert!(fs::read_dir(temp_root.path()).unwrap().next().is_none());
}

#[test]
fn cannot_see_host_processes() {
    let Some(sb) = sandbox() else { return };
    let o = run(&sb, bash("ls /proc | grep -c '^[0-9]'; ls /proc | grep '^[0-9]' | tr '\\n' ' '"));
    let out = text(&o.stdout);
    let count: usize = out.lines().next().unwrap().trim().parse().unwrap();
    // bwrap's init, bash, the pipeline (ls, grep): the host has far more.
    assert!(count <= 6, "sandbox sees {count} processes: {out}");
    let host = fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .count();
    assert!(host > count, "host has {host} processes, sandbox {count}");
    // Our own pid (host pid namespace) is not visible either.
    let o = run(&sb, bash(&format!("test -e /proc/{}/cmdline && echo VISIBLE || echo hidden", std::process::id())));
    // (pid numbers could collide with a sandbox pid only if ours were tiny)
    if std::process::id() > 10 {
        assert_eq!(text(&o.stdout), "hidden\n");
    }
}

#[test]
fn timeout_kills_everything() {
    let Some(sb) = sandbox() else { return };
    let mut r = bash("sleep 1001 & sleep 1002 & (sleep 1003; echo never) & setsid sleep 1004 & echo started; wait");
    r.timeout = Duration::from_millis(500);
    let start = Instant::now();
    let o = run(&sb, r);
    let took = start.elapsed();
    assert_eq!(o.result, ShellResult::Killed { reason: KillReason::Timeout });
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(o.elapsed >= Duration::from_millis(500));
    assert_eq!(text(&o.stdout), "started\n");
    // Nothing survives: no `sleep 100x` anywhere on the host.
    thread_sleep(200);
    for n in ["sleep 1001", "sleep 1002", "sleep 1003", "sleep 1004"] {
        let left = host_processes(n);
        assert!(left.is_empty(), "survivors: {left:?}");
    }
    // Also with a plain foreground sleep.
    let mut r = bash("sleep 1005");
    r.timeout = Duration::from_millis(300);
    let o = run(&sb, r);
    assert_eq!(o.result, ShellResult::Killed { reason: KillReason::Timeout });
    thread_sleep(200);
    assert!(host_processes("sleep 1005").is_empty());

    // Without cgroups (nothing to sweep), killing bwrap alone must take the namespace down.
    let no_cg = tempfile::tempdir().unwrap();
    let Some(sb) = sandbox_with(SandboxConfig { cgroup_root: no_cg.path().into(), ..Default::default() }) else {
        return;
    };
    let mut r = bash("sleep 1009 & (setsid sleep 1010 &); wait");
    r.timeout = Duration::from_millis(300);
    let o = run(&sb, r);
    assert!(!o.limits_enforced);
    assert_eq!(o.result, ShellResult::Killed { reason: KillReason::Timeout });
    thread_sleep(300);
    assert!(host_processes("sleep 1009").is_empty(), "{:?}", host_processes("sleep 1009"));
    assert!(host_processes("sleep 1010").is_empty(), "{:?}", host_processes("sleep 1010"));
}

fn thread_sleep(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}

#[test]
fn fork_bomb_is_contained() {
    let Some(sb) = strong_with(SandboxConfig { pids_limit: 64, ..Default::default() }) else { return };
    let mut r = bash(":(){ :|:& };:");
    r.timeout = Duration::from_secs(3);
    let start = Instant::now();
    let o = run(&sb, r);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(10), "fork bomb run took {took:?}");
    assert!(o.limits_enforced);
    // The host is fine.
    assert!(Command::new("true").status().unwrap().success());
    // The same bomb with the top-level shell kept alive, so only the timeout can end it; the
    // host keeps working while it rages.
    let mut r = bash(":(){ :|:& };:; sleep 1008");
    r.timeout = Duration::from_secs(3);
    let start = Instant::now();
    let bomb = std::thread::scope(|s| {
        let h = s.spawn(|| run(&sb, r));
        thread_sleep(1500);
        assert!(Command::new("true").status().unwrap().success(), "host cannot spawn during the bomb");
        h.join().unwrap()
    });
    let took = start.elapsed();
    assert_eq!(bomb.result, ShellResult::Killed { reason: KillReason::Timeout });
    assert!(took < Duration::from_secs(10), "fork bomb run took {took:?}");
    assert!(text(&bomb.stderr).contains("fork"), "the pids limit did not bite: {}", text(&bomb.stderr));
    thread_sleep(200);
    assert!(host_processes("sleep 1008").is_empty());
    assert!(Command::new("true").status().unwrap().success());
    // A following run works normally.
    let o = run(&sb, bash("echo alive"));
    assert_eq!(text(&o.stdout), "alive\n");
}

#[test]
fn pids_limit_caps_processes() {
    let Some(sb) = strong_with(SandboxConfig { pids_limit: 12, ..Default::default() }) else { return };
    let mut r = bash("for i in $(seq 1 30); do sleep 1006 & done; echo spawned-all");
    r.timeout = Duration::from_secs(3);
    let o = run(&sb, r);
    // bash retries the failing fork (EAGAIN) and reports it.
    assert!(!text(&o.stdout).contains("spawned-all") || text(&o.stderr).contains("fork"), "{o:?}");
    assert!(text(&o.stderr).contains("fork"), "no fork failure seen: {}", text(&o.stderr));
    thread_sleep(200);
    assert!(host_processes("sleep 1006").is_empty());
}

#[test]
fn memory_limit_kills() {
    // The cgroup layer alone: no RLIMIT_AS, which would make allocations fail before the OOM
    // killer fires (see `memory_bomb_with_defaults`).
    let Some(sb) = strong_with(SandboxConfig {
        memory_limit_bytes: 64 * 1024 * 1024,
        rlimits: Rlimits { address_space_bytes: Some(u64::MAX), ..Rlimits::default() },
        ..Default::default()
    }) else {
        return;
    };
    let o = run(&sb, bash("head -c 600M /dev/zero | tail"));
    // `tail` is OOM-killed, so the script's status is 137 and the memory cgroup saw the OOM kill.
    assert!(o.limits_enforced);
    assert!(o.oom_killed);
    assert!(
        matches!(o.result, ShellResult::Killed { reason: KillReason::Memory | KillReason::Signal(9) }),
        "{:?}",
        o.result
    );
    // A script that survives the OOM kill of its child and exits on its own: Exited, but flagged.
    let o = run(&sb, bash("head -c 600M /dev/zero | tail; echo \"tail=$?\"; exit 1"));
    assert_eq!(o.result, ShellResult::Exited(1));
    assert_eq!(text(&o.stdout), "tail=137\n");
    assert!(o.oom_killed);
    // Growing the shell itself (bash string doubling) also dies.
    let o = run(&sb, bash("s=xxxxxxxxxxxxxxxx; while true; do s=\"$s$s\"; done"));
    assert!(
        matches!(o.result, ShellResult::Killed { reason: KillReason::Memory | KillReason::Signal(9) }),
        "{:?}",
        o.result
    );
    // Under the limit is fine.
    let o = run(&sb, bash("head -c 16M /dev/zero | tail -c 5 | wc -c"));
    assert_eq!(o.result, ShellResult::Exited(0));
    assert_eq!(text(&o.stdout).trim(), "5");
    assert!(!o.oom_killed);
}

#[test]
fn output_is_capped() {
    let Some(sb) = sandbox() else { return };
    let start = Instant::now();
    let o = run(&sb, bash("yes | head -c 3000000; yes e | head -c 2000000 >&2; echo done >&2"));
    assert!(start.elapsed() < Duration::from_secs(10), "took {:?}", start.elapsed());
    assert_eq!(o.result, ShellResult::Exited(0));
    assert_eq!(o.stdout.len(), 1024 * 1024);
    assert!(o.stdout_truncated);
    assert!(o.stdout.chunks(2).all(|c| c == b"y\n"));
    assert_eq!(o.stderr.len(), 1024 * 1024);
    assert!(o.stderr_truncated);

    // Small output is not flagged.
    let o = run(&sb, bash("echo small"));
    assert!(!o.stdout_truncated && !o.stderr_truncated);

    // A custom cap.
    let Some(sb) = sandbox_with(SandboxConfig { output_cap_bytes: 10, ..Default::default() }) else { return };
    let o = run(&sb, bash("echo 0123456789abcdef"));
    assert_eq!(text(&o.stdout), "0123456789");
    assert!(o.stdout_truncated);
}

#[test]
fn no_privilege() {
    let Some(sb) = sandbox() else { return };
    let o = run(
        &sb,
        bash(
            "id -u\n\
             mkdir -p /tmp/m && mount -t tmpfs x /tmp/m 2>/dev/null; echo \"mount=$?\"\n\
             mount -t tmpfs x /mnt 2>/dev/null; echo \"mnt=$?\"\n\
             grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status\n\
             unshare -U -r true 2>/dev/null; echo \"userns=$?\"\n\
             echo 1 > /proc/sys/kernel/hostname 2>/dev/null; echo \"sysctl=$?\"\n\
             v=$(cat /proc/sys/kernel/printk_ratelimit); echo $v > /proc/sys/kernel/printk_ratelimit 2>/dev/null; echo \"hostsysctl=$?\"\n\
             hostname",
        ),
    );
    let out = text(&o.stdout);
    let uid: u32 = out.lines().next().unwrap().trim().parse().unwrap();
    assert_ne!(uid, 0, "runs as root inside");
    for l in ["mount=", "mnt=", "userns=", "sysctl=", "hostsysctl="] {
        let line = out.lines().find(|x| x.starts_with(l)).unwrap();
        assert_ne!(line, format!("{l}0"), "{out}");
    }
    for cap in out.lines().filter(|l| l.starts_with("Cap")) {
        assert!(cap.ends_with("0000000000000000"), "capabilities present: {cap}");
    }
    assert!(out.ends_with("sundial\n"), "{out}");
}

#[test]
fn missing_bwrap_is_unavailable() {
    let err = ShellSandbox::new(SandboxConfig {
        bwrap_path: Some(Path::new("/nonexistent/bwrap").into()),
        ..Default::default()
    })
    .unwrap_err();
    assert!(matches!(err, SandboxError::Unavailable { .. }), "{err}");
    // A bwrap that does not work (here: `false`) is unavailable too.
    let err =
        ShellSandbox::new(SandboxConfig { bwrap_path: Some(Path::new("/bin/false").into()), ..Default::default() })
            .unwrap_err();
    assert!(matches!(err, SandboxError::Unavailable { .. }), "{err}");
}

#[test]
fn unreachable_temp_root_is_unavailable() {
    if sandbox().is_none() {
        return;
    }
    // Only meaningful when bwrap runs as another uid than ours (we are root).
    // SAFETY: plain syscall.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: not root, bwrap runs as our own uid");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let err = ShellSandbox::new(SandboxConfig {
        temp_root: Some(dir.path().into()),
        accept_weaker: true,
        ..Default::default()
    })
    .unwrap_err();
    assert!(matches!(err, SandboxError::Unavailable { .. }), "{err}");
    eprintln!("{err}");
}

#[test]
fn unwritable_cgroup_root_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    // Refused without accept_weaker, with the reason.
    match ShellSandbox::new(SandboxConfig { cgroup_root: dir.path().into(), ..Default::default() }) {
        Err(SandboxError::TooWeak { level, reason }) => {
            assert_eq!(level.as_str(), "namespaces_only");
            assert!(reason.contains("cgroup"), "{reason}");
        }
        Err(SandboxError::Unavailable { reason }) => {
            eprintln!("SKIPPED: bwrap unavailable: {reason}");
            return;
        }
        other => panic!("expected TooWeak: {other:?}"),
    }
    let Some(sb) = sandbox_with(SandboxConfig { cgroup_root: dir.path().into(), ..Default::default() }) else {
        return;
    };
    assert!(!sb.limits_enforced());
    assert!(sb.limits_skip_reason().is_some());
    let o = run(&sb, bash("echo ok"));
    assert!(!o.limits_enforced);
    assert_eq!(text(&o.stdout), "ok\n");
}
