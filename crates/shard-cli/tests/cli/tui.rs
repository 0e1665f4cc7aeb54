//! The interactive client end to end: the real `shard` inside tmux (type with
//! `send-keys`, read with `capture-pane`) against the scripted provider, directly and
//! through a real daemon. Each test runs its own tmux server (`-L`), so it never touches
//! anyone's sessions, and kills only that server. Skipped, with the reason printed, when
//! tmux is absent (Debian package `tmux`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::*;
use crate::mock::{self, MockApi};

pub(crate) fn have_tmux() -> bool {
    let ok = Command::new("tmux")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        crate::skip::skip("tmux is not installed (Debian package `tmux`)");
    }
    ok
}

/// One tmux server with one window running `shard`.
pub(crate) struct Tmux {
    socket: String,
    home: std::path::PathBuf,
    /// Extra environment for every window (e.g. a provider pointed at the mock API).
    env: Vec<(String, String)>,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

impl Tmux {
    /// Starts `shard ARGS` in a `w`×`h` window; after it exits, the pane prints its
    /// exit status and whether the terminal is back in canonical mode.
    pub(crate) fn start(sb: &Sandbox, args: &[&str], w: u16, h: u16) -> Tmux {
        Tmux::start_env(sb, args, w, h, Vec::new())
    }

    /// As [`Tmux::start`], with `env` set for `shard` in every window.
    fn start_env(sb: &Sandbox, args: &[&str], w: u16, h: u16, env: Vec<(String, String)>) -> Tmux {
        let socket = format!(
            "shard-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let t = Tmux {
            socket,
            home: sb.home(),
            env,
        };
        t.window("main", sb, args, w, h);
        t
    }

    fn window(&self, name: &str, sb: &Sandbox, args: &[&str], w: u16, h: u16) {
        let cmd = format!(
            "cd {} && env SHARD_HOME={} NO_COLOR=1 TERM=xterm-256color {} {} {}; \
             echo SHARD-EXIT=$?; stty -a | tr ' ;' '\\n\\n' | grep -x -- '-\\?icanon'; sleep 3600",
            quote(&sb.work().display().to_string()),
            quote(&sb.home().display().to_string()),
            self.env
                .iter()
                .map(|(k, v)| quote(&format!("{k}={v}")))
                .collect::<Vec<_>>()
                .join(" "),
            quote(shard_bin()),
            args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
        );
        let (w, h) = (w.to_string(), h.to_string());
        let status = if name == "main" {
            self.tmux(&[
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "t",
                "-n",
                name,
                "-x",
                &w,
                "-y",
                &h,
                &cmd,
            ])
        } else {
            self.tmux(&["new-window", "-d", "-t", "t", "-n", name, &cmd])
        };
        assert!(status.status.success(), "tmux: {status:?}");
    }

    fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap()
    }

    /// `shard --no-daemon` on a scripted model playing `turns`, once it waits for a prompt.
    fn direct(sb: &Sandbox, turns: serde_json::Value, w: u16, h: u16) -> Tmux {
        let script = sb.script("s.json", json!({ "turns": turns }));
        let mut args = scripted(&script);
        args.push("--no-daemon");
        let t = Tmux::start(sb, &args, w, h);
        t.wait("type a prompt");
        t
    }

    pub(crate) fn screen(&self, window: &str) -> String {
        let out = self.tmux(&["capture-pane", "-p", "-t", &format!("t:{window}")]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn format(&self, window: &str, f: &str) -> String {
        let out = self.tmux(&["display-message", "-p", "-t", &format!("t:{window}"), f]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Waits until the screen satisfies `pred` (generous deadline: a shared machine).
    fn wait_in(&self, window: &str, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT * 2;
        loop {
            let s = self.screen(window);
            if pred(&s) {
                return s;
            }
            if Instant::now() >= deadline {
                let log = std::fs::read_to_string(self.home.join("tui.log")).unwrap_or_default();
                panic!("never saw {what}; screen:\n{s}\n{log}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn wait(&self, text: &str) -> String {
        self.wait_in("main", text, |s| s.contains(text))
    }

    pub(crate) fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t:main"];
        args.extend_from_slice(keys);
        assert!(self.tmux(&args).status.success());
    }

    pub(crate) fn type_text(&self, window: &str, text: &str) {
        let target = format!("t:{window}");
        assert!(
            self.tmux(&["send-keys", "-t", &target, "-l", text])
                .status
                .success()
        );
    }

    /// The `shard` process of a window (the pane's shell's child).
    fn shard_pid(&self, window: &str) -> u32 {
        let sh: u32 = self.format(window, "#{pane_pid}").parse().unwrap();
        let deadline = Instant::now() + WAIT;
        loop {
            let children = std::fs::read_to_string(format!("/proc/{sh}/task/{sh}/children"))
                .unwrap_or_default();
            if let Some(pid) = children.split_whitespace().next() {
                return pid.parse().unwrap();
            }
            assert!(Instant::now() < deadline, "shard never started");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

pub(crate) fn scripted(script: &Path) -> Vec<&str> {
    vec![
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
    ]
}

/// The status line: the last non-empty row.
fn status_line(screen: &str) -> String {
    screen
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .to_string()
}

#[test]
fn a_prompt_streams_and_a_permission_is_answered_with_y() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [
            text_turn("## Answer\n- streamed **markdown**"),
            tool_turn("w", "write", json!({"path": "f.txt", "content": "hello"})),
            text_turn("written")
        ]}),
    );
    let mut args = scripted(&script);
    args.push("--no-daemon");
    let t = Tmux::start(&sb, &args, 80, 24);
    t.wait("type a prompt");
    t.type_text("main", "hello");
    t.keys(&["Enter"]);
    let s = t.wait("• streamed markdown");
    assert!(s.contains("› hello"), "{s}");
    assert!(s.contains("Answer"), "{s}");
    t.type_text("main", "write it");
    t.keys(&["Enter"]);
    let s = t.wait("[y]");
    assert!(s.contains("permission"), "{s}");
    t.type_text("main", "y");
    t.wait("written");
    assert_eq!(
        std::fs::read_to_string(sb.work().join("f.txt")).unwrap(),
        "hello"
    );
    let s = t.screen("main");
    assert!(status_line(&s).contains("direct"), "{s}");
}

/// The terminal client is meant to be checked the client against "a local mock of the provider API" too: here
/// `shard` streams over real HTTP (server-sent events) from the mock Anthropic API, so
/// the provider's SSE decoding, the tool call and the answered permission all pass
/// through the real network path into the terminal.
#[test]
fn against_the_mock_anthropic_api_the_answer_streams_and_a_permission_is_answered_with_y() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    let api = MockApi::start(vec![
        mock::anthropic_text("streamed over http from the mock"),
        mock::anthropic_bash("toolu_1", "printf hello > bashed.txt"),
        mock::anthropic_text("the file is written"),
    ]);
    let args = [
        "--no-daemon",
        "--provider",
        "anthropic",
        "--model",
        "claude-haiku-4-5",
    ];
    let t = Tmux::start_env(&sb, &args, 80, 24, api.env());
    t.wait("type a prompt");
    t.type_text("main", "hello");
    t.keys(&["Enter"]);
    let s = t.wait("streamed over http from the mock");
    assert!(s.contains("› hello"), "{s}");
    t.type_text("main", "run it");
    t.keys(&["Enter"]);
    let s = t.wait("[y]");
    assert!(s.contains("permission"), "{s}");
    t.type_text("main", "y");
    t.wait("the file is written");
    assert_eq!(
        std::fs::read_to_string(sb.work().join("bashed.txt")).unwrap(),
        "hello"
    );
    let requests = api.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    assert!(requests.iter().all(|r| r.path.ends_with("/v1/messages")));
    assert_eq!(requests[0].body["stream"], true);
    mock::assert_anthropic_pairs(&requests[2].body);
}

#[test]
fn esc_aborts_and_mode_plan_shows_in_the_status_line_and_resize_rewraps() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [{"steps": [{"text": "first part "}, {"delay_ms": 60000}, {"text": "never"}]}]}),
    );
    let mut args = scripted(&script);
    args.push("--no-daemon");
    let t = Tmux::start(&sb, &args, 100, 24);
    t.wait("type a prompt");
    t.type_text("main", "go");
    t.keys(&["Enter"]);
    t.wait("first part");
    t.wait("working");
    t.keys(&["Escape"]);
    // Idle again: the empty input shows its idle hint, the spinner is gone.
    let s = t.wait_in("main", "idle after abort", |s| {
        s.contains("type a prompt") && !s.contains("working")
    });
    assert!(!s.contains("never"), "{s}");
    t.type_text("main", "/mode plan");
    t.keys(&["Enter"]);
    let s = t.wait_in("main", "plan in the status line", |s| {
        status_line(s).starts_with("plan")
    });
    assert!(status_line(&s).starts_with("plan ·"), "{s}");
    // Narrow: everything still fits in 60 columns and the status line stays.
    t.type_text("main", "/help");
    t.keys(&["Enter"]);
    t.wait("Commands:");
    assert!(
        t.tmux(&["resize-window", "-t", "t:main", "-x", "60", "-y", "20"])
            .status
            .success()
    );
    let s = t.wait_in("main", "a 60-column frame", |s| {
        s.lines().all(|l| l.chars().count() <= 60) && status_line(s).starts_with("plan")
    });
    assert!(s.contains("/quit"), "{s}");
}

#[test]
fn the_terminal_is_restored_after_sigterm() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    let script = sb.script("s.json", json!({"turns": []}));
    let mut args = scripted(&script);
    args.push("--no-daemon");
    let t = Tmux::start(&sb, &args, 80, 24);
    t.wait("type a prompt");
    assert_eq!(t.format("main", "#{alternate_on}"), "1");
    assert_eq!(t.format("main", "#{mouse_any_flag}"), "1");
    let pid = t.shard_pid("main");
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let s = t.wait("SHARD-EXIT=");
    assert!(s.contains("SHARD-EXIT=143"), "{s}");
    t.wait_in("main", "the stty line", |s| {
        s.lines().any(|l| l.trim().ends_with("icanon"))
    });
    let s = t.screen("main");
    assert!(
        s.lines().any(|l| l.trim() == "icanon"),
        "canonical mode is back: {s}"
    );
    assert_eq!(t.format("main", "#{alternate_on}"), "0", "main screen");
    assert_eq!(
        t.format("main", "#{mouse_any_flag}"),
        "0",
        "mouse reporting off"
    );
    assert_eq!(t.format("main", "#{cursor_flag}"), "1", "cursor shown");
}

struct Daemon {
    child: Child,
}

impl Daemon {
    fn start(home: &Path) -> Daemon {
        let mut child = Command::new(shard_bin())
            .args(["daemon", "--port", "0"])
            .env("SHARD_HOME", home)
            .env("SHARD_LOG", "shard_daemon=info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent && line.contains("listening on") {
                    let _ = tx.send(());
                    sent = true;
                }
            }
        });
        rx.recv_timeout(WAIT * 2).expect("daemon started");
        Daemon { child }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_second_client_attached_through_the_daemon_sees_the_same_stream() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    let _daemon = Daemon::start(&sb.home());
    let script = sb.script(
        "s.json",
        json!({"turns": [{"steps": [
            {"text": "shared "}, {"delay_ms": 1500}, {"text": "stream seen by both"},
            {"usage": {"input": 5, "output": 5}}
        ]}]}),
    );
    let t = Tmux::start(&sb, &scripted(&script), 100, 24);
    let s = t.wait_in("main", "a daemon agent", |s| {
        status_line(s).contains("daemon ")
    });
    let line = status_line(&s);
    let agent = line
        .split_whitespace()
        .skip_while(|w| *w != "daemon")
        .nth(1)
        .unwrap()
        .to_string();
    t.window("second", &sb, &["attach", &agent], 100, 24);
    t.wait_in("second", "the second client", |s| {
        status_line(s).contains(&agent)
    });
    t.type_text("main", "share this");
    t.keys(&["Enter"]);
    t.wait("stream seen by both");
    t.wait_in("second", "the stream in the second client", |s| {
        s.contains("stream seen by both")
    });
    // An observer sees the same conversation and gets no input.
    t.window("observer", &sb, &["attach", "--observer", &agent], 100, 24);
    let s = t.wait_in("observer", "the observer", |s| {
        s.contains("observing: read-only") && s.contains("stream seen by both")
    });
    assert!(status_line(&s).contains("observer"), "{s}");
    // Quitting detaches: the agent keeps running in the daemon.
    t.keys(&["C-c"]);
    t.keys(&["C-c"]);
    t.wait("SHARD-EXIT=0");
    let out = Command::new(shard_bin())
        .arg("ls")
        .env("SHARD_HOME", sb.home())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(&agent));
}

/// A prompt typed in one terminal appears in another attached through the daemon before
/// its answer: the turn waits on a permission nobody has answered yet, so the second
/// client can only be showing the prompt from the Runtime's `user_message`.
#[test]
fn a_prompt_typed_in_one_client_appears_in_the_other_before_the_answer() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    let _daemon = Daemon::start(&sb.home());
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("w", "write", json!({"path": "f.txt", "content": "hello"})),
            text_turn("the file is written")
        ]}),
    );
    let t = Tmux::start(&sb, &scripted(&script), 100, 24);
    let s = t.wait_in("main", "a daemon agent", |s| {
        status_line(s).contains("daemon ")
    });
    let agent = status_line(&s)
        .split_whitespace()
        .skip_while(|w| *w != "daemon")
        .nth(1)
        .unwrap()
        .to_string();
    t.window("second", &sb, &["attach", &agent], 100, 24);
    t.wait_in("second", "the second client", |s| {
        status_line(s).contains(&agent)
    });
    t.type_text("main", "please make the file");
    t.keys(&["Enter"]);
    let s = t.wait_in("second", "the prompt in the second client", |s| {
        s.contains("› please make the file")
    });
    assert!(!s.contains("the file is written"), "{s}");
    let s = t.wait("[y]");
    assert_eq!(
        s.matches("please make the file").count(),
        1,
        "the sender shows its prompt once: {s}"
    );
    t.type_text("main", "y");
    let s = t.wait("the file is written");
    assert!(
        !s.contains("answered by"),
        "the answering client needs no note: {s}"
    );
    let s = t.wait_in("second", "the answer in the second client", |s| {
        s.contains("the file is written")
    });
    assert_eq!(s.matches("› please make the file").count(), 1, "{s}");
    // The other terminal is told who answered and how, naming the kind of client.
    assert!(
        s.contains("permission for write: “Allow once”, answered by a terminal"),
        "{s}"
    );
}

#[test]
fn continue_reopens_the_latest_session_of_the_directory() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    let script = sb.script("s.json", json!({"turns": [text_turn("remembered answer")]}));
    let mut args = scripted(&script);
    args.push("--no-daemon");
    let t = Tmux::start(&sb, &args, 80, 24);
    t.wait("type a prompt");
    // The model is named from the start, before any call reported usage.
    t.wait_in("main", "the model in the status line", |s| {
        status_line(s).contains("scripted/script")
    });
    t.type_text("main", "remember this");
    t.keys(&["Enter"]);
    t.wait("remembered answer");
    t.keys(&["C-c"]);
    t.keys(&["C-c"]);
    t.wait("SHARD-EXIT=0");
    drop(t);
    args.push("--continue");
    let t = Tmux::start(&sb, &args, 80, 24);
    let s = t.wait("remembered answer");
    assert!(s.contains("› remember this"), "{s}");
    t.wait_in("main", "the model after --continue", |s| {
        status_line(s).contains("scripted/script")
    });
}

#[test]
fn a_large_paste_shows_as_one_line_and_is_sent_whole() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    let script = sb.script("s.json", json!({"turns": [text_turn("got it")]}));
    let mut args = scripted(&script);
    args.push("--no-daemon");
    let t = Tmux::start(&sb, &args, 80, 40);
    t.wait("type a prompt");
    let text: String = (0..12).map(|i| format!("pasted row {i}\n")).collect();
    assert!(t.tmux(&["set-buffer", "-b", "p", &text]).status.success());
    assert!(
        t.tmux(&["paste-buffer", "-p", "-b", "p", "-t", "t:main"])
            .status
            .success()
    );
    let s = t.wait("[Pasted 12 lines]");
    assert!(!s.contains("pasted row 3"), "{s}");
    t.keys(&["Enter"]);
    let s = t.wait("got it");
    assert!(
        s.contains("pasted row 0") && s.contains("pasted row 11"),
        "{s}"
    );
}

#[test]
fn esc_leaves_interrupted_where_the_turn_stopped_also_after_continue() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [
            {"steps": [{"text": "half an answer"}, {"delay_ms": 60000}, {"text": " never"}]},
            text_turn("the next answer")
        ]}),
    );
    let mut args = scripted(&script);
    args.push("--no-daemon");
    let t = Tmux::start(&sb, &args, 80, 24);
    t.wait("type a prompt");
    t.type_text("main", "go");
    t.keys(&["Enter"]);
    t.wait("half an answer");
    t.keys(&["Escape"]);
    let s = t.wait("■ interrupted");
    let (partial, mark) = (
        s.find("half an answer").unwrap(),
        s.find("■ interrupted").unwrap(),
    );
    assert!(partial < mark, "{s}");
    t.type_text("main", "again");
    t.keys(&["Enter"]);
    t.wait("the next answer");
    t.keys(&["C-c"]);
    t.keys(&["C-c"]);
    t.wait("SHARD-EXIT=0");
    drop(t);
    args.push("--continue");
    let t = Tmux::start(&sb, &args, 80, 24);
    let s = t.wait("the next answer");
    let at = |w: &str| s.find(w).unwrap_or_else(|| panic!("no {w} in {s}"));
    assert!(at("half an answer") < at("■ interrupted"), "{s}");
    assert!(at("■ interrupted") < at("› again"), "{s}");
    assert_eq!(s.matches("■ interrupted").count(), 1, "{s}");
}

#[test]
fn a_write_permission_shows_its_diff_first_and_pgdn_scrolls_it() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    let content: String = (0..100).map(|i| format!("row {i}\n")).collect();
    let turns = json!([
        tool_turn(
            "w",
            "write",
            json!({"path": "long.txt", "content": content})
        ),
        tool_turn("b", "bash", json!({"command": "echo once-only"})),
        text_turn("done")
    ]);
    let t = Tmux::direct(&sb, turns, 80, 30);
    t.type_text("main", "write it");
    t.keys(&["Enter"]);
    let s = t.wait("[y]");
    assert!(s.contains("+++ b/long.txt"), "{s}");
    assert!(s.contains("+row 0"), "{s}");
    assert!(!s.contains("+row 99"), "{s}");
    assert!(s.contains("PgUp/PgDn scroll"), "{s}");
    t.keys(&["NPage"]);
    let s = t.wait_in("main", "the next page of the diff", |s| {
        !s.contains("+row 0\n") && !s.contains("+row 0 ")
    });
    assert!(s.contains("[y]"), "the choices stay: {s}");
    t.keys(&["End"]);
    t.wait("+row 99");
    t.keys(&["Home"]);
    t.wait("+row 0");
    t.type_text("main", "n");
    // The bash permission shows its command once.
    let s = t.wait("echo once-only");
    let s = if s.contains("[y]") { s } else { t.wait("[y]") };
    let dialog = &s[s.rfind("────").unwrap()..];
    assert_eq!(dialog.matches("echo once-only").count(), 1, "{s}");
    t.type_text("main", "y");
    t.wait("done");
    assert!(!sb.work().join("long.txt").exists(), "n denied the write");
}

#[test]
fn continue_on_a_gone_transcript_offers_a_new_session() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [text_turn("first answer"), text_turn("fresh answer")]}),
    );
    let s = script.to_str().unwrap();
    let out = shard(
        &sb,
        &["run", "--provider", "scripted", "--script", s, "hello"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let sid = stderr
        .split_whitespace()
        .find(|w| w.starts_with("sess-"))
        .unwrap()
        .to_string();
    std::fs::remove_file(sb.session_file(&sid)).unwrap();
    let mut args = scripted(&script);
    args.extend(["--no-daemon", "--continue"]);
    let t = Tmux::start(&sb, &args, 160, 24);
    let s = t.wait("Start a new session instead? [Y/n]");
    assert!(
        s.contains(&format!(
            "session {sid} cannot be opened: its transcript is gone"
        )),
        "{s}"
    );
    t.keys(&["Enter"]);
    t.wait("type a prompt");
    t.type_text("main", "go");
    t.keys(&["Enter"]);
    t.wait("first answer");
}

#[test]
fn fork_opens_a_picker_over_the_messages_and_forks_at_the_pick() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [text_turn("first answer"), text_turn("second answer")]}),
    );
    let mut args = scripted(&script);
    args.push("--no-daemon");
    let t = Tmux::start(&sb, &args, 100, 30);
    t.wait("type a prompt");
    t.type_text("main", "one");
    t.keys(&["Enter"]);
    t.wait("first answer");
    t.type_text("main", "two");
    t.keys(&["Enter"]);
    t.wait("second answer");
    t.type_text("main", "/fork");
    t.keys(&["Enter"]);
    let s = t.wait("fork after which message?");
    assert!(
        s.contains("you: one") && s.contains("assistant: second answer"),
        "{s}"
    );
    t.keys(&["Down", "Down"]);
    t.keys(&["Enter"]);
    let s = t.wait("forked: session");
    assert!(s.contains("/resume"), "{s}");
}

#[test]
fn shard_in_a_directory_with_an_idle_agent_offers_to_continue_it() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    let _d = Daemon::start(&sb.home());
    let script = sb.script(
        "s.json",
        json!({"turns": [text_turn("kept answer"), text_turn("later answer")]}),
    );
    let t = Tmux::start(&sb, &scripted(&script), 120, 24);
    t.wait("type a prompt");
    t.type_text("main", "remember me");
    t.keys(&["Enter"]);
    t.wait("kept answer");
    t.keys(&["C-c"]);
    t.keys(&["C-c"]);
    t.wait("SHARD-EXIT=0");
    drop(t);
    let t = Tmux::start(&sb, &scripted(&script), 120, 24);
    let s = t.wait("Continue it instead of a new one? [Y/n]");
    // Named after its first prompt.
    assert!(s.contains("agent remember-me"), "{s}");
    t.keys(&["Enter"]);
    let s = t.wait("kept answer");
    assert!(s.contains("› remember me"), "the same agent: {s}");
}

/// Long tool output is cut with the key that shows it whole, Ctrl+O shows it whole, and
/// PageUp / PageDown move the conversation a screen at a time.
#[test]
fn ctrl_o_shows_long_tool_output_whole_and_page_keys_move_a_screen() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    let command = "for i in $(seq 1 100); do echo line-$i; done";
    let turns = json!([
        tool_turn("b", "bash", json!({ "command": command })),
        text_turn("listed them all")
    ]);
    let t = Tmux::direct(&sb, turns, 80, 30);
    t.type_text("main", "count");
    t.keys(&["Enter"]);
    t.wait("[y]");
    t.type_text("main", "y");
    let s = t.wait("listed them all");
    assert!(s.contains("more lines — Ctrl+O shows all"), "{s}");
    assert!(!s.contains("line-100"), "cut: {s}");
    t.keys(&["C-o"]);
    let s = t.wait("line-100");
    assert!(!s.contains("more lines — Ctrl+O"), "{s}");
    let rows_of = |s: &str| -> Vec<u32> {
        s.lines()
            .filter_map(|l| l.split("line-").nth(1))
            .filter_map(|r| r.trim().parse().ok())
            .collect()
    };
    let bottom = rows_of(&s);
    t.keys(&["PPage"]);
    let s = t.wait_in("main", "a screen back", |s| !s.contains("line-100"));
    let back = rows_of(&s);
    let moved = bottom.iter().max().unwrap() - back.iter().max().unwrap();
    assert!(
        moved >= 15,
        "PageUp moves about a screen, not a line: {moved} rows\n{s}"
    );
    t.keys(&["NPage"]);
    t.wait("line-100");
}

/// The SGR sequence in force where `needle` starts on a screen captured with escapes.
fn sgr_before(screen: &str, needle: &str) -> String {
    let at = screen
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?}: {screen}"));
    let esc = screen[..at].rfind('\x1b').expect("an escape before it");
    screen[esc..at].to_string()
}

/// With colours on, an edit's diff is coloured before the question: additions green,
/// removals red.
#[test]
fn an_edit_diff_is_coloured_before_the_question() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    std::fs::write(sb.work().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("e", "edit", json!({"path": "notes.txt", "old_string": "beta", "new_string": "BETA"})),
            text_turn("edited")
        ]}),
    );
    let mut args = scripted(&script);
    args.push("--no-daemon");
    let colour = vec![("NO_COLOR".to_string(), String::new())];
    let t = Tmux::start_env(&sb, &args, 80, 30, colour);
    t.wait("type a prompt");
    t.type_text("main", "change it");
    t.keys(&["Enter"]);
    t.wait("[y]");
    let out = t.tmux(&["capture-pane", "-e", "-p", "-t", "t:main"]);
    let s = String::from_utf8_lossy(&out.stdout).into_owned();
    // tmux writes the 8 basic colours as 256-colour indexes: 2 green, 1 red.
    let is = |sgr: String, basic: &str, index: &str| sgr.contains(basic) || sgr.contains(index);
    assert!(
        is(sgr_before(&s, "+BETA"), "[32m", "38;5;2m"),
        "green: {s:?}"
    );
    assert!(is(sgr_before(&s, "-beta"), "[31m", "38;5;1m"), "red: {s:?}");
    t.type_text("main", "y");
    t.wait("edited");
}

/// Through a real Runtime and the MCP test server: a structured tree is drawn like `tree`,
/// and a result with text and images shows its text and names each image.
#[test]
fn an_mcp_tree_and_images_in_a_real_terminal() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    if !crate::mcp::read_only_test_server(&sb) {
        return;
    }
    let turns = json!([
        tool_turn("t1", "mcp__t__tree", json!({})),
        tool_turn("t2", "mcp__t__picture", json!({})),
        text_turn("saw them")
    ]);
    let t = Tmux::direct(&sb, turns, 80, 40);
    t.type_text("main", "look");
    t.keys(&["Enter"]);
    let s = t.wait("saw them");
    for line in [
        "src/",
        "├── main.rs",
        "└── util/",
        "    └── mod.rs",
        "A dot",
    ] {
        assert!(s.contains(line), "{line:?} in:\n{s}");
    }
    assert!(s.contains("[image image/png, "), "{s}");
}
