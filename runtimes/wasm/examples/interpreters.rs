//! Loads the interpreters and times them: compile (with an empty cache), load
//! from the cache, and a hello-world run in each language.
//!
//! ```text
//! cargo run --release -p sundial-runtimes --example interpreters [-- INTERPRETERS_DIR]
//! ```
//!
//! INTERPRETERS_DIR defaults to `target/interpreters` (see scripts/fetch-interpreters).

use std::time::{Duration, Instant};

use sundial_runtimes::{Interpreters, Lang, RunInput, RuntimeConfig, WasmRuntime};

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "target/interpreters".into());
    let cache = tempfile::tempdir().expect("temp dir");
    let rt = WasmRuntime::new(RuntimeConfig { cache_dir: Some(cache.path().to_path_buf()), ..Default::default() })
        .expect("runtime");
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
        for _ in 0..5 {
            let out = rt.run_interpreted(
                interp,
                source,
                RunInput { deadline: Duration::from_secs(30), ..Default::default() },
            );
            assert_eq!(out.stdout, b"hello\n", "{lang}: {:?} {}", out.result, String::from_utf8_lossy(&out.stderr));
            times.push(out.elapsed);
        }
        times.sort();
        println!("{lang} hello: median {:?} (min {:?}, max {:?}) over 5 runs", times[2], times[0], times[4]);
    }
}
