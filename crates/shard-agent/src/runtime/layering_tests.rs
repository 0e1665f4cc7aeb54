//! The Runtime's files form layers with no circle: each file names (through `super::`)
//! only files of a lower layer. A new file or a new `use` that breaks this fails here,
//! naming the edge; the layers are documented in docs/architecture.md ("The Runtime's layers").
//! Beyond the Runtime, no folder of the crate (`src/` itself included) has a circle of
//! files: the shared checker of `tests/support/layering.rs` resolves every path to the
//! file that defines what it names.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../../tests/support/layering.rs"]
mod layering;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every file of `src/runtime`, by layer. `mod` is `mod.rs` (the `Runtime` struct).
const LAYERS: &[(&str, &[&str])] = &[
    ("messages and pieces", &["inbox", "partial", "editor"]),
    ("tool registry", &["tools"]),
    ("parts", &["flight", "conversation", "toolbox", "choice"]),
    ("start", &["start"]),
    ("actor", &["mod"]),
    ("waiting", &["serve"]),
    (
        "behaviour",
        &[
            "ui",
            "sync",
            "context",
            "permissions",
            "tool_calls",
            "compaction",
            "fork",
            "mcp",
        ],
    ),
    ("model call", &["model_call"]),
    ("turn", &["turn"]),
    ("commands and main loop", &["commands", "actor"]),
    ("tests", &["recovery_tests", "layering_tests"]),
];

fn layer_of(file: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, files)| files.contains(&file))
}

/// The sibling files `source` names: `super::NAME` paths and `use super::{NAME, ..}`
/// groups (a bare `super::Runtime` and the other items of `mod.rs` count as `mod`).
fn named(source: &str, files: &BTreeSet<String>) -> BTreeSet<String> {
    let code: String = source
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("super::") {
        rest = &rest[at + "super::".len()..];
        let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            group[..end].split(',').map(str::trim).collect()
        } else {
            vec![rest]
        };
        for name in names {
            let ident: String = name
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if ident.is_empty() || ident == "super" {
                continue;
            }
            let is_module = files.contains(&ident) && name[ident.len()..].starts_with("::");
            out.insert(if is_module { ident } else { "mod".to_string() });
        }
    }
    out
}

#[test]
fn the_runtime_files_form_layers_without_a_circle() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/runtime");
    let mut sources = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "rs") {
            sources.insert(stem.to_string(), std::fs::read_to_string(&path).unwrap());
        }
    }
    let files: BTreeSet<String> = sources.keys().cloned().collect();
    let mut wrong = Vec::new();
    for (file, source) in &sources {
        let Some(mine) = layer_of(file) else {
            wrong.push(format!("{file}.rs has no layer in LAYERS"));
            continue;
        };
        // `mod.rs` declares every module; only what it uses counts, not `mod` lines.
        let source: String = if file == "mod" {
            source
                .lines()
                .filter(|l| {
                    !l.trim_start().starts_with("mod ") && !l.contains("mod layering_tests")
                })
                .collect::<Vec<_>>()
                .join("\n")
        } else {
            source.clone()
        };
        let source = match source.find("#[cfg(test)]\nmod tests") {
            Some(at) => source[..at].to_string(),
            None => source,
        };
        for other in named(&source, &files) {
            if other == *file {
                continue;
            }
            let theirs = layer_of(&other).unwrap_or(usize::MAX);
            if theirs >= mine {
                wrong.push(format!(
                    "{file}.rs ({}) uses {other}.rs ({}), which is not below it",
                    LAYERS[mine].0,
                    LAYERS.get(theirs).map_or("no layer", |l| l.0)
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the Runtime's layering is broken:\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn the_check_sees_a_use_that_goes_up() {
    let files: BTreeSet<String> = ["flight", "turn", "mod"].map(String::from).into();
    let named = named(
        "use super::Runtime;\nuse super::turn::X;\n// super::flight::Y in a comment\n",
        &files,
    );
    assert_eq!(named, ["mod", "turn"].map(String::from).into());
    let grouped = named_group();
    assert_eq!(grouped, ["flight", "mod"].map(String::from).into());
}

fn named_group() -> BTreeSet<String> {
    let files: BTreeSet<String> = ["flight", "mod"].map(String::from).into();
    named("use super::{Runtime, flight::Flight};", &files)
}

#[test]
fn no_folder_of_the_crate_has_a_circle_of_files() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graphs = layering::folder_graphs(&src);
    assert!(
        graphs[""].len() > 10 && graphs["runtime"].len() > 10,
        "{graphs:?}"
    );
    let found = layering::circles(&src);
    assert!(
        found.is_empty(),
        "the agent crate's files import in a circle:\n{}",
        found.join("\n")
    );
}
