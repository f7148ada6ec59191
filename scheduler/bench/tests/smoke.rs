//! One quick end-to-end run: the built `sundial-bench` drives the debug `sundial serve` on
//! SQLite with 20 jobs, 127.0.0.1 only, and must see every fire exactly once, correctly signed.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

/// `SUNDIAL_BIN`, else `sundial` beside this test's `sundial-bench` (same profile directory,
/// built by `cargo build --workspace --all-targets`; honours `CARGO_TARGET_DIR`).
fn sundial_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("SUNDIAL_BIN") {
        return PathBuf::from(p);
    }
    let bench = PathBuf::from(env!("CARGO_BIN_EXE_sundial-bench"));
    bench.parent().expect("profile directory").join("sundial")
}

#[test]
fn twenty_jobs_on_sqlite_every_fire_once() {
    let sundial = sundial_bin();
    assert!(sundial.exists(), "{} missing: run `cargo build --workspace --all-targets` first", sundial.display());
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_sundial-bench"))
        .args(["--jobs", "20", "--database", "sqlite", "--measure-after", "2", "--window", "3", "--json", "--sundial"])
        .arg(&sundial)
        .env_remove("SUNDIAL_BIN")
        .output()
        .expect("run sundial-bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "sundial-bench failed:\n{stderr}");
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("stdout not JSON ({e}):\n{stderr}"));
    let o = &r["outcome"];
    assert_eq!(o["expected"], 60, "{stderr}");
    assert_eq!(o["missed"], 0, "{stderr}");
    assert_eq!(o["delivered"], 60, "{stderr}");
    assert_eq!(o["duplicate_runs"], 0, "{stderr}");
    assert_eq!(o["unexpected"], 0, "{stderr}");
    assert_eq!(r["sink"]["bad_signatures"], 0, "{stderr}");
    assert_eq!(r["sink"]["unreadable"], 0, "{stderr}");
    assert_eq!(o["series"].as_array().map(Vec::len), Some(3), "{stderr}");
    assert!(o["lateness_ms"]["p99"].as_f64().is_some_and(|p| p >= 0.0), "{stderr}");
    assert!(r["floor"]["lateness_ms"]["p99"].as_f64().is_some(), "{stderr}");
    assert_eq!(r["floor"]["received"], 100, "{stderr}");
    assert_eq!(r["raw_inserts"]["rows"], 20, "{stderr}");
    assert!(r["ratios"]["p99_over_floor_p99"].is_number(), "{stderr}");
    assert!(r["verdict"]["pass"].is_boolean(), "{stderr}");
    assert_eq!(r["accounting"]["unaccounted"], 0, "{stderr}");
    assert!(r["case"]["env_overrides"].as_array().is_some_and(Vec::is_empty), "{stderr}");
    assert!(r["cpu"]["processes"].is_array(), "{stderr}");
}
