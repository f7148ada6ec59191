//! Behaviour of runs: exit codes, output, limits, filesystem, isolation between runs.

mod common;

use std::time::Duration;

use common::*;
use sundial_wasm_sandbox::{RunInput, RunResult, RuntimeConfig, TrapKind, WasmRuntime};

#[test]
fn hello_writes_stdout_and_exits_zero() {
    let rt = runtime();
    let out = run_wat(&rt, &hello(), input());
    assert_eq!(out.result, RunResult::Exited(0));
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.stdout, b"hello\n");
    assert!(out.stderr.is_empty());
    assert!(!out.stdout_truncated && !out.stderr_truncated);
    assert!(out.fuel_consumed.unwrap() > 0);
}

#[test]
fn proc_exit_code_is_reported() {
    let rt = runtime();
    let out = run_wat(&rt, &exit_with(3), input());
    assert_eq!(out.result, RunResult::Exited(3));
    assert_eq!(out.exit_code, Some(3));
}

#[test]
fn args_arrive_after_program_name() {
    // Writes the whole argv buffer to stdout and exits with argc.
    let wat = module(
        r#"(func (export "_start")
          (drop (call $args_sizes_get (i32.const 0) (i32.const 4)))
          (drop (call $args_get (i32.const 64) (i32.const 1024)))
          (i32.store (i32.const 8) (i32.const 1024))
          (i32.store (i32.const 12) (i32.load (i32.const 4)))
          (drop (call $fd_write (i32.const 1) (i32.const 8) (i32.const 1) (i32.const 16)))
          (call $proc_exit (i32.load (i32.const 0))))"#,
    );
    let rt = runtime();
    let out = run_wat(&rt, &wat, RunInput { args: vec!["first".into(), "second arg".into()], ..input() });
    assert_eq!(out.result, RunResult::Exited(3));
    assert_eq!(out.stdout, b"job\0first\0second arg\0");
}

#[test]
fn stdin_is_readable() {
    // Echoes up to 1 KiB of stdin to stdout.
    let wat = module(
        r#"(func (export "_start")
          (i32.store (i32.const 0) (i32.const 1024))
          (i32.store (i32.const 4) (i32.const 1024))
          (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
          (i32.store (i32.const 4) (i32.load (i32.const 8)))
          (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))"#,
    );
    let rt = runtime();
    let out = run_wat(&rt, &wat, RunInput { stdin: b"from stdin".to_vec(), ..input() });
    assert_eq!(out.result, RunResult::Exited(0));
    assert_eq!(out.stdout, b"from stdin");
}

#[test]
fn infinite_loop_hits_deadline() {
    let rt = runtime();
    let module = compile(&rt, &infinite_loop());
    let out = rt.run(&module, RunInput { deadline: Duration::from_millis(200), ..input() });
    assert!(matches!(out.result, RunResult::Trap { kind: TrapKind::Deadline, .. }), "{:?}", out.result);
    assert_eq!(out.exit_code, None);
    assert!(out.elapsed >= Duration::from_millis(150), "{:?}", out.elapsed);
    assert!(out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);
}

#[test]
fn infinite_loop_runs_out_of_fuel() {
    let rt = runtime();
    let module = compile(&rt, &infinite_loop());
    let out = rt.run(&module, RunInput { fuel: Some(1_000_000), deadline: Duration::from_secs(60), ..input() });
    assert!(matches!(out.result, RunResult::Trap { kind: TrapKind::OutOfFuel, .. }), "{:?}", out.result);
    assert_eq!(out.fuel_consumed, Some(1_000_000));
    assert!(out.elapsed < Duration::from_secs(30));
}

/// Grows memory one page at a time until `memory.grow` fails, then exits with the pages gained.
fn grow_until_failure() -> String {
    module(
        r#"(func (export "_start") (local $n i32)
          (block $done
            (loop $l
              (br_if $done (i32.eq (memory.grow (i32.const 1)) (i32.const -1)))
              (local.set $n (i32.add (local.get $n) (i32.const 1)))
              (br $l)))
          (call $proc_exit (local.get $n)))"#,
    )
}

#[test]
fn memory_growth_fails_inside_the_guest_at_the_cap() {
    let rt = runtime();
    let module = compile(&rt, &grow_until_failure());
    let out = rt.run(&module, RunInput { memory_bytes: Some(2 << 20), ..input() });
    // 2 MiB = 32 pages, one of which the module starts with.
    assert_eq!(out.result, RunResult::Exited(31));
    let out = rt.run(&module, RunInput { memory_bytes: Some(4 << 20), ..input() });
    assert_eq!(out.result, RunResult::Exited(63));
    // The host is unharmed and the runtime still works.
    let out = run_wat(&rt, &hello(), input());
    assert_eq!(out.stdout, b"hello\n");
}

#[test]
fn default_memory_cap_applies() {
    let rt = WasmRuntime::new(RuntimeConfig { default_memory_bytes: 1 << 20, ..RuntimeConfig::default() }).unwrap();
    let out = run_wat(&rt, &grow_until_failure(), input());
    assert_eq!(out.result, RunResult::Exited(15));
}

#[test]
fn initial_memory_above_the_cap_is_a_memory_trap() {
    let wat = r#"(module (memory 64) (func (export "_start")))"#;
    let rt = runtime();
    let out = run_wat(&rt, wat, RunInput { memory_bytes: Some(2 << 20), ..input() });
    assert!(matches!(out.result, RunResult::Trap { kind: TrapKind::Memory, .. }), "{:?}", out.result);
}

#[test]
fn wasm_trap_is_other() {
    let wat = r#"(module (func (export "_start") unreachable))"#;
    let rt = runtime();
    let out = run_wat(&rt, wat, input());
    match out.result {
        RunResult::Trap { kind: TrapKind::Other, message } => assert!(message.contains("unreachable"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn output_is_capped_and_marked_truncated() {
    // Writes 48 x 64 KiB = 3 MiB to stdout, ignoring errors, then 10 bytes to stderr.
    let wat = format!(
        "(module {IMPORTS} (memory (export \"memory\") 2)
        (func (export \"_start\") (local $i i32)
          (i32.store (i32.const 0) (i32.const 65536))
          (i32.store (i32.const 4) (i32.const 65536))
          (loop $l
            (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br_if $l (i32.lt_u (local.get $i) (i32.const 48))))
          (i32.store (i32.const 4) (i32.const 10))
          (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8)))))"
    );
    let rt = runtime();
    let out = run_wat(&rt, &wat, input());
    assert_eq!(out.result, RunResult::Exited(0));
    assert_eq!(out.stdout.len(), 1 << 20);
    assert!(out.stdout_truncated);
    assert_eq!(out.stderr.len(), 10);
    assert!(!out.stderr_truncated);
}

#[test]
fn output_exactly_at_the_cap_is_not_truncated() {
    let rt = WasmRuntime::new(RuntimeConfig { output_cap_bytes: 6, ..RuntimeConfig::default() }).unwrap();
    let out = run_wat(&rt, &hello(), input());
    assert_eq!(out.stdout, b"hello\n");
    assert!(!out.stdout_truncated);
    let rt = WasmRuntime::new(RuntimeConfig { output_cap_bytes: 5, ..RuntimeConfig::default() }).unwrap();
    let out = run_wat(&rt, &hello(), input());
    assert_eq!(out.stdout, b"hello");
    assert!(out.stdout_truncated);
}

/// Opens `path` relative to fd 3 (creating it); exits with the errno, or writes "hi\n" to it and exits 0.
fn open_and_write(path: &str) -> String {
    module(&format!(
        r#"(data (i32.const 100) "{path}")
        (data (i32.const 300) "hi\n")
        (func (export "_start") (local $errno i32)
          (local.set $errno (call $path_open (i32.const 3) (i32.const 0) (i32.const 100) (i32.const {len})
            (i32.const 1) (i64.const 0x1fffffff) (i64.const 0x1fffffff) (i32.const 0) (i32.const 200)))
          (if (local.get $errno) (then (call $proc_exit (local.get $errno))))
          (i32.store (i32.const 0) (i32.const 300))
          (i32.store (i32.const 4) (i32.const 3))
          (call $proc_exit (call $fd_write (i32.load (i32.const 200)) (i32.const 0) (i32.const 1) (i32.const 8))))"#,
        len = path.len()
    ))
}

const EBADF: i32 = 8;

#[test]
fn no_filesystem_without_work_dir() {
    let rt = runtime();
    let out = run_wat(&rt, &open_and_write("/etc/passwd"), input());
    assert_eq!(out.result, RunResult::Exited(EBADF));
    let out = run_wat(&rt, &open_and_write("out.txt"), input());
    assert_eq!(out.result, RunResult::Exited(EBADF));
    // And there is no preopen at all.
    let wat =
        module(r#"(func (export "_start") (call $proc_exit (call $fd_prestat_get (i32.const 3) (i32.const 0))))"#);
    assert_eq!(run_wat(&rt, &wat, input()).result, RunResult::Exited(EBADF));
}

#[test]
fn work_dir_is_preopened_as_work() {
    // Prints the name of preopen fd 3.
    let wat = module(
        r#"(func (export "_start")
          (if (call $fd_prestat_get (i32.const 3) (i32.const 0)) (then (call $proc_exit (i32.const 100))))
          (drop (call $fd_prestat_dir_name (i32.const 3) (i32.const 64) (i32.load (i32.const 4))))
          (i32.store (i32.const 16) (i32.const 64))
          (i32.store (i32.const 20) (i32.load (i32.const 4)))
          (drop (call $fd_write (i32.const 1) (i32.const 16) (i32.const 1) (i32.const 24))))"#,
    );
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    let out = run_wat(&rt, &wat, RunInput { work_dir: Some(dir.path().to_path_buf()), ..input() });
    assert_eq!(out.result, RunResult::Exited(0));
    assert_eq!(out.stdout, b"/work");
}

#[test]
fn work_dir_is_writable_and_cannot_be_escaped() {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let rt = runtime();
    let with_dir = || RunInput { work_dir: Some(work.clone()), ..input() };

    let out = run_wat(&rt, &open_and_write("out.txt"), with_dir());
    assert_eq!(out.result, RunResult::Exited(0));
    assert_eq!(std::fs::read(work.join("out.txt")).unwrap(), b"hi\n");

    for escape in ["../escape.txt", "/escape.txt", "sub/../../escape.txt"] {
        let out = run_wat(&rt, &open_and_write(escape), with_dir());
        assert!(matches!(out.result, RunResult::Exited(code) if code != 0), "{escape}: {:?}", out.result);
    }
    assert!(!root.path().join("escape.txt").exists());
    assert!(!std::path::Path::new("/escape.txt").exists());
    let entries: Vec<_> = std::fs::read_dir(root.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(entries, vec![std::ffi::OsString::from("work")]);
}

#[test]
fn runs_share_no_state() {
    // Increments a global and a memory cell, exits with their sum.
    let wat = module(
        r#"(global $g (mut i32) (i32.const 0))
        (func (export "_start")
          (global.set $g (i32.add (global.get $g) (i32.const 1)))
          (i32.store (i32.const 0) (i32.add (i32.load (i32.const 0)) (i32.const 1)))
          (call $proc_exit (i32.add (global.get $g) (i32.load (i32.const 0)))))"#,
    );
    let rt = runtime();
    let module = compile(&rt, &wat);
    assert_eq!(rt.run(&module, input()).result, RunResult::Exited(2));
    assert_eq!(rt.run(&module, input()).result, RunResult::Exited(2));
}

#[test]
fn runs_on_several_threads() {
    let rt = runtime();
    let module = compile(&rt, &hello());
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|_| s.spawn(|| rt.run(&module, input()))).collect();
        for h in handles {
            assert_eq!(h.join().unwrap().stdout, b"hello\n");
        }
    });
}

/// Creates `fill` in /work and writes 64 KiB to it `times` times; exits with the first
/// failed write's errno, else 0.
fn fill_work(times: u32) -> String {
    format!(
        "(module {IMPORTS} (memory (export \"memory\") 2)
        (data (i32.const 100) \"fill\")
        (func (export \"_start\") (local $errno i32) (local $i i32)
          (local.set $errno (call $path_open (i32.const 3) (i32.const 0) (i32.const 100) (i32.const 4)
            (i32.const 1) (i64.const 0x1fffffff) (i64.const 0x1fffffff) (i32.const 0) (i32.const 200)))
          (if (local.get $errno) (then (call $proc_exit (local.get $errno))))
          (i32.store (i32.const 0) (i32.const 65536))
          (i32.store (i32.const 4) (i32.const 65536))
          (loop $l
            (local.set $errno (call $fd_write (i32.load (i32.const 200)) (i32.const 0) (i32.const 1) (i32.const 8)))
            (if (local.get $errno) (then (call $proc_exit (local.get $errno))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br_if $l (i32.lt_u (local.get $i) (i32.const {times})))))
        )"
    )
}

#[test]
fn writes_past_the_disk_quota_stop_the_run() {
    let work = tempfile::tempdir().unwrap();
    let rt = runtime();
    // 64 writes of 64 KiB (4 MiB) against a quota of 1 MiB.
    let out = run_wat(
        &rt,
        &fill_work(64),
        RunInput { work_dir: Some(work.path().to_path_buf()), disk_bytes: Some(1 << 20), ..input() },
    );
    match &out.result {
        RunResult::Trap { kind: TrapKind::DiskQuota, message } => {
            assert!(message.contains("disk quota") && message.contains("1048576"), "{message}")
        }
        other => panic!("expected a disk quota trap, got {other:?}"),
    }
    let size = std::fs::metadata(work.path().join("fill")).unwrap().len();
    assert!(size <= 1 << 20, "the file grew past the quota: {size} bytes");
    assert!(size >= 512 << 10, "the quota stopped the run far too early: {size} bytes");

    // Within the quota (what the directory already holds counts too) it runs to its end.
    let out = run_wat(
        &rt,
        &fill_work(8),
        RunInput { work_dir: Some(work.path().to_path_buf()), disk_bytes: Some(2 << 20), ..input() },
    );
    assert_eq!(out.result, RunResult::Exited(0));
}

#[test]
fn the_default_disk_quota_applies_and_stdout_is_not_disk() {
    let work = tempfile::tempdir().unwrap();
    let rt = WasmRuntime::new(RuntimeConfig { default_disk_bytes: 256 << 10, ..RuntimeConfig::default() }).unwrap();
    let out = run_wat(&rt, &fill_work(16), RunInput { work_dir: Some(work.path().to_path_buf()), ..input() });
    assert!(matches!(out.result, RunResult::Trap { kind: TrapKind::DiskQuota, .. }), "{:?}", out.result);
    assert!(std::fs::metadata(work.path().join("fill")).unwrap().len() <= 256 << 10);
    // 1 MiB to stdout with a work dir whose quota is 4 KiB: output is not disk.
    let wat = module(
        r#"(func (export "_start") (local $i i32)
          (i32.store (i32.const 0) (i32.const 0))
          (i32.store (i32.const 4) (i32.const 65536))
          (loop $l
            (if (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)) (then (call $proc_exit (i32.const 9))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br_if $l (i32.lt_u (local.get $i) (i32.const 15)))))"#,
    );
    let empty = tempfile::tempdir().unwrap();
    let out =
        run_wat(&rt, &wat, RunInput { work_dir: Some(empty.path().to_path_buf()), disk_bytes: Some(4096), ..input() });
    assert_eq!(out.result, RunResult::Exited(0));
    assert_eq!(out.stdout.len(), 15 * 65536);
}

#[test]
fn holding_more_files_open_than_the_limit_stops_the_run() {
    // Opens `f` again and again without closing it.
    let wat = module(
        r#"(data (i32.const 100) "f")
        (func (export "_start") (local $i i32)
          (loop $l
            (if (call $path_open (i32.const 3) (i32.const 0) (i32.const 100) (i32.const 1)
                  (i32.const 1) (i64.const 0x1fffffff) (i64.const 0x1fffffff) (i32.const 0) (i32.const 200))
              (then (call $proc_exit (i32.const 1))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br_if $l (i32.lt_u (local.get $i) (i32.const 40)))))"#,
    );
    let work = tempfile::tempdir().unwrap();
    let rt = runtime();
    let with = |open_files| RunInput { work_dir: Some(work.path().to_path_buf()), open_files, ..input() };
    let out = run_wat(&rt, &wat, with(Some(32)));
    match &out.result {
        RunResult::Trap { kind: TrapKind::OpenFiles, message } => assert!(message.contains("open files"), "{message}"),
        other => panic!("expected an open files trap, got {other:?}"),
    }
    assert_eq!(run_wat(&rt, &wat, with(Some(64))).result, RunResult::Exited(0));
}
