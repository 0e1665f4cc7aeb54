//! The daemon end to end: the real `shard` binary as daemon, real `shard agent`
//! Runtimes with the scripted provider, and clients over the unix socket.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use shard_client::{AgentEvents, Client};
use shard_protocol::command::{AgentCreate, AttachRole, Command};
use shard_protocol::event::PendingRequest;
use shard_protocol::types::{ContentBlock, RuntimeState};
use shard_protocol::{Event, IncomingEvent};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

/// Generous: the machine is small and shared.
pub(super) const T: Duration = Duration::from_secs(60);

pub(super) struct Daemon {
    pub(super) child: Child,
    pub(super) home: PathBuf,
}

impl Daemon {
    pub(super) fn start(home: &Path, extra: &[&str]) -> Daemon {
        Self::start_with_env(home, extra, &[])
    }

    /// Like [`start`](Daemon::start), with variables set (`Some`) or removed (`None`) in
    /// the daemon's environment, which its Runtimes inherit.
    pub(super) fn start_with_env(
        home: &Path,
        extra: &[&str],
        env: &[(&str, Option<&str>)],
    ) -> Daemon {
        let mut cmd = StdCommand::new(env!("CARGO_BIN_EXE_shard"));
        for (k, v) in env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd.args(["daemon", "--port", "0"]).args(extra);
        Self::start_command(home, cmd)
    }

    /// Starts the daemon `cmd` runs (the binary itself, or a wrapper that execs it) and
    /// waits until it listens.
    pub(super) fn start_command(home: &Path, mut cmd: StdCommand) -> Daemon {
        let mut child = cmd
            .env("SHARD_HOME", home)
            .env("SHARD_LOG", "shard_daemon=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait for the "listening" line, then keep draining stderr into a log file.
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let log = home.join("daemon-test.log");
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .unwrap();
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = writeln!(f, "{line}");
                if !sent && line.contains("listening on") {
                    let _ = tx.send(());
                    sent = true;
                }
            }
        });
        rx.recv_timeout(T).expect("daemon started");
        Daemon {
            child,
            home: home.to_path_buf(),
        }
    }

    pub(super) async fn client(&self) -> Client {
        Client::connect_daemon(&self.home).await.unwrap()
    }

    pub(super) fn wait_exit(&mut self) -> std::process::ExitStatus {
        self.child.wait().unwrap()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let _ = std::fs::copy(
                self.home.join("daemon-test.log"),
                std::env::temp_dir().join("shard-daemon-failed-test.log"),
            );
        }
    }
}

pub(super) fn home() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

pub(super) fn script(dir: &Path, name: &str, turns: Value) -> String {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec(&json!({ "turns": turns })).unwrap()).unwrap();
    p.display().to_string()
}

pub(super) fn create_req(cwd: &Path, script: &str) -> AgentCreate {
    serde_json::from_value(json!({
        "cwd": cwd.display().to_string(), "provider": "scripted", "model": script,
        "headless_policy": "queue"
    }))
    .unwrap()
}

pub(super) fn prompt(agent: &str, text: &str) -> Command {
    serde_json::from_value(json!({"type":"prompt","agent_id":agent,"message":text})).unwrap()
}

pub(super) async fn next(rx: &mut AgentEvents) -> Event {
    tokio::time::timeout(T, rx.recv())
        .await
        .expect("event in time")
        .expect("stream open")
}

/// Reads events until `pred` matches one; returns it with what came before.
pub(super) async fn until(
    rx: &mut AgentEvents,
    pred: impl Fn(&Event) -> bool,
) -> (Event, Vec<Event>) {
    let mut before = Vec::new();
    loop {
        let e = next(rx).await;
        if pred(&e) {
            return (e, before);
        }
        before.push(e);
    }
}

pub(super) async fn orchestrator_until(c: &Client, pred: impl Fn(&Event) -> bool) -> Event {
    loop {
        let e = tokio::time::timeout(T, c.next_event())
            .await
            .expect("event in time")
            .expect("open");
        if let IncomingEvent::Known(e) = e
            && pred(&e)
        {
            return e;
        }
    }
}

pub(super) fn bash_turns(cmd: &str) -> Value {
    json!([
        {"steps":[{"tool_call":{"id":"call-1","name":"bash","args":{"command":cmd}}}]},
        {"steps":[{"text":"done"}]}
    ])
}

/// The text of every message of a `sync`'s live window, in order.
pub(super) fn window_texts(sync: &shard_protocol::event::Sync) -> Vec<String> {
    sync.live_window
        .messages
        .iter()
        .map(|m| text_of(&m.content))
        .collect()
}

pub(super) fn text_of(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_client_answers_permission_first_sees_resolved_late_answer_ignored() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    let s = script(h.path(), "s.json", bash_turns("echo hi"));
    let c1 = d.client().await;
    let c2 = d.client().await;
    let id = c1.create(create_req(h.path(), &s)).await.unwrap();
    let (_, mut e1) = c1.attach(&id, AttachRole::Interactive).await.unwrap();
    let (_, mut e2) = c2.attach(&id, AttachRole::Interactive).await.unwrap();
    assert!(c1.call(prompt(&id, "run it")).await.is_ok());
    let (req, _) = until(&mut e1, |e| matches!(e, Event::PermissionRequest(_))).await;
    let Event::PermissionRequest(req) = req else {
        unreachable!()
    };
    assert_eq!(req.agent_id.as_deref(), Some(id.as_str()));
    until(&mut e2, |e| matches!(e, Event::PermissionRequest(_))).await;
    let allow = json!({"type":"permission_response","agent_id":id,"request_id":req.request_id,"decision":"allow"});
    let r = c2
        .request(serde_json::from_value(allow).unwrap())
        .await
        .unwrap();
    assert!(r.success, "{r:?}");
    // The first client's answer comes late: dropped silently, not an error.
    let deny = json!({"type":"permission_response","agent_id":id,"request_id":req.request_id,"decision":"deny"});
    let late = c1
        .request(serde_json::from_value(deny).unwrap())
        .await
        .unwrap();
    assert!(late.success, "late answers are not errors: {late:?}");
    for rx in [&mut e1, &mut e2] {
        let (ev, _) = until(rx, |e| matches!(e, Event::PermissionResolved(_))).await;
        let Event::PermissionResolved(p) = ev else {
            unreachable!()
        };
        assert_eq!(p.request_id, req.request_id);
        assert_eq!(
            serde_json::to_value(&p.answer).unwrap()["decision"],
            "allow",
            "the second client's answer won"
        );
        let (ev, _) = until(rx, |e| matches!(e, Event::ToolResult(_))).await;
        let Event::ToolResult(t) = ev else {
            unreachable!()
        };
        assert!(!t.is_error, "the tool ran: {t:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_mid_stream_loses_and_duplicates_nothing() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    let mut steps = Vec::new();
    for i in 0..40 {
        steps.push(json!({"text": format!("<{i}:abcdefghij>"), "chunk_chars": 3}));
        steps.push(json!({"delay_ms": 50}));
    }
    let s = script(h.path(), "s.json", json!([{ "steps": steps }]));
    let c1 = d.client().await;
    let id = c1.create(create_req(h.path(), &s)).await.unwrap();
    let (_, mut e1) = c1.attach(&id, AttachRole::Interactive).await.unwrap();
    c1.call(prompt(&id, "stream")).await.unwrap();
    // Once the stream is under way, a second client attaches.
    until(&mut e1, |e| matches!(e, Event::MessageDelta(_))).await;
    let c2 = d.client().await;
    let (_, mut e2) = c2.attach(&id, AttachRole::Observer).await.unwrap();
    let Event::Sync(sync) = next(&mut e2).await else {
        panic!("sync must come first")
    };
    let (done, after) = until(&mut e2, |e| matches!(e, Event::MessageComplete(_))).await;
    let Event::MessageComplete(done) = done else {
        unreachable!()
    };
    let prefix = sync
        .live_window
        .messages
        .iter()
        .find(|m| m.id == done.message_id)
        .map(|m| text_of(&m.content))
        .unwrap_or_default();
    let streamed: String = after
        .iter()
        .filter_map(|e| match e {
            Event::MessageDelta(m) if m.message_id == done.message_id => m.text_delta.clone(),
            _ => None,
        })
        .collect();
    let full = text_of(&done.message.content);
    assert!(
        !streamed.is_empty(),
        "the second client attached mid-stream"
    );
    assert_eq!(
        format!("{prefix}{streamed}"),
        full,
        "snapshot + later deltas = the final message"
    );
    // And the transcript agrees: a fresh attach shows the same message.
    let c3 = d.client().await;
    until(&mut e1, |e| matches!(e, Event::TurnEnd(_))).await;
    let (_, mut e3) = c3.attach(&id, AttachRole::Observer).await.unwrap();
    let Event::Sync(s3) = next(&mut e3).await else {
        panic!("sync")
    };
    let m = s3
        .live_window
        .messages
        .iter()
        .find(|m| m.id == done.message_id)
        .expect("message persisted");
    assert_eq!(text_of(&m.content), full);
}

pub(super) async fn raw_attach(
    home: &Path,
    agent: &str,
) -> tokio::io::BufReader<tokio::net::UnixStream> {
    let s = tokio::net::UnixStream::connect(home.join("daemon.sock"))
        .await
        .unwrap();
    let mut r = tokio::io::BufReader::new(s);
    let attach = json!({"type":"agent.attach","id":"a","agent_id":agent,"role":"observer"});
    r.get_mut()
        .write_all(format!("{attach}\n").as_bytes())
        .await
        .unwrap();
    let mut line = String::new();
    while !line.contains("\"type\":\"sync\"") {
        line.clear();
        let n = tokio::time::timeout(T, r.read_line(&mut line))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "closed before the sync");
    }
    r
}

/// The pid of the agent's live Runtime, from its session's lock (the runtime state file
/// exists only while tool process groups do).
pub(super) fn runtime_pid(home: &Path, agent: &str) -> i32 {
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(home.join("manifests").join(format!("{agent}.json"))).unwrap(),
    )
    .unwrap();
    let session = manifest["session_id"].as_str().unwrap();
    let lock = shard_session::SessionStore::new(home)
        .session_dir(session)
        .unwrap()
        .join("session.lock");
    std::fs::read_to_string(lock)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_a_runtime_reports_exit_and_the_next_prompt_restores() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    let s = script(
        h.path(),
        "s.json",
        json!([{"steps":[{"text":"one"}]},{"steps":[{"text":"two"}]}]),
    );
    let c = d.client().await;
    let id = c.create(create_req(h.path(), &s)).await.unwrap();
    let (_, mut e) = c.attach(&id, AttachRole::Interactive).await.unwrap();
    let Event::Sync(first) = next(&mut e).await else {
        panic!("sync")
    };
    assert_eq!(first.runtime_epoch, Some(0));
    let pid = runtime_pid(h.path(), &id);
    let st = StdCommand::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let ev = orchestrator_until(&c, |e| matches!(e, Event::AgentExited(_))).await;
    let Event::AgentExited(x) = ev else {
        unreachable!()
    };
    assert_eq!(x.agent_id, id);
    assert_eq!(x.runtime_state, RuntimeState::Failed);
    assert!(x.reason.contains("signal 9"), "{}", x.reason);
    // The attachment survives; a prompt restores a new generation, announced by a sync.
    c.call(prompt(&id, "again")).await.unwrap();
    let (ev, _) = until(&mut e, |e| matches!(e, Event::Sync(_))).await;
    let Event::Sync(s) = ev else { unreachable!() };
    assert_eq!(s.runtime_epoch, Some(1));
    until(&mut e, |e| matches!(e, Event::TurnEnd(_))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_restart_keeps_agents_and_attach_restores_the_session() {
    let h = home();
    let s = script(
        h.path(),
        "s.json",
        json!([{"steps":[{"text":"remember me"}]}]),
    );
    let id;
    {
        let mut d = Daemon::start(h.path(), &[]);
        let c = d.client().await;
        id = c.create(create_req(h.path(), &s)).await.unwrap();
        let (_, mut e) = c.attach(&id, AttachRole::Interactive).await.unwrap();
        c.call(prompt(&id, "hello")).await.unwrap();
        until(&mut e, |e| matches!(e, Event::TurnEnd(_))).await;
        // A second daemon for the same home refuses to start.
        let second = StdCommand::new(env!("CARGO_BIN_EXE_shard"))
            .args(["daemon", "--port", "0"])
            .env("SHARD_HOME", h.path())
            .output()
            .unwrap();
        assert!(!second.status.success());
        assert!(String::from_utf8_lossy(&second.stderr).contains("already running"));
        let r = c
            .request(serde_json::from_value(json!({"type":"daemon.shutdown"})).unwrap())
            .await
            .unwrap();
        assert!(r.success);
        assert!(d.wait_exit().success());
    }
    let d = Daemon::start(h.path(), &[]);
    let c = d.client().await;
    let agents = c.list().await.unwrap();
    assert_eq!(agents.len(), 1);
    assert_eq!(agents[0].agent_id, id);
    assert_eq!(agents[0].runtime_state, RuntimeState::Stopped);
    let (_, mut e) = c.attach(&id, AttachRole::Interactive).await.unwrap();
    let Event::Sync(s) = next(&mut e).await else {
        panic!("sync")
    };
    let texts = window_texts(&s);
    assert!(texts.iter().any(|t| t == "remember me"), "{texts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_runtime_is_reaped_then_restored_on_attach() {
    let h = home();
    let d = Daemon::start(h.path(), &["--idle-runtime-timeout", "1"]);
    let s = script(h.path(), "s.json", json!([{"steps":[{"text":"first"}]}]));
    let c = d.client().await;
    let id = c.create(create_req(h.path(), &s)).await.unwrap();
    {
        let (_, mut e) = c.attach(&id, AttachRole::Interactive).await.unwrap();
        c.call(prompt(&id, "go")).await.unwrap();
        until(&mut e, |e| matches!(e, Event::TurnEnd(_))).await;
        // An attached interactive client keeps the Runtime warm far longer.
        c.detach(&id).await.unwrap();
    }
    orchestrator_until(
        &c,
        |e| matches!(e, Event::AgentStatusChanged(s) if s.runtime_state == RuntimeState::Stopped),
    )
    .await;
    let agents = c.list().await.unwrap();
    assert_eq!(agents[0].runtime_state, RuntimeState::Stopped);
    let c2 = d.client().await;
    let (_, mut e) = c2.attach(&id, AttachRole::Observer).await.unwrap();
    let Event::Sync(s) = next(&mut e).await else {
        panic!("sync")
    };
    assert!(s.runtime_epoch.unwrap() >= 1);
    assert!(
        s.live_window
            .messages
            .iter()
            .any(|m| text_of(&m.content) == "first")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_client_is_dropped_while_a_fast_one_keeps_streaming() {
    let h = home();

    let d = Daemon::start(
        h.path(),
        &[
            "--client-queue-messages",
            "1000000",
            "--client-queue-bytes",
            "1000000",
        ],
    );
    // A paced stream (like a real model, only faster): a reading client keeps up, one that
    // never reads piles up past the 1 MB cap.
    let n = 40_000;
    let mut steps = Vec::new();
    for _ in 0..400 {
        steps.push(json!({"text": "xxxx", "chunk_chars": 4, "repeat": 100}));
        steps.push(json!({"delay_ms": 20}));
    }
    let s = script(h.path(), "s.json", json!([{ "steps": steps }]));
    let driver = d.client().await;
    let id = driver.create(create_req(h.path(), &s)).await.unwrap();
    // Both observers are raw sockets: the fast one only counts lines (cheap even on a busy
    // machine), the slow one reads up to its sync and then never reads again.
    let fast = raw_attach(h.path(), &id).await;
    let slow = raw_attach(h.path(), &id).await;
    let counter = tokio::spawn(async move {
        let mut fast = fast;
        let mut deltas = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            let n = tokio::time::timeout(T, fast.read_line(&mut line))
                .await
                .unwrap()
                .unwrap();
            assert!(
                n > 0,
                "the fast client was disconnected after {deltas} deltas"
            );
            if line.contains("\"type\":\"message_delta\"") {
                deltas += 1;
            } else if line.contains("\"type\":\"message_complete\"") {
                return deltas;
            }
        }
    });
    let (_, _driver_events) = driver.attach(&id, AttachRole::Interactive).await.unwrap();
    driver.call(prompt(&id, "flood")).await.unwrap();
    driver.detach(&id).await.unwrap();
    assert_eq!(counter.await.unwrap(), n, "the fast client got every delta");
    // The slow client was cut off with a stated reason.
    let mut lines = slow.lines();
    let mut last = String::new();
    while let Ok(Ok(Some(l))) = tokio::time::timeout(T, lines.next_line()).await {
        last = l;
    }
    assert!(last.contains("CLIENT_TOO_SLOW"), "last line: {last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegated_child_permission_is_answered_by_the_parents_client() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    let cs = script(h.path(), "c.json", bash_turns("echo child"));
    // Only the daemon's subagent machinery makes children: the parent's model asks.
    let ps = script(
        h.path(),
        "p.json",
        json!([
            {"steps":[{"tool_call":{"id":"call-1","name":"subagent",
                "args":{"action":"create","task":"work","model":cs}}}]},
            {"steps":[{"text":"launched"}]},
            {"steps":[{"text":"noted"}]}
        ]),
    );
    let a = d.client().await;
    let parent = a.create(create_req(h.path(), &ps)).await.unwrap();
    let (_, _ea) = a.attach(&parent, AttachRole::Interactive).await.unwrap();
    a.call(prompt(&parent, "delegate")).await.unwrap();
    // The parent's client is the nearest interactive responder; delegated requests carry
    // the child's agent_id, which the SDK hands out with the orchestrator events.
    let ev = orchestrator_until(&a, |e| matches!(e, Event::PermissionRequest(_))).await;
    let Event::PermissionRequest(req) = ev else {
        unreachable!()
    };
    let child = req.agent_id.clone().expect("keeps the child's agent_id");
    assert_ne!(child, parent);
    // A reconnecting parent client sees it again in its sync.
    let a2 = d.client().await;
    let (_, mut ea2) = a2.attach(&parent, AttachRole::Interactive).await.unwrap();
    let Event::Sync(s) = next(&mut ea2).await else {
        panic!("sync")
    };
    assert!(
        s.pending_requests
            .iter()
            .any(|p| matches!(p, PendingRequest::Permission(p) if p.request_id == req.request_id))
    );
    let allow = json!({"type":"permission_response","agent_id":child,"request_id":req.request_id,"decision":"allow"});
    let r = a
        .request(serde_json::from_value(allow).unwrap())
        .await
        .unwrap();
    assert!(r.success, "{r:?}");
    let ev = orchestrator_until(&a, |e| matches!(e, Event::PermissionResolved(_))).await;
    let Event::PermissionResolved(p) = ev else {
        unreachable!()
    };
    assert_eq!(p.agent_id.as_deref(), Some(child.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_ls_kill_and_errors() {
    let h = home();
    let shard = env!("CARGO_BIN_EXE_shard");
    let none = StdCommand::new(shard)
        .arg("ls")
        .env("SHARD_HOME", h.path())
        .output()
        .unwrap();
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("no daemon running"));
    let d = Daemon::start(h.path(), &[]);
    let s = script(h.path(), "s.json", json!([]));
    let c = d.client().await;
    let id = c.create(create_req(h.path(), &s)).await.unwrap();
    let h2 = h.path().to_path_buf();
    let id2 = id.clone();
    let out = tokio::task::spawn_blocking(move || {
        StdCommand::new(shard)
            .arg("ls")
            .env("SHARD_HOME", &h2)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(&id));
    let h2 = h.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        StdCommand::new(shard)
            .args(["kill", &id2, "--force"])
            .env("SHARD_HOME", &h2)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let agents = c.list().await.unwrap();
    assert_ne!(agents[0].runtime_state, RuntimeState::Running);
    let r = c
        .request(
            serde_json::from_value(json!({"type":"agent.create","cwd":"/","alias":"x"})).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        r.error.unwrap().code.as_str(),
        "INVALID_REQUEST",
        "daemon-only fields are refused"
    );
    let r = c.request(serde_json::from_value(json!({"type":"agent.create","cwd":"/","session_id":"sess-0123456789ABCDEFGHJKMNPQRS"})).unwrap()).await.unwrap();
    assert_eq!(r.error.unwrap().code.as_str(), "NOT_FOUND");
}

/// `shard attach ID` in line mode, its stdin and its stdout lines.
fn spawn_attach(
    home: &Path,
    id: &str,
) -> (
    tokio::process::Child,
    tokio::process::ChildStdin,
    tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_shard"))
        .args(["attach", id])
        .env("SHARD_HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let out = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    (child, stdin, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_attach_prompts_and_answers_a_permission_on_the_terminal() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    let s = script(
        h.path(),
        "s.json",
        json!([
            {"steps":[{"tool_call":{"id":"call-1","name":"bash","args":{"command":"echo hi"}}}]},
            {"steps":[{"text":"all done"}]}
        ]),
    );
    let c = d.client().await;
    let id = c.create(create_req(h.path(), &s)).await.unwrap();
    let (mut child, mut stdin, mut out) = spawn_attach(h.path(), &id);
    let mut wait_for = async |needle: &str| loop {
        let l = tokio::time::timeout(T, out.next_line())
            .await
            .unwrap()
            .unwrap()
            .expect("output");
        if l.contains(needle) {
            return l;
        }
    };
    wait_for("attached to").await;
    stdin.write_all(b"please run it\n").await.unwrap();
    wait_for("[permission]").await;
    stdin.write_all(b"allow\n").await.unwrap();
    wait_for("all done").await;
    drop(stdin);
    let st = tokio::time::timeout(T, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(st.success(), "end of input detaches cleanly");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_attach_shows_an_edits_diff_before_its_answer_menu() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    std::fs::write(h.path().join("f.txt"), "alpha\nbeta\n").unwrap();
    let s = script(
        h.path(),
        "s.json",
        json!([
            {"steps":[{"tool_call":{"id":"call-1","name":"edit","args":{"path":"f.txt","old_string":"beta","new_string":"BETA"}}}]},
            {"steps":[{"text":"all done"}]}
        ]),
    );
    let c = d.client().await;
    let id = c.create(create_req(h.path(), &s)).await.unwrap();
    let (mut child, mut stdin, mut out) = spawn_attach(h.path(), &id);
    let mut seen = Vec::new();
    let mut wait_for = async |needle: &str, seen: &mut Vec<String>| loop {
        let l = tokio::time::timeout(T, out.next_line())
            .await
            .unwrap()
            .unwrap()
            .expect("output");
        seen.push(l.clone());
        if l.contains(needle) {
            return;
        }
    };
    wait_for("attached to", &mut seen).await;
    stdin.write_all(b"please edit it\n").await.unwrap();
    wait_for("[permission]", &mut seen).await;
    seen.clear();
    wait_for("answer with a number", &mut seen).await;
    let shown = seen.join("\n");
    assert!(shown.contains("  --- a/f.txt"), "{shown}");
    assert!(shown.contains("  -beta"), "{shown}");
    assert!(shown.contains("  +BETA"), "{shown}");
    assert!(!shown.contains('\x1b'), "no colour on a pipe: {shown}");
    stdin.write_all(b"1\n").await.unwrap();
    wait_for("all done", &mut seen).await;
    assert_eq!(
        std::fs::read_to_string(h.path().join("f.txt")).unwrap(),
        "alpha\nBETA\n"
    );
    drop(stdin);
    let _ = tokio::time::timeout(T, child.wait()).await;
}

pub(super) fn group_alive(pgid: i64) -> bool {
    StdCommand::new("kill")
        .args(["-0", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// Waits (bounded) for a condition on the filesystem or process table, which send no events.
pub(super) async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + T;
    while !f() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_processes_die_with_a_killed_runtime() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    let s = script(
        h.path(),
        "s.json",
        bash_turns("sleep 300 & sleep 301; wait"),
    );
    let c = d.client().await;
    let id = c.create(create_req(h.path(), &s)).await.unwrap();
    let (_, mut e) = c.attach(&id, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&id, "sleep")).await.unwrap();
    let (ev, _) = until(&mut e, |e| matches!(e, Event::PermissionRequest(_))).await;
    let Event::PermissionRequest(req) = ev else {
        unreachable!()
    };
    let allow = json!({"type":"permission_response","agent_id":id,"request_id":req.request_id,"decision":"allow"});
    c.call(serde_json::from_value(allow).unwrap())
        .await
        .unwrap();
    until(&mut e, |e| matches!(e, Event::ToolCall(_))).await;
    let state = h.path().join("runtime").join(format!("{id}.json"));
    let mut groups = Vec::new();
    eventually("the runtime to record the tool's process group", || {
        let v: Value =
            serde_json::from_slice(&std::fs::read(&state).unwrap_or_default()).unwrap_or_default();
        groups = v["process_groups"].as_array().cloned().unwrap_or_default();
        !groups.is_empty()
    })
    .await;
    let pgid = groups[0].as_i64().unwrap();
    assert!(group_alive(pgid));
    let pid = runtime_pid(h.path(), &id);
    assert!(
        StdCommand::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    orchestrator_until(&c, |e| matches!(e, Event::AgentExited(_))).await;
    eventually("the orphaned tool group to be killed", || {
        !group_alive(pgid)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_daemons_stale_socket_is_replaced() {
    let h = home();
    let s = script(h.path(), "s.json", json!([]));
    let id = {
        let mut d = Daemon::start(h.path(), &[]);
        let c = d.client().await;
        let id = c.create(create_req(h.path(), &s)).await.unwrap();
        d.child.kill().unwrap(); // SIGKILL: no cleanup, the socket file stays
        d.wait_exit();
        id
    };
    assert!(
        h.path().join("daemon.sock").exists(),
        "a stale socket is left behind"
    );
    let d = Daemon::start(h.path(), &[]);
    let c = d.client().await;
    let agents = c.list().await.unwrap();
    assert_eq!(agents.len(), 1);
    assert_eq!(agents[0].agent_id, id);
    let mode = std::fs::metadata(h.path().join("daemon.sock")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(mode.permissions().mode() & 0o777, 0o600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_drives_a_direct_agent_over_stdio() {
    let h = home();
    let s = script(
        h.path(),
        "s.json",
        json!([{"steps":[{"text":"direct hello"}]}]),
    );
    let args: Vec<String> = ["agent", "--provider", "scripted", "--script", &s, "--cwd"]
        .iter()
        .map(|a| a.to_string())
        .chain([h.path().display().to_string()])
        .collect();
    let env = vec![("SHARD_HOME".to_string(), h.path().display().to_string())];
    let c = Client::spawn_agent(Path::new(env!("CARGO_BIN_EXE_shard")), &args, &env)
        .await
        .unwrap();
    assert_eq!(c.hello().protocol_version, shard_protocol::PROTOCOL_VERSION);
    let r = c
        .request(serde_json::from_value(json!({"type":"prompt","message":"hi"})).unwrap())
        .await
        .unwrap();
    assert!(r.success, "{r:?}");
    let mut text = String::new();
    loop {
        let ev = tokio::time::timeout(T, c.next_event())
            .await
            .unwrap()
            .expect("open");
        match ev {
            IncomingEvent::Known(Event::MessageDelta(d)) => {
                text.push_str(&d.text_delta.unwrap_or_default())
            }
            IncomingEvent::Known(Event::TurnEnd(_)) => break,
            _ => {}
        }
    }
    assert_eq!(text, "direct hello");
    let status = c.close_and_wait().await.unwrap();
    assert!(status.success(), "end of input: the Runtime exits 0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_allow_rules_decide_when_no_client_can_answer() {
    let h = home();
    std::fs::write(
        h.path().join("config.toml"),
        "[[headless.allow]]\ntool = \"bash\"\ncommand = \"echo *\"\n",
    )
    .unwrap();
    let d = Daemon::start(h.path(), &[]);
    // The delay lets the interactive client detach before the first request is raised.
    let s = script(
        h.path(),
        "s.json",
        json!([
            {"steps":[{"delay_ms": 3000}, {"tool_call":{"id":"c1","name":"bash","args":{"command":"echo allowed"}}}]},
            {"steps":[{"tool_call":{"id":"c2","name":"bash","args":{"command":"touch denied.txt"}}}]},
            {"steps":[{"text":"done"}]}
        ]),
    );
    let driver = d.client().await;
    let watcher = d.client().await;
    let mut req = create_req(h.path(), &s);
    req.headless_policy = Some(shard_protocol::command::HeadlessPolicy::AllowIfRuleMatches);
    let id = driver.create(req).await.unwrap();
    let (_, mut ev) = watcher.attach(&id, AttachRole::Observer).await.unwrap();
    driver.attach(&id, AttachRole::Interactive).await.unwrap();
    assert!(driver.call(prompt(&id, "go")).await.is_ok());
    let detach: Command =
        serde_json::from_value(json!({"type":"agent.detach","agent_id":id})).unwrap();
    assert!(driver.call(detach).await.is_ok());
    let mut results = Vec::new();
    while results.len() < 2 {
        let (e, _) = until(&mut ev, |e| matches!(e, Event::ToolResult(_))).await;
        let Event::ToolResult(t) = e else {
            unreachable!()
        };
        results.push(t);
    }
    assert_eq!(results[0].tool_call_id, "c1");
    assert!(
        !results[0].is_error,
        "allowed by the rule: {:?}",
        results[0]
    );
    assert_eq!(results[1].tool_call_id, "c2");
    assert!(results[1].is_error, "no rule covers it: {:?}", results[1]);
    assert!(!h.path().join("denied.txt").exists());
}
