//! Source scans of the store's own code (plain text, no compiler): no SQL writes a run state
//! as a literal (states come from `RunState`, see `sql/mod.rs`'s `states`). The lexer is the
//! one `scheduler/sundial/tests/invariants.rs` uses for its scans of every crate (module
//! import cycles among them).

// Shared by two test crates, each using part of it.
#[allow(dead_code)]
#[path = "../../sundial/tests/scan/mod.rs"]
mod scan;

use scan::{Source, lex, module_of, rust_files, test_module_lines};
use sundial_core::types::RunState;

fn store_sources() -> Vec<Source> {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let out: Vec<Source> = rust_files(&src)
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
            Source::new(rel.clone(), &rel, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    assert!(out.iter().any(|s| s.module == module_of("sql/mod.rs")), "found the store's sources");
    out
}

/// Every string literal outside test modules holding a run state quoted as SQL
/// (`'pending'`), as `file:line`.
fn state_literals(sources: &[Source]) -> Vec<String> {
    let mut found = Vec::new();
    for src in sources {
        let (toks, strings) = lex(&src.text);
        let tests = test_module_lines(&toks);
        for (text, line) in strings {
            if tests.iter().any(|r| r.contains(&line)) {
                continue;
            }
            for state in RunState::ALL {
                if text.contains(&format!("'{state}'")) {
                    found.push(format!(
                        "{}:{line}: '{state}' in \"{}\"",
                        src.rel,
                        text.split_whitespace().collect::<Vec<_>>().join(" ")
                    ));
                }
            }
        }
    }
    found
}

#[test]
fn no_sql_in_the_store_spells_a_run_state() {
    let found = state_literals(&store_sources());
    assert!(
        found.is_empty(),
        "run states written as SQL literals in scheduler/store/src (render them from RunState: \
         `RunState::X.as_str()` bound, or `states(&[..])` / `RunState::TERMINAL` formatted in):\n{}",
        found.join("\n")
    );
}

/// The scan itself: a quoted state in a string (plain or raw) is found; in a comment, a
/// test module, or unquoted, it is not.
#[test]
fn the_state_scan_finds_a_quoted_state() {
    let src = |rel: &str, text: &str| Source::new(rel, rel, text);
    let sources = [src(
        "sql/x.rs",
        "// state = 'pending'\nconst A: &str = \"UPDATE runs SET state = 'cancelled' \\\n WHERE state IN ('queued')\";\n\
         const B: &str = r#\"state = 'running'\"#;\nconst C: &str = \"pending\";\n\
         #[cfg(test)]\nmod tests {\n    fn t() { assert_eq!(x(), \"'failed'\"); }\n}\nconst D: &str = \"'skipped'\";\n",
    )];
    let found = state_literals(&sources);
    assert_eq!(found.len(), 4, "{found:#?}");
    assert!(found[0].starts_with("sql/x.rs:2: 'queued'"), "{found:#?}");
    assert!(found[1].starts_with("sql/x.rs:2: 'cancelled'"), "{found:#?}");
    assert!(found[2].starts_with("sql/x.rs:4: 'running'"), "{found:#?}");
    assert!(found[3].starts_with("sql/x.rs:10: 'skipped'"), "{found:#?}");
}
