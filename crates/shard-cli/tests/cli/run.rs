//! `shard run`: the one-shot client.

use std::process::Command;

use serde_json::{Value, json};
use shard_protocol::Event;

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
    assert!(stderr.contains("▸ bash: wc -l README.md"), "{stderr}");
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
    let events = events_of(&out.stdout);
    assert!(matches!(events[0], Event::Hello(_)));
    assert!(matches!(events[1], Event::Sync(_)));
    assert!(events.iter().any(|e| matches!(e, Event::TurnEnd(_))));
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

#[test]
fn a_session_that_cannot_be_created_fails_the_run_loudly() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [{"steps": [{"text": "answered"}]}]}),
    );
    // A file where the sessions folder goes: the session, made off the start path while
    // the model answers, can never be written.
    std::fs::write(sb.home().join("sessions"), "not a folder").unwrap();
    let out = shard_run(&sb, &scripted(&script, &["keep what I typed"]));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nothing of this session was saved"), "{err}");
    // The closing line offers no session to continue.
    assert!(
        err.contains("no session was saved") && !err.contains("continue with"),
        "{err}"
    );
}

/// `shard run` with a deadline: a run that hangs fails the test instead of hanging it.
pub fn shard_run_timed(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    use std::io::Read;
    let mut child = Command::new(shard_bin())
        .arg("run")
        .args(args)
        .current_dir(sb.work())
        .env("SHARD_HOME", sb.home())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let deadline = std::time::Instant::now() + WAIT;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "shard run {args:?} did not finish within {WAIT:?}; stderr so far:\n{}",
                String::from_utf8_lossy(&e.join().unwrap())
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    std::process::Output {
        status,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}

fn scripted<'a>(script: &'a std::path::Path, rest: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
    ];
    v.extend_from_slice(rest);
    v
}

fn ask_turn(question: &str, options: Value) -> Value {
    tool_turn(
        "q1",
        "ask_user",
        json!({"question": question, "options": options}),
    )
}

#[test]
fn yes_without_a_terminal_answers_questions_at_once_and_says_what_was_asked() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [ask_turn("Which color?", json!(["red", "blue"])), text_turn("fine")]}),
    );
    let out = shard_run_timed(&sb, &scripted(&script, &["--yes", "pick a color"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("the agent asked: Which color? [red / blue]"),
        "{stderr}"
    );
    assert!(stderr.contains("answered with nothing"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("fine"));
}

#[test]
fn without_yes_or_a_terminal_questions_do_not_wait_either() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [ask_turn("Your name?", json!(null)), text_turn("ok")]}),
    );
    let out = shard_run_timed(&sb, &scripted(&script, &["hi"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("▸ ask_user Your name?"), "{stderr}");
    assert!(stderr.contains("Nobody answered"), "{stderr}");
}

#[test]
fn an_unknown_mode_is_one_clear_error_and_creates_nothing() {
    let sb = Sandbox::new();
    let script = sb.script("s.json", json!({"turns": [text_turn("x")]}));
    let out = shard_run_timed(&sb, &scripted(&script, &["--mode", "bogus", "hi"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown mode `bogus`"), "{stderr}");
    assert!(
        stderr.contains("build, plan"),
        "names the accepted modes: {stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!sb.home().join("sessions").exists(), "nothing created");
}

#[test]
fn an_unknown_session_is_an_error_not_a_new_session() {
    let sb = Sandbox::new();
    let script = sb.script("s.json", json!({"turns": [text_turn("x")]}));
    let id = "sess-00000000000000000000000000";
    let out = shard_run_timed(&sb, &scripted(&script, &["--session", id, "hi"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("no session {id}")), "{stderr}");
    assert!(!sb.home().join("sessions").join(id).exists());
    let out = shard_run_timed(&sb, &scripted(&script, &["--session", "nonsense", "hi"]));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn refusals_are_printed_whole_with_the_rule_that_would_allow_them() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("w", "write", json!({"path": "notes/f.txt", "content": "x"})),
            text_turn("I could not write it.")
        ]}),
    );
    let out = shard_run_timed(&sb, &scripted(&script, &["write it"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("✗ refused: write {\"path\":\"notes/f.txt\",\"content\":\"x\"}"),
        "{stderr}"
    );
    assert!(stderr.contains("--yes"), "{stderr}");
    assert!(stderr.contains("[[headless.allow]]"), "{stderr}");
    assert!(stderr.contains("tool = \"write\""), "{stderr}");
    assert!(stderr.contains("path = \"notes/f.txt\""), "{stderr}");
    assert!(!sb.work().join("notes/f.txt").exists());
}

#[test]
fn text_blocks_are_separated_and_a_closing_line_gives_tokens_and_cost() {
    let sb = Sandbox::new();
    std::fs::write(sb.work().join("a.txt"), "a").unwrap();
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("l", "ls", json!({"path": "."})),
            text_turn("All done.")
        ]}),
    );
    let out = shard_run_timed(&sb, &scripted(&script, &["look"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "Working on it.\n\nAll done.\n");
    let last = stderr.lines().last().unwrap();
    assert!(last.starts_with("tokens: 30 in, 13 out"), "{last}");
    assert!(last.contains("cost:"), "{last}");
    assert!(last.contains("session: sess-"), "{last}");
}

#[test]
fn terminal_control_sequences_from_the_model_and_tools_are_stripped() {
    let sb = Sandbox::new();
    let evil = "safe\u{1b}]52;c;cm0gLXJmIH4K\u{7} text\u{1b}[2J end\u{1b}]0;pwned\u{7}\n";
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("b", "bash", json!({"command": "printf '\\033]0;title\\007tool\\033[2Jout\\n'"})),
            {"steps": [{"text": evil, "chunk_chars": 4}, {"usage": {"input": 1, "output": 1}}]}
        ]}),
    );
    let out = shard_run_timed(&sb, &scripted(&script, &["--yes", "go"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for (name, s) in [("stdout", &stdout), ("stderr", &stderr)] {
        assert!(!s.contains('\u{1b}'), "{name} has an ESC: {s:?}");
        assert!(!s.contains('\u{7}'), "{name} has a BEL: {s:?}");
    }
    assert!(stdout.contains("safe text end"), "{stdout:?}");
    assert!(
        stderr.contains("toolout"),
        "the tool's output, cleaned: {stderr:?}"
    );
}

/// The exit hands the transcript's last sync to a helper process: a run that resumes the
/// session the moment the first one exited finds it whole, unlocked, with a meta that
/// describes the whole transcript.
#[test]
fn a_run_resumed_the_moment_the_last_one_exited_finds_its_session_whole() {
    let sb = Sandbox::new();
    let script = sb.script("s.json", json!({"turns": [text_turn("first answer")]}));
    let again = sb.script("t.json", json!({"turns": [text_turn("second answer")]}));
    let out = shard_run_timed(&sb, &scripted(&script, &["first"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let last = stderr.lines().last().unwrap();
    let id = last
        .split("session: ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap()
        .to_string();
    let out = shard_run_timed(&sb, &scripted(&again, &["--session", &id, "second"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let texts: Vec<String> = transcript(&sb.session_file(&id))
        .iter()
        .filter_map(|e| {
            e["message"]["content"][0]["text"]
                .as_str()
                .map(str::to_string)
        })
        .collect();
    assert_eq!(
        texts,
        ["first", "first answer", "second", "second answer"],
        "{texts:?}"
    );
    let meta: Value = serde_json::from_slice(
        &std::fs::read(sb.home().join("sessions").join(&id).join("meta.json")).unwrap(),
    )
    .unwrap();
    let len = std::fs::metadata(sb.session_file(&id)).unwrap().len();
    assert_eq!(meta["transcript_len"], json!(len), "{meta}");
}

#[test]
fn a_gone_transcript_is_said_in_one_line_and_marked_in_sessions() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [text_turn("first"), text_turn("second")]}),
    );
    let s = script.to_str().unwrap();
    let out = shard(
        &sb,
        &["run", "--provider", "scripted", "--script", s, "hello"],
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let sid = stderr
        .split_whitespace()
        .find(|w| w.starts_with("sess-"))
        .unwrap()
        .to_string();
    std::fs::remove_file(sb.session_file(&sid)).unwrap();
    for flags in [vec!["--continue"], vec!["--session", sid.as_str()]] {
        let mut args = vec!["run", "--provider", "scripted", "--script", s];
        args.extend(flags.iter().copied());
        args.push("again");
        let out = shard(&sb, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
        assert!(stderr.contains("its transcript is gone"), "{stderr}");
        assert!(stderr.contains("to start a new one"), "{stderr}");
        assert!(!sb.session_file(&sid).exists(), "nothing was recreated");
    }
    let out = shard(&sb, &["sessions"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let row = stdout.lines().find(|l| l.starts_with(&sid)).unwrap();
    assert!(
        row.contains("[cannot be opened: its transcript is gone]"),
        "{row}"
    );
    let out = shard(&sb, &["sessions", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["unopenable"], "its transcript is gone");
}
