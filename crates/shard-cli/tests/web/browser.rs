//! The browser client checked by its own tools, driven from here so
//! `cargo test --workspace` runs them: the generated protocol types are current, the JSDoc
//! types check with `tsc`, and the end-to-end suite in headless Chromium
//! (tests/browser/e2e.mjs) passes against the real `shard` binary. Each skips with a
//! printed reason when its tool is absent (`.ci/run` installs them; docs/web.md).

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn has_node() -> bool {
    Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("spawn");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
}

#[test]
fn generated_protocol_types_are_current() {
    if !has_node() {
        crate::skip::skip("node is not installed");
        return;
    }
    run(Command::new("node")
        .arg(repo().join("scripts/gen-protocol-types.mjs"))
        .arg("--check"));
}

#[test]
fn client_types_check_with_tsc() {
    let tsc = repo().join("node_modules/typescript/bin/tsc");
    if !has_node() || !tsc.exists() {
        crate::skip::skip(
            "node or node_modules/typescript is absent (run `npm ci` at the repo root)",
        );
        return;
    }
    run(Command::new("node")
        .arg(tsc)
        .arg("-p")
        .arg(repo().join("tsconfig.json")));
}

/// Chromium's path when it, node and playwright-core are all here; otherwise skips (with
/// the reason printed) and returns None.
fn chromium_for_tests() -> Option<String> {
    let chromium = std::env::var("SHARD_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if !Path::new(&chromium).exists() {
        crate::skip::skip(&format!("{chromium} is absent (apt-get install chromium)"));
        return None;
    }
    if !has_node() || !repo().join("node_modules/playwright-core").exists() {
        crate::skip::skip(
            "node or node_modules/playwright-core is absent (run `npm ci` at the repo root)",
        );
        return None;
    }
    Some(chromium)
}

#[test]
fn browser_end_to_end_in_headless_chromium() {
    let Some(chromium) = chromium_for_tests() else {
        return;
    };
    run(Command::new("node")
        .arg(repo().join("tests/browser/e2e.mjs"))
        .env("SHARD_BIN", env!("CARGO_BIN_EXE_shard"))
        .env("SHARD_CHROMIUM", &chromium)
        .env("SHARD_ARTIFACTS", repo().join("target/browser-artifacts")));
}

/// The recorded event streams (tests/fixtures/event-streams/) give the browser's reducer
/// the same views as the Rust `AgentView` (crates/shard-client/tests/event_streams.rs).
#[test]
fn recorded_event_streams_give_the_same_view_in_the_browser() {
    let Some(chromium) = chromium_for_tests() else {
        return;
    };
    run(Command::new("node")
        .arg(repo().join("tests/browser/event-streams.mjs"))
        .env("SHARD_CHROMIUM", &chromium));
}
