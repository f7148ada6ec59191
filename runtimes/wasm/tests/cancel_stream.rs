//! Cancelling a run from another thread, deadlines and cancels reaching a sleeping
//! guest, and output streamed while the guest runs.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use sundial_core::clock::ManualClock;
use sundial_wasm_sandbox::{OutputStream, RunInput, RunResult, RuntimeConfig, TrapKind, WasmRuntime};

/// Writes "hello\n" to stdout and "oops\n" to stderr, then loops forever.
fn hello_then_loop() -> String {
    module(
        r#"(data (i32.const 16) "hello\n") (data (i32.const 32) "oops\n")
        (func (export "_start")
          (i32.store (i32.const 0) (i32.const 16))
          (i32.store (i32.const 4) (i32.const 6))
          (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
          (i32.store (i32.const 0) (i32.const 32))
          (i32.store (i32.const 4) (i32.const 5))
          (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8)))
          (loop $l (br $l)))"#,
    )
}

#[test]
fn cancel_stops_a_running_guest_within_a_few_ticks() {
    let rt = runtime();
    let module = compile(&rt, &infinite_loop());
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    let set_at = Arc::new(Mutex::new(None));
    let set_at_writer = set_at.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        *set_at_writer.lock().unwrap() = Some(Instant::now());
        flag.store(true, Ordering::Relaxed);
    });
    let out = rt.run(&module, RunInput { cancel: Some(cancel), deadline: Duration::from_secs(20), ..input() });
    let returned = Instant::now();
    canceller.join().unwrap();
    match &out.result {
        RunResult::Trap { kind: TrapKind::Cancelled, .. } => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(out.exit_code, None);
    let latency = returned - set_at.lock().unwrap().expect("cancel was set");
    eprintln!("cancel latency: {latency:?}");
    // Two 10 ms ticks, with slack for a loaded machine.
    assert!(latency < Duration::from_millis(250), "{latency:?}");
}

#[test]
fn cancel_set_before_the_run_does_not_start_the_guest() {
    let rt = runtime();
    let module = compile(&rt, &hello());
    let out = rt.run(&module, RunInput { cancel: Some(Arc::new(AtomicBool::new(true))), ..input() });
    assert!(matches!(out.result, RunResult::Trap { kind: TrapKind::Cancelled, .. }), "{:?}", out.result);
    assert!(out.stdout.is_empty());
}

#[test]
fn an_unset_cancel_flag_changes_nothing() {
    let rt = runtime();
    let module = compile(&rt, &hello());
    let out = rt.run(&module, RunInput { cancel: Some(Arc::new(AtomicBool::new(false))), ..input() });
    assert_eq!(out.result, RunResult::Exited(0));
    assert_eq!(out.stdout, b"hello\n");
}

#[test]
fn deadline_still_applies_with_a_cancel_flag() {
    let rt = runtime();
    let module = compile(&rt, &infinite_loop());
    let out = rt.run(
        &module,
        RunInput { cancel: Some(Arc::new(AtomicBool::new(false))), deadline: Duration::from_millis(100), ..input() },
    );
    assert!(matches!(out.result, RunResult::Trap { kind: TrapKind::Deadline, .. }), "{:?}", out.result);
}

#[test]
fn output_is_streamed_while_the_guest_runs() {
    let rt = runtime();
    let module = compile(&rt, &hello_then_loop());
    let chunks = Arc::new(Mutex::new(Vec::new()));
    let cancel = Arc::new(AtomicBool::new(false));
    let (sink, flag) = (chunks.clone(), cancel.clone());
    let out = rt.run(
        &module,
        RunInput {
            // The guest never ends by itself: the chunks can only have been seen live.
            // Once both streams have spoken, cancel it.
            on_output: Some(Arc::new(move |stream: OutputStream, bytes: &[u8]| {
                let mut chunks = sink.lock().unwrap();
                chunks.push((stream, bytes.to_vec()));
                if chunks.len() == 2 {
                    flag.store(true, Ordering::Relaxed);
                }
            })),
            cancel: Some(cancel),
            deadline: Duration::from_secs(20),
            ..input()
        },
    );
    assert!(matches!(out.result, RunResult::Trap { kind: TrapKind::Cancelled, .. }), "{:?}", out.result);
    assert_eq!(
        *chunks.lock().unwrap(),
        vec![(OutputStream::Stdout, b"hello\n".to_vec()), (OutputStream::Stderr, b"oops\n".to_vec())]
    );
    // Also captured as usual.
    assert_eq!(out.stdout, b"hello\n");
    assert_eq!(out.stderr, b"oops\n");
}

#[test]
fn streamed_output_stops_at_the_cap() {
    let rt = WasmRuntime::new(RuntimeConfig { output_cap_bytes: 4, ..RuntimeConfig::default() }).unwrap();
    let module = compile(&rt, &hello());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let out = rt.run(
        &module,
        RunInput {
            on_output: Some(Arc::new(move |_: OutputStream, bytes: &[u8]| {
                sink.lock().unwrap().extend_from_slice(bytes)
            })),
            ..input()
        },
    );
    assert_eq!(out.result, RunResult::Exited(0));
    assert_eq!(out.stdout, b"hell");
    assert!(out.stdout_truncated);
    assert_eq!(*seen.lock().unwrap(), b"hell");
}

/// Calls `poll_oneoff` with a monotonic clock subscription of `timeout_ns` and,
/// if `second` is `Some("clock", ns)` / `Some("stdin", _)`, a second one; exits
/// with `errno + 10 * nevents + 50 * type of the first event`.
fn poll_module(timeout_ns: u64, second: Option<(&str, u64)>) -> String {
    let (nsubs, second) = match second {
        None => (1, String::new()),
        Some(("clock", ns)) => (
            2,
            format!(
                "(i64.store (i32.const 176) (i64.const 2)) (i32.store8 (i32.const 184) (i32.const 0))
                 (i32.store (i32.const 192) (i32.const 1)) (i64.store (i32.const 200) (i64.const {ns}))"
            ),
        ),
        Some(_) => (
            2,
            "(i64.store (i32.const 176) (i64.const 2)) (i32.store8 (i32.const 184) (i32.const 1))
             (i32.store (i32.const 192) (i32.const 0))"
                .to_string(),
        ),
    };
    format!(
        r#"(module {IMPORTS}
          (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
          (memory (export "memory") 1)
          (func (export "_start") (local $errno i32)
            (i64.store (i32.const 128) (i64.const 1))
            (i32.store8 (i32.const 136) (i32.const 0))
            (i32.store (i32.const 144) (i32.const 1))
            (i64.store (i32.const 152) (i64.const {timeout_ns}))
            {second}
            (local.set $errno (call $poll (i32.const 128) (i32.const 256) (i32.const {nsubs}) (i32.const 320)))
            (call $proc_exit
              (i32.add (local.get $errno)
                (i32.add (i32.mul (i32.load (i32.const 320)) (i32.const 10))
                         (i32.mul (i32.load8_u (i32.const 266)) (i32.const 50)))))))"#
    )
}

const HOUR_NS: u64 = 3_600_000_000_000;

#[test]
fn a_sleeping_guest_still_meets_its_deadline() {
    let rt = runtime();
    let module = compile(&rt, &poll_module(HOUR_NS, None));
    let out = rt.run(&module, RunInput { deadline: Duration::from_millis(200), ..input() });
    assert!(matches!(out.result, RunResult::Trap { kind: TrapKind::Deadline, .. }), "{:?}", out.result);
    assert!(out.elapsed < Duration::from_secs(2), "{:?}", out.elapsed);
}

#[test]
fn a_sleeping_guest_can_be_cancelled() {
    let rt = runtime();
    let module = compile(&rt, &poll_module(HOUR_NS, None));
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        flag.store(true, Ordering::Relaxed);
    });
    let out = rt.run(&module, RunInput { cancel: Some(cancel), ..input() });
    canceller.join().unwrap();
    assert!(matches!(out.result, RunResult::Trap { kind: TrapKind::Cancelled, .. }), "{:?}", out.result);
    assert!(out.elapsed < Duration::from_secs(2), "{:?}", out.elapsed);
}

#[test]
fn short_sleeps_end_on_time_and_report_their_clock() {
    let rt = runtime();
    // One clock of 30 ms: one clock event.
    let out = rt.run(&compile(&rt, &poll_module(30_000_000, None)), input());
    assert_eq!(out.result, RunResult::Exited(10));
    assert!(out.elapsed >= Duration::from_millis(30), "{:?}", out.elapsed);
    // 30 ms and an hour: returns after 30 ms with one event.
    let out = rt.run(&compile(&rt, &poll_module(30_000_000, Some(("clock", HOUR_NS)))), input());
    assert_eq!(out.result, RunResult::Exited(10));
    assert!(out.elapsed >= Duration::from_millis(30) && out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);
}

#[test]
fn polling_a_descriptor_goes_to_wasi_and_does_not_wait_for_the_clock() {
    // An hour's clock and stdin (always ready here): wasmtime-wasi's own
    // poll_oneoff answers at once with one fd_read event (type 1).
    let rt = runtime();
    let out = rt.run(&compile(&rt, &poll_module(HOUR_NS, Some(("stdin", 0)))), input());
    assert_eq!(out.result, RunResult::Exited(60), "{:?}", out.result);
    assert!(out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);
}

/// The guest's wall clock is the runtime's `wall_clock`: `CLOCK_REALTIME` reads it, and a sleep
/// until a realtime instant is judged by it (300 ms after a manual "now" that lies years before
/// the host's clock, by which that instant is long past).
#[test]
fn the_guests_wall_clock_is_the_runtimes_clock() {
    const NOW_MS: i64 = 1_700_000_000_000;
    let config = RuntimeConfig { wall_clock: Arc::new(ManualClock::new(NOW_MS)), ..RuntimeConfig::default() };
    let rt = WasmRuntime::new(config).unwrap();
    // clock_time_get(REALTIME, precision 1, at 0); exits 0 when it read NOW_MS.
    let read = format!(
        r#"(module {IMPORTS}
          (import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))
          (memory (export "memory") 1)
          (func (export "_start")
            (drop (call $clock (i32.const 0) (i64.const 1) (i32.const 0)))
            (call $proc_exit (i64.ne (i64.load (i32.const 0)) (i64.const {ns})))))"#,
        ns = NOW_MS * 1_000_000
    );
    assert_eq!(rt.run(&compile(&rt, &read), input()).result, RunResult::Exited(0));
    // One realtime clock subscription with ABSTIME, until NOW_MS + 300 ms; exits errno + 10 * events.
    let sleep = format!(
        r#"(module {IMPORTS}
          (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
          (memory (export "memory") 1)
          (func (export "_start") (local $errno i32)
            (i64.store (i32.const 128) (i64.const 1))
            (i32.store8 (i32.const 136) (i32.const 0))
            (i32.store (i32.const 144) (i32.const 0))
            (i64.store (i32.const 152) (i64.const {until}))
            (i32.store16 (i32.const 168) (i32.const 1))
            (local.set $errno (call $poll (i32.const 128) (i32.const 256) (i32.const 1) (i32.const 320)))
            (call $proc_exit (i32.add (local.get $errno) (i32.mul (i32.load (i32.const 320)) (i32.const 10))))))"#,
        until = (NOW_MS + 300) * 1_000_000
    );
    let out = rt.run(&compile(&rt, &sleep), input());
    assert_eq!(out.result, RunResult::Exited(10), "{:?}", out.result);
    assert!(out.elapsed >= Duration::from_millis(300) && out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);
}
