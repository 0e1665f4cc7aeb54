//! `shard run` with a person at a terminal (a real pseudo-terminal through `script`) and
//! with Ctrl-C (a real SIGINT).

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::*;

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Output collected by a reader thread, readable while the process runs.
#[derive(Clone, Default)]
struct Collected(Arc<Mutex<Vec<u8>>>);

impl Collected {
    fn spawn(mut r: impl Read + Send + 'static) -> Collected {
        let c = Collected::default();
        let buf = Arc::clone(&c.0);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = r.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                buf.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        c
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).to_string()
    }
    fn wait_for(&self, what: &str) {
        let deadline = Instant::now() + WAIT;
        while !self.text().contains(what) {
            assert!(
                Instant::now() < deadline,
                "no {what:?} in:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn wait_exit(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the process did not exit within {WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `shard run ARGS` on a pseudo-terminal (stdin, stdout and stderr all the
/// terminal), typing `typed` once `after` appears.
fn run_on_terminal(sb: &Sandbox, args: &[&str], after: &str, typed: &str) -> (i32, String) {
    run_on_terminal_env(sb, args, after, typed, &[])
}

/// As [`run_on_terminal`], with extra environment for `shard`.
fn run_on_terminal_env(
    sb: &Sandbox,
    args: &[&str],
    after: &str,
    typed: &str,
    env: &[(&str, &str)],
) -> (i32, String) {
    let mut cmd = format!("{} run", quote(shard_bin()));
    for a in args {
        cmd.push(' ');
        cmd.push_str(&quote(a));
    }
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .current_dir(sb.work())
        .env("SHARD_HOME", sb.home())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("NO_COLOR")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the `script` command (util-linux) runs programs on a pseudo-terminal");
    let out = Collected::spawn(child.stdout.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    out.wait_for(after);
    stdin.write_all(typed.as_bytes()).unwrap();
    stdin.flush().unwrap();
    let status = wait_exit(&mut child);
    drop(stdin);
    (status.code().unwrap_or(-1), out.text())
}

fn scripted_args<'a>(script: &'a Path, rest: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
    ];
    v.extend_from_slice(rest);
    v
}

#[test]
fn on_a_terminal_questions_are_asked_inline_even_with_yes() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("q", "ask_user", json!({"question": "Which color?", "options": ["red", "blue"]})),
            text_turn("noted")
        ]}),
    );
    let (code, out) = run_on_terminal(
        &sb,
        &scripted_args(&script, &["--yes", "pick"]),
        "choose 1-2",
        "2\n",
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Which color?"), "{out}");
    assert!(out.contains("The user answered: blue"), "{out}");
}

#[test]
fn on_a_terminal_permission_is_asked_without_yes() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("w", "write", json!({"path": "f.txt", "content": "hello"})),
            text_turn("written")
        ]}),
    );
    let (code, out) = run_on_terminal(
        &sb,
        &scripted_args(&script, &["write it"]),
        "Enter denies",
        "1\n",
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("permission for `write`"), "{out}");
    assert_eq!(
        std::fs::read_to_string(sb.work().join("f.txt")).unwrap(),
        "hello"
    );
}

#[test]
fn on_a_terminal_a_bash_permission_shows_its_command_once() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("b", "bash", json!({"command": "echo shown-once"})),
            text_turn("ran")
        ]}),
    );
    let (code, out) = run_on_terminal(
        &sb,
        &scripted_args(&script, &["run it"]),
        "Enter denies",
        "1\n",
    );
    assert_eq!(code, 0, "{out}");
    let asked = &out[out.find("permission for `bash`").expect("asked")..];
    let asked = &asked[..asked.find("Enter denies").unwrap()];
    assert_eq!(asked.matches("echo shown-once").count(), 1, "{asked}");
}

#[test]
fn on_a_terminal_an_edit_shows_its_coloured_diff_before_the_question() {
    let sb = Sandbox::new();
    std::fs::write(sb.work().join("f.txt"), "alpha\nbeta\ngamma\n").unwrap();
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("e", "edit", json!({"path": "f.txt", "old_string": "beta", "new_string": "BETA"})),
            text_turn("edited")
        ]}),
    );
    let (code, out) = run_on_terminal(
        &sb,
        &scripted_args(&script, &["edit it"]),
        "Enter denies",
        "1\n",
    );
    assert_eq!(code, 0, "{out}");
    let removed = out.find("\x1b[31m-beta\x1b[0m").expect(&out);
    let added = out.find("\x1b[32m+BETA\x1b[0m").expect(&out);
    let question = out.find("Enter denies").unwrap();
    assert!(removed < added && added < question, "{out}");
    assert!(out.contains("--- a/f.txt"), "{out}");
    assert_eq!(
        std::fs::read_to_string(sb.work().join("f.txt")).unwrap(),
        "alpha\nBETA\ngamma\n"
    );
}

#[test]
fn on_a_terminal_a_long_diff_is_cut_and_v_pages_the_whole_of_it() {
    let sb = Sandbox::new();
    let content: String = (0..100).map(|i| format!("row {i}\n")).collect();
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("w", "write", json!({"path": "long.txt", "content": content})),
            text_turn("written")
        ]}),
    );
    let (code, out) = run_on_terminal_env(
        &sb,
        &scripted_args(&script, &["write it"]),
        "Enter denies",
        "v\n3\n",
        &[("PAGER", "cat")],
    );
    assert_eq!(code, 0, "{out}");
    let question = out.find("Enter denies").unwrap();
    let cut = out.find("more lines (v shows the whole diff)").expect(&out);
    assert!(cut < question, "{out}");
    assert!(!out[..question].contains("+row 99"), "{out}");
    assert!(
        out[question..].contains("+row 99"),
        "the pager got the rest: {out}"
    );
    assert!(!sb.work().join("long.txt").exists(), "3 denied");
}

fn spawn_run(sb: &Sandbox, args: &[&str]) -> (std::process::Child, Collected, Collected) {
    let mut child = Command::new(shard_bin())
        .arg("run")
        .args(args)
        .current_dir(sb.work())
        .env("SHARD_HOME", sb.home())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = Collected::spawn(child.stdout.take().unwrap());
    let err = Collected::spawn(child.stderr.take().unwrap());
    (child, out, err)
}

fn sigint(pid: u32) {
    let ok = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

fn session_id(stderr: &str) -> String {
    stderr
        .split(|c: char| c.is_whitespace() || c == ')' || c == '(')
        .find(|w| w.starts_with("sess-"))
        .unwrap()
        .to_string()
}

#[test]
fn ctrl_c_aborts_the_turn_saves_the_partial_answer_and_exits_130() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [{"steps": [
            {"text": "partial answer", "chunk_chars": 4},
            {"delay_ms": 600000},
            {"text": " never shown"}
        ]}]}),
    );
    let (mut child, out, err) = spawn_run(
        &sb,
        &[
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
            "go",
        ],
    );
    out.wait_for("partial answer");
    sigint(child.id());
    let status = wait_exit(&mut child);
    let stderr = err.text();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("■ interrupted"), "{stderr}");
    let sid = session_id(&stderr);
    let entries = transcript(&sb.session_file(&sid));
    let saved = entries
        .iter()
        .any(|e| e.to_string().contains("partial answer"));
    assert!(
        saved,
        "the partial answer is in the transcript: {entries:?}"
    );
}

#[test]
fn ctrl_c_kills_the_tool_processes() {
    let sb = Sandbox::new();
    let marker = format!("600.{}", std::process::id());
    let script = sb.script(
        "s.json",
        json!({"turns": [
            // A pid printed inside the sandbox is the PID namespace's, so the sleep is
            // found on the host by its unique argument.
            tool_turn("b", "bash", json!({"command": format!("touch started.txt; exec sleep {marker}")})),
            text_turn("never")
        ]}),
    );
    let (mut child, _out, err) = spawn_run(
        &sb,
        &[
            "--yes",
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
            "go",
        ],
    );
    let deadline = Instant::now() + WAIT;
    let pid = loop {
        if let Some(p) = crate::harness::process_with_arg(&marker) {
            break p;
        }
        assert!(
            Instant::now() < deadline,
            "the tool did not start: {}",
            err.text()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    sigint(child.id());
    let status = wait_exit(&mut child);
    assert_eq!(status.code(), Some(130), "{}", err.text());
    // The sleep is gone (or a zombie about to be reaped by init).
    let deadline = Instant::now() + WAIT;
    loop {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => break,
            Ok(stat)
                if stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z') =>
            {
                break;
            }
            Ok(_) => {}
        }
        assert!(Instant::now() < deadline, "tool process {pid} still runs");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_while_a_question_waits_on_the_terminal_aborts_and_exits_130() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("q", "ask_user", json!({"question": "Which color?", "options": ["red", "blue"]})),
            text_turn("never")
        ]}),
    );
    let (code, out) = run_on_terminal(
        &sb,
        &scripted_args(&script, &["pick"]),
        "choose 1-2",
        "\u{3}",
    );
    assert_eq!(code, 130, "{out}");
    assert!(out.contains("aborting the turn"), "{out}");
    assert!(!out.contains("never"), "{out}");
}
