//! `shard sessions`, `shard models`, `shard new`, `shard ls` and `shard attach --observer`
//! through the real binary (and a real daemon for the last three).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::channel;

use serde_json::json;

use crate::harness::*;

#[test]
fn sessions_lists_this_directorys_sessions_newest_first() {
    let sb = Sandbox::new();
    let out = shard(&sb, &["sessions"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("no sessions"));
    let script = sb.script("s.json", json!({"turns": [text_turn("ok")]}));
    let s = script.to_str().unwrap();
    let mut ids = Vec::new();
    for prompt in ["first question", "second question"] {
        let out = shard(
            &sb,
            &["run", "--provider", "scripted", "--script", s, prompt],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        let id = err
            .split_whitespace()
            .find(|w| w.starts_with("sess-"))
            .unwrap()
            .to_string();
        ids.push(id);
    }
    let out = shard(&sb, &["sessions"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let second = stdout.find(&ids[1]).expect("second session listed");
    let first = stdout.find(&ids[0]).expect("first session listed");
    assert!(second < first, "newest first:\n{stdout}");
    assert!(stdout.contains("second question"), "{stdout}");
    let out = shard(&sb, &["sessions", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["session_id"], ids[1].as_str());
}

#[test]
fn models_says_what_is_usable_and_why_others_are_not() {
    let sb = Sandbox::new();
    let out = shard(&sb, &["models"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("anthropic: not usable"), "{stdout}");
    assert!(stdout.contains("ANTHROPIC_API_KEY"), "{stdout}");
    assert!(stdout.contains("no model is usable"), "{stdout}");
    let out = Command::new(shard_bin())
        .args(["models", "--json"])
        .env("SHARD_HOME", sb.home())
        .env("OPENAI_API_KEY", "test-key")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        rows.iter()
            .any(|r| r["provider"] == "openai" && r["usable"] == true)
    );
    assert!(
        rows.iter()
            .any(|r| r["provider"] == "openai" && r["default"] == true)
    );
    assert!(
        rows.iter().any(|r| r["provider"] == "anthropic"
            && r["usable"] == false
            && r["reason"].is_string())
    );
}

/// A daemon for one test, ended by pid when dropped.
pub(crate) struct TestDaemon(Child);

impl TestDaemon {
    pub(crate) fn start(sb: &Sandbox) -> TestDaemon {
        let mut child = Command::new(shard_bin())
            .args(["daemon", "--port", "0"])
            .env("SHARD_HOME", sb.home())
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if line.contains("listening on") {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(WAIT).expect("the daemon listens");
        TestDaemon(child)
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn new_and_ls_create_and_list_daemon_agents_without_json() {
    let sb = Sandbox::new();
    let _d = TestDaemon::start(&sb);
    let script = sb.script("s.json", json!({"turns": [text_turn("hello")]}));
    let out = shard(
        &sb,
        &[
            "new",
            "--name",
            "helper",
            "--mode",
            "plan",
            "--script",
            script.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(id.starts_with("agent-"), "{id}");
    let out = shard(&sb, &["ls"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let row = stdout
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{id} listed:\n{stdout}"));
    assert!(row.contains("helper"), "{row}");
    assert!(row.contains("plan"), "{row}");
    assert!(stdout.lines().next().unwrap().contains("MODE"), "{stdout}");
    // The model each agent runs (a scripted agent's model is its script).
    assert!(stdout.lines().next().unwrap().contains("MODEL"), "{stdout}");
    assert!(row.contains(script.to_str().unwrap()), "{row}");
}

#[test]
fn attach_as_observer_shows_requests_without_an_answer_menu() {
    let sb = Sandbox::new();
    let _d = TestDaemon::start(&sb);
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("w", "write", json!({"path": "f.txt", "content": "x"})),
            text_turn("done")
        ]}),
    );
    let out = shard(
        &sb,
        &[
            "new",
            "--headless-policy",
            "queue",
            "--script",
            script.to_str().unwrap(),
            "--prompt",
            "write it",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let observer = super::attach::Attached::spawn(
        &sb,
        &["attach", "--observer", &id],
        "waiting for an interactive client",
    );
    let text = observer.text();
    drop(observer);
    assert!(text.contains("[permission]"), "{text}");
    assert!(!text.contains("answer with"), "{text}");
    assert!(!text.contains("  1) "), "{text}");
}

#[test]
fn attach_strips_terminal_control_sequences() {
    let sb = Sandbox::new();
    let _d = TestDaemon::start(&sb);
    let evil = "clean\u{1b}]52;c;cm0gLXJmIH4K\u{7} words\u{1b}[2J here";
    let script = sb.script(
        "s.json",
        json!({"turns": [
            {"steps": [{"text": evil, "chunk_chars": 3}, {"usage": {"input": 1, "output": 1}}]},
            {"steps": [{"text": "second answer"}, {"usage": {"input": 1, "output": 1}}]}
        ]}),
    );
    let out = shard(&sb, &["new", "--script", script.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let mut attached = super::attach::Attached::spawn(&sb, &["attach", &id], "attached to");
    attached.send("say it");
    attached.wait_for("here");
    let text = attached.text();
    drop(attached);
    assert!(text.contains("clean words here"), "{text:?}");
    assert!(!text.contains('\u{1b}'), "{text:?}");
    assert!(!text.contains('\u{7}'), "{text:?}");
}

#[test]
fn new_with_a_prompt_keeps_its_first_permission_for_the_first_person_who_attaches() {
    let sb = Sandbox::new();
    let _d = TestDaemon::start(&sb);
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("w", "write", json!({"path": "f.txt", "content": "kept"})),
            text_turn("written for real")
        ]}),
    );
    let out = shard(
        &sb,
        &[
            "new",
            "--script",
            script.to_str().unwrap(),
            "--prompt",
            "write it",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("wait for the first person who attaches"),
        "{stderr}"
    );
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // Attach only once the request is pending: nobody was there to answer it.
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let ls = shard(&sb, &["ls"]);
        if String::from_utf8_lossy(&ls.stdout).contains("waiting_for_permission") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never waited");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let mut child = Command::new(shard_bin())
        .args(["attach", &id])
        .env("SHARD_HOME", sb.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let wait_for = |what: &str| loop {
        let line = rx.recv_timeout(WAIT).expect(what);
        if line.contains(what) {
            return;
        }
    };
    wait_for("answer with a number");
    use std::io::Write as _;
    stdin.write_all(b"1\n").unwrap();
    wait_for("written for real");
    assert_eq!(
        std::fs::read_to_string(sb.work().join("f.txt")).unwrap(),
        "kept"
    );
    drop(stdin);
    let _ = child.wait();
    // Created without --name: named after its first prompt.
    let ls = String::from_utf8_lossy(&shard(&sb, &["ls"]).stdout).to_string();
    let row = ls.lines().find(|l| l.starts_with(&id)).expect(&ls);
    assert!(row.contains("write-it"), "{row}");
}

#[test]
fn rm_archives_an_agent_out_of_ls_keeping_its_session() {
    let sb = Sandbox::new();
    let _d = TestDaemon::start(&sb);
    let script = sb.script("s.json", json!({"turns": [text_turn("hello")]}));
    let out = shard(
        &sb,
        &[
            "new",
            "--script",
            script.to_str().unwrap(),
            "--prompt",
            "hi",
        ],
    );
    assert!(out.status.success());
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let out = shard(&sb, &["ls", "--json"]);
    let agents: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let session = agents[0]["session_id"].as_str().unwrap().to_string();
    let out = shard(&sb, &["rm", &id]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("its session {session} is kept")),
        "{stdout}"
    );
    let ls = String::from_utf8_lossy(&shard(&sb, &["ls"]).stdout).to_string();
    assert!(!ls.contains(&id), "{ls}");
    let all = String::from_utf8_lossy(&shard(&sb, &["ls", "--all"]).stdout).to_string();
    let row = all.lines().find(|l| l.starts_with(&id)).expect(&all);
    assert!(row.contains("archived"), "{row}");
    assert!(!row.contains("running"), "the Runtime stopped: {row}");
    assert!(sb.session_file(&session).exists(), "the session is kept");
    let out = shard(&sb, &["rm", "agent-01JZ8Q4X7M2K9P3R5T6V8W0Y1A"]);
    assert_eq!(out.status.code(), Some(1));
}
