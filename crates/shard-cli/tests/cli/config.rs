//! Strict configuration: `config.toml` is read strictly. A misspelt key is one line naming the
//! file, the line and the key, and no program starts with it.

use std::process::{Command, Output, Stdio};
use std::time::Instant;

use serde_json::json;

use crate::harness::*;

/// `comand` instead of `command`: ignoring it would allow every bash command unattended.
const TYPO: &str = "[headless]\ntimeout_secs = 30\n\n# unattended test runs\n\n[[headless.allow]]\ntool = \"bash\"\ncomand = \"cargo test*\"\n";

fn assert_names_the_typo(out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "stderr: {stderr}");
    let config = sb_config_suffix();
    assert!(
        stderr.contains(&format!(
            "{config}:8: unknown key `comand` in [[headless.allow]] (expected one of: tool, command, path)"
        )),
        "{stderr}"
    );
}

fn sb_config_suffix() -> String {
    format!("home{}config.toml", std::path::MAIN_SEPARATOR)
}

fn no_session(sb: &Sandbox) {
    let sessions = sb.home().join("sessions");
    // Session folders only: the store's own dot-folders (the fork index) are not sessions.
    let count = std::fs::read_dir(&sessions).map_or(0, |d| {
        d.flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .count()
    });
    assert_eq!(count, 0, "a session was created in {}", sessions.display());
}

#[test]
fn shard_run_refuses_a_misspelt_key_and_creates_no_session() {
    let sb = Sandbox::new();
    sb.config(TYPO);
    let script = sb.script("s.json", json!({"turns": [text_turn("never")]}));
    let out = shard(
        &sb,
        &[
            "run",
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
            "run the tests",
        ],
    );
    assert_names_the_typo(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    no_session(&sb);
}

#[test]
fn shard_run_refuses_an_allow_rule_that_allows_everything_by_omission() {
    let sb = Sandbox::new();
    sb.config("[[headless.allow]]\ntool = \"bash\"\n");
    let script = sb.script("s.json", json!({"turns": [text_turn("never")]}));
    let out = shard(
        &sb,
        &[
            "run",
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
            "hi",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("{}:1: ", sb_config_suffix())),
        "{stderr}"
    );
    assert!(stderr.contains("command = \"*\""), "{stderr}");
    no_session(&sb);

    // Written out, the same breadth is accepted.
    sb.config("[[headless.allow]]\ntool = \"bash\"\ncommand = \"*\"\n");
    let out = shard(
        &sb,
        &[
            "run",
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
            "hi",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn shard_agent_refuses_to_start_with_a_fatal_error() {
    let sb = Sandbox::new();
    sb.config(TYPO);
    let out = shard(&sb, &["agent"]);
    assert_names_the_typo(&out);
    // On stdout, the protocol's fatal error carries the same line.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let error = events_of(stdout.as_bytes())
        .iter()
        .find_map(pick::error)
        .unwrap_or_else(|| panic!("no error event: {stdout}"));
    assert_eq!(error.fatal, Some(true));
    assert!(error.message.contains("unknown key `comand`"), "{error:?}");
    no_session(&sb);
}

#[test]
fn shard_daemon_refuses_to_start_on_a_misspelt_key_in_any_section() {
    let sb = Sandbox::new();
    // The daemon itself reads only the gate's sections; a typo elsewhere is refused too.
    sb.config(
        "[providers.local]\nbase_url = \"http://127.0.0.1:9/v1\"\ndefualt_model = \"qwen3\"\n",
    );
    let mut child = Command::new(shard_bin())
        .args(["daemon", "--port", "0"])
        .env("SHARD_HOME", sb.home())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > WAIT {
            break None;
        }
        std::thread::park_timeout(std::time::Duration::from_millis(20));
    };
    let Some(status) = status else {
        // Only the child this test started.
        child.kill().unwrap();
        child.wait().unwrap();
        panic!("shard daemon started with an invalid config.toml");
    };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}:3: unknown key `defualt_model` in [providers.local]",
            sb_config_suffix()
        )),
        "{stderr}"
    );
    assert!(!sb.home().join("daemon.sock").exists());
}
