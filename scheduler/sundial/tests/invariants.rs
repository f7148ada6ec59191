//! ARCHITECTURE.md's invariants that a source scan can check, checked on every run of the
//! suite: SQL only in `sundial-store` (and the benchmark's baselines), the wall clock read
//! only through `SystemClock`, no module import cycle in any crate of the workspace, no
//! function over 100 lines without a reason beside it, no source file over 800 lines. Each
//! scan is also run on made-up sources, so that a scan that finds nothing cannot pass
//! unnoticed.

// Shared with `scheduler/store/tests/sql_sources.rs`, which uses its lexer for the store's SQL.
#[allow(dead_code)]
mod scan;

use std::path::{Path, PathBuf};

use scan::{Source, Tok, cycles, import_graph, lex, matching_close, rust_files, test_module_lines};

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

/// The scan sees through the crate root's re-exports: `use crate::Engine` in a service is an
/// edge to the module defining `Engine`, so a service reaching the state that holds its own
/// state is a cycle; a glob re-export (`pub use records::*`) resolves the same way.
#[test]
fn the_cycle_scan_sees_through_the_crate_roots_re_exports() {
    let src = |rel: &str, text: &str| Source::new(rel, rel, text);
    let sources = [
        src("lib.rs", "mod claim;\nmod engine;\nmod records;\npub use engine::Engine;\npub use records::*;\nfn f() {}"),
        src("engine.rs", "use crate::claim::PeekCursor;\npub struct Engine;"),
        src("claim.rs", "use crate::{Engine, Run, f};\npub struct PeekCursor;"),
        src("records.rs", "pub struct Run;"),
    ];
    let graph = import_graph(&sources);
    assert_eq!(graph["claim"].keys().collect::<Vec<_>>(), ["engine", "records"], "{graph:#?}");
    assert_eq!(cycles(&graph), ["claim -> engine (claim.rs:1) -> claim (engine.rs:1)"]);
}

/// The one bracket matcher the scans share: nesting counted per kind, brackets in strings,
/// chars and comments not seen, an unclosed bracket or a non-bracket `None`.
#[test]
fn the_bracket_matcher_finds_each_kind_of_close() {
    let (toks, _) = lex("fn f(a: [u8; 2]) { if x { \"}\" } // }\n let c = '}'; g(h(1)) }\nmod m {");
    let at = |p: char, nth: usize| toks.iter().enumerate().filter(|(_, t)| t.0 == Tok::Punct(p)).nth(nth).unwrap().0;
    let closing = |open: usize| matching_close(&toks, open).map(|j| (toks[j].0.clone(), toks[j].1));
    assert_eq!(closing(at('(', 0)), Some((Tok::Punct(')'), 1)));
    assert_eq!(closing(at('[', 0)), Some((Tok::Punct(']'), 1)));
    assert_eq!(closing(at('{', 0)), Some((Tok::Punct('}'), 2)), "{toks:?}");
    assert_eq!(matching_close(&toks, at('{', 0)), Some(at('}', 1)));
    assert_eq!(matching_close(&toks, at('(', 1)), Some(at(')', 2)));
    assert_eq!(matching_close(&toks, at('{', 2)), None, "`mod m {{` is never closed");
    assert_eq!(matching_close(&toks, 0), None, "`fn` is no bracket");
}

/// The comment that lets a function run over [`MAX_FN_LINES`]: directly above its `fn` line,
/// among its doc comments and attributes, followed by the reason.
const LONG_FN_REASON: &str = "// Over 100 lines on purpose:";
const MAX_FN_LINES: usize = 100;

/// A function of more than [`MAX_FN_LINES`] lines (its `fn` line to its closing brace).
#[derive(Debug, PartialEq)]
struct LongFn {
    at: String,
    name: String,
    lines: usize,
    /// [`LONG_FN_REASON`] is written above it.
    reason: bool,
}

impl std::fmt::Display for LongFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} fn {} ({} lines)", self.at, self.name, self.lines)
    }
}

/// Every function of `src` over [`MAX_FN_LINES`] lines, outside `#[cfg(test)]` modules and
/// test functions.
fn long_functions(src: &Source) -> Vec<LongFn> {
    let (toks, _) = lex(&src.text);
    let text: Vec<&str> = src.text.lines().collect();
    let tests = test_module_lines(&toks);
    let mut out = Vec::new();
    for i in 0..toks.len() {
        let (Tok::Ident(kw), Some((Tok::Ident(name), _))) = (&toks[i].0, toks.get(i + 1)) else { continue };
        let line = toks[i].1;
        if kw != "fn" || tests.iter().any(|r| r.contains(&line)) {
            continue;
        }
        let Some(end) = body_end(&toks, i + 2) else { continue };
        let lines = end - line + 1;
        let (start, attrs) = item_start(&toks, i);
        if lines <= MAX_FN_LINES || attrs.iter().any(|a| is_test_attribute(a)) {
            continue;
        }
        // The comments right above the `fn` line, up to the item before or a blank line.
        let above = start.checked_sub(1).map_or(0, |s| toks[s].1);
        let reason = (above + 1..line)
            .rev()
            .map(|n| text[n - 1].trim())
            .take_while(|l| !l.is_empty())
            .any(|l| l.starts_with(LONG_FN_REASON));
        out.push(LongFn { at: format!("{}:{line}", src.rel), name: name.clone(), lines, reason });
    }
    out
}

/// The line of the brace closing the body of the function whose signature starts at token
/// `from`; `None` for a declaration without a body (`fn f();` in a trait).
fn body_end(toks: &[(Tok, usize)], from: usize) -> Option<usize> {
    // The signature's first `{` or `;` outside parentheses and brackets (`[u8; 2]`).
    let mut j = from;
    loop {
        match toks.get(j)?.0 {
            Tok::Punct('(' | '[') => j = matching_close(toks, j)? + 1,
            Tok::Punct(';') => return None,
            Tok::Punct('{') => return matching_close(toks, j).map(|close| toks[close].1),
            _ => j += 1,
        }
    }
}

/// Where the item whose `fn` token is at `at` starts (its first attribute or qualifier), and
/// its attributes' tokens (`#[tokio::test(flavor = …)]` → `tokio :: test ( flavor = … )`).
fn item_start(toks: &[(Tok, usize)], at: usize) -> (usize, Vec<&[(Tok, usize)]>) {
    const QUALIFIERS: &[&str] = &["pub", "async", "const", "unsafe", "extern", "default"];
    let mut start = at;
    let mut attrs = Vec::new();
    while start > 0 {
        match &toks[start - 1].0 {
            Tok::Ident(q) if QUALIFIERS.contains(&q.as_str()) => start -= 1,
            Tok::Punct(close @ (')' | ']')) => {
                let open = if *close == ')' { '(' } else { '[' };
                // The bracket this one closes: the nearest before it whose match it is.
                let Some(j) = (0..start)
                    .rev()
                    .find(|&j| toks[j].0 == Tok::Punct(open) && matching_close(toks, j) == Some(start - 1))
                else {
                    break;
                };
                match (open, j.checked_sub(1).map(|k| &toks[k].0)) {
                    // `pub(crate)`, `pub(in crate::sql)`
                    ('(', Some(Tok::Ident(p))) if p == "pub" => start = j,
                    ('[', Some(Tok::Punct('#'))) => {
                        attrs.push(&toks[j + 1..start - 1]);
                        start = j - 1;
                    }
                    _ => break,
                }
            }
            _ => break,
        }
    }
    (start, attrs)
}

/// `#[test]`, `#[tokio::test(…)]`, any `#[….::test]`, and `#[cfg(test)]`: test code.
fn is_test_attribute(attr: &[(Tok, usize)]) -> bool {
    let toks: Vec<&Tok> = attr.iter().map(|(t, _)| t).collect();
    let ident = |t: &Tok, s: &str| matches!(t, Tok::Ident(i) if i == s);
    let path_end = toks.iter().position(|t| !matches!(t, Tok::Ident(_) | Tok::Path)).unwrap_or(toks.len());
    let cfg_test = toks.len() == 4 && ident(toks[0], "cfg") && ident(toks[2], "test");
    (path_end > 0 && ident(toks[path_end - 1], "test")) || cfg_test
}

#[test]
fn no_function_is_over_100_lines_without_a_reason() {
    let found: Vec<LongFn> = product_sources().iter().flat_map(long_functions).collect();
    // The scan sees the long functions it must: the benchmark's, which give their reasons.
    assert!(
        found.iter().any(|f| f.at.starts_with("scheduler/bench/src/report.rs:") && f.name == "human" && f.reason),
        "{found:#?}"
    );
    let offenders: Vec<String> = found.iter().filter(|f| !f.reason).map(|f| f.to_string()).collect();
    assert!(
        offenders.is_empty(),
        "functions over {MAX_FN_LINES} lines (split them into functions that read top-down, or write \
         `{LONG_FN_REASON} <why>` directly above the `fn`):\n{}",
        offenders.join("\n")
    );
}

/// The scan itself: a long function is found and measured, braces in strings, chars and
/// comments not counted; the reason is accepted only right above the `fn`; declarations, test
/// functions and test modules are not measured.
#[test]
fn the_long_function_scan_finds_a_long_function_and_accepts_a_reason() {
    // A body of `n` lines: nested blocks, and braces only in strings, chars and comments.
    let body = |n: usize| -> String {
        let tricky = [
            "    let a = \"}\"; let b = '{'; let c = r#\"}}\"#; // }",
            "    /* { */ if a.is_empty() { let _ = b'}'; }",
            "    let d = \"\\\"{\"; let e = ('\\'','}');",
        ];
        let mut lines: Vec<String> = tricky.iter().map(|s| s.to_string()).collect();
        lines.extend((tricky.len()..n).map(|k| format!("    {{ let x{k} = {k}; }}")));
        lines.join("\n")
    };
    let text = [
        "trait T {\n    fn declared();\n}".to_string(),
        format!("/// Just 100 lines.\npub(crate) fn at_the_limit() {{\n{}\n}}", body(98)),
        format!("#[inline]\npub async fn too_long(x: [u8; 2]) -> Option<()> {{\n{}\n}}", body(99)),
        format!(
            "/// Long.\n{LONG_FN_REASON} one table.\n#[allow(\n    clippy::too_many_lines\n)]\nfn with_a_reason() {{\n{}\n}}",
            body(110)
        ),
        format!("{LONG_FN_REASON} a reason too far above.\n\nfn reason_not_adjacent() {{\n{}\n}}", body(101)),
        format!("#[tokio::test(flavor = \"multi_thread\")]\nasync fn a_test() {{\n{}\n}}", body(150)),
        format!("#[cfg(test)]\nmod tests {{\n    fn helper() {{\n{}\n    }}\n}}", body(150)),
    ]
    .join("\n\n");
    let found = long_functions(&Source::new("runtimes/shell/src/x.rs", "x.rs", text));
    let shown: Vec<(String, bool)> = found.iter().map(|f| (f.to_string(), f.reason)).collect();
    assert_eq!(
        shown,
        [
            ("runtimes/shell/src/x.rs:108 fn too_long (101 lines)".to_string(), false),
            ("runtimes/shell/src/x.rs:215 fn with_a_reason (112 lines)".to_string(), true),
            ("runtimes/shell/src/x.rs:330 fn reason_not_adjacent (103 lines)".to_string(), false),
        ]
    );
}

/// Most lines a source file may have.
const MAX_FILE_LINES: usize = 800;

/// The files of `sources` over [`MAX_FILE_LINES`] lines, as `path (n lines)`. A generated
/// file (`@generated` in its first five lines) is not judged: its length is its generator's.
fn long_files(sources: &[Source]) -> Vec<String> {
    sources
        .iter()
        .filter(|s| !s.text.lines().take(5).any(|l| l.contains("@generated")))
        .map(|s| (s, s.text.lines().count()))
        .filter(|(_, n)| *n > MAX_FILE_LINES)
        .map(|(s, n)| format!("{} ({n} lines)", s.rel))
        .collect()
}

#[test]
fn no_source_file_is_over_800_lines() {
    // Every workspace member's `src/`, the Rust SDK's too. None holds a generated file today
    // (none is marked `@generated`); `long_files` would pass one over.
    let mut sources = Vec::new();
    for (dir, _) in members() {
        let found = crate_sources(&dir);
        assert!(!found.is_empty(), "{dir}/src has no .rs file");
        sources.extend(found);
    }
    // The scan counts the lines it must: some file is long, if not too long.
    let longest = sources.iter().map(|s| s.text.lines().count()).max().unwrap_or(0);
    assert!(longest > MAX_FILE_LINES / 2, "the longest source file has {longest} lines");
    let found = long_files(&sources);
    assert!(
        found.is_empty(),
        "source files over {MAX_FILE_LINES} lines (split them by duty into modules, each with a \
         `//!` line saying what it holds):\n{}",
        found.join("\n")
    );
}

/// The scan itself: a file one line over is found, one at the limit and a long generated
/// one are not.
#[test]
fn the_file_length_scan_finds_a_long_file() {
    let src = |rel: &str, first: &str, lines: usize| {
        Source::new(rel, "x.rs", format!("{first}\n{}", "fn f() {}\n".repeat(lines - 1)))
    };
    let sources = [
        src("runtimes/shell/src/at_the_limit.rs", "//! Just 800 lines.", 800),
        src("runtimes/shell/src/too_long.rs", "//! One too many.", 801),
        src("scheduler/api/src/generated.rs", "// @generated by a tool: do not edit.", 5000),
    ];
    assert_eq!(long_files(&sources), ["runtimes/shell/src/too_long.rs (801 lines)"]);
}
