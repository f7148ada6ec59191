//! Times the runtime's start-up costs: a small module (`examples/scripts/hello.wat`) and each
//! interpreter compiled with an empty cache, loaded from the cache, and run (hello world).
//!
//! ```text
//! cargo run --release -p sundial-wasm-sandbox --example interpreters [-- INTERPRETERS_DIR [RUNS]]
//! ```
//!
//! INTERPRETERS_DIR defaults to `target/interpreters` (see scripts/fetch-interpreters); RUNS
//! (default 20) is how many hello runs each median and p95 are taken over.

use std::time::{Duration, Instant};

use sundial_wasm_sandbox::{Interpreters, Lang, RunInput, RuntimeConfig, WasmRuntime};

/// The small module: the wasm example script, a WASI command printing two lines.
const HELLO_WAT: &str = include_str!("../../../examples/scripts/hello.wat");

fn runtime(cache: &std::path::Path) -> WasmRuntime {
    WasmRuntime::new(RuntimeConfig { cache_dir: Some(cache.to_path_buf()), ..Default::default() }).expect("runtime")
}

/// "median X (p95 Y, min Z, max W) over N runs".
fn summary(mut times: Vec<Duration>) -> String {
    times.sort();
    let n = times.len();
    let p95 = times[((n * 95).div_ceil(100)).clamp(1, n) - 1];
    format!("median {:?} (p95 {:?}, min {:?}, max {:?}) over {n} runs", times[n / 2], p95, times[0], times[n - 1])
}

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "target/interpreters".into());
    let runs: usize = std::env::args().nth(2).map_or(20, |s| s.parse().expect("RUNS: a number"));
    assert!(runs > 0, "RUNS must be at least 1");

    // The small module: a fresh cache directory, so the first compile is cold.
    let cache = tempfile::tempdir().expect("temp dir");
    let started = Instant::now();
    let rt = runtime(cache.path());
    println!("runtime (engine, linker, epoch ticker): {:?}", started.elapsed());
    for pass in ["compile, empty cache", "load from the cache"] {
        // A new runtime each pass: the second finds only the on-disk artifact, as a restarted
        // runner would (a runner keeps compiled modules in memory as well).
        let rt = runtime(cache.path());
        let started = Instant::now();
        let m = rt.compile(HELLO_WAT.as_bytes()).expect("hello.wat compiles");
        println!(
            "small module (hello.wat, {} bytes as wasm) {pass}: {:?} ({})",
            m.info.size,
            started.elapsed(),
            if m.from_cache { "from cache" } else { "compiled" }
        );
    }
    let m = rt.compile(HELLO_WAT.as_bytes()).expect("hello.wat compiles");
    let mut times = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let out = rt.run(&m, RunInput { deadline: Duration::from_secs(30), ..Default::default() });
        let took = started.elapsed();
        assert_eq!(out.exit_code, Some(0), "hello.wat: {:?}", out.result);
        assert!(out.stdout.starts_with(b"hello from a wasm job\n"), "hello.wat printed {:?}", out.stdout);
        times.push(took);
    }
    println!("small module run (fresh store, instantiate, _start): {}", summary(times));

    let cache = tempfile::tempdir().expect("temp dir");
    let rt = runtime(cache.path());
    for pass in ["cold compile", "cached load"] {
        let started = Instant::now();
        let loaded = Interpreters::load(&dir, &rt);
        println!("{pass}: {:?} in all", started.elapsed());
        for (lang, status) in loaded.status() {
            match status {
                Ok(interp) => println!(
                    "  {lang}: {} bytes, {:?} ({})",
                    interp.info().size,
                    interp.load_time(),
                    if interp.from_cache() { "from cache" } else { "compiled" }
                ),
                Err(why) => println!("  {why}"),
            }
        }
    }
    let loaded = Interpreters::load(&dir, &rt);
    for (lang, source) in [(Lang::Python, "print('hello')"), (Lang::JavaScript, "console.log('hello')")] {
        let Ok(interp) = loaded.get(lang) else { continue };
        let mut times = Vec::new();
        for _ in 0..runs {
            let out = rt.run_interpreted(
                interp,
                source,
                RunInput { deadline: Duration::from_secs(30), ..Default::default() },
            );
            assert_eq!(out.stdout, b"hello\n", "{lang}: {:?} {}", out.result, String::from_utf8_lossy(&out.stderr));
            times.push(out.elapsed);
        }
        println!("{lang} hello: {}", summary(times));
    }
}
