//! Quick end-to-end runs: the built `sundial-bench` drives the debug `sundial serve` on SQLite
//! with 20 jobs, 127.0.0.1 only, and must see every fire exactly once, correctly signed: every
//! second, and as a herd of a cron expression against the burst floor.

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

/// Run `sundial-bench --json` with these arguments on SQLite; its report, and how long it took.
fn bench(args: &[&str]) -> (Value, String, Duration) {
    let sundial = sundial_bin();
    assert!(sundial.exists(), "{} missing: run `cargo build --workspace --all-targets` first", sundial.display());
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_sundial-bench"))
        .args(args)
        .args(["--database", "sqlite", "--json", "--sundial"])
        .arg(&sundial)
        .env_remove("SUNDIAL_BIN")
        .output()
        .expect("run sundial-bench");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "sundial-bench failed:\n{stderr}");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("stdout not JSON ({e}):\n{stderr}"));
    (r, stderr, started.elapsed())
}

/// Jobs of `*/15 * * * * *` (created one a call for 5 of them, the rest 4 a batch): the window
/// holds one herd of 20 fires, every one delivered once; the floor is a burst of 20.
#[test]
fn a_cron_herd_of_twenty_jobs_every_fire_once() {
    let (r, stderr, took) = bench(&[
        "--jobs",
        "20",
        "--cron",
        "*/15 * * * * *",
        "--measure-after",
        "2",
        "--window",
        "1",
        "--single-create-sample",
        "5",
        "--batch-size",
        "4",
    ]);
    assert!(took < Duration::from_secs(60), "took {took:?}");
    let o = &r["outcome"];
    assert_eq!(o["expected"], 20, "{stderr}");
    assert_eq!(o["delivered"], 20, "{stderr}");
    assert_eq!(o["duplicate_runs"], 0, "{stderr}");
    assert_eq!(o["unexpected"], 0, "{stderr}");
    assert_eq!(r["sink"]["bad_signatures"], 0, "{stderr}");
    assert_eq!(r["case"]["cron"], "*/15 * * * * *", "{stderr}");
    let start = r["case"]["window"]["start_ms"].as_i64().unwrap();
    assert_eq!(start % 15_000, 0, "the window opens at an instant: {stderr}");
    assert_eq!(r["floor"]["kind"], "burst", "{stderr}");
    assert_eq!(r["floor"]["received"], 20, "{stderr}");
    // Reported, not necessarily above zero: CPU time is read in clock ticks (10 ms), and 20
    // POSTs may take less than one.
    assert!(r["floor"]["cpu_us_per_post"].as_f64().is_some_and(|u| u >= 0.0), "{stderr}");
    let c = &r["creation"];
    assert_eq!((c["single"]["jobs"].clone(), c["batch"]["jobs"].clone()), (5.into(), 15.into()), "{stderr}");
    assert!(c["sundial_rss_mib"].as_f64().is_some_and(|m| m > 0.0), "{stderr}");
    assert!(r["cpu_per_fire"]["sundial_us"].as_f64().is_some(), "{stderr}");
    assert_eq!(r["accounting"]["unaccounted"], 0, "{stderr}");
}

#[test]
fn twenty_jobs_on_sqlite_every_fire_once() {
    let (r, stderr, took) = bench(&["--jobs", "20", "--measure-after", "2", "--window", "3"]);
    assert!(took < Duration::from_secs(30), "took {took:?}");
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
    assert_eq!(r["floor"]["kind"], "per_second", "{stderr}");
    assert!(r["cpu_per_fire"]["floor_us_per_post"].as_f64().is_some_and(|u| u >= 0.0), "{stderr}");
    assert_eq!(r["creation"]["batch"]["jobs"], 20, "{stderr}");
}
