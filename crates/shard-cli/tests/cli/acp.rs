//! `shard acp` driven end to end by the official ACP client library
//! (`@agentclientprotocol/sdk`, pinned in package-lock.json) against the scripted model:
//! each test runs one scenario of tests/acp/run.mjs. Without node or the package the tests
//! skip with a printed reason, unless SHARD_TEST_REQUIRE_ALL=1 (then they fail).

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Why the scenarios cannot run here, if they cannot.
fn missing() -> Option<String> {
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !node {
        return Some("node is not installed".into());
    }
    if !repo()
        .join("node_modules/@agentclientprotocol/sdk/package.json")
        .exists()
    {
        return Some(
            "node_modules/@agentclientprotocol/sdk is absent (run `npm ci` at the repo root)"
                .into(),
        );
    }
    None
}

fn scenario(name: &str) {
    if let Some(why) = missing() {
        assert!(
            std::env::var("SHARD_TEST_REQUIRE_ALL").as_deref() != Ok("1"),
            "SHARD_TEST_REQUIRE_ALL=1 but {why}"
        );
        println!("SKIPPED: {why}");
        return;
    }
    let out = Command::new("node")
        .arg(repo().join("tests/acp/run.mjs"))
        .arg(name)
        .env("SHARD_BIN", env!("CARGO_BIN_EXE_shard"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("spawn node");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(out.status.success(), "scenario {name} failed:\n{text}");
}

#[test]
fn acp_initialize_new_prompt_modes_and_errors() {
    scenario("basics");
}

#[test]
fn acp_tool_calls_permissions_diffs_and_output() {
    scenario("tools");
}

#[test]
fn acp_cancel_while_streaming_and_during_permission() {
    scenario("cancel");
}

#[test]
fn acp_load_replays_history_and_continues() {
    scenario("load");
}

#[test]
fn acp_runtime_death_fails_the_prompt_and_the_next_starts_anew() {
    scenario("runtime_death");
}

#[test]
fn acp_daemon_session_is_listed_and_answered_by_another_client() {
    scenario("daemon");
}

#[test]
fn acp_editor_files_serve_reads_and_writes_after_the_gate() {
    scenario("editor_files");
}

#[test]
fn acp_editor_mcp_servers_are_gated_sandboxed_and_keep_their_secrets() {
    scenario("mcp");
}

#[test]
fn acp_editor_http_mcp_server_gets_its_headers_and_keeps_them_secret() {
    scenario("mcp_http");
}

#[test]
fn acp_editor_mcp_servers_reach_the_daemon_agent_and_its_next_runtime() {
    scenario("mcp_daemon");
}

#[test]
fn acp_locations_order_cancelled_outcome_and_stop_reasons() {
    scenario("details");
}

#[test]
fn acp_a_prompt_waiting_for_editor_mcp_servers_is_cancelled_at_once() {
    scenario("mcp_wait_cancel");
}
