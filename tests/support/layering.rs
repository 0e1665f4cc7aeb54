//! The file graph of a crate's `src/`, for the layering tests of the crates whose files
//! must not form a circle (docs/architecture.md, "Inside the daemon" and "The Runtime's
//! layers"). Every `crate::…`, `super::…` and `self::…` path, every `use` tree and every
//! path through a child module is resolved to the file that defines the item, following
//! the `use` declarations a path passes through (a parent's re-export is not a
//! dependency on the parent). Then each folder gets a graph of its entries — its files,
//! its subfolders as one node each, and its `mod.rs` as `mod` — and a circle in any of
//! those graphs is a circle of files. Only the standard library: the file is included by
//! several crates' tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// node → the nodes it names, each with one file (and line) that does, for the message.
pub type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// A token of Rust source, comments and literals left out.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

/// The tokens of `text`, each with its line: identifiers, `::` and single punctuation.
/// Comments, strings, chars and lifetimes are skipped, so a doc naming `crate::x` is no
/// reference.
fn tokens(text: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
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
        } else if ch == '"' || ((ch == 'r' || ch == 'b') && raw_string_start(&c, i).is_some()) {
            let (start, hashes) = if ch == '"' {
                (i + 1, None)
            } else {
                raw_string_start(&c, i).unwrap()
            };
            i = start;
            while i < c.len() {
                match hashes {
                    None if c[i] == '\\' => i += 1,
                    None if c[i] == '"' => break,
                    Some(n) if c[i] == '"' && (1..=n).all(|k| c.get(i + k) == Some(&'#')) => {
                        i += n;
                        break;
                    }
                    _ => {}
                }
                line += usize::from(c.get(i) == Some(&'\n'));
                i += 1;
            }
            i += 1;
        } else if ch == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a): only a literal
            // closes with a quote.
            if next == Some('\\') {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            out.push((Tok::Ident(word.trim_start_matches("r#").to_string()), line));
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
        } else if ch == ':' && next == Some(':') {
            out.push((Tok::Path, line));
            i += 2;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// Where a raw or byte string starting at `i` has its text, and its `#` count (`None`
/// for a byte string with escapes), if one starts there.
fn raw_string_start(c: &[char], i: usize) -> Option<(usize, Option<usize>)> {
    // An identifier that merely ends in r or b (`var"`) is not a string start.
    if i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if c[j] == 'b' {
        j += 1;
        if c.get(j) == Some(&'"') {
            return Some((j + 1, None));
        }
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while c.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    (c.get(j) == Some(&'"')).then_some((j + 1, Some(hashes)))
}

/// One `use` declaration's leaf: the path it names and the name it binds.
#[derive(Debug)]
struct UseLeaf {
    path: Vec<String>,
    /// The name in scope (`None` for a glob).
    binds: Option<String>,
    line: usize,
}

/// Parses a use tree starting at `toks[*i]` under `prefix`, up to (not past) its end.
fn use_tree(toks: &[(Tok, usize)], i: &mut usize, prefix: Vec<String>, out: &mut Vec<UseLeaf>) {
    let mut path = prefix;
    loop {
        match toks.get(*i) {
            Some((Tok::Path, _)) => *i += 1,
            Some((Tok::Ident(w), line)) => {
                let line = *line;
                if w == "as" {
                    *i += 1;
                    if let Some((Tok::Ident(alias), _)) = toks.get(*i) {
                        *i += 1;
                        if let Some(leaf) = out.last_mut() {
                            leaf.binds = Some(alias.clone());
                        }
                    }
                    return;
                }
                path.push(w.clone());
                *i += 1;
                if !matches!(toks.get(*i), Some((Tok::Path, _))) {
                    // The last segment: `self` binds its parent's name.
                    let binds = if w == "self" {
                        path.pop();
                        path.last().cloned()
                    } else {
                        Some(w.clone())
                    };
                    out.push(UseLeaf {
                        path: path.clone(),
                        binds,
                        line,
                    });
                    if matches!(toks.get(*i), Some((Tok::Ident(a), _)) if a == "as") {
                        continue;
                    }
                    return;
                }
            }
            Some((Tok::Punct('*'), line)) => {
                out.push(UseLeaf {
                    path,
                    binds: None,
                    line: *line,
                });
                *i += 1;
                return;
            }
            Some((Tok::Punct('{'), _)) => {
                *i += 1;
                loop {
                    match toks.get(*i) {
                        Some((Tok::Punct('}'), _)) | None => {
                            *i += 1;
                            return;
                        }
                        Some((Tok::Punct(','), _)) => *i += 1,
                        _ => use_tree(toks, i, path.clone(), out),
                    }
                }
            }
            _ => return,
        }
    }
}

/// A file of the crate and what it refers to.
#[derive(Debug, Default)]
struct FileInfo {
    /// Path inside `src/`, for messages.
    rel: String,
    /// Its module path (`lib.rs`: empty).
    module: Vec<String>,
    /// Name → absolute path, for every `use` at the file's top level (what its children
    /// reach through `super::NAME`).
    uses: BTreeMap<String, Vec<String>>,
    /// Absolute paths this file refers to, each with its line.
    refs: Vec<(Vec<String>, usize)>,
}

/// The module path of a file of `src/`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_str().unwrap().to_string())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.strip_suffix(".rs").unwrap().to_string();
    if !(stem == "mod" || (parts.is_empty() && (stem == "lib" || stem == "main"))) {
        parts.push(stem);
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Resolves `path` as written in module `here` (its inline modules included) to an
/// absolute module path; `None` for an outside crate or a name not rooted in this one.
fn absolute(
    path: &[String],
    here: &[String],
    children: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let first = path.first()?;
    let mut base: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "self" => here.to_vec(),
        "super" => {
            let mut b = here.to_vec();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                b.pop()?;
                rest = &rest[1..];
            }
            b.extend(rest.iter().cloned());
            return Some(b);
        }
        _ => {
            // A child module named without `self::` (2018 paths).
            let mut child = here.to_vec();
            child.push(first.clone());
            if children.contains(&child) {
                let mut b = here.to_vec();
                b.extend(path.iter().cloned());
                return Some(b);
            }
            return None;
        }
    };
    base.extend(path[1..].iter().cloned());
    Some(base)
}

/// Reads one file: its `use` declarations and every path it writes.
fn read_file(src: &Path, file: &Path, modules: &BTreeSet<Vec<String>>) -> FileInfo {
    let module = module_path(src, file);
    let text = std::fs::read_to_string(file).unwrap();
    let toks = tokens(&text);
    let is_parent = file
        .file_name()
        .is_some_and(|n| n == "mod.rs" || n == "lib.rs");
    let mut info = FileInfo {
        rel: file.strip_prefix(src).unwrap().display().to_string(),
        module: module.clone(),
        ..FileInfo::default()
    };
    // Inline modules (`mod tests { … }`): (name, brace depth at which it closes).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    // A parent's re-exports (`pub use child::X`), and every name its code uses: a
    // re-export is a dependency only when the parent's own code uses the name too.
    let mut reexports: Vec<(String, Vec<String>, usize)> = Vec::new();
    let mut used: BTreeSet<String> = BTreeSet::new();
    let here = |inline: &[(String, usize)]| {
        let mut h = module.clone();
        h.extend(inline.iter().map(|(n, _)| n.clone()));
        h
    };
    while i < toks.len() {
        match &toks[i].0 {
            Tok::Punct('{') => {
                depth += 1;
                i += 1;
            }
            Tok::Punct('}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
            }
            Tok::Ident(w) if w == "mod" => {
                if let (Some((Tok::Ident(name), _)), Some((Tok::Punct('{'), _))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    depth += 1;
                    inline.push((name.clone(), depth));
                    i += 3;
                } else {
                    // `mod name;` declares a child: no reference.
                    i += 2;
                }
            }
            Tok::Ident(w) if w == "use" => {
                // `pub use` in a parent file is a re-export: resolved, never an edge.
                let public = i > 0
                    && (matches!(&toks[i - 1].0, Tok::Ident(p) if p == "pub")
                        || matches!(&toks[i - 1].0, Tok::Punct(')')));
                let top_level = inline.is_empty() && depth == 0;
                i += 1;
                let mut leaves = Vec::new();
                use_tree(&toks, &mut i, Vec::new(), &mut leaves);
                let h = here(&inline);
                for leaf in leaves {
                    let Some(abs) = absolute(&leaf.path, &h, modules) else {
                        continue;
                    };
                    if top_level && let Some(name) = &leaf.binds {
                        info.uses.insert(name.clone(), abs.clone());
                    }
                    if !(public && is_parent && top_level) {
                        info.refs.push((abs, leaf.line));
                    } else if let Some(name) = leaf.binds {
                        reexports.push((name, abs, leaf.line));
                    }
                }
            }
            Tok::Ident(first) => {
                // A path in code: `crate::a::b`, `super::x`, `self::y`, `child::z`.
                let after_path = i > 0 && toks[i - 1].0 == Tok::Path;
                let line = toks[i].1;
                used.insert(first.clone());
                let mut path = vec![first.clone()];
                let mut j = i + 1;
                while toks.get(j).map(|t| &t.0) == Some(&Tok::Path) {
                    match toks.get(j + 1) {
                        Some((Tok::Ident(w), _)) => {
                            path.push(w.clone());
                            j += 2;
                        }
                        _ => break,
                    }
                }
                if !after_path
                    && path.len() > 1
                    && let Some(abs) = absolute(&path, &here(&inline), modules)
                {
                    info.refs.push((abs, line));
                }
                i = j.max(i + 1);
            }
            _ => i += 1,
        }
    }
    for (name, abs, line) in reexports {
        if used.contains(&name) {
            info.refs.push((abs, line));
        }
    }
    info
}

/// The file an absolute path lands in: its deepest module with a file, then through
/// that file's `use` declarations when the next name was brought in by one.
fn target(mut path: Vec<String>, files: &BTreeMap<Vec<String>, FileInfo>) -> Option<&FileInfo> {
    for _ in 0..16 {
        let k = (0..=path.len())
            .rev()
            .find(|k| files.contains_key(&path[..*k]))?;
        let file = &files[&path[..k]];
        let Some(name) = path.get(k) else {
            return Some(file);
        };
        match file.uses.get(name) {
            Some(to) if to.as_slice() != &path[..=k] => {
                let mut next = to.clone();
                next.extend(path[k + 1..].iter().cloned());
                path = next;
            }
            _ => return Some(file),
        }
    }
    None
}

/// The graph of every folder of `src` (key: the folder inside `src`, `""` for `src`
/// itself): its entries and which names which.
pub fn folder_graphs(src: &Path) -> BTreeMap<String, Graph> {
    let mut paths = Vec::new();
    rust_files(src, &mut paths);
    paths.sort();
    let modules: BTreeSet<Vec<String>> = paths.iter().map(|p| module_path(src, p)).collect();
    let files: BTreeMap<Vec<String>, FileInfo> = paths
        .iter()
        .map(|p| {
            let f = read_file(src, p, &modules);
            (f.module.clone(), f)
        })
        .collect();
    // The folders: every module that has children.
    let folders: BTreeSet<Vec<String>> = modules
        .iter()
        .filter(|m| !m.is_empty())
        .map(|m| m[..m.len() - 1].to_vec())
        .collect();
    let node = |folder: &[String], module: &[String]| -> Option<String> {
        if !module.starts_with(folder) {
            return None;
        }
        Some(
            module
                .get(folder.len())
                .cloned()
                .unwrap_or_else(|| "mod".into()),
        )
    };
    let mut graphs = BTreeMap::new();
    for folder in &folders {
        let mut graph = Graph::new();
        for file in files.values() {
            let Some(from) = node(folder, &file.module) else {
                continue;
            };
            let edges = graph.entry(from.clone()).or_default();
            for (abs, line) in &file.refs {
                let Some(to) = target(abs.clone(), &files).and_then(|t| node(folder, &t.module))
                else {
                    continue;
                };
                if to != from {
                    edges
                        .entry(to)
                        .or_insert_with(|| format!("{}:{line}", file.rel));
                }
            }
        }
        graphs.insert(folder.join("/"), graph);
    }
    graphs
}

/// A circle in `graph`, as the nodes round it (first = last), if there is one.
pub fn find_circle(graph: &Graph) -> Option<Vec<String>> {
    // Depth-first search with colours; a grey node reached again closes a circle.
    fn visit(
        m: &str,
        graph: &Graph,
        colour: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match colour.get(m) {
            Some(2) => return None,
            Some(1) => {
                let start = path.iter().position(|p| p == m).unwrap_or(0);
                let mut circle = path[start..].to_vec();
                circle.push(m.to_string());
                return Some(circle);
            }
            _ => {}
        }
        colour.insert(m.to_string(), 1);
        path.push(m.to_string());
        for to in graph.get(m).into_iter().flat_map(|e| e.keys()) {
            if let Some(c) = visit(to, graph, colour, path) {
                return Some(c);
            }
        }
        path.pop();
        colour.insert(m.to_string(), 2);
        None
    }
    let mut colour = BTreeMap::new();
    graph
        .keys()
        .find_map(|m| visit(m, graph, &mut colour, &mut Vec::new()))
}

/// A circle, one edge a line with the file and line that makes it.
pub fn describe(graph: &Graph, circle: &[String]) -> String {
    circle
        .windows(2)
        .map(|w| {
            let at = graph.get(&w[0]).and_then(|e| e.get(&w[1]));
            format!("  {} → {} ({})", w[0], w[1], at.map_or("?", |s| s.as_str()))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every folder of `src` whose files form a circle, described; empty when none does.
pub fn circles(src: &Path) -> Vec<String> {
    folder_graphs(src)
        .iter()
        .filter_map(|(folder, graph)| {
            let circle = find_circle(graph)?;
            let name = if folder.is_empty() { "src" } else { folder };
            Some(format!("in {name}/:\n{}", describe(graph, &circle)))
        })
        .collect()
}
