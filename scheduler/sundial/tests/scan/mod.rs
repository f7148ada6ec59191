//! Rust sources read as plain text (no compiler), for `invariants.rs`: a small lexer, the
//! one bracket matcher, the module import graph of one crate and its cycles, and the string
//! literals outside test modules.
//!
//! The graph: one node per module file under a crate's `src/` (the crate root excluded:
//! everything is re-exported there), an edge for every path that names another module, from
//! `use` trees and from paths in code (`crate::…`, `super::…`, `self::…`, a child module's
//! name). Comments and literals are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

// ---- sources ------------------------------------------------------------------

/// One source file: its path as shown (`scheduler/store/src/sql/runs.rs`), its module path
/// within its crate (`["sql", "runs"]`), its text.
pub struct Source {
    pub rel: String,
    pub module: Vec<String>,
    pub text: String,
}

impl Source {
    /// `under_src` is the file's path under its crate's `src/` (`sql/runs.rs`).
    pub fn new(rel: impl Into<String>, under_src: &str, text: impl Into<String>) -> Self {
        Source { rel: rel.into(), module: module_of(under_src), text: text.into() }
    }
}

/// Every `.rs` file under `dir`, sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
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
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

/// `lib.rs` → `[]`, `sql/mod.rs` → `["sql"]`, `sql/runs/batch.rs` → `["sql", "runs", "batch"]`.
pub fn module_of(rel: &str) -> Vec<String> {
    let stem = rel.strip_suffix(".rs").unwrap();
    let mut parts: Vec<String> = stem.split('/').map(String::from).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

fn name(module: &[String]) -> String {
    if module.is_empty() { "crate".into() } else { module.join("::") }
}

// ---- a small lexer --------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

/// Tokens, or string literals, each with its line.
pub type Lines<T> = Vec<(T, usize)>;

/// The tokens of `text` with their line numbers (comments, strings, chars and lifetimes
/// dropped), and the string literals with theirs.
pub fn lex(text: &str) -> (Lines<Tok>, Lines<String>) {
    let c: Vec<char> = text.chars().collect();
    let (mut toks, mut strings) = (Vec::new(), Vec::new());
    let (mut i, mut line) = (0, 1);
    let ident_start = |ch: char| ch.is_alphabetic() || ch == '_';
    let ident_char = |ch: char| ch.is_alphanumeric() || ch == '_';
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if ch == '"' || (ch == 'b' && next == Some('"')) {
            // A string: to the next unescaped quote.
            let start_line = line;
            i += if ch == 'b' { 2 } else { 1 };
            let mut s = String::new();
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' && i + 1 < c.len() {
                    s.push(c[i]);
                    i += 1;
                }
                line += usize::from(c[i] == '\n');
                s.push(c[i]);
                i += 1;
            }
            i += 1;
            strings.push((s, start_line));
        } else if (ch == 'r' || (ch == 'b' && next == Some('r'))) && raw_string_at(&c, i).is_some() {
            // A raw string: `r#"…"#`, as many hashes as it opened with.
            let (hashes, body) = raw_string_at(&c, i).unwrap();
            let start_line = line;
            i = body;
            let mut s = String::new();
            loop {
                if i >= c.len() {
                    break;
                }
                if c[i] == '"' && (0..hashes).all(|k| c.get(i + 1 + k) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                line += usize::from(c[i] == '\n');
                s.push(c[i]);
                i += 1;
            }
            strings.push((s, start_line));
        } else if ch == '\'' {
            // A char literal (`'a'`, `'\n'`, `'"'`) or a lifetime (`'static`).
            if next == Some('\\') {
                // Past the backslash and the character it escapes (`'\''`), to the closing quote.
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < c.len() && ident_char(c[i]) {
                    i += 1;
                }
            }
        } else if ident_start(ch) {
            let start = i;
            while i < c.len() && ident_char(c[i]) {
                i += 1;
            }
            toks.push((Tok::Ident(c[start..i].iter().collect()), line));
        } else if ch.is_ascii_digit() {
            while i < c.len() && (ident_char(c[i]) || c[i] == '.') {
                i += 1;
            }
        } else if ch == ':' && next == Some(':') {
            toks.push((Tok::Path, line));
            i += 2;
        } else {
            toks.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    (toks, strings)
}

/// At `i`, a raw string's opening (`r"`, `r#"`, `br##"`, …): its hashes and where its body starts.
fn raw_string_at(c: &[char], i: usize) -> Option<(usize, usize)> {
    let mut j = i + if c[i] == 'b' { 2 } else { 1 };
    let mut hashes = 0;
    while c.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    // `r#ident` is a raw identifier, not a string.
    (c.get(j) == Some(&'"')).then_some((hashes, j + 1))
}

/// The index of the token closing the bracket (`{`, `(` or `[`) at `open`: the first of its
/// kind that brings the count of that kind back to zero (other kinds are not counted).
/// `None` when `open` is no opening bracket or is never closed. Every scan finding the end
/// of a block, a group or an attribute uses this one.
pub fn matching_close(toks: &[(Tok, usize)], open: usize) -> Option<usize> {
    let (o, c) = match toks.get(open)?.0 {
        Tok::Punct('{') => ('{', '}'),
        Tok::Punct('(') => ('(', ')'),
        Tok::Punct('[') => ('[', ']'),
        _ => return None,
    };
    let mut depth = 0usize;
    for (j, (t, _)) in toks.iter().enumerate().skip(open) {
        match *t {
            Tok::Punct(p) if p == o => depth += 1,
            Tok::Punct(p) if p == c => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

// ---- module paths ---------------------------------------------------------------

/// A path as written (`["super", "rows", "run_row"]`), where: the module (file or inline)
/// and the line.
struct PathAt {
    here: Vec<String>,
    path: Vec<String>,
    line: usize,
}

/// Every path the file names: `use` trees expanded to one path per leaf, and paths in code.
fn paths_of(src: &Source, modules: &BTreeSet<Vec<String>>) -> Vec<PathAt> {
    let (toks, _) = lex(&src.text);
    let mut out = Vec::new();
    // Inline modules (`mod tests { … }`) open a scope to their closing brace (its token's
    // index): `super` inside them is the file's module.
    let mut scope: Vec<(String, usize)> = Vec::new();
    let here = |scope: &[(String, usize)]| {
        let mut m = src.module.clone();
        m.extend(scope.iter().map(|(n, _)| n.clone()));
        m
    };
    let mut i = 0;
    while i < toks.len() {
        while scope.last().is_some_and(|(_, close)| *close < i) {
            scope.pop();
        }
        match &toks[i].0 {
            Tok::Ident(kw) if kw == "mod" => {
                if let (Some((Tok::Ident(n), _)), Some((Tok::Punct('{'), _))) = (toks.get(i + 1), toks.get(i + 2)) {
                    scope.push((n.clone(), matching_close(&toks, i + 2).unwrap_or(toks.len())));
                    i += 3;
                    continue;
                }
            }
            Tok::Ident(kw) if kw == "use" => {
                let end = (i..toks.len()).find(|&j| toks[j].0 == Tok::Punct(';')).unwrap_or(toks.len());
                let mut leaves = Vec::new();
                use_tree(&toks[i + 1..end], Vec::new(), &mut leaves);
                for path in leaves {
                    out.push(PathAt { here: here(&scope), path, line: toks[i].1 });
                }
                i = end + 1;
                continue;
            }
            Tok::Ident(first) if toks.get(i + 1).is_some_and(|t| t.0 == Tok::Path) => {
                // A path in code, if it starts at a module: `crate`, `super`, `self`, or a
                // child module of this one (`batch::insert_runs` in `runs.rs`).
                // Not the middle of a path, nor a visibility (`pub(in crate::sql)`).
                let after_path = i > 0
                    && match &toks[i - 1].0 {
                        Tok::Path => true,
                        Tok::Ident(w) => w == "in",
                        Tok::Punct(_) => false,
                    };
                let mut child = here(&scope);
                child.push(first.clone());
                let rooted = matches!(first.as_str(), "crate" | "super" | "self") || modules.contains(&child);
                if rooted && !after_path {
                    let mut path = vec![first.clone()];
                    let mut j = i + 1;
                    while let (Some((Tok::Path, _)), Some((Tok::Ident(seg), _))) = (toks.get(j), toks.get(j + 1)) {
                        path.push(seg.clone());
                        j += 2;
                    }
                    out.push(PathAt { here: here(&scope), path, line: toks[i].1 });
                    i = j;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Expand a `use` tree (`super::{a, b::{c, self}}`) into its leaf paths.
fn use_tree(toks: &[(Tok, usize)], prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].0 {
            Tok::Ident(s) if s == "as" => break,
            Tok::Ident(s) if s == "self" && !path.is_empty() => {}
            Tok::Ident(s) => path.push(s.clone()),
            Tok::Path => {}
            Tok::Punct('*') => {}
            Tok::Punct('{') => {
                // Split the group's items at its top-level commas (past nested groups).
                let close = matching_close(toks, i).unwrap_or(toks.len());
                let (mut start, mut j) = (i + 1, i + 1);
                while j < close {
                    match toks[j].0 {
                        Tok::Punct('{') => j = matching_close(toks, j).unwrap_or(close),
                        Tok::Punct(',') => {
                            use_tree(&toks[start..j], path.clone(), out);
                            start = j + 1;
                        }
                        _ => {}
                    }
                    j += 1;
                }
                use_tree(&toks[start..close], path.clone(), out);
                return;
            }
            _ => {}
        }
        i += 1;
    }
    if !path.is_empty() {
        out.push(path);
    }
}

/// The module a path names (the longest prefix that is a module file), from the module
/// `here` it is written in; `None` for another crate.
fn resolve(here: &[String], path: &[String], modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let mut abs: Vec<String> = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("super" | "self") => here.to_vec(),
        _ => {
            // Not rooted: a child module of `here`, or something of another crate.
            let mut child = here.to_vec();
            child.push(path[0].clone());
            if !modules.contains(&child) {
                return None;
            }
            here.to_vec()
        }
    };
    let rest = match path.first().map(String::as_str) {
        Some("crate" | "self") => &path[1..],
        _ => path,
    };
    let mut segs = rest.iter().peekable();
    while segs.peek().is_some_and(|s| *s == "super") {
        abs.pop()?;
        segs.next();
    }
    abs.extend(segs.cloned());
    (0..=abs.len()).rev().map(|n| abs[..n].to_vec()).find(|m| modules.contains(m) || m.is_empty())
}

/// Module → module it imports → the first place it does (`sql/chains.rs:28`).
pub type Graph = BTreeMap<String, BTreeMap<String, String>>;

pub fn import_graph(sources: &[Source]) -> Graph {
    let modules: BTreeSet<Vec<String>> = sources.iter().map(|s| s.module.clone()).collect();
    let reexports = root_reexports(sources, &modules);
    let mut graph = Graph::new();
    for src in sources.iter().filter(|s| !s.module.is_empty()) {
        let edges = graph.entry(name(&src.module)).or_default();
        for PathAt { here, path, line } in paths_of(src, &modules) {
            let Some(mut to) = resolve(&here, &path, &modules) else { continue };
            // A name the crate root re-exports (`use crate::Engine`) is an edge to the module
            // that defines it; naming the root's own items says nothing about structure.
            if to.is_empty() {
                let named = if path.first().is_some_and(|p| p == "crate") { path.get(1) } else { None };
                match named.and_then(|n| reexports.get(n)) {
                    Some(m) => to = m.clone(),
                    None => continue,
                }
            }
            if to == src.module {
                continue;
            }
            edges.entry(name(&to)).or_insert_with(|| format!("{}:{line}", src.rel));
        }
    }
    graph
}

/// What the crate root re-exports, by name → the module that defines it: each leaf of its
/// `use` trees that names a module of the crate (`pub use engine::Engine`), and for a glob
/// (`pub use records::*`) the items the globbed module declares.
fn root_reexports(sources: &[Source], modules: &BTreeSet<Vec<String>>) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let Some(root) = sources.iter().find(|s| s.module.is_empty()) else { return out };
    for PathAt { here, path, .. } in paths_of(root, modules) {
        let Some(to) = resolve(&here, &path, modules) else { continue };
        let Some(last) = path.last() else { continue };
        if to.is_empty() || to.last() == Some(last) {
            continue;
        }
        out.insert(last.clone(), to);
    }
    let (toks, _) = lex(&root.text);
    for w in toks.windows(4) {
        let [(Tok::Ident(m), _), (Tok::Path, _), (Tok::Punct('*'), _), (Tok::Punct(';'), _)] = w else { continue };
        let module = vec![m.clone()];
        let Some(src) = sources.iter().find(|s| s.module == module) else { continue };
        let (toks, _) = lex(&src.text);
        const ITEMS: &[&str] = &["struct", "enum", "trait", "type", "fn", "const", "static", "mod"];
        for d in toks.windows(2) {
            if let [(Tok::Ident(kw), _), (Tok::Ident(item), _)] = d
                && ITEMS.contains(&kw.as_str())
            {
                out.entry(item.clone()).or_insert_with(|| module.clone());
            }
        }
    }
    out
}

/// Every cycle a depth-first walk meets (one per edge back into the walk's path), each
/// written `a -> b (where) -> a (where)`.
pub fn cycles(graph: &Graph) -> Vec<String> {
    fn visit(node: &str, graph: &Graph, path: &mut Vec<String>, done: &mut BTreeSet<String>, found: &mut Vec<String>) {
        path.push(node.to_string());
        for (to, at) in graph.get(node).into_iter().flatten() {
            if let Some(start) = path.iter().position(|p| p == to) {
                let mut text = path[start].clone();
                for w in path[start..].windows(2) {
                    text.push_str(&format!(" -> {} ({})", w[1], graph[&w[0]][&w[1]]));
                }
                text.push_str(&format!(" -> {to} ({at})"));
                found.push(text);
            } else if !done.contains(to) {
                visit(to, graph, path, done, found);
            }
        }
        path.pop();
        done.insert(node.to_string());
    }
    let (mut done, mut found) = (BTreeSet::new(), Vec::new());
    for node in graph.keys() {
        if !done.contains(node) {
            visit(node, graph, &mut Vec::new(), &mut done, &mut found);
        }
    }
    found
}

/// The lines of `#[cfg(test)] mod … { … }` blocks: tests may spell out the SQL they expect.
pub fn test_module_lines(toks: &[(Tok, usize)]) -> Vec<std::ops::RangeInclusive<usize>> {
    let attr: Vec<Tok> = ["#", "[", "cfg", "(", "test", ")", "]", "mod"]
        .iter()
        .map(|t| match t.chars().next().unwrap() {
            c if c.is_alphabetic() => Tok::Ident(t.to_string()),
            c => Tok::Punct(c),
        })
        .collect();
    let mut out = Vec::new();
    for i in 0..toks.len() {
        if !toks[i..].iter().map(|(t, _)| t).take(attr.len()).eq(attr.iter()) {
            continue;
        }
        let Some(open) = (i + attr.len()..toks.len()).find(|&j| toks[j].0 == Tok::Punct('{')) else { continue };
        if let Some(close) = matching_close(toks, open) {
            out.push(toks[i].1..=toks[close].1);
        }
    }
    out
}
