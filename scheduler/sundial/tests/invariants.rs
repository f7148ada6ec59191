//! ARCHITECTURE.md's invariants that a source scan can check, checked on every run of the
//! suite: SQL only in `sundial-store` (and the benchmark's baselines), the wall clock read
//! only through `SystemClock`, no module import cycle in any crate of the workspace. Each scan
//! is also run on made-up sources, so that a scan that finds nothing cannot pass unnoticed.

// Shared with `scheduler/store/tests/sql_sources.rs`, which uses its lexer for the store's SQL.
#[allow(dead_code)]
mod scan;

use std::path::{Path, PathBuf};

use scan::{Source, cycles, import_graph, rust_files};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The workspace's members (`scheduler/core`, `runtimes/wasm`, …), read from its
/// `Cargo.toml`, each with its package name.
fn members() -> Vec<(String, String)> {
    let root = workspace_root();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let list = manifest.split("members = [").nth(1).and_then(|s| s.split(']').next()).expect("a members list");
    let out: Vec<(String, String)> = list
        .split('"')
        .skip(1)
        .step_by(2)
        .map(|dir| {
            let krate = std::fs::read_to_string(root.join(dir).join("Cargo.toml")).unwrap();
            let name = krate
                .lines()
                .find_map(|l| l.strip_prefix("name = \"").and_then(|n| n.strip_suffix('"')))
                .unwrap_or_else(|| panic!("{dir}/Cargo.toml names its package"));
            (dir.to_string(), name.to_string())
        })
        .collect();
    assert!(out.iter().any(|(d, _)| d == "runtimes/shell"), "found the members: {out:?}");
    out
}

/// One crate's `src/**/*.rs`, each shown by its path from the workspace root.
fn crate_sources(dir: &str) -> Vec<Source> {
    let src = workspace_root().join(dir).join("src");
    rust_files(&src)
        .into_iter()
        .map(|p| {
            let under_src = p.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
            Source::new(format!("{dir}/src/{under_src}"), &under_src, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// Product source files: `scheduler/<crate>/src/**/*.rs` and `runtimes/<sandbox>/src/**/*.rs`
/// (tests, benches and examples excluded; the SDK is a client, not the product).
fn product_sources() -> Vec<Source> {
    let out: Vec<Source> = members()
        .iter()
        .filter(|(dir, _)| dir.starts_with("scheduler/") || dir.starts_with("runtimes/"))
        .flat_map(|(dir, _)| crate_sources(dir))
        .collect();
    assert!(out.len() > 30, "found the sources ({} files)", out.len());
    assert!(out.iter().any(|s| s.rel == "runtimes/wasm/src/sleep.rs"), "the sandboxes are scanned");
    out
}

/// Lines of `text` outside `#[cfg(test)]` modules (a module starting at that attribute runs
/// to the end of the file in this code base's layout).
fn non_test_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let end = text.find("#[cfg(test)]").unwrap_or(text.len());
    text[..end].lines().enumerate().map(|(i, l)| (i + 1, l)).filter(|(_, l)| !l.trim_start().starts_with("//"))
}

fn offenders(sources: &[Source], allowed: impl Fn(&str) -> bool, needles: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for src in sources.iter().filter(|s| !allowed(&s.rel)) {
        for (n, line) in non_test_lines(&src.text) {
            if needles.iter().any(|k| line.contains(k)) {
                out.push(format!("{}:{n}: {}", src.rel, line.trim()));
            }
        }
    }
    out
}

#[test]
fn only_the_store_and_the_benchmark_run_sql() {
    let found = offenders(
        &product_sources(),
        |p| p.starts_with("scheduler/store/src/") || p.starts_with("scheduler/bench/src/"),
        &["sqlx::query", "sqlx::raw_sql", "query_as(", "query_scalar(", "sqlx::Executor"],
    );
    assert!(found.is_empty(), "SQL outside sundial-store:\n{}", found.join("\n"));
}

const WALL_CLOCK_READS: &[&str] = &["Utc::now", "Local::now", "SystemTime::now", "OffsetDateTime::now"];

/// Where the wall clock may be read: `SystemClock` itself, and the benchmark, which observes
/// real time from outside the product. (`Instant`, the monotonic clock, is not the wall clock:
/// the sandboxes measure their runs' own time limits with it.)
fn may_read_the_wall_clock(path: &str) -> bool {
    path == "scheduler/core/src/clock.rs" || path.starts_with("scheduler/bench/src/")
}

#[test]
fn the_wall_clock_is_read_only_through_system_clock() {
    let found = offenders(&product_sources(), may_read_the_wall_clock, WALL_CLOCK_READS);
    assert!(
        found.is_empty(),
        "wall-clock reads outside clock.rs (take a `sundial_core::clock::SharedClock`):\n{}",
        found.join("\n")
    );
}

/// The scan itself: a read in a sandbox is found; in a comment, a test module or `clock.rs`, not.
#[test]
fn the_wall_clock_scan_finds_a_read() {
    let src = |rel: &str, text: &str| Source::new(rel, "x.rs", text);
    let sources = [
        src("runtimes/wasm/src/x.rs", "// SystemTime::now()\nfn f() { let t = std::time::SystemTime::now(); }\n"),
        src("scheduler/core/src/clock.rs", "fn now_ms() -> i64 { chrono::Utc::now().timestamp_millis() }\n"),
        src("scheduler/api/src/y.rs", "fn f() {}\n#[cfg(test)]\nmod tests { fn t() { chrono::Utc::now(); } }\n"),
    ];
    let found = offenders(&sources, may_read_the_wall_clock, WALL_CLOCK_READS);
    assert_eq!(found, ["runtimes/wasm/src/x.rs:2: fn f() { let t = std::time::SystemTime::now(); }"]);
}

#[test]
fn no_crate_has_a_module_import_cycle() {
    let mut found = Vec::new();
    let mut scanned = Vec::new();
    for (dir, name) in members() {
        let graph = import_graph(&crate_sources(&dir));
        found.extend(cycles(&graph).into_iter().map(|c| format!("{name}: {c}")));
        scanned.push((name, graph));
    }
    // The scan sees the imports it must: modules using their crate's shared ones.
    let graph = |name: &str| &scanned.iter().find(|(n, _)| n == name).unwrap().1;
    assert!(graph("sundial-store")["sql::runs"].contains_key("sql"), "{:#?}", graph("sundial-store"));
    assert!(graph("sundial-wasm-sandbox")["fs"].contains_key("trampoline"), "{:#?}", graph("sundial-wasm-sandbox"));
    assert!(
        found.is_empty(),
        "module import cycles (move what both sides share into a module both import, as the store's \
         sql/rows.rs and sql/writes.rs do):\n{}",
        found.join("\n")
    );
}

/// The scan itself: a cycle through a `use` group, a path in code and an inline test module
/// is found and named; neither a test module's `use super::*`, a visibility, a comment nor a
/// string is an edge.
#[test]
fn the_cycle_scan_finds_a_cycle_and_names_it() {
    let src = |rel: &str, text: &str| Source::new(rel, rel, text);
    let sources = [
        src("lib.rs", "mod sql;\npub use sql::*;"),
        src("sql/mod.rs", "use crate::{Result, Run};\nmod a;\nmod b;\nfn f() -> &'static str { \"super::b\" }"),
        src("sql/a.rs", "use super::{col, b::{self, g}};\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n"),
        src("sql/b.rs", "// use super::a;\npub(in crate::sql) fn h() { let c = '\"'; crate::sql::a::f(); }\n"),
    ];
    let graph = import_graph(&sources);
    assert_eq!(graph["sql"].keys().collect::<Vec<_>>(), Vec::<&String>::new(), "{graph:#?}");
    assert_eq!(graph["sql::a"].keys().collect::<Vec<_>>(), ["sql", "sql::b"]);
    assert_eq!(graph["sql::b"].keys().collect::<Vec<_>>(), ["sql::a"]);
    assert_eq!(cycles(&graph), ["sql::a -> sql::b (sql/a.rs:1) -> sql::a (sql/b.rs:2)"]);
}
