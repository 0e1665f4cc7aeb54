//! `shard attach` as a person reads it: an aborted turn says `[interrupted]` where it
//! stopped (live, and on the next attach), tool calls are short titles, a listing is a
//! listing and a subagent's report is a notice.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};

use serde_json::json;

use crate::commands::TestDaemon;
use crate::harness::*;

/// An attached `shard attach`, its stdout read line by line.
/// A running `shard attach`: its output lines read on a thread, its input writable.
pub(super) struct Attached {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<String>,
    seen: Vec<String>,
}

impl Attached {
    fn start(sb: &Sandbox, id: &str) -> Attached {
        Attached::spawn(sb, &["attach", id], "attached to")
    }

    /// Runs `shard ARGS` and reads until a line containing `ready`.
    pub(super) fn spawn(sb: &Sandbox, args: &[&str], ready: &str) -> Attached {
        let mut child = Command::new(shard_bin())
            .args(args)
            .env("SHARD_HOME", sb.home())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut a = Attached {
            child,
            stdin,
            rx,
            seen: Vec::new(),
        };
        a.wait_for(ready);
        a
    }

    /// Every line read so far.
    pub(super) fn text(&self) -> String {
        self.seen.join("\n")
    }

    /// Reads until a line containing `needle`; returns the lines read since the last call.
    pub(super) fn wait_for(&mut self, needle: &str) -> Vec<String> {
        let start = self.seen.len();
        loop {
            let line = self
                .rx
                .recv_timeout(WAIT)
                .unwrap_or_else(|_| panic!("no {needle:?}; seen:\n{}", self.seen.join("\n")));
            let hit = line.contains(needle);
            self.seen.push(line);
            if hit {
                return self.seen[start..].to_vec();
            }
        }
    }

    pub(super) fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn new_agent(sb: &Sandbox, turns: serde_json::Value) -> String {
    let script = sb.script("s.json", json!({ "turns": turns }));
    let out = shard(sb, &["new", "--script", script.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn an_aborted_turn_says_interrupted_live_and_on_the_next_attach() {
    let sb = Sandbox::new();
    let _d = TestDaemon::start(&sb);
    let id = new_agent(
        &sb,
        json!([{"steps": [{"text": "starting the long part\n"}, {"delay_ms": 600000}]}]),
    );
    let mut a = Attached::start(&sb, &id);
    a.send("go");
    a.wait_for("starting the long part");
    a.send("/abort");
    a.wait_for("[interrupted]");
    drop(a);
    let mut again = Attached::start(&sb, &id);
    let lines = again.wait_for("[the last turn was interrupted]");
    assert!(lines.iter().any(|l| l.starts_with("[sync]")), "{lines:?}");
}

#[test]
fn tool_calls_are_titles_and_a_listing_is_a_listing() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.work().join("src")).unwrap();
    std::fs::write(sb.work().join("notes.txt"), "hi\n").unwrap();
    let _d = TestDaemon::start(&sb);
    let id = new_agent(
        &sb,
        json!([
            tool_turn("l1", "ls", json!({"path": "."})),
            tool_turn("b1", "bash", json!({"command": "echo one\necho two"})),
            text_turn("listed")
        ]),
    );
    let mut a = Attached::start(&sb, &id);
    a.send("go");
    let mut lines = a.wait_for("answer with");
    // The command is shown once, in the question, not again as a detail.
    let asked = lines
        .iter()
        .position(|l| l.starts_with("[permission]"))
        .unwrap();
    let shown = lines[asked..]
        .iter()
        .filter(|l| l.contains("echo one"))
        .count();
    assert_eq!(shown, 1, "{lines:?}");
    a.send("allow");
    lines.extend(a.wait_for("-> bash: echo one"));
    assert!(lines.iter().any(|l| l == "-> ls ."), "{lines:?}");
    // Under a bare `<-`, one entry a line, directories ending in `/`.
    let at = lines.iter().position(|l| l == "<-").expect("a listing");
    assert!(
        lines[at + 1..at + 3]
            .iter()
            .any(|l| l.trim().starts_with("src/")),
        "{lines:?}"
    );
    assert!(
        lines[at + 1..at + 3]
            .iter()
            .any(|l| l.trim().starts_with("notes.txt  file")),
        "{lines:?}"
    );
}

/// An edit's change is shown, coloured on a terminal and plain on this pipe, before the
/// question; a second attached terminal sees the same diff, and once the first answers it
/// is told who answered and how, while the first says it answered.
#[test]
fn an_edit_shows_its_diff_before_answering_and_the_other_client_names_who_answered() {
    let sb = Sandbox::new();
    std::fs::write(sb.work().join("notes.txt"), "alpha\nbeta\ngamma\n").unwrap();
    let _d = TestDaemon::start(&sb);
    let id = new_agent(
        &sb,
        json!([
            tool_turn(
                "e1",
                "edit",
                json!({"path": "notes.txt", "old_string": "beta", "new_string": "BETA"})
            ),
            text_turn("edited")
        ]),
    );
    let mut a = Attached::start(&sb, &id);
    let mut b = Attached::start(&sb, &id);
    a.send("change it");
    for who in [&mut a, &mut b] {
        let lines = who.wait_for("answer with");
        let asked = lines
            .iter()
            .position(|l| l.starts_with("[permission]"))
            .expect("the question");
        let shown = &lines[asked..];
        let del = shown.iter().position(|l| l.trim() == "-beta");
        let add = shown.iter().position(|l| l.trim() == "+BETA");
        let menu = shown.iter().position(|l| l.trim().starts_with("1) "));
        assert!(
            matches!((del, add, menu), (Some(d), Some(a), Some(m)) if d < a && a < m),
            "the diff comes before the choices: {shown:?}"
        );
        assert!(
            !shown.iter().any(|l| l.contains('\x1b')),
            "no colour on a pipe: {shown:?}"
        );
    }
    a.send("1");
    let lines = b.wait_for("answered by");
    let said = lines.last().unwrap();
    assert!(
        said.starts_with("[permission for edit: “") && said.ends_with("”, answered by a terminal]"),
        "{said}"
    );
    a.wait_for("answered here]");
    b.wait_for("edited");
    assert_eq!(
        std::fs::read_to_string(sb.work().join("notes.txt")).unwrap(),
        "alpha\nBETA\ngamma\n"
    );
}

/// Through a daemon agent and the MCP test server: a structured tree is drawn like `tree`
/// under a bare `<-`, and a result with text and an image keeps its text and names the image.
#[test]
fn an_mcp_tree_and_text_with_an_image_read_as_a_person_reads_them() {
    let sb = Sandbox::new();
    if !crate::mcp::read_only_test_server(&sb) {
        return;
    }
    let _d = TestDaemon::start(&sb);
    let id = new_agent(
        &sb,
        json!([
            tool_turn("t1", "mcp__t__tree", json!({})),
            tool_turn("t2", "mcp__t__picture", json!({})),
            tool_turn("t3", "mcp__t__evil_tree", json!({})),
            text_turn("saw them")
        ]),
    );
    let mut a = Attached::start(&sb, &id);
    a.send("look");
    let lines = a.wait_for("saw them");
    let tree = lines.iter().position(|l| l == "-> mcp__t__tree").unwrap();
    assert_eq!(
        lines[tree + 1..tree + 6],
        [
            "<-",
            "   src/",
            "   ├── main.rs",
            "   └── util/",
            "       └── mod.rs"
        ],
        "{lines:?}"
    );
    let pic = lines
        .iter()
        .position(|l| l == "-> mcp__t__picture")
        .unwrap();
    assert_eq!(lines[pic + 1], "<- A dot", "{lines:?}");
    assert!(
        lines[pic + 2].starts_with("   [image image/png, "),
        "{lines:?}"
    );
    // A hostile server's names reach the terminal without their escape sequences.
    assert!(lines.iter().any(|l| l.ends_with("top/")), "{lines:?}");
    assert!(lines.iter().any(|l| l.ends_with("wiped")), "{lines:?}");
    let escaped = lines
        .iter()
        .any(|l| l.contains('\x1b') || l.contains('\x07'));
    assert!(!escaped, "{lines:?}");
}

/// A notice is printed and dismissed with no line about who answered it; a question this
/// terminal answers says so.
#[test]
fn a_notice_needs_no_answer_line_and_an_answer_given_here_says_so() {
    let sb = Sandbox::new();
    let _d = TestDaemon::start(&sb);
    let id = new_agent(
        &sb,
        json!([
            tool_turn(
                "n1",
                "ask_user",
                json!({"question": "Heads up.", "kind": "notify"})
            ),
            tool_turn(
                "q1",
                "ask_user",
                json!({"question": "Which?", "kind": "select", "options": ["red", "blue"]})
            ),
            text_turn("all asked")
        ]),
    );
    let mut a = Attached::start(&sb, &id);
    a.send("ask");
    a.wait_for("2) blue");
    a.send("2");
    let lines = a.wait_for("all asked");
    let text = a.text();
    assert!(
        text.contains("[notice]") && text.contains("Heads up."),
        "{text}"
    );
    let answered: Vec<&String> = a
        .seen
        .iter()
        .filter(|l| l.starts_with('[') && l.contains("answered"))
        .collect();
    assert_eq!(answered.len(), 1, "{text}");
    assert!(answered[0].ends_with(" answered here]"), "{lines:?}");
}
