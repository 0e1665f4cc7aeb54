//! The daemon's modules form layers (docs/architecture.md, "Inside the daemon"): the
//! foundation, the core (the registry), the services on top of it (jobs, workspaces,
//! agent creation), command dispatch, and the server that runs connections. This test
//! reads every `crate::…` path in `src/` and fails when a module names one of a higher
//! layer, when the modules' graph has a circle, or when a new module is not placed in a
//! layer — so the import circle the daemon once had cannot silently come back. Inside the
//! services (`jobs/`, `workspaces/`) the files, too, name each other one way only.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every top-level module of `src/`, by layer, bottom first.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "foundation",
        &[
            "children",
            "config",
            "error",
            "fdlimit",
            "fsutil",
            "launcher",
            "lines",
            "manifest",
            "outbox",
            "principal",
            "reply",
            "transport",
            "wire",
        ],
    ),
    ("core", &["core"]),
    ("services", &["create", "jobs", "workspaces"]),
    ("commands", &["commands"]),
    ("server", &["conn", "peer", "server"]),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, ms)| ms.contains(&module))
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

/// The top-level module a file of `src/` belongs to (`None`: the crate root).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    match first.strip_suffix(".rs") {
        Some("lib") => None,
        Some(stem) => Some(stem.to_string()),
        None => Some(first),
    }
}

/// The code of a file without its comments (line comments and doc comments), so a doc
/// that mentions `crate::jobs` is not an import.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    let mut in_block = false;
    for line in text.lines() {
        let mut l = line;
        if in_block {
            match l.find("*/") {
                Some(i) => {
                    l = &l[i + 2..];
                    in_block = false;
                }
                None => continue,
            }
        }
        if let Some(i) = l.find("/*") {
            in_block = !l[i..].contains("*/");
            l = &l[..i];
        }
        if let Some(i) = l.find("//") {
            l = &l[..i];
        }
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// The top-level modules `code` names through `crate::`, including grouped imports
/// (`use crate::{a::X, b};`).
fn named_modules(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level names of the group only: depth 0 between the braces.
            let mut depth = 0;
            let mut start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if c.is_whitespace() => {}
                    _ if start && depth == 0 => {
                        out.insert(ident(&group[j..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident(rest));
        }
    }
    out.retain(|m| !m.is_empty());
    out
}

/// module → the modules it names, with one file that does, for the failure message.
fn module_graph() -> BTreeMap<String, BTreeMap<String, String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for file in &files {
        let Some(module) = module_of(&src, file) else {
            continue;
        };
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        let edges = graph.entry(module.clone()).or_default();
        for named in named_modules(&code) {
            if named != module {
                let rel = file.strip_prefix(&src).unwrap().display().to_string();
                edges.entry(named).or_insert(rel);
            }
        }
    }
    graph
}

#[test]
fn the_parser_sees_plain_grouped_and_nested_paths_but_not_comments() {
    let code = code_of(
        "use crate::core::Shared;\n\
         use crate::{jobs::Jobs, reply::{Reply, ProtocolError}, wire};\n\
         let x = crate::fsutil::save(y); // crate::server in a comment\n\
         /// crate::conn in a doc\n\
         /* crate::peer\n in a block */ crate::lines::X;\n",
    );
    let named: Vec<String> = named_modules(&code).into_iter().collect();
    assert_eq!(
        named,
        ["core", "fsutil", "jobs", "lines", "reply", "wire"].map(String::from)
    );
}

#[test]
fn every_module_has_a_layer() {
    let graph = module_graph();
    let unplaced: Vec<&String> = graph.keys().filter(|m| layer_of(m).is_none()).collect();
    assert!(
        unplaced.is_empty(),
        "modules without a layer (add them to LAYERS in tests/layers.rs and to \
         docs/architecture.md): {unplaced:?}"
    );
}

#[test]
fn no_module_names_a_higher_layer() {
    let graph = module_graph();
    let mut upward = Vec::new();
    for (from, edges) in &graph {
        let Some(lf) = layer_of(from) else { continue };
        for (to, file) in edges {
            // A name that is no module of this crate (a macro path, say) is not an edge.
            let Some(lt) = layer_of(to) else { continue };
            if lt > lf {
                upward.push(format!(
                    "{file}: {from} ({}) names {to} ({})",
                    LAYERS[lf].0, LAYERS[lt].0
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports against the layers:\n{}",
        upward.join("\n")
    );
}

/// A graph: node → the nodes it names, with one file that does.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// A circle in `graph`, as the nodes round it (first = last), if there is one.
fn find_circle(graph: &Graph) -> Option<Vec<String>> {
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
            if graph.contains_key(to)
                && let Some(c) = visit(to, graph, colour, path)
            {
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

fn describe(graph: &Graph, circle: &[String]) -> String {
    circle
        .windows(2)
        .map(|w| format!("{} → {} ({})", w[0], w[1], graph[&w[0]][&w[1]]))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_module_graph_has_no_circle() {
    let graph = module_graph();
    if let Some(circle) = find_circle(&graph) {
        panic!(
            "the daemon's modules import in a circle:\n{}",
            describe(&graph, &circle)
        );
    }
}

/// The files of a directory module (its `mod.rs` aside: the parent every file may use)
/// and the sibling files each names through `super::`.
fn file_graph(module: &str) -> Graph {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(module);
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let stem = |p: &Path| p.file_stem().unwrap().to_str().unwrap().to_string();
    let siblings: BTreeSet<String> = files
        .iter()
        .map(|f| stem(f))
        .filter(|s| s != "mod")
        .collect();
    let mut graph = Graph::new();
    for file in &files {
        let from = stem(file);
        if from == "mod" {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(file).unwrap()).replace("super::", "crate::");
        let edges = graph.entry(from.clone()).or_default();
        for named in named_modules(&code) {
            if named != from && siblings.contains(&named) {
                edges.insert(named, format!("{module}/{from}.rs"));
            }
        }
    }
    graph
}

#[test]
fn the_services_files_run_one_way() {
    for service in ["jobs", "workspaces"] {
        let graph = file_graph(service);
        assert!(graph.len() > 2, "{service}: no files found");
        if let Some(circle) = find_circle(&graph) {
            panic!(
                "the files of {service} import in a circle:\n{}",
                describe(&graph, &circle)
            );
        }
    }
}
