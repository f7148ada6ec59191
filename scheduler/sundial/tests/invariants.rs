//! ARCHITECTURE.md's invariants that a source scan can check, checked on every run of the
//! suite: SQL only in `sundial-store` (and the benchmark's baselines), the wall clock read
//! only through `SystemClock`.

use std::path::{Path, PathBuf};

/// Product source files: `scheduler/<crate>/src/**/*.rs` (tests and benches excluded).
fn product_sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for krate in std::fs::read_dir(&root).unwrap() {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            walk(&src, &mut out);
        }
    }
    assert!(out.len() > 30, "found the sources ({} files)", out.len());
    out.into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
            (rel, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Lines of `text` outside `#[cfg(test)]` modules (a module starting at that attribute runs
/// to the end of the file in this code base's layout).
fn non_test_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let end = text.find("#[cfg(test)]").unwrap_or(text.len());
    text[..end].lines().enumerate().map(|(i, l)| (i + 1, l)).filter(|(_, l)| !l.trim_start().starts_with("//"))
}

fn offenders(allowed: impl Fn(&str) -> bool, needles: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in product_sources() {
        if allowed(&path) {
            continue;
        }
        for (n, line) in non_test_lines(&text) {
            if needles.iter().any(|k| line.contains(k)) {
                out.push(format!("{path}:{n}: {}", line.trim()));
            }
        }
    }
    out
}

#[test]
fn only_the_store_and_the_benchmark_run_sql() {
    let found = offenders(
        |p| p.starts_with("store/src/") || p.starts_with("bench/src/"),
        &["sqlx::query", "sqlx::raw_sql", "query_as(", "query_scalar(", "sqlx::Executor"],
    );
    assert!(found.is_empty(), "SQL outside sundial-store:\n{}", found.join("\n"));
}

#[test]
fn the_wall_clock_is_read_only_through_system_clock() {
    // The benchmark observes real time from outside the product; it is allowed its clock.
    let found = offenders(
        |p| p == "core/src/clock.rs" || p.starts_with("bench/src/"),
        &["Utc::now", "Local::now", "SystemTime::now", "OffsetDateTime::now"],
    );
    assert!(found.is_empty(), "wall-clock reads outside clock.rs:\n{}", found.join("\n"));
}
