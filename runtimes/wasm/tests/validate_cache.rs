//! Module validation errors and the on-disk artifact cache.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use sundial_wasm_sandbox::{RunResult, RuntimeConfig, RuntimeError, WasmRuntime};

#[test]
fn garbage_is_not_a_module() {
    let rt = runtime();
    assert!(matches!(rt.validate(&[0xff, 0x00, 0x12, 0x34, 0x99]), Err(RuntimeError::NotAModule(_))));
    assert!(matches!(rt.validate(b"hello there"), Err(RuntimeError::NotAModule(_))));
    assert!(matches!(rt.validate(b""), Err(RuntimeError::NotAModule(_))));
}

#[test]
fn malformed_binary_is_invalid() {
    let rt = runtime();
    let err = rt.validate(b"\0asm\x01\0\0\0\x01\x05garbage").unwrap_err();
    assert!(matches!(err, RuntimeError::Invalid(_)), "{err:?}");
    // Type error in a function body: wasmtime's message is kept.
    let err =
        rt.validate(br#"(module (func (export "_start") (i32.add (i32.const 1) (i64.const 2)) drop))"#).unwrap_err();
    match err {
        RuntimeError::Invalid(message) => assert!(message.contains("type mismatch"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn non_wasi_imports_are_refused() {
    let rt = runtime();
    let wat = r#"(module
      (import "wasi_snapshot_preview1" "proc_exit" (func (param i32)))
      (import "env" "foo" (func))
      (func (export "_start")))"#;
    match rt.validate(wat.as_bytes()) {
        Err(RuntimeError::ImportNotAllowed(name)) => assert_eq!(name, "env.foo"),
        other => panic!("{other:?}"),
    }
    assert!(rt.validate(wat.as_bytes()).unwrap_err().to_string().contains("env.foo"));
    // Only functions may be imported, even from the WASI module.
    let wat = r#"(module (import "wasi_snapshot_preview1" "memory" (memory 1)) (func (export "_start")))"#;
    match rt.validate(wat.as_bytes()) {
        Err(RuntimeError::ImportNotAllowed(name)) => assert_eq!(name, "wasi_snapshot_preview1.memory"),
        other => panic!("{other:?}"),
    }
    // compile refuses it too.
    assert!(matches!(
        rt.compile(br#"(module (import "env" "foo" (func)) (func (export "_start")))"#),
        Err(RuntimeError::ImportNotAllowed(_))
    ));
}

#[test]
fn start_export_is_required() {
    let rt = runtime();
    for wat in [
        r#"(module (func (export "main")))"#,
        r#"(module (memory (export "_start") 1))"#,
        r#"(module (func (export "_start") (param i32)))"#,
        r#"(module (func (export "_start") (result i32) i32.const 0))"#,
    ] {
        assert!(matches!(rt.validate(wat.as_bytes()), Err(RuntimeError::NoStart)), "{wat}");
    }
    // An imported WASI function exported as `_start` has the wrong type here.
    let wat =
        r#"(module (import "wasi_snapshot_preview1" "proc_exit" (func $e (param i32))) (export "_start" (func $e)))"#;
    assert!(matches!(rt.validate(wat.as_bytes()), Err(RuntimeError::NoStart)));
}

#[test]
fn too_large_is_refused() {
    let rt = WasmRuntime::new(RuntimeConfig { max_module_bytes: 64, ..RuntimeConfig::default() }).unwrap();
    match rt.validate(&[0u8; 65]) {
        Err(RuntimeError::TooLarge { size: 65, limit: 64 }) => {}
        other => panic!("{other:?}"),
    }
    // Text under the limit whose binary is over it is refused too.
    let wat = r#"(module (data (memory 0) (i32.const 0) "0123456789012345678901234567890123456789012345678901234567890123") (memory 1) (func (export "_start")))"#;
    assert!(wat.len() > 64);
    let rt = WasmRuntime::new(RuntimeConfig { max_module_bytes: wat.len(), ..RuntimeConfig::default() }).unwrap();
    assert!(rt.validate(wat.as_bytes()).is_ok());
    let rt = WasmRuntime::new(RuntimeConfig { max_module_bytes: 80, ..RuntimeConfig::default() }).unwrap();
    assert!(matches!(rt.validate(b"(module)"), Err(RuntimeError::NoStart)));
}

#[test]
fn info_hashes_the_binary() {
    let rt = runtime();
    let text = rt.validate(hello().as_bytes()).unwrap();
    let binary = wat::parse_str(hello()).unwrap();
    let info = rt.validate(&binary).unwrap();
    assert_eq!(text, info);
    assert_eq!(info.size, binary.len());
    assert_eq!(info.sha256.len(), 64);
    assert!(info.sha256.chars().all(|c| c.is_ascii_hexdigit()));
}

fn cached_runtime(dir: &Path) -> WasmRuntime {
    WasmRuntime::new(RuntimeConfig { cache_dir: Some(dir.to_path_buf()), ..RuntimeConfig::default() }).unwrap()
}

fn cwasm_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for sub in std::fs::read_dir(dir).unwrap() {
        let sub = sub.unwrap().path();
        for file in std::fs::read_dir(&sub).unwrap() {
            found.push(file.unwrap().path());
        }
    }
    found
}

#[test]
fn second_compile_loads_the_cached_artifact() {
    let cache = tempfile::tempdir().unwrap();
    let rt = cached_runtime(cache.path());
    let first = rt.compile(hello().as_bytes()).unwrap();
    assert!(!first.from_cache);
    let files = cwasm_files(cache.path());
    let expected = cache.path().join(rt.engine_hash()).join(format!("{}.cwasm", first.info.sha256));
    assert_eq!(files, vec![expected]);

    let second = rt.compile(hello().as_bytes()).unwrap();
    assert!(second.from_cache);
    assert_eq!(cwasm_files(cache.path()).len(), 1);
    assert_eq!(rt.run(&second, input()).stdout, b"hello\n");

    // Another runtime with the same engine settings shares the cache.
    let other = cached_runtime(cache.path());
    assert_eq!(other.engine_hash(), rt.engine_hash());
    assert!(other.compile(hello().as_bytes()).unwrap().from_cache);
}

#[test]
fn artifacts_under_another_engine_hash_are_never_used() {
    let cache = tempfile::tempdir().unwrap();
    let rt = cached_runtime(cache.path());
    // A valid artifact of a different module (exits 7), planted under another hash directory
    // with the name of the hello module.
    let planted = rt.compile(exit_with(7).as_bytes()).unwrap();
    let own_dir = cache.path().join(rt.engine_hash());
    let hello_sha = rt.validate(hello().as_bytes()).unwrap().sha256;
    let foreign_dir = cache.path().join("0123456789abcdef");
    std::fs::create_dir(&foreign_dir).unwrap();
    std::fs::rename(
        own_dir.join(format!("{}.cwasm", planted.info.sha256)),
        foreign_dir.join(format!("{hello_sha}.cwasm")),
    )
    .unwrap();

    let module = rt.compile(hello().as_bytes()).unwrap();
    assert!(!module.from_cache);
    let out = rt.run(&module, input());
    assert_eq!(out.result, RunResult::Exited(0));
    assert_eq!(out.stdout, b"hello\n");
    assert!(own_dir.join(format!("{hello_sha}.cwasm")).is_file());
}

#[test]
fn corrupted_artifact_is_recompiled_and_replaced() {
    let cache = tempfile::tempdir().unwrap();
    let rt = cached_runtime(cache.path());
    let first = rt.compile(hello().as_bytes()).unwrap();
    let path = cache.path().join(rt.engine_hash()).join(format!("{}.cwasm", first.info.sha256));
    let good = std::fs::read(&path).unwrap();

    for corrupt in [b"not an artifact at all".to_vec(), good[..good.len() / 2].to_vec(), Vec::new()] {
        std::fs::write(&path, &corrupt).unwrap();
        let module = rt.compile(hello().as_bytes()).unwrap();
        assert!(!module.from_cache);
        assert_eq!(rt.run(&module, input()).stdout, b"hello\n");
        assert_ne!(std::fs::read(&path).unwrap(), corrupt, "artifact was not rewritten");
        assert!(rt.compile(hello().as_bytes()).unwrap().from_cache);
    }
    // No temp files are left behind.
    assert_eq!(cwasm_files(cache.path()).len(), 1);
}
