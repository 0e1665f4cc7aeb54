//! The daemon's modules form layers (docs/architecture.md, "Inside the daemon"): the
//! foundation, the core (the registry), the services on top of it (jobs, workspaces,
//! agent creation), command dispatch, and the server that runs connections. This test
//! resolves every path in `src/` to the file it names (`tests/support/layering.rs`) and
//! fails when a module names one of a higher layer, when a new module is not placed in a
//! layer, or when the files of any folder (`src/` itself, `core/`, `jobs/`, …) name each
//! other round a circle — so the import circles the daemon once had cannot silently come
//! back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../../tests/support/layering.rs"]
mod layering;

use std::collections::BTreeMap;
use std::path::Path;

use layering::{Graph, circles, describe, find_circle, folder_graphs};

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
            "hosts",
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

fn src() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level modules of `src/` and which names which.
fn module_graph() -> Graph {
    folder_graphs(&src()).remove("").unwrap()
}

#[test]
fn every_module_has_a_layer() {
    let graph = module_graph();
    let unplaced: Vec<&String> = graph
        .keys()
        .filter(|m| *m != "mod" && layer_of(m).is_none())
        .collect();
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

#[test]
fn no_folder_has_a_circle_of_files() {
    let graphs = folder_graphs(&src());
    for folder in ["", "core", "hosts", "jobs", "workspaces"] {
        let graph = &graphs[folder];
        assert!(graph.len() > 2, "{folder}: no files found");
    }
    let found = circles(&src());
    assert!(
        found.is_empty(),
        "the daemon's files import in a circle:\n{}",
        found.join("\n")
    );
}

/// Writes a tiny crate (`path → text`) and returns its `src/`.
fn tiny_crate(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[test]
fn the_checker_finds_a_circle_of_two_files_and_names_the_lines() {
    let dir = tiny_crate(&[
        ("lib.rs", "mod a;\n"),
        ("a/mod.rs", "mod x;\nmod y;\n"),
        ("a/x.rs", "use super::y::Y;\npub struct X;\n"),
        (
            "a/y.rs",
            "pub struct Y;\n\nfn f() -> super::x::X { todo!() }\n",
        ),
    ]);
    let found = circles(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("in a/:"), "{}", found[0]);
    assert!(found[0].contains("x → y (a/x.rs:1)"), "{}", found[0]);
    assert!(found[0].contains("y → x (a/y.rs:3)"), "{}", found[0]);
}

#[test]
fn the_checker_follows_a_parents_reexport_to_the_file_behind_it() {
    // `super::Shared` is `state.rs`'s, re-exported by `mod.rs`: state ↔ api is a circle,
    // and mod.rs is in none (its `pub use` is not a dependency).
    let dir = tiny_crate(&[
        ("lib.rs", "mod core;\n"),
        (
            "core/mod.rs",
            "mod api;\nmod state;\npub(crate) use state::Shared;\n",
        ),
        (
            "core/state.rs",
            "pub struct Shared;\nfn g() { crate::core::api::go(); }\n",
        ),
        ("core/api.rs", "use super::Shared;\npub fn go() {}\n"),
    ]);
    let graphs = folder_graphs(dir.path());
    let circle = find_circle(&graphs["core"]).unwrap();
    assert_eq!(circle.len(), 3, "{circle:?}");
    assert!(!circle.contains(&"mod".to_string()), "{circle:?}");
}

#[test]
fn the_checker_sees_a_parent_that_uses_a_child_that_uses_it() {
    // A struct in `mod.rs` that children use, and a `mod.rs` that calls a child: a circle.
    let dir = tiny_crate(&[
        ("lib.rs", "mod jobs;\n"),
        (
            "jobs/mod.rs",
            "mod run;\npub struct Jobs;\nfn start() { run::go(); }\n",
        ),
        ("jobs/run.rs", "use super::Jobs;\npub fn go() {}\n"),
    ]);
    let found = circles(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("mod → run"), "{}", found[0]);

    // The same through a re-export the parent's own code uses.
    let dir = tiny_crate(&[
        ("lib.rs", "mod jobs;\n"),
        (
            "jobs/mod.rs",
            "mod client;\npub(crate) use client::Client;\npub struct Jobs { c: Client }\n",
        ),
        ("jobs/client.rs", "pub struct Client(Box<super::Jobs>);\n"),
    ]);
    let found = circles(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("mod → client"), "{}", found[0]);
}

#[test]
fn the_checker_ignores_comments_strings_tests_of_a_file_and_outside_crates() {
    let dir = tiny_crate(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "use crate::b::B;\n/// crate::b in a doc, super::b too\npub struct A;\n",
        ),
        (
            "b.rs",
            "pub struct B;\n\
             const S: &str = \"crate::a::A\";\n\
             const R: &str = r#\"super::a\"#;\n\
             // crate::a::A in a comment\n\
             use std::fmt::Write;\n\
             #[cfg(test)]\nmod tests { use super::*; fn t() -> B { B } }\n",
        ),
    ]);
    let graphs = folder_graphs(dir.path());
    let graph = &graphs[""];
    assert!(graph["a"].contains_key("b"), "{graph:?}");
    assert!(graph["b"].is_empty(), "{graph:?}");
    assert!(circles(dir.path()).is_empty());
}

#[test]
fn the_description_walks_the_circle() {
    let mut graph: Graph = BTreeMap::new();
    graph
        .entry("a".into())
        .or_default()
        .insert("b".into(), "a.rs:1".into());
    graph
        .entry("b".into())
        .or_default()
        .insert("a".into(), "b.rs:2".into());
    let circle = find_circle(&graph).unwrap();
    assert_eq!(
        describe(&graph, &circle),
        "  a → b (a.rs:1)\n  b → a (b.rs:2)"
    );
}
