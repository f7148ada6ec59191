//! Cancelling a run and streaming its output. Skipped (with the reason printed) only where
//! bwrap cannot run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sundial_shell_sandbox::{KillReason, OutputStream, SandboxConfig, ShellResult};

mod common;

use common::*;

#[test]
fn cancel_stops_a_sleeping_script_quickly() {
    let Some(sb) = sandbox() else { return };
    let mark = marker("cancel");
    let cancel = Arc::new(AtomicBool::new(false));
    let mut r = bash("echo started; sleep 1011 & sleep 1012");
    r.args = vec![mark.clone()];
    r.timeout = Duration::from_secs(60);
    r.cancel = Some(cancel.clone());
    let (o, cancelled_at) = std::thread::scope(|s| {
        let h = s.spawn(|| run(&sb, r));
        thread_sleep(500);
        let at = Instant::now();
        cancel.store(true, Ordering::SeqCst);
        (h.join().unwrap(), at)
    });
    let latency = cancelled_at.elapsed();
    assert_eq!(o.result, ShellResult::Killed { reason: KillReason::Cancelled });
    assert_eq!(text(&o.stdout), "started\n");
    // Polled every 20 ms, then the kill and the clean-up.
    assert!(latency < Duration::from_secs(1), "run returned {latency:?} after the cancel");
    for n in ["sleep 1011", "sleep 1012"] {
        assert!(wait_no_processes(n).is_empty(), "{n} survived");
    }
    assert!(wait_no_processes(&mark).is_empty());

    // Cancelled before the start: nothing runs.
    let mut r = bash("echo ran");
    r.cancel = Some(cancel.clone());
    let o = run(&sb, r);
    assert_eq!(o.result, ShellResult::Killed { reason: KillReason::Cancelled });
    assert!(o.stdout.is_empty());

    // A flag that is never set changes nothing.
    let mut r = bash("echo ran");
    r.cancel = Some(Arc::new(AtomicBool::new(false)));
    let o = run(&sb, r);
    assert_eq!(o.result, ShellResult::Exited(0));
    assert_eq!(text(&o.stdout), "ran\n");
}

/// Cancel works without cgroups too (the process group and the pid namespace).
#[test]
fn cancel_without_cgroups() {
    let no_cg = tempfile::tempdir().unwrap();
    let Some(sb) = sandbox_with(SandboxConfig { cgroup_root: no_cg.path().into(), ..Default::default() }) else {
        return;
    };
    let cancel = Arc::new(AtomicBool::new(false));
    let mut r = bash("sleep 1013 & (setsid sleep 1014 &); sleep 1015");
    r.cancel = Some(cancel.clone());
    let start = Instant::now();
    let o = std::thread::scope(|s| {
        let h = s.spawn(|| run(&sb, r));
        thread_sleep(300);
        cancel.store(true, Ordering::SeqCst);
        h.join().unwrap()
    });
    assert_eq!(o.result, ShellResult::Killed { reason: KillReason::Cancelled });
    assert!(start.elapsed() < Duration::from_secs(2), "took {:?}", start.elapsed());
    for n in ["sleep 1013", "sleep 1014", "sleep 1015"] {
        assert!(wait_no_processes(n).is_empty(), "{n} survived");
    }
}

type Chunks = Arc<Mutex<Vec<(Instant, OutputStream, Vec<u8>)>>>;

fn collector() -> (Chunks, sundial_shell_sandbox::OutputCallback) {
    let chunks: Chunks = Arc::default();
    let sink = chunks.clone();
    let f = Arc::new(move |stream: OutputStream, bytes: &[u8]| {
        sink.lock().unwrap().push((Instant::now(), stream, bytes.to_vec()));
    });
    (chunks, f)
}

fn joined(chunks: &Chunks, stream: OutputStream) -> Vec<u8> {
    chunks.lock().unwrap().iter().filter(|c| c.1 == stream).flat_map(|c| c.2.clone()).collect()
}

#[test]
fn streaming_delivers_chunks_before_the_end() {
    let Some(sb) = sandbox() else { return };
    let (chunks, f) = collector();
    let mut r = bash("echo first; sleep 1; echo second >&2; sleep 1; echo third");
    r.on_output = Some(f);
    let o = run(&sb, r);
    let ended = Instant::now();
    assert_eq!(o.result, ShellResult::Exited(0));
    let got = chunks.lock().unwrap().clone();
    let first = got.iter().find(|c| c.1 == OutputStream::Stdout).expect("a stdout chunk");
    assert_eq!(first.2, b"first\n");
    // Delivered while the script still ran (it slept 2 s after printing it).
    assert!(ended - first.0 > Duration::from_millis(1500), "first chunk only {:?} before the end", ended - first.0);
    let second = got.iter().find(|c| c.1 == OutputStream::Stderr).expect("a stderr chunk");
    assert_eq!(second.2, b"second\n");
    assert!(ended - second.0 > Duration::from_millis(500));
    // The captured buffers hold the same bytes.
    assert_eq!(joined(&chunks, OutputStream::Stdout), o.stdout);
    assert_eq!(joined(&chunks, OutputStream::Stderr), o.stderr);
    assert_eq!(text(&o.stdout), "first\nthird\n");
}

#[test]
fn streaming_stops_at_the_cap() {
    let Some(sb) = sandbox_with(SandboxConfig { output_cap_bytes: 10, ..Default::default() }) else { return };
    let (chunks, f) = collector();
    let mut r = bash("echo 0123; sleep 0.2; echo 456789abcdef; yes | head -c 100000");
    r.on_output = Some(f);
    let o = run(&sb, r);
    assert_eq!(text(&o.stdout), "0123\n45678");
    assert!(o.stdout_truncated);
    assert_eq!(joined(&chunks, OutputStream::Stdout), o.stdout);

    // A large output arrives in several chunks, all of it up to the (default 1 MiB) cap.
    let Some(sb) = sandbox() else { return };
    let (chunks, f) = collector();
    let mut r = bash("yes | head -c 3000000");
    r.on_output = Some(f);
    let o = run(&sb, r);
    assert_eq!(o.stdout.len(), 1024 * 1024);
    assert!(chunks.lock().unwrap().len() > 1);
    assert_eq!(joined(&chunks, OutputStream::Stdout), o.stdout);
}

/// A callback that panics is dropped; the run and its captured output are unaffected.
#[test]
fn panicking_callback_does_not_break_the_run() {
    let Some(sb) = sandbox() else { return };
    let calls = Arc::new(Mutex::new(0));
    let c = calls.clone();
    let mut r = bash("echo a; sleep 0.1; echo b; sleep 0.1; echo c");
    r.on_output = Some(Arc::new(move |_, _| {
        *c.lock().unwrap() += 1;
        panic!("callback bug");
    }));
    let o = run(&sb, r);
    assert_eq!(o.result, ShellResult::Exited(0));
    assert_eq!(text(&o.stdout), "a\nb\nc\n");
    assert_eq!(*calls.lock().unwrap(), 1);
}
