//! The per-process rlimits, the cgroup CPU quota and the process group, against hostile scripts.
//! Skipped (with the reason printed) only where bwrap cannot run; see `hostile.rs` for the
//! cgroup-dependent tests and SUNDIAL_SHELL_ALLOW_NO_CGROUPS.

use std::fs;
use std::time::{Duration, Instant};

use sundial_shell_sandbox::{KillReason, Rlimits, SandboxConfig, ShellResult};

mod common;

use common::*;

#[test]
fn busy_loop_stopped_by_timeout() {
    let Some(sb) = sandbox() else { return };
    let mut r = bash("while :; do :; done");
    r.timeout = Duration::from_secs(1);
    let start = Instant::now();
    let o = run(&sb, r);
    assert_eq!(o.result, ShellResult::Killed { reason: KillReason::Timeout });
    assert!(start.elapsed() < Duration::from_secs(5), "took {:?}", start.elapsed());
}

/// With a long timeout, RLIMIT_CPU ends a busy loop: SIGXCPU at the soft limit (the shell
/// reports 128+24), SIGKILL one second later if the script ignores SIGXCPU.
#[test]
fn busy_loop_stopped_by_cpu_rlimit() {
    let Some(sb) = sandbox() else { return };
    let mut r = bash("while :; do :; done");
    r.timeout = Duration::from_secs(60);
    r.cpu_seconds = Some(1);
    let start = Instant::now();
    let o = run(&sb, r);
    assert_eq!(o.result, ShellResult::Signalled(libc::SIGXCPU), "{}", text(&o.stderr));
    // One CPU second; wall time more only if the host is busy.
    assert!(start.elapsed() < Duration::from_secs(30), "took {:?}", start.elapsed());

    let mut r = bash("trap '' XCPU; while :; do :; done");
    r.timeout = Duration::from_secs(60);
    r.cpu_seconds = Some(1);
    let start = Instant::now();
    let o = run(&sb, r);
    assert_eq!(o.result, ShellResult::Signalled(libc::SIGKILL), "{}", text(&o.stderr));
    assert!(start.elapsed() < Duration::from_secs(30), "took {:?}", start.elapsed());

    // The limit from the config applies the same way, and is per process: a child gets its own.
    let Some(sb) = sandbox_with(SandboxConfig {
        rlimits: Rlimits { cpu_seconds: Some(1), ..Rlimits::default() },
        ..Default::default()
    }) else {
        return;
    };
    let mut r = bash("( while :; do :; done ); echo \"child=$?\"");
    r.timeout = Duration::from_secs(60);
    let o = run(&sb, r);
    assert_eq!(o.result, ShellResult::Exited(0));
    assert_eq!(text(&o.stdout), format!("child={}\n", 128 + libc::SIGXCPU));
}

/// The cgroup `cpu` quota caps the run as a whole: at 250 thousandths of a CPU, a busy loop
/// gets about a quarter of a CPU.
#[test]
fn cpu_quota_caps_the_run() {
    let Some(sb) = strong_with(SandboxConfig { cpu_millis: 250, ..Default::default() }) else { return };
    if !sb.isolation().controllers.iter().any(|c| c == "cpu") {
        eprintln!("SKIPPED: no cpu controller: {}", sb.isolation());
        return;
    }
    // Two busy children for 2 s of wall time: unconfined that is up to 4 CPU seconds on two
    // cores; with the quota about 0.5. `times` prints the reaped children's user and system time.
    let o = run(
        &sb,
        bash(
            "( while :; do :; done ) & a=$!; ( while :; do :; done ) & b=$!\n\
             sleep 2; kill $a $b; wait\n\
             times > /tmp/times; tail -1 /tmp/times",
        ),
    );
    assert_eq!(o.result, ShellResult::Exited(0), "{}", text(&o.stderr));
    let cpu = parse_times(text(&o.stdout).trim());
    eprintln!("children used {cpu:?} of CPU in 2 s at cpu_millis=250");
    assert!(cpu < Duration::from_millis(1000), "quota not applied: {cpu:?}");
    assert!(cpu > Duration::from_millis(100), "the loops did not run: {cpu:?}");
}

/// `0m1.234s 0m0.010s` -> 1.244 s.
fn parse_times(line: &str) -> Duration {
    line.split_whitespace()
        .map(|t| {
            let (m, s) = t.trim_end_matches('s').split_once('m').unwrap();
            Duration::from_secs_f64(m.parse::<f64>().unwrap() * 60.0 + s.parse::<f64>().unwrap())
        })
        .sum()
}

/// RLIMIT_FSIZE (8 MiB by default): a 10 MB write in /work or /tmp is stopped there, by
/// SIGXFSZ, or by EFBIG when the script ignores the signal.
#[test]
fn file_size_limit_stops_big_writes() {
    let Some(sb) = sandbox() else { return };
    let o = run(
        &sb,
        bash(
            "head -c 10000000 /dev/zero > /work/big; echo \"work=$? $(stat -c %s /work/big)\"\n\
             head -c 10000000 /dev/zero > /tmp/big; echo \"tmp=$? $(stat -c %s /tmp/big)\"\n\
             trap '' XFSZ\n\
             head -c 10000000 /dev/zero > /work/big2; echo \"ignored=$? $(stat -c %s /work/big2)\"\n\
             head -c 8388608 /dev/zero > /work/ok; echo \"ok=$? $(stat -c %s /work/ok)\"",
        ),
    );
    let out = text(&o.stdout);
    let limit = 8 * 1024 * 1024;
    assert!(out.contains(&format!("work={} {limit}\n", 128 + libc::SIGXFSZ)), "{out}");
    assert!(out.contains(&format!("tmp={} {limit}\n", 128 + libc::SIGXFSZ)), "{out}");
    assert!(out.contains(&format!("ignored=1 {limit}\n")), "{out}");
    assert!(text(&o.stderr).contains("File too large"), "{}", text(&o.stderr));
    assert!(out.contains(&format!("ok=0 {limit}\n")), "{out}");
}

/// With the defaults (cgroup memory limit and RLIMIT_AS at twice it), memory bombs end quickly
/// and unsuccessfully.
#[test]
fn memory_bomb_with_defaults() {
    let Some(sb) = strong() else { return };
    for bomb in ["s=xxxxxxxxxxxxxxxx; while true; do s=\"$s$s\"; done", "head -c 2000M /dev/zero | tail"] {
        let mut r = bash(bomb);
        r.timeout = Duration::from_secs(30);
        let start = Instant::now();
        let o = run(&sb, r);
        assert_ne!(o.result, ShellResult::Exited(0), "{bomb}");
        assert_ne!(o.result, ShellResult::Killed { reason: KillReason::Timeout }, "{bomb}");
        assert!(start.elapsed() < Duration::from_secs(25), "{bomb} took {:?}", start.elapsed());
    }
    assert_eq!(text(&run(&sb, bash("echo alive")).stdout), "alive\n");
}

/// Without cgroups, RLIMIT_AS alone stops a memory bomb (an allocation fails).
#[test]
fn address_space_limit_without_cgroups() {
    let no_cg = tempfile::tempdir().unwrap();
    let Some(sb) = sandbox_with(SandboxConfig {
        cgroup_root: no_cg.path().into(),
        memory_limit_bytes: 64 * 1024 * 1024,
        ..Default::default()
    }) else {
        return;
    };
    assert!(!sb.limits_enforced());
    let o = run(&sb, bash("s=xxxxxxxxxxxxxxxx; while true; do s=\"$s$s\"; done"));
    assert_ne!(o.result, ShellResult::Exited(0));
    assert!(text(&o.stderr).contains("cannot allocate"), "{}", text(&o.stderr));
    let o = run(&sb, bash("head -c 600M /dev/zero | tail; echo \"tail=$?\""));
    assert_eq!(text(&o.stdout), "tail=1\n", "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("memory exhausted"), "{}", text(&o.stderr));
    // Well under the limit works.
    let o = run(&sb, bash("head -c 16M /dev/zero | tail -c 5 | wc -c"));
    assert_eq!(text(&o.stdout).trim(), "5");
}

/// The limits as the script sees them (`ulimit`), defaults and overrides; and they cannot be
/// raised.
#[test]
fn rlimits_seen_inside() {
    let Some(sb) = sandbox() else { return };
    let script = "echo \"t=$(ulimit -t) Ht=$(ulimit -Ht) v=$(ulimit -v) f=$(ulimit -f) n=$(ulimit -n) c=$(ulimit -c)\"\n\
                  ulimit -Hn 1024 2>/dev/null; echo \"raise=$?\"";
    let mut r = bash(script);
    r.timeout = Duration::from_secs(10);
    let o = run(&sb, r);
    // cpu: ceil(10 s) + 1; as: 2 x 256 MiB in KiB; fsize: 8 MiB in 1024-byte blocks.
    assert_eq!(text(&o.stdout), "t=11 Ht=12 v=524288 f=8192 n=256 c=0\nraise=1\n");

    let mut r = bash(script);
    r.timeout = Duration::from_millis(2500);
    let o = run(&sb, r.clone());
    assert!(text(&o.stdout).starts_with("t=4 Ht=5 "), "{}", text(&o.stdout));
    r.cpu_seconds = Some(7);
    let o = run(&sb, r);
    assert!(text(&o.stdout).starts_with("t=7 Ht=8 "), "{}", text(&o.stdout));

    let Some(sb) = sandbox_with(SandboxConfig {
        rlimits: Rlimits {
            cpu_seconds: Some(3),
            address_space_bytes: Some(u64::MAX),
            file_size_bytes: 1024 * 1024,
            open_files: 64,
        },
        ..Default::default()
    }) else {
        return;
    };
    let o = run(&sb, bash(script));
    assert_eq!(text(&o.stdout), "t=3 Ht=4 v=unlimited f=1024 n=64 c=0\nraise=1\n");
    // A script cannot open more files than that.
    let o = run(
        &sb,
        bash("for i in $(seq 10 80); do eval \"exec $i</dev/null\" || { echo \"failed at $i\"; exit 0; }; done"),
    );
    assert_eq!(text(&o.stdout), "failed at 64\n", "{} {}", text(&o.stdout), text(&o.stderr));
}

/// bwrap runs in its own session and process group (it is their leader).
#[test]
fn own_session_and_process_group() {
    let Some(sb) = sandbox() else { return };
    let mark = marker("session");
    let mut r = bash("sleep 1");
    r.args = vec![mark.clone()];
    std::thread::scope(|s| {
        let h = s.spawn(|| run(&sb, r));
        // Find bwrap on the host by the marker in its command line.
        let deadline = Instant::now() + Duration::from_secs(5);
        let bwrap = loop {
            let found = host_processes(&mark)
                .into_iter()
                .find(|(_, cmd)| cmd.split_whitespace().next().is_some_and(|c| c.ends_with("bwrap")));
            if let Some(p) = found {
                break p.0;
            }
            assert!(Instant::now() < deadline, "bwrap not found");
            thread_sleep(10);
        };
        let stat = fs::read_to_string(format!("/proc/{bwrap}/stat")).unwrap();
        // pid (comm) state ppid pgrp session ...
        let fields: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split_whitespace().collect();
        let (pgrp, session): (u32, u32) = (fields[2].parse().unwrap(), fields[3].parse().unwrap());
        assert_eq!((pgrp, session), (bwrap, bwrap), "{stat}");
        // SAFETY: plain syscalls.
        let (our_pgrp, our_sid) = unsafe { (libc::getpgrp() as u32, libc::getsid(0) as u32) };
        assert_ne!(pgrp, our_pgrp);
        assert_ne!(session, our_sid);
        let o = h.join().unwrap();
        assert_eq!(o.result, ShellResult::Exited(0));
    });
    assert!(wait_no_processes(&mark).is_empty());
}

/// The disk quota holds for the run as a whole (`/work` and `/tmp` together), not per file:
/// eight files of 1 MiB each (every one far below the file-size rlimit) against a quota of
/// 4 MiB. The writes past it fail with ENOSPC and the outcome says the disk was full.
#[test]
fn disk_quota_holds_for_the_whole_run() {
    let Some(sb) = sandbox_with(SandboxConfig { disk_bytes: 4 << 20, ..Default::default() }) else { return };
    let o = run(
        &sb,
        bash(
            "for i in 1 2 3 4 5 6 7 8; do\n\
               if [ $((i % 2)) = 0 ]; then d=/tmp; else d=/work; fi\n\
               head -c 1048576 /dev/zero > $d/f$i || echo \"failed=$i\"\n\
             done\n\
             echo \"total=$(cat /work/f* /tmp/f* 2>/dev/null | wc -c)\"",
        ),
    );
    let out = text(&o.stdout);
    assert_eq!(o.result, ShellResult::Exited(0), "{out}\n{}", text(&o.stderr));
    assert!(out.contains("failed="), "every write succeeded: {out}");
    let total: u64 = out.split("total=").nth(1).unwrap().trim().parse().unwrap();
    assert!(total <= 4 << 20, "the run holds {total} bytes, past its quota: {out}");
    assert!(text(&o.stderr).contains("No space left on device"), "{}", text(&o.stderr));
    assert!(o.disk_full, "the outcome does not say the disk was full");
    assert_eq!(o.disk_bytes, 4 << 20);

    // A run may lower the quota, never raise it; a run within it is not `disk_full`.
    let mut r = bash("head -c 2000000 /dev/zero > /work/f; echo $?");
    r.disk_bytes = Some(1 << 20);
    let o = run(&sb, r);
    assert!(o.disk_full && o.disk_bytes == 1 << 20, "{}", text(&o.stdout));
    let mut r = bash("head -c 2000000 /dev/zero > /work/f; echo $?");
    r.disk_bytes = Some(1 << 30);
    let o = run(&sb, r);
    assert_eq!((text(&o.stdout).as_str(), o.disk_full, o.disk_bytes), ("0\n", false, 4 << 20));
}

/// A script killed by a signal is reported as that signal, not as the status 128+N.
#[test]
fn death_by_signal_is_reported_as_the_signal() {
    let Some(sb) = sandbox() else { return };
    let o = run(&sb, bash("echo before; kill -9 $$; echo after"));
    assert_eq!(o.result, ShellResult::Signalled(libc::SIGKILL));
    assert_eq!(text(&o.stdout), "before\n");
    let o = run(&sb, bash("kill -TERM $$"));
    assert_eq!(o.result, ShellResult::Signalled(libc::SIGTERM));
    let o = run(&sb, bash("exit 3"));
    assert_eq!(o.result, ShellResult::Exited(3));
}
