//! Hostile scripts against the bubblewrap sandbox. Each test is skipped (with a printed reason)
//! only when bwrap is unavailable on the host. Tests that need cgroup limits build their sandbox
//! without `accept_weaker` and fail when cgroups are not usable (not root, no writable cgroup
//! controllers), unless SUNDIAL_SHELL_ALLOW_NO_CGROUPS=1 is set: then they are skipped. The
//! others accept a weaker sandbox, so they run without root too.

use std::fs;
use std::io::ErrorKind;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use sundial_shell_sandbox::{KillReason, Rlimits, SandboxConfig, SandboxError, Shell, ShellResult, ShellSandbox};

mod common;

use common::*;

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
    // And a later run starts with an empty /work (its script and the /tmp directory only).
    let o = run(&sb, bash("test -e /work/out && echo present; ls -A /work"));
    assert_eq!(text(&o.stdout), ".job.sh\n.tmp\n");
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

#[test]
fn fork_bomb_is_contained() {
    let Some(sb) = strong_with(SandboxConfig { pids_limit: 64, ..Default::default() }) else { return };
    // The marker argument shows in the command line of every shell of the bomb on the host.
    let mark = marker("forkbomb");
    let mut r = bash(":(){ :|:& };:");
    r.args = vec![mark.clone()];
    r.timeout = Duration::from_secs(3);
    let start = Instant::now();
    let o = run(&sb, r);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(10), "fork bomb run took {took:?}");
    assert!(o.limits_enforced);
    // No process of the bomb is left behind, although the top-level shell exited at once.
    let left = wait_no_processes(&mark);
    assert!(left.is_empty(), "{} bomb processes left: {:?}", left.len(), &left[..left.len().min(3)]);
    // The host is fine.
    assert!(Command::new("true").status().unwrap().success());
    // The same bomb with the top-level shell kept alive, so only the timeout can end it; the
    // host keeps working while it rages.
    let mut r = bash(":(){ :|:& };:; sleep 1008");
    r.args = vec![mark.clone()];
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
    assert!(wait_no_processes("sleep 1008").is_empty());
    let left = wait_no_processes(&mark);
    assert!(left.is_empty(), "{} bomb processes left: {:?}", left.len(), &left[..left.len().min(3)]);
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

/// MariaDB listens on 127.0.0.1:3306 on the development and CI hosts: the sandbox must not reach
/// it (nor anything else: the network namespace has only its own loopback).
#[test]
fn cannot_reach_host_database_port() {
    let Some(sb) = sandbox() else { return };
    let host_listens = TcpStream::connect_timeout(&"127.0.0.1:3306".parse().unwrap(), Duration::from_secs(1)).is_ok();
    eprintln!("host has a listener on 127.0.0.1:3306: {host_listens}");
    let o = run(
        &sb,
        bash(
            "bash -c 'echo > /dev/tcp/127.0.0.1/3306'; echo \"tcp=$?\"\n\
             bash -c 'echo > /dev/tcp/localhost/3306'; echo \"localhost=$?\"",
        ),
    );
    let out = text(&o.stdout);
    for l in ["tcp=", "localhost="] {
        let line = out.lines().find(|x| x.starts_with(l)).unwrap_or_else(|| panic!("{l} missing: {out}"));
        assert_ne!(line, format!("{l}0"), "{out}");
    }
    // bwrap brings up the new namespace's own loopback, where nothing listens: refused, although
    // the host's 127.0.0.1:3306 accepts connections.
    let err = text(&o.stderr);
    assert!(err.contains("Connection refused") || err.contains("Network is unreachable"), "{err}");
}

/// A secret in the host process's environment does not reach the script, not even through
/// /proc (bwrap itself is started with an empty environment).
#[test]
fn host_environment_secret_not_visible() {
    let Some(sb) = sandbox() else { return };
    let secret = format!("s3cr3t-{}", std::process::id());
    // SAFETY: test-only; no other thread of this test binary reads this variable.
    unsafe { std::env::set_var("SUNDIAL_TEST_SECRET", &secret) };
    assert_eq!(std::env::var("SUNDIAL_TEST_SECRET").unwrap(), secret);
    let o = run(
        &sb,
        bash(
            "echo \"var=[$SUNDIAL_TEST_SECRET]\"; env; set; \
             for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\"; done",
        ),
    );
    assert_eq!(o.result, ShellResult::Exited(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.starts_with("var=[]\n"), "{out}");
    assert!(!out.contains(&secret), "secret visible: {out}");
    assert!(!out.contains("SUNDIAL_TEST_SECRET"), "{out}");
}

/// `yes` forever, on both streams: each is capped, the run ends at the timeout, quickly.
#[test]
fn yes_flood_is_capped() {
    let Some(sb) = sandbox() else { return };
    let mark = marker("yes");
    let mut r = bash("yes \"$1-e\" >&2 & yes \"$1\"");
    r.args = vec![mark.clone()];
    r.timeout = Duration::from_secs(2);
    let start = Instant::now();
    let o = run(&sb, r);
    assert!(start.elapsed() < Duration::from_secs(6), "took {:?}", start.elapsed());
    assert_eq!(o.result, ShellResult::Killed { reason: KillReason::Timeout });
    assert_eq!(o.stdout.len(), 1024 * 1024);
    assert!(o.stdout_truncated);
    let line = format!("{mark}\n");
    let whole = o.stdout.len() / line.len() * line.len();
    assert!(o.stdout[..whole].chunks(line.len()).all(|c| c == line.as_bytes()));
    assert_eq!(o.stderr.len(), 1024 * 1024);
    assert!(o.stderr_truncated);
    assert!(text(&o.stderr).starts_with(&format!("{mark}-e\n")));
    assert!(wait_no_processes(&mark).is_empty());
}

#[test]
fn failing_script_reports_code_and_stderr() {
    let Some(sb) = sandbox() else { return };
    let o = run(&sb, bash("echo oops >&2; exit 1"));
    assert_eq!(o.result, ShellResult::Exited(1));
    assert_eq!(text(&o.stderr), "oops\n");
    assert!(o.stdout.is_empty());
    // A failing command's own message and status.
    let o = run(&sb, bash("set -e; ls /nonexistent; echo unreachable"));
    assert_eq!(o.result, ShellResult::Exited(2));
    assert!(text(&o.stderr).contains("No such file or directory"), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty());
}

/// A kill grace: a run stopped by its timeout gets SIGTERM first (its trap runs and what it
/// prints is kept), then SIGKILL if it is still there when the grace ends; either way it is
/// reported stopped for its timeout, within its timeout. Without a grace it is SIGKILLed at
/// once (the trap never runs).
#[test]
fn a_kill_grace_sends_sigterm_before_sigkill() {
    let Some(sb) = strong_with(SandboxConfig::default()) else { return };
    let script = "trap 'echo cleaned up; exit 3' TERM\necho started\nsleep 30 & wait\n";
    let mut r = bash(script);
    r.timeout = Duration::from_secs(3);
    r.kill_grace = Duration::from_secs(1);
    let start = Instant::now();
    let o = run(&sb, r);
    assert_eq!(o.result, ShellResult::Killed { reason: KillReason::Timeout });
    assert_eq!(text(&o.stdout), "started\ncleaned up\n");
    assert!(start.elapsed() < Duration::from_secs(6), "took {:?}", start.elapsed());

    // A script that ignores SIGTERM is SIGKILLed when the grace ends.
    let mut r = bash("trap '' TERM\necho started\nwhile :; do sleep 0.05; done\n");
    r.timeout = Duration::from_secs(3);
    r.kill_grace = Duration::from_secs(1);
    let start = Instant::now();
    let o = run(&sb, r);
    assert_eq!(o.result, ShellResult::Killed { reason: KillReason::Timeout });
    assert!(start.elapsed() >= Duration::from_millis(2_900), "stopped before its timeout: {:?}", start.elapsed());
    assert!(start.elapsed() < Duration::from_secs(8), "took {:?}", start.elapsed());

    // No grace: the trap never runs.
    let mut r = bash(script);
    r.timeout = Duration::from_secs(2);
    let o = run(&sb, r);
    assert_eq!(o.result, ShellResult::Killed { reason: KillReason::Timeout });
    assert_eq!(text(&o.stdout), "started\n");
}

/// A run's own memory and output limits lower the sandbox's.
#[test]
fn a_run_lowers_the_memory_and_output_limits() {
    let Some(sb) = strong_with(SandboxConfig::default()) else { return };
    let mut r = bash("head -c 10000 /dev/zero | tr '\\0' 'a'");
    r.output_cap_bytes = Some(2048);
    let o = run(&sb, r);
    assert_eq!(o.result, ShellResult::Exited(0));
    assert_eq!(o.stdout.len(), 2048);
    assert!(o.stdout_truncated);
    // 24 MiB in a shell variable: fine at the default 256 MiB, not at 16 MiB.
    let hog = "x=$(head -c 25165824 /dev/zero | tr '\\0' 'a'); echo ${#x}";
    let o = run(&sb, bash(hog));
    assert_eq!(o.result, ShellResult::Exited(0), "{}", text(&o.stderr));
    let mut r = bash(hog);
    r.memory_bytes = Some(16 << 20);
    let o = run(&sb, r);
    assert_ne!(o.result, ShellResult::Exited(0), "{}", text(&o.stdout));
}
