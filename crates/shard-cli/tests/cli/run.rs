//! `shard run`: the one-shot client.

use std::process::Command;

use serde_json::{Value, json};

use crate::harness::*;

fn shard_run(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    Command::new(shard_bin())
        .arg("run")
        .args(args)
        .current_dir(sb.work())
        .env("SHARD_HOME", sb.home())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap()
}

fn demo_script() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo.json")
}

#[test]
fn the_readme_demo_runs_offline() {
    let sb = Sandbox::new();
    std::fs::write(sb.work().join("README.md"), "# Demo\nline two\n").unwrap();
    let script = demo_script();
    let out = shard_run(
        &sb,
        &[
            "--yes",
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
            "what is in this folder?",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("README.md"), "{stdout}");
    assert!(stdout.contains("2 README.md"), "wc output quoted: {stdout}");
    assert!(stderr.contains("▸ bash wc -l README.md"), "{stderr}");
    assert!(stderr.contains("session: sess-"), "{stderr}");
}

#[test]
fn json_mode_prints_every_event_and_continue_resumes() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [text_turn("first answer"), text_turn("second answer")]}),
    );
    let s = script.to_str().unwrap();
    let out = shard_run(
        &sb,
        &["--json", "--provider", "scripted", "--script", s, "hi"],
    );
    assert!(out.status.success());
    let events: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[0]["type"], "hello");
    assert_eq!(events[1]["type"], "sync");
    assert!(events.iter().any(|e| e["type"] == "turn_end"));
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let sid = stderr
        .split_whitespace()
        .find(|w| w.starts_with("sess-"))
        .unwrap()
        .to_string();
    // The script restarts per process; --continue picks the same session.
    let out = shard_run(
        &sb,
        &[
            "--continue",
            "--provider",
            "scripted",
            "--script",
            s,
            "again",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains(&sid));
}

#[test]
fn denied_calls_are_reported_without_yes() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [tool_turn("w", "write", json!({"path": "f.txt", "content": "x"})), text_turn("ok")]}),
    );
    let out = shard_run(
        &sb,
        &[
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
            "write",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("✗"), "{stderr}");
    assert!(stderr.contains("headless"), "{stderr}");
    assert!(!sb.work().join("f.txt").exists());
}

#[test]
fn no_provider_gives_one_clear_line() {
    let sb = Sandbox::new();
    let out = shard_run(&sb, &["hello"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ANTHROPIC_API_KEY"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        !sb.home().join("sessions").exists(),
        "nothing is written when no model is usable"
    );
}

#[test]
fn a_failed_turn_exits_non_zero() {
    let sb = Sandbox::new();
    let script = sb.script("s.json", json!({"turns": [{"steps": [{"error": "boom"}]}]}));
    let out = shard_run(
        &sb,
        &[
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
            "x",
        ],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("boom"));
}
