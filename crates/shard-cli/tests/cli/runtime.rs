//! Behaviours of the Runtime (the first-hour fixes and the gate and sandbox hardening), driven through the real `shard agent` and
//! `shard run`: what a session records and restores, interrupted tool calls, signals,
//! images, model resolution, start validation, and a daemon-managed Runtime whose daemon
//! went away. Provider wire behaviour comes from a local mock of the HTTP APIs.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shard_protocol::Event;
use shard_protocol::command::kind;
use shard_protocol::event::DeltaKind;
use shard_protocol::types::{ContentBlock, ModelDescriptor};

use crate::harness::*;
use crate::mock::{self, MockApi};

pub(crate) const SID: &str = "sess-01J0000000000000000000000R";

pub(crate) fn env_refs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

pub(crate) fn active_model(a: &mut Agent) -> ModelDescriptor {
    let id = a.send(json!({"type": "list_models"}));
    a.ok::<kind::ListModels>(&id).active
}

pub(crate) fn wait_exit(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "the agent did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{sig} {pid}");
}

pub(crate) fn wait_for_file(path: &std::path::Path) {
    let deadline = Instant::now() + WAIT;
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ------------------------------------------------------------ item 2: state restore

#[test]
fn resume_reproduces_mode_and_model_and_a_flag_overrides_and_is_recorded() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [text_turn("one"), text_turn("two")]}),
    );
    let mut a = Agent::spawn(
        &sb,
        Some(&script),
        &["--session", SID, "--mode", "plan", "--model", "other"],
    );
    let sync = a.until_event(pick::sync);
    assert_eq!(sync.mode, "plan");
    assert_eq!(active_model(&mut a).id, "scripted/other");
    a.send(prompt("hi"));
    a.until_type("turn_end");
    assert!(a.finish().success());
    drop(a);

    // No flags but the script: plan mode and the same model come back.
    let mut cmd_b = Agent::spawn_env(
        &sb,
        None,
        &["--session", SID, "--script", script.to_str().unwrap()],
        &[],
    );
    let sync = cmd_b.until_event(pick::sync);
    assert_eq!(sync.mode, "plan", "the recorded mode is restored");
    assert_eq!(active_model(&mut cmd_b).id, "scripted/other");
    assert!(cmd_b.finish().success());
    drop(cmd_b);

    // An explicit flag overrides, and the override is recorded for the next start.
    let mut c = Agent::spawn(&sb, Some(&script), &["--session", SID, "--mode", "build"]);
    assert_eq!(c.until_event(pick::sync).mode, "build");
    assert_eq!(
        active_model(&mut c).id,
        "scripted/other",
        "--provider alone keeps the recorded model"
    );
    assert!(c.finish().success());
    drop(c);
    let mut d = Agent::spawn(&sb, Some(&script), &["--session", SID]);
    assert_eq!(d.until_event(pick::sync).mode, "build");
    assert!(d.finish().success());

    let kinds: Vec<String> = transcript(&sb.session_file(SID))
        .iter()
        .filter(|e| e["type"] == "mode_change")
        .map(|e| e["mode"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, vec!["plan", "build"]);
}

#[test]
fn a_session_started_on_openai_continues_on_openai() {
    let sb = Sandbox::new();
    let api = MockApi::start(vec![]);
    let env = api.env();
    let run = |args: &[&str]| {
        Command::new(shard_bin())
            .arg("run")
            .args(args)
            .current_dir(sb.work())
            .env("SHARD_HOME", sb.home())
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap()
    };
    let out = run(&["--provider", "openai", "first"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&["--continue", "second"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let paths: Vec<String> = api.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        vec!["/v1/chat/completions", "/v1/chat/completions"],
        "both keys are set; the session chose OpenAI"
    );
}

// ------------------------------------------------------- item 3: interrupted calls

#[test]
fn kill_9_during_a_tool_call_then_resume_sends_a_result_for_every_call() {
    let sb = Sandbox::new();
    let marker = sb.work().join("started");
    let command = format!("touch {}; sleep 60", marker.display());
    let api = MockApi::start(vec![mock::anthropic_bash("toolu_1", &command)]);
    let env = api.env();
    let flags = [
        "--session",
        SID,
        "--provider",
        "anthropic",
        "--model",
        "claude-haiku-4-5",
    ];
    let mut a = Agent::spawn_env(&sb, None, &flags, &env_refs(&env));
    a.until_type("sync");
    a.send(prompt("run it"));
    let req = a.until_event(pick::permission_request);
    a.send(
        json!({"type": "permission_response", "request_id": req.request_id, "choice_id": "allow"}),
    );
    a.until_type("tool_call");
    wait_for_file(&marker);
    a.child.kill().unwrap(); // SIGKILL
    a.child.wait().unwrap();
    drop(a);

    let mut b = Agent::spawn_env(&sb, None, &flags, &env_refs(&env));
    // The restored view already shows the call as answered (not running forever).
    let sync = b.until_event(pick::sync);
    let last = sync.live_window.messages.last().unwrap();
    let ContentBlock::ToolResult {
        tool_call_id,
        is_error,
        ..
    } = &last.content[0]
    else {
        panic!("a tool result last: {sync:?}")
    };
    assert_eq!(tool_call_id, "toolu_1", "{sync:?}");
    assert_eq!(*is_error, Some(true));
    b.send(prompt("what happened?"));
    b.until_type("turn_end");
    assert!(b.finish().success());
    let requests = api.requests();
    assert_eq!(requests.len(), 2);
    mock::assert_anthropic_pairs(&requests[1].body);
    // The made-up answer is persisted, before the new prompt.
    let entries = transcript(&sb.session_file(SID));
    let texts: Vec<String> = entries
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| e["message"].to_string())
        .collect();
    let at_result = texts
        .iter()
        .position(|t| t.contains("interrupted"))
        .expect("a persisted interrupted result");
    let at_prompt = texts
        .iter()
        .position(|t| t.contains("what happened?"))
        .unwrap();
    assert!(at_result < at_prompt, "{texts:#?}");
}

#[test]
fn abort_while_a_tool_call_streams_keeps_the_call_and_answers_it() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [{"steps": [
            {"text": "Let me look.", "chunk_chars": 4},
            {"tool_call": {"id": "t1", "name": "read", "args": {"path": "x"}}},
            {"delay_ms": 20000},
        ]}, text_turn("after")]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &["--session", SID]);
    a.until_type("sync");
    a.send(prompt("go"));
    a.until_event(|e| match e {
        Event::MessageDelta(d) if d.kind == DeltaKind::ToolCall => Some(()),
        _ => None,
    });
    a.send(json!({"type": "abort"}));
    let complete = a.until_event(pick::message_complete);
    assert!(
        complete
            .message
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolCall { id, .. } if id == "t1")),
        "the call is kept: {complete:?}"
    );
    let result = a.until_event(pick::tool_result);
    assert_eq!(result.tool_call_id, "t1");
    assert!(result.is_error);
    a.until_type("turn_end");
    assert!(a.finish().success());
    let entries = transcript(&sb.session_file(SID));
    let assistant = entries
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["role"] == "assistant")
        .unwrap();
    assert_eq!(assistant["aborted"], true, "the partial message is marked");
    assert_eq!(assistant["message"]["content"][0]["text"], "Let me look.");
    assert!(
        entries
            .iter()
            .any(|e| e["message"]["content"][0]["tool_call_id"] == "t1")
    );
}

// ---------------------------------------------------------------- item 5: signals

#[test]
fn sigterm_with_stdin_open_aborts_persists_and_exits() {
    for sig in ["TERM", "INT"] {
        let sb = Sandbox::new();
        let script = sb.script(
            "s.json",
            json!({"turns": [{"steps": [{"text": "partial answer"}, {"delay_ms": 30000}, {"text": " never"}]}]}),
        );
        let mut a = Agent::spawn(&sb, Some(&script), &["--session", SID]);
        a.until_type("sync");
        a.send(prompt("go"));
        a.until_type("message_delta");
        signal(a.child.id(), sig);
        let status = wait_exit(&mut a.child);
        assert!(status.success(), "SIG{sig}: {status:?}");
        let entries = transcript(&sb.session_file(SID));
        let assistant = entries
            .iter()
            .find(|e| e["type"] == "message" && e["message"]["role"] == "assistant")
            .unwrap_or_else(|| panic!("SIG{sig}: the partial answer is saved: {entries:?}"));
        assert_eq!(assistant["aborted"], true);
        assert_eq!(assistant["message"]["content"][0]["text"], "partial answer");
    }
}

// ---------------------------------------------- The daemon's death stops its work: the daemon went away

#[test]
fn under_a_daemon_end_of_input_aborts_the_turn_and_exits() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [{"steps": [{"text": "started"}, {"delay_ms": 30000}, {"text": " finished"}]}]}),
    );
    let agent = [("SHARD_AGENT_ID", "agent-01J0000000000000000000000A")];
    let mut a = Agent::spawn_env(&sb, Some(&script), &["--session", SID], &agent);
    a.until_type("sync");
    a.send(prompt("go"));
    a.until_type("message_delta");
    a.close_stdin();
    let status = wait_exit(&mut a.child);
    assert!(status.success());
    let entries = transcript(&sb.session_file(SID));
    let assistant = entries
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["role"] == "assistant")
        .unwrap();
    assert_eq!(
        assistant["aborted"], true,
        "the turn stopped instead of finishing"
    );
    assert_eq!(assistant["message"]["content"][0]["text"], "started");
}

// ------------------------------------------- item 2: the daemon's idle restore

struct DaemonProc(std::process::Child);

impl Drop for DaemonProc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_agent_comes_back_from_idle_reaping_in_its_mode_and_model() {
    use shard_client::Client;
    use shard_protocol::command::{AttachRole, Command as Cmd};
    use shard_protocol::types::RuntimeState;
    use shard_protocol::{Event, IncomingEvent};
    use std::io::BufRead;

    let t = Duration::from_secs(60);
    let home = tempfile::tempdir().unwrap();
    let api = MockApi::start(vec![]);
    let mut child = Command::new(shard_bin())
        .args(["daemon", "--port", "0", "--idle-runtime-timeout", "1"])
        .env("SHARD_HOME", home.path())
        .envs(api.env())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let _daemon = DaemonProc(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if !sent && line.contains("listening on") {
                let _ = tx.send(());
                sent = true;
            }
        }
    });
    rx.recv_timeout(t).expect("daemon started");

    let c = Client::connect_daemon(home.path()).await.unwrap();
    let create = serde_json::from_value(json!({
        "cwd": home.path().display().to_string(), "provider": "anthropic",
        "model": "claude-haiku-4-5", "mode": "plan", "headless_policy": "queue"
    }))
    .unwrap();
    let id = c.create(create).await.unwrap();
    let prompt = |text: &str| -> Cmd {
        serde_json::from_value(json!({"type": "prompt", "agent_id": id, "message": text})).unwrap()
    };
    {
        let (_, mut events) = c.attach(&id, AttachRole::Interactive).await.unwrap();
        c.call(prompt("first")).await.unwrap();
        loop {
            let e = tokio::time::timeout(t, events.recv())
                .await
                .unwrap()
                .unwrap();
            if matches!(e, Event::TurnEnd(_)) {
                break;
            }
        }
        c.detach(&id).await.unwrap();
    }
    loop {
        let e = tokio::time::timeout(t, c.next_event())
            .await
            .unwrap()
            .unwrap();
        if let IncomingEvent::Known(Event::AgentStatusChanged(s)) = e
            && s.runtime_state == RuntimeState::Stopped
        {
            break;
        }
    }
    let (_, mut events) = c.attach(&id, AttachRole::Interactive).await.unwrap();
    let Event::Sync(sync) = tokio::time::timeout(t, events.recv())
        .await
        .unwrap()
        .unwrap()
    else {
        panic!("sync first")
    };
    assert!(sync.runtime_epoch.unwrap() >= 1, "a restored Runtime");
    assert_eq!(sync.mode, "plan");
    let list: Cmd = serde_json::from_value(json!({"type": "list_models", "agent_id": id})).unwrap();
    let data = c.call(list).await.unwrap().unwrap();
    assert_eq!(data["active"]["id"], "anthropic/claude-haiku-4-5");
    c.call(prompt("second")).await.unwrap();
    loop {
        let e = tokio::time::timeout(t, events.recv())
            .await
            .unwrap()
            .unwrap();
        if matches!(e, Event::TurnEnd(_)) {
            break;
        }
    }
    let models: Vec<Value> = api
        .requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(
        models,
        vec![json!("claude-haiku-4-5"), json!("claude-haiku-4-5")]
    );
}

// ------------------------- The daemon's death stops its work: a tool running when the daemon goes away

#[test]
fn under_a_daemon_end_of_input_stops_a_running_tool() {
    let sb = Sandbox::new();
    let marker = sb.work().join("started");
    let cmd = format!("touch {}; sleep 60; echo late > late.txt", marker.display());
    let script = sb.script(
        "s.json",
        json!({"turns": [tool_turn("b1", "bash", json!({"command": cmd})), text_turn("never")]}),
    );
    let agent = [("SHARD_AGENT_ID", "agent-01J0000000000000000000000B")];
    let mut a = Agent::spawn_env(&sb, Some(&script), &["--session", SID], &agent);
    a.until_type("sync");
    a.send(prompt("go"));
    let req = a.until_event(pick::permission_request);
    a.send(
        json!({"type": "permission_response", "request_id": req.request_id, "choice_id": "allow"}),
    );
    a.until_type("tool_call");
    wait_for_file(&marker);
    a.close_stdin();
    // `sleep 60` outlasts the wait: exiting in time means the tool was stopped.
    assert!(wait_exit(&mut a.child).success());
    assert!(!sb.work().join("late.txt").exists());
    let entries = transcript(&sb.session_file(SID));
    let assistants = entries
        .iter()
        .filter(|e| e["type"] == "message" && e["message"]["role"] == "assistant")
        // The aborted turn's interruption marker is an empty message, not a model call.
        .filter(|e| e["message"]["content"] != json!([]))
        .count();
    assert_eq!(assistants, 1, "no model call after the daemon went away");
}

// ---------------------------- Size limits that agree: a tool argument too large for one line

#[test]
fn an_oversized_tool_argument_becomes_a_tool_error_the_model_sees() {
    let sb = Sandbox::new();
    // Over half of the 64 MiB line limit: message_complete could not carry it.
    let content = "x".repeat(33 * 1024 * 1024);
    let script = sb.script(
        "s.json",
        json!({"turns": [
            {"steps": [{"tool_call": {"id": "w1", "name": "write", "args": {"path": "big.txt", "content": content}}}]},
            {"steps": [{"text": "{{tool_result:w1}}"}]}
        ]}),
    );
    drop(content);
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    a.until_type("sync");
    let start = a.seen.len();
    a.send(prompt("write it"));
    let complete = a.until_event(pick::message_complete);
    assert!(
        matches!(&complete.message.content[0], ContentBlock::ToolCall { args, .. } if args.is_empty()),
        "{complete:?}"
    );
    let result = a.until_event(pick::tool_result);
    assert_eq!(result.tool_call_id, "w1");
    assert!(result.is_error);
    let text = result_text(&result.content);
    assert!(text.contains("limit"), "{text}");
    let answer = a.until_event(pick::message_complete);
    assert!(
        message_text(&answer.message).contains("limit"),
        "the model saw the error"
    );
    a.until_type("turn_end");
    let types = a.types_since(start);
    assert!(
        !types
            .iter()
            .any(|t| t == "tool_call" || t == "permission_request"),
        "{types:?}"
    );
    assert!(a.finish().success());
    assert!(!sb.work().join("big.txt").exists());
}
