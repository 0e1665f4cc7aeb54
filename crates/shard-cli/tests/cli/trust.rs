//! Trust between the daemon's parties, end to end with the real `shard daemon`, real
//! `shard agent` Runtimes and real sockets: delegation never widens what a parent was
//! given, only the daemon names an agent's parent, and the peer check fails closed (a
//! connection whose opener has exited is refused, and an answer to a permission request
//! is checked again when it arrives). The attack classes are listed in docs/security.md.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};
use shard_protocol::command::AttachRole;
use shard_protocol::{ErrorCode, Event, IncomingEvent};

use super::daemon::{Daemon, T, bash_turns, create_req, home, prompt, script, text_of, until};

/// Writes `.shard/agents/NAME.md` in `project`.
fn definition(project: &Path, name: &str, front: &str) {
    let dir = project.join(".shard/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{name}.md")),
        format!("---\n{front}\n---\nYou do what the task says.\n"),
    )
    .unwrap();
}

fn manifest(home: &Path, agent: &str) -> Value {
    serde_json::from_slice(
        &std::fs::read(home.join("manifests").join(format!("{agent}.json"))).unwrap(),
    )
    .unwrap()
}

/// A parent given only `read` and `subagent` launches a child from a definition (which
/// anything that can write the project can write) asking for `bash`: the child gets the
/// intersection, so its bash call is refused as an unknown tool and never reaches a
/// person, and nothing runs — even though the test allows every permission request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_never_gets_a_tool_its_parent_lacks() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    let marker = h.path().join("child-ran-bash");
    let cs = script(
        h.path(),
        "c.json",
        bash_turns(&format!("touch '{}'", marker.display())),
    );
    definition(h.path(), "wide", "description: wide\ntools: bash, read");
    let ps = script(
        h.path(),
        "p.json",
        json!([
            {"steps":[{"tool_call":{"id":"call-1","name":"subagent",
                "args":{"action":"create","name":"wide","task":"run it","model":cs}}}]},
            {"steps":[{"text":"launched"}]},
            {"steps":[{"text":"noted the report"}]}
        ]),
    );
    let a = d.client().await;
    let mut req = create_req(h.path(), &ps);
    req.tools = Some(vec!["read".into(), "subagent".into()]);
    let parent = a.create(req).await.unwrap();
    let (_, mut ev) = a.attach(&parent, AttachRole::Interactive).await.unwrap();
    a.call(prompt(&parent, "go")).await.unwrap();
    let mut asked = 0;
    let deadline = tokio::time::Instant::now() + T;
    loop {
        tokio::select! {
            e = a.next_event() => {
                if let Some(IncomingEvent::Known(Event::PermissionRequest(r))) = e {
                    asked += 1;
                    let allow = json!({"type":"permission_response","agent_id":r.agent_id,
                                       "request_id":r.request_id,"decision":"allow"});
                    a.call(serde_json::from_value(allow).unwrap()).await.unwrap();
                }
            }
            e = ev.recv() => {
                let e = e.expect("parent events");
                if matches!(&e, Event::MessageComplete(m) if text_of(&m.message.content) == "noted the report") {
                    break;
                }
            }
            _ = tokio::time::sleep_until(deadline) => panic!("the report never came"),
        }
    }
    assert_eq!(asked, 0, "the child's bash call reached a person");
    assert!(!marker.exists(), "the child ran bash");
    let child = a
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.agent_id)
        .find(|a| *a != parent)
        .expect("the child");
    let m = manifest(h.path(), &child);
    assert_eq!(m["tools"], json!(["read"]), "{m}");
    // Its headless policy is its parent's, never one of its own choosing.
    assert_eq!(
        m["headless_policy"],
        manifest(h.path(), &parent)["headless_policy"]
    );
}

/// A parent in a configured mode (a tool list of its own) cannot launch a child in
/// `build` through a definition's `mode:`, nor through the call's `mode`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_is_never_in_a_looser_mode_than_its_parent() {
    let h = home();
    std::fs::write(
        h.path().join("config.toml"),
        "[[modes]]\nname = \"docs\"\ndescription = \"reads and delegates\"\ntools = [\"read\", \"subagent\"]\n",
    )
    .unwrap();
    let d = Daemon::start(h.path(), &[]);
    let cs = script(h.path(), "c.json", json!([{"steps":[{"text":"hi"}]}]));
    definition(h.path(), "builder", "description: builder\nmode: build");
    let ps = script(
        h.path(),
        "p.json",
        json!([
            {"steps":[
                {"tool_call":{"id":"call-1","name":"subagent",
                    "args":{"action":"create","name":"builder","task":"build","model":cs}}},
                {"tool_call":{"id":"call-2","name":"subagent",
                    "args":{"action":"create","task":"build","mode":"build","model":cs}}}
            ]},
            {"steps":[{"text":"refused"}]}
        ]),
    );
    let a = d.client().await;
    let mut req = create_req(h.path(), &ps);
    req.mode = Some("docs".into());
    let parent = a.create(req).await.unwrap();
    let (_, mut ev) = a.attach(&parent, AttachRole::Interactive).await.unwrap();
    a.call(prompt(&parent, "go")).await.unwrap();
    for _ in 0..2 {
        let (e, _) = until(&mut ev, |e| matches!(e, Event::ToolResult(_))).await;
        let Event::ToolResult(r) = e else {
            unreachable!()
        };
        let text = serde_json::to_string(&r.content).unwrap();
        assert!(r.is_error, "a child in build mode was launched: {text}");
        assert!(text.contains("docs mode"), "{text}");
    }
    until(&mut ev, |e| matches!(e, Event::TurnEnd(_))).await;
    let list = a.list().await.unwrap();
    assert_eq!(list.len(), 1, "no child exists: {list:?}");
}

/// A client cannot make an agent another agent's child: the parent's clients would get
/// its requests, and its policies would pass for inherited ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cannot_choose_a_parent() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    let s = script(h.path(), "s.json", json!([{"steps":[{"text":"hi"}]}]));
    let c = d.client().await;
    let parent = c.create(create_req(h.path(), &s)).await.unwrap();
    let forged = json!({"type":"agent.create","cwd":h.path().display().to_string(),
        "provider":"scripted","model":s,"parent_agent_id":parent,
        "headless_policy":"allow_if_rule_matches"});
    let r = c
        .request(serde_json::from_value(forged).unwrap())
        .await
        .unwrap();
    assert!(!r.success, "{r:?}");
    assert_eq!(r.error.unwrap().code, ErrorCode::PermissionDenied);
    assert_eq!(c.list().await.unwrap().len(), 1, "nothing was created");
}

// ------------------------------------------------------------ peers that exited

/// Environment of the helper process: the daemon socket to connect to.
const HELPER_SOCK: &str = "SHARD_TEST_PEER_SOCK";

/// Not a test of its own: the helper process [`exited_peer`] starts (this test binary
/// again, running only this function). It connects to the daemon, optionally reads the
/// `hello`, hands the connection to a holder process (bash with the socket as stdin and
/// stdout: what arrives goes to a file, what is written to a FIFO goes to the daemon)
/// and exits, so the connection outlives the process that opened it.
#[test]
fn peer_helper() {
    use std::io::{Read, Write};
    use std::os::fd::OwnedFd;
    use std::os::unix::process::CommandExt as _;
    let Ok(sock) = std::env::var(HELPER_SOCK) else {
        return;
    };
    let dir = PathBuf::from(std::env::var("SHARD_TEST_PEER_DIR").unwrap());
    let mut s = std::os::unix::net::UnixStream::connect(sock).unwrap();
    if std::env::var("SHARD_TEST_PEER_HELLO").is_ok() {
        // Byte by byte: nothing after the hello may be read here.
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        while s.read(&mut b).unwrap() == 1 {
            line.push(b[0]);
            if b[0] == b'\n' {
                break;
            }
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("out"))
            .unwrap()
            .write_all(&line)
            .unwrap();
    }
    let input = OwnedFd::from(s.try_clone().unwrap());
    let output = OwnedFd::from(s);
    // Not waited for on purpose: the holder outlives this process, and the test ends its
    // process group by the pid written below.
    #[allow(clippy::zombie_processes)]
    let holder = StdCommand::new("bash")
        // A background command's stdin is /dev/null in a script: read a copy instead.
        .args([
            "-c",
            "exec 3<&0; cat <&3 >> \"$D/out\" & exec cat \"$D/fifo\"",
        ])
        .env("D", &dir)
        .stdin(Stdio::from(input))
        .stdout(Stdio::from(output))
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    std::fs::write(dir.join("holder.pid"), holder.id().to_string()).unwrap();
}

/// A connection opened by a helper process that has exited by the time it is used;
/// the holder keeps it open. Dropping it ends the holder's process group.
struct ExitedPeer {
    dir: tempfile::TempDir,
    holder: i32,
    fifo: Option<std::fs::File>,
}

impl ExitedPeer {
    /// Runs the helper to its exit (reaped, so its pid no longer exists). With
    /// `read_hello`, the helper waits for the daemon's `hello` before handing over.
    fn open(sock: &Path, read_hello: bool) -> ExitedPeer {
        let dir = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(
            &dir.path().join("fifo"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        let mut cmd = StdCommand::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", "trust::peer_helper", "--test-threads=1", "-q"])
            .env(HELPER_SOCK, sock)
            .env("SHARD_TEST_PEER_DIR", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        if read_hello {
            cmd.env("SHARD_TEST_PEER_HELLO", "1");
        }
        let status = cmd.status().unwrap();
        assert!(status.success(), "the helper failed");
        let holder: i32 = std::fs::read_to_string(dir.path().join("holder.pid"))
            .unwrap()
            .parse()
            .unwrap();
        ExitedPeer {
            dir,
            holder,
            fifo: None,
        }
    }

    /// Sends one line through the holder.
    fn send(&mut self, line: &Value) {
        use std::io::Write;
        if self.fifo.is_none() {
            self.fifo = Some(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(self.dir.path().join("fifo"))
                    .unwrap(),
            );
        }
        let f = self.fifo.as_mut().unwrap();
        writeln!(f, "{line}").unwrap();
        f.flush().unwrap();
    }

    /// Waits (generously) for a line from the daemon matching `pred`.
    async fn line(&self, pred: impl Fn(&Event) -> bool) -> Event {
        let start = Instant::now();
        loop {
            let text = std::fs::read_to_string(self.dir.path().join("out")).unwrap_or_default();
            // The last line may be still being written: only whole lines are read.
            let whole = text.rfind('\n').map_or("", |end| &text[..end]);
            for l in whole.lines() {
                let ev = shard_protocol::decode_event(l.as_bytes())
                    .unwrap_or_else(|e| panic!("not an event ({e}): {l}"));
                if pred(&ev) {
                    return ev;
                }
            }
            assert!(start.elapsed() < T, "no such line; got: {text}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// True for the response to command `id`.
fn is_response(e: &Event, id: &str) -> bool {
    matches!(e, Event::Response(r) if r.id.as_deref() == Some(id))
}

/// The response an event is, or the test fails.
fn response_of(e: Event) -> shard_protocol::event::Response {
    match e {
        Event::Response(r) => r,
        other => panic!("expected a response, got {other:?}"),
    }
}

impl Drop for ExitedPeer {
    fn drop(&mut self) {
        self.fifo = None;
        let _ = killpg(Pid::from_raw(self.holder), Signal::SIGKILL);
    }
}

/// The connecting process exits before the daemon looks at it (the daemon is stopped
/// while the helper connects and exits): its ancestry cannot be read, and the
/// connection is refused rather than waved through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_whose_opener_has_exited_is_refused() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    let daemon = Pid::from_raw(d.child.id() as i32);
    kill(daemon, Signal::SIGSTOP).unwrap();
    let peer = std::panic::catch_unwind(|| ExitedPeer::open(&h.path().join("daemon.sock"), false));
    kill(daemon, Signal::SIGCONT).unwrap();
    let peer = peer.unwrap();
    let first = peer
        .line(|e| matches!(e, Event::Hello(_) | Event::Error(_)))
        .await;
    let Event::Error(refusal) = first else {
        panic!("the connection was served: {first:?}")
    };
    assert_eq!(refusal.code, ErrorCode::PermissionDenied, "{refusal:?}");
    assert!(refusal.message.contains("cannot be checked"), "{refusal:?}");
    // The daemon is fine and serves everyone else.
    assert!(d.client().await.list().await.unwrap().is_empty());
}

/// A connection checked while its opener lived answers a permission request after the
/// opener exited (the connection handed on): the answer is checked again and refused,
/// and the tool does not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_is_checked_again_when_it_arrives() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    let marker = h.path().join("tool-ran");
    let s = script(
        h.path(),
        "s.json",
        bash_turns(&format!("touch '{}'", marker.display())),
    );
    let c = d.client().await;
    let id = c.create(create_req(h.path(), &s)).await.unwrap();
    let (_, mut e) = c.attach(&id, AttachRole::Interactive).await.unwrap();
    let mut peer = ExitedPeer::open(&h.path().join("daemon.sock"), true);
    peer.line(|e| matches!(e, Event::Hello(_))).await;
    peer.send(&json!({"type":"agent.attach","id":"a1","agent_id":id,"role":"interactive"}));
    let attached = response_of(peer.line(|e| is_response(e, "a1")).await);
    assert!(attached.success, "{attached:?}");
    c.call(prompt(&id, "run it")).await.unwrap();
    let (req, _) = until(&mut e, |e| matches!(e, Event::PermissionRequest(_))).await;
    let Event::PermissionRequest(req) = req else {
        unreachable!()
    };
    peer.send(
        &json!({"type":"permission_response","id":"p1","agent_id":id,
                      "request_id":req.request_id,"decision":"allow"}),
    );
    let answer = response_of(peer.line(|e| is_response(e, "p1")).await);
    assert!(!answer.success, "the answer was taken: {answer:?}");
    assert_eq!(
        answer.error.map(|e| e.code),
        Some(ErrorCode::PermissionDenied)
    );
    // The request is still the person's to answer; they deny it.
    let deny = json!({"type":"permission_response","agent_id":id,
                      "request_id":req.request_id,"decision":"deny"});
    c.call(serde_json::from_value(deny).unwrap()).await.unwrap();
    let (ev, _) = until(&mut e, |e| matches!(e, Event::ToolResult(_))).await;
    let Event::ToolResult(t) = ev else {
        unreachable!()
    };
    assert!(t.is_error, "{t:?}");
    assert!(!marker.exists(), "the tool ran on the exited peer's answer");
}

// ---------------------------------------------------------- what was streamed stays

/// A Runtime killed with `kill -9` while its answer streams: the text and the tool call
/// clients already got come back as an interrupted assistant message (the call answered
/// as interrupted), and the next request — here to the Anthropic API mock — carries them
/// validly.
#[test]
fn a_killed_runtime_keeps_what_it_streamed() {
    use crate::harness::{Agent, Sandbox, prompt, transcript};
    use crate::mock::{self, MockApi};
    use crate::runtime::{SID, env_refs};
    const STREAMED: &str = "Streamed before the kill.";
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [{"steps": [
            {"text": STREAMED, "chunk_chars": 5},
            {"tool_call": {"id": "t1", "name": "read", "args": {"path": "notes.txt"}}},
            {"delay_ms": 60000},
        ]}]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &["--session", SID]);
    a.until_type("sync");
    a.send(prompt("go"));
    a.until_event(|e| match e {
        Event::MessageDelta(d) if d.args_delta.is_some() => Some(()),
        _ => None,
    });
    a.child.kill().unwrap(); // SIGKILL
    a.child.wait().unwrap();
    drop(a);

    let api = MockApi::start(vec![]);
    let env = api.env();
    let flags = [
        "--session",
        SID,
        "--provider",
        "anthropic",
        "--model",
        "claude-haiku-4-5",
    ];
    let mut b = Agent::spawn_env(&sb, None, &flags, &env_refs(&env));
    let sync = b.until_event(crate::harness::pick::sync);
    // The whole restored window, as text: the streamed words and the answered call.
    let window = serde_json::to_string(&sync.live_window.messages).unwrap();
    assert!(window.contains(STREAMED), "{sync:?}");
    assert!(
        window.contains("notes.txt") && window.contains("interrupted"),
        "{sync:?}"
    );
    b.send(prompt("go on"));
    b.until_type("turn_end");
    assert!(b.finish().success());
    let requests = api.requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    mock::assert_anthropic_pairs(body);
    let assistant = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap_or_else(|| panic!("no assistant message: {body}"));
    assert_eq!(assistant["content"][0]["text"], STREAMED, "{body}");
    assert_eq!(assistant["content"][1]["type"], "tool_use", "{body}");
    let entries = transcript(&sb.session_file(SID));
    let kept = entries
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["role"] == "assistant")
        .expect("the interrupted message is in the transcript");
    assert_eq!(kept["aborted"], true);
    assert_eq!(kept["stop_reason"], "interrupted");
}
