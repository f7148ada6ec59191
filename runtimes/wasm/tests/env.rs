//! The guest sees only the environment it is given (its own test binary: it sets a host variable).

mod common;

use common::*;
use sundial_wasm_sandbox::{RunInput, RunResult};

/// Writes the environ buffer to stdout and exits with the variable count.
fn env_dump() -> String {
    module(
        r#"(func (export "_start")
          (drop (call $environ_sizes_get (i32.const 0) (i32.const 4)))
          (drop (call $environ_get (i32.const 64) (i32.const 1024)))
          (i32.store (i32.const 8) (i32.const 1024))
          (i32.store (i32.const 12) (i32.load (i32.const 4)))
          (drop (call $fd_write (i32.const 1) (i32.const 8) (i32.const 1) (i32.const 16)))
          (call $proc_exit (i32.load (i32.const 0))))"#,
    )
}

#[test]
fn host_env_is_not_inherited_and_given_env_arrives() {
    // SAFETY: this test binary has a single test, so no other thread reads the environment.
    unsafe { std::env::set_var("SUNDIAL_HOST_SECRET", "leak") };
    assert!(std::env::vars().count() > 0);
    let rt = runtime();
    let module = compile(&rt, &env_dump());

    let out = rt.run(&module, input());
    assert_eq!(out.result, RunResult::Exited(0));
    assert!(out.stdout.is_empty());

    let env = vec![("A".to_string(), "1".to_string()), ("B".to_string(), "two".to_string())];
    let out = rt.run(&module, RunInput { env, ..input() });
    assert_eq!(out.result, RunResult::Exited(2));
    assert_eq!(out.stdout, b"A=1\0B=two\0");
}
