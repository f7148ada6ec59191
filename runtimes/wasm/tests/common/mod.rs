//! Helpers shared by the integration tests: guest modules are written as WAT text.
#![allow(dead_code)]

use std::time::Duration;

use sundial_wasm_sandbox::{CompiledModule, RunInput, RunOutcome, RuntimeConfig, WasmRuntime};

/// Imports used by the guest modules below.
pub const IMPORTS: &str = r#"
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $args_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_get" (func $args_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $environ_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_get" (func $environ_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_prestat_get" (func $fd_prestat_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_prestat_dir_name" (func $fd_prestat_dir_name (param i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
"#;

/// A module with the standard imports, one page of memory, and the given body.
pub fn module(body: &str) -> String {
    format!("(module {IMPORTS} (memory (export \"memory\") 1) {body})")
}

/// Writes "hello\n" to stdout and returns from `_start`.
pub fn hello() -> String {
    module(
        r#"(data (i32.const 16) "hello\n")
        (func (export "_start")
          (i32.store (i32.const 0) (i32.const 16))
          (i32.store (i32.const 4) (i32.const 6))
          (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))"#,
    )
}

/// Calls `proc_exit(code)`.
pub fn exit_with(code: i32) -> String {
    module(&format!(r#"(func (export "_start") (call $proc_exit (i32.const {code})))"#))
}

/// Loops forever.
pub fn infinite_loop() -> String {
    module(r#"(func (export "_start") (loop $l (br $l)))"#)
}

pub fn runtime() -> WasmRuntime {
    WasmRuntime::new(RuntimeConfig::default()).expect("runtime")
}

pub fn compile(rt: &WasmRuntime, wat: &str) -> CompiledModule {
    rt.compile(wat.as_bytes()).unwrap_or_else(|e| panic!("compile failed: {e}\n{wat}"))
}

pub fn input() -> RunInput {
    RunInput { deadline: Duration::from_secs(20), ..RunInput::default() }
}

pub fn run_wat(rt: &WasmRuntime, wat: &str, input: RunInput) -> RunOutcome {
    let module = compile(rt, wat);
    rt.run(&module, input)
}
