//! The `shard` binary, driven for real: `shard agent` over stdio with the scripted provider
//! (every behaviour of the per-agent protocol the Runtime owns, in this file), `shard run`
//! (`run`), and a real daemon with its clients (`daemon`). One test binary for the crate.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod acp;
mod attach;
mod choices;
mod commands;
mod config;
mod daemon;
mod daemon_limits;
mod daemon_security;
mod daemon_sessions;
mod doc_commands;
mod gate;
mod gate_trust;
mod git_outside;
mod hard_links;
mod harness;
mod linking;
mod mcp;
mod mcp_client;
mod mcp_sandbox;
mod mock;
mod new_models;
mod provider_errors;
mod run;
mod run_terminal;
mod runtime;
mod sandbox;
#[path = "../../../../tests/support/skip.rs"]
mod skip;
mod subagents;
mod trust;
mod tui;
mod tui_kinds;
mod workspaces;

use harness::*;
use serde_json::json;
use shard_protocol::command::kind;
use shard_protocol::error::ErrorCode;
use shard_protocol::event::{Effective, PendingRequest};
use shard_protocol::responses::{CompactData, ForkData, SessionListData};
use shard_protocol::types::{AgentStatus, PermissionDecision, UiKind};
use shard_protocol::{Event, PermissionAnswer};

#[test]
fn hello_then_sync_first() {
    let sb = Sandbox::new();
    let script = sb.script("s.json", json!({"turns": []}));
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    let Event::Hello(hello) = a.next_event() else {
        panic!("the first event is not hello:\n{}", a.dump())
    };
    assert_eq!(hello.protocol_version, "0.1.0");
    assert!(hello.capabilities.iter().any(|c| c == "mode-switch"));
    let sync = pick::sync(&a.next_event()).expect("sync right after hello");
    assert_eq!(sync.status, AgentStatus::Idle);
    assert_eq!(sync.mode, "build");
    assert!(sync.agent_id.is_none(), "direct connections omit agent_id");
    assert!(sync.session_id.unwrap().starts_with("sess-"));
    assert!(sync.live_window.messages.is_empty());
    assert!(a.finish().success());
}

#[test]
fn turn_order_matches_the_pinned_complete_form() {
    let sb = Sandbox::new();
    std::fs::write(sb.work().join("config.json"), "{\"debug\": true}\n").unwrap();
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("tc1", "read", json!({"path": "config.json"})),
            {"steps": [{"wait_for_tool_result": "tc1"}, {"text": "The config says {{tool_result:tc1}}", "chunk_chars": 4}, {"usage": {"input": 30, "output": 9}}]}
        ]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    a.until_type("sync");
    let start = a.seen.len();
    let id = a.send(prompt("read the config"));
    a.until_type("turn_end");
    a.until_idle();
    let mut types = a.types_since(start);
    types.dedup_by(|x, y| x == "message_delta" && y == "message_delta");
    assert_eq!(
        types,
        [
            "response",
            "status",
            "turn_start",
            "user_message",
            "message_delta",
            "message_complete",
            "usage",
            "tool_call",
            "tool_result",
            "message_delta",
            "message_complete",
            "usage",
            "turn_end",
            "status"
        ],
        "{}",
        a.dump()
    );
    let resp = pick::response(&a.seen_typed[start]).expect("a response first");
    assert_eq!(resp.id.as_deref(), Some(id.as_str()));
    assert_eq!(resp.command.as_deref(), Some("prompt"));
    assert!(resp.success, "{resp:?}");
    let call = a.find_seen(pick::tool_call).unwrap();
    assert_eq!(call.read_only, Some(true));
    assert_eq!(call.args["path"], "config.json");
    let result = a.find_seen(pick::tool_result).unwrap();
    assert_eq!(result.tool_call_id, "tc1");
    assert!(!result.is_error);
    assert!(result_text(&result.content).contains("debug"));
    // Deltas concatenate to the completed message.
    let last = a.all_seen(pick::message_complete).pop().unwrap();
    let streamed: String = a
        .all_seen(|e| match e {
            Event::MessageDelta(d) if d.message_id == last.message_id => d.text_delta.clone(),
            _ => None,
        })
        .concat();
    assert_eq!(message_text(&last.message), streamed);
    assert!(streamed.contains("debug"), "{streamed}");
    let usage = a.find_seen(pick::turn_end).unwrap().usage.unwrap();
    assert_eq!(usage.input, 50);
    assert_eq!(usage.output, 17);
    assert!(a.finish().success());
}

#[test]
fn abort_mid_stream_persists_the_partial_message() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [{"steps": [
            {"text": "first part "},
            {"delay_ms": 60000},
            {"text": "never sent"}
        ]}]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    let session = a.until_event(pick::sync).session_id.unwrap();
    a.send(prompt("go"));
    a.until_type("message_delta");
    let abort = a.send(json!({"type": "abort"}));
    let resp = a.response(&abort);
    assert!(resp.success, "{resp:?}");
    let complete = a.until_event(pick::message_complete);
    assert_eq!(message_text(&complete.message), "first part ");
    a.until_type("turn_end");
    a.until_idle();
    assert!(a.finish().success());
    let entries = transcript(&sb.session_file(&session));
    let assistant = entries
        .iter()
        .find(|e| e["message"]["role"] == "assistant")
        .unwrap();
    assert_eq!(assistant["aborted"], true);
    assert_eq!(assistant["message"]["content"][0]["text"], "first part ");
    assert_eq!(assistant["id"], complete.message_id.as_str());
}

#[test]
fn abort_mid_tool_kills_the_command() {
    let sb = Sandbox::new();
    let marker = sb.work().join("started");
    let cmd = format!("touch {}; sleep 60; echo late > late.txt", marker.display());
    let script = sb.script(
        "s.json",
        json!({"turns": [tool_turn("b1", "bash", json!({"command": cmd}))]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    a.until_type("sync");
    a.send(prompt("run it"));
    let req = a.until_event(pick::permission_request);
    a.send(
        json!({"type": "permission_response", "request_id": req.request_id, "decision": "allow"}),
    );
    a.until_type("tool_call");
    let deadline = std::time::Instant::now() + WAIT;
    while !marker.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    a.send(json!({"type": "abort"}));
    let result = a.until_event(pick::tool_result);
    assert_eq!(result.tool_call_id, "b1");
    assert!(result.is_error);
    a.until_type("turn_end");
    assert!(a.finish().success());
    assert!(!sb.work().join("late.txt").exists());
}

#[test]
fn steer_lands_before_the_next_model_call_and_follow_up_after_the_turn() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [
            {"steps": [
                {"text": "checking"},
                {"delay_ms": 2000},
                {"tool_call": {"id": "l1", "name": "ls", "args": {}}}
            ]},
            text_turn("done with the steer"),
            text_turn("follow-up answered")
        ]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    let session = a.until_event(pick::sync).session_id.unwrap();
    a.send(prompt("start"));
    a.until_type("message_delta");
    let bad = a.send(prompt("no behaviour"));
    let resp = a.response(&bad);
    assert!(!resp.success, "a mid-turn prompt needs streaming_behavior");
    let steer = a.send(json!({"type": "steer", "message": "also check the tests"}));
    assert!(a.response(&steer).success);
    let fu = a.send(
        json!({"type": "prompt", "message": "then summarize", "streaming_behavior": "follow_up"}),
    );
    assert!(a.response(&fu).success);
    a.until_type("turn_end");
    a.until_type("turn_start");
    a.until_type("turn_end");
    assert!(a.finish().success());
    let roles: Vec<String> = transcript(&sb.session_file(&session))
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| {
            let m = &e["message"];
            match m["content"][0]["type"].as_str().unwrap() {
                "text" => format!(
                    "{}:{}",
                    m["role"].as_str().unwrap(),
                    m["content"][0]["text"].as_str().unwrap()
                ),
                other => format!("{}:{other}", m["role"].as_str().unwrap()),
            }
        })
        .collect();
    assert_eq!(
        roles,
        [
            "user:start",
            "assistant:checking",
            "user:tool_result",
            "user:also check the tests",
            "assistant:done with the steer",
            "user:then summarize",
            "assistant:follow-up answered"
        ]
    );
}

#[test]
fn restart_resumes_the_session() {
    let sb = Sandbox::new();
    let script = sb.script("s.json", json!({"turns": [text_turn("hello back")]}));
    let mut a = Agent::spawn(
        &sb,
        Some(&script),
        &["--session", "sess-01J0000000000000000000000A"],
    );
    a.until_type("sync");
    a.send(prompt("hello\u{2028}there"));
    a.until_type("turn_end");
    assert!(a.finish().success());
    drop(a);
    let mut b = Agent::spawn(
        &sb,
        Some(&script),
        &["--session", "sess-01J0000000000000000000000A"],
    );
    let sync = b.until_event(pick::sync);
    let msgs = &sync.live_window.messages;
    assert_eq!(msgs.len(), 2, "{sync:?}");
    assert_eq!(message_text(&msgs[0]), "hello\u{2028}there");
    assert_eq!(message_text(&msgs[1]), "hello back");
    assert_eq!(
        sync.session_id.as_deref(),
        Some("sess-01J0000000000000000000000A")
    );
    assert!(b.finish().success());
}

#[test]
fn u2028_passes_through_untouched() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [text_turn("a\u{2028}b\u{2029}c")]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    a.until_type("sync");
    a.send(prompt("x\u{2028}y"));
    let done = a.until_event(pick::message_complete);
    assert_eq!(message_text(&done.message), "a\u{2028}b\u{2029}c");
    let sync_id = a.send(json!({"type": "request_sync"}));
    let sync = a.until_event(pick::sync);
    assert_eq!(message_text(&sync.live_window.messages[0]), "x\u{2028}y");
    assert!(a.response(&sync_id).success);
    assert!(a.finish().success());
}

#[test]
fn allow_always_grant_stops_the_second_identical_ask() {
    let sb = Sandbox::new();
    let cmd = json!({"command": "echo granted"});
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("g1", "bash", cmd.clone()), text_turn("ok"),
            tool_turn("g2", "bash", cmd.clone()), text_turn("ok again")
        ]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    a.until_type("sync");
    a.send(prompt("first"));
    let req = a.until_event(pick::permission_request);
    let choices: Vec<&str> = req
        .choices
        .iter()
        .flatten()
        .map(|c| c.id.as_str())
        .collect();
    assert!(choices.contains(&"allow_always"), "{req:?}");
    // An unknown choice is ignored while waiting.
    a.send(
        json!({"type": "permission_response", "request_id": req.request_id, "choice_id": "bogus"}),
    );
    a.send(json!({"type": "permission_response", "request_id": req.request_id, "choice_id": "allow_always"}));
    let resolved = a.until_event(pick::permission_resolved);
    assert_eq!(
        resolved.answer,
        PermissionAnswer::Choice {
            choice_id: "allow_always".into()
        }
    );
    let result = a.until_event(pick::tool_result);
    assert!(!result.is_error);
    assert!(result_text(&result.content).contains("granted"));
    a.until_type("turn_end");
    let start = a.seen.len();
    a.send(prompt("second"));
    a.until_type("turn_end");
    let second = a.types_since(start);
    assert!(
        !second.contains(&"permission_request".to_string()),
        "{}",
        a.dump()
    );
    assert!(second.contains(&"tool_result".to_string()));
    assert!(a.finish().success());
    // The grant lives under SHARD_HOME, owner-only, never in the repository.
    let grants = std::fs::read_dir(sb.home().join("grants")).unwrap().count();
    assert!(grants >= 1);
    assert!(!sb.work().join(".shard").exists());
}

#[test]
fn plan_mode_refuses_a_write_without_a_tool_call_event() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("w1", "write", json!({"path": "out.txt", "content": "x"})),
            text_turn("understood")
        ]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    a.until_type("sync");
    let id = a.send(json!({"type": "set_mode", "mode": "plan"}));
    let changed = a.until_event(pick::mode_changed);
    assert_eq!(changed.previous_mode, "build");
    assert_eq!(changed.mode, "plan");
    let set = a.ok::<kind::SetMode>(&id);
    assert_eq!(
        (set.previous_mode.as_str(), set.mode.as_str()),
        ("build", "plan")
    );
    let start = a.seen.len();
    a.send(prompt("write a file"));
    a.until_type("turn_end");
    let types = a.types_since(start);
    assert!(!types.contains(&"tool_call".to_string()), "{}", a.dump());
    let result = a.find_seen(pick::tool_result).unwrap();
    assert_eq!(result.tool_call_id, "w1");
    assert!(result.is_error);
    assert!(result_text(&result.content).contains("plan"));
    assert!(!sb.work().join("out.txt").exists());
    assert!(a.finish().success());
}

#[test]
fn modes_idempotent_and_unknown() {
    let sb = Sandbox::new();
    sb.config("[[modes]]\nname = \"review\"\ndescription = \"Review only\"\ntools = [\"read\", \"grep\"]\n");
    let mut a = Agent::spawn(&sb, None, &[]);
    a.until_type("sync");
    let start = a.seen.len();
    let same = a.send(json!({"type": "set_mode", "mode": "build"}));
    assert!(a.response(&same).success);
    assert_eq!(
        a.types_since(start),
        ["response"],
        "an idempotent set emits no event"
    );
    let bad = a.send(json!({"type": "set_mode", "mode": "nope"}));
    let resp = a.response(&bad);
    assert_eq!(code_of(&resp), ErrorCode::NotFound);
    let list = a.send(json!({"type": "list_modes"}));
    let modes = a.ok::<kind::ListModes>(&list);
    assert_eq!(modes.active, "build");
    let names: Vec<&str> = modes.modes.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["build", "plan", "review"]);
    assert!(a.finish().success());
}

#[test]
fn malformed_input_then_a_valid_command() {
    let sb = Sandbox::new();
    let mut a = Agent::spawn(&sb, None, &[]);
    a.until_type("sync");
    a.send_raw("{this is not json");
    let r = a.until_event(pick::response);
    assert!(!r.success, "{r:?}");
    assert_eq!(code_of(&r), ErrorCode::InvalidRequest);
    a.send_raw(r#"{"id":"u1","type":"frobnicate"}"#);
    let r = a.until_event(pick::response);
    assert_eq!(r.id.as_deref(), Some("u1"));
    assert_eq!(code_of(&r), ErrorCode::InvalidRequest);
    a.send_raw(r#"{"id":"m1","type":"set_mode"}"#);
    let r = a.until_event(pick::response);
    assert_eq!(r.id.as_deref(), Some("m1"));
    assert_eq!(code_of(&r), ErrorCode::InvalidRequest);
    a.send_raw(r#"{"id":"p1","type":"permission_response","request_id":"r","decision":"allow","choice_id":"allow"}"#);
    let r = a.until_event(pick::response);
    assert_eq!(r.id.as_deref(), Some("p1"));
    assert_eq!(code_of(&r), ErrorCode::InvalidRequest);
    let ok = a.send(json!({"type": "list_modes"}));
    assert!(a.response(&ok).success);
    assert!(a.finish().success());
}

#[test]
fn headless_deny_refuses_and_says_why() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [tool_turn("b1", "bash", json!({"command": "echo hi"})), text_turn("ok")]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &["--headless-policy", "deny"]);
    a.until_type("sync");
    let start = a.seen.len();
    a.send(prompt("x"));
    a.until_type("turn_end");
    let types = a.types_since(start);
    assert!(!types.contains(&"permission_request".to_string()));
    let result = a.find_seen(pick::tool_result).unwrap();
    assert!(result.is_error);
    assert!(result_text(&result.content).contains("headless"));
    assert!(a.finish().success());
}

#[test]
fn headless_allow_rule_lets_a_matching_command_run() {
    let sb = Sandbox::new();
    sb.config("[[headless.allow]]\ntool = \"bash\"\ncommand = \"echo *\"\n");
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("b1", "bash", json!({"command": "echo allowed"})),
            tool_turn("b2", "bash", json!({"command": "echo x; touch nope"})),
            text_turn("ok")
        ]}),
    );
    let mut a = Agent::spawn(
        &sb,
        Some(&script),
        &["--headless-policy", "allow_if_rule_matches"],
    );
    a.until_type("sync");
    a.send(prompt("x"));
    let first = a.until_event(|e| pick::tool_result(e).filter(|r| r.tool_call_id == "b1"));
    assert!(!first.is_error);
    let second = a.until_event(|e| pick::tool_result(e).filter(|r| r.tool_call_id == "b2"));
    assert!(second.is_error);
    assert!(!sb.work().join("nope").exists());
    a.until_type("turn_end");
    assert!(a.finish().success());
}

#[test]
fn request_sync_mid_stream_includes_the_streaming_message() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [{"steps": [{"text": "partial "}, {"delay_ms": 2000}, {"text": "rest"}]}]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    a.until_type("sync");
    a.send(prompt("x"));
    let delta = a.until_event(pick::message_delta);
    let id = a.send(json!({"type": "request_sync"}));
    let sync = a.until_event(pick::sync);
    assert_eq!(sync.status, AgentStatus::Streaming);
    let last = sync.live_window.messages.last().unwrap();
    assert_eq!(last.id, delta.message_id);
    assert_eq!(message_text(last), "partial ");
    assert!(a.response(&id).success);
    let done = a.until_event(pick::message_complete);
    assert_eq!(message_text(&done.message), "partial rest");
    assert!(a.finish().success());
}

#[test]
fn models_list_and_switch() {
    let sb = Sandbox::new();
    let script = sb.script("s.json", json!({"turns": []}));
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    a.until_type("sync");
    let list = a.send(json!({"type": "list_models"}));
    let listed = a.ok::<kind::ListModels>(&list);
    assert_eq!(listed.active.provider, "scripted");
    // Only providers usable now are offered: without keys, just the active model.
    let models = &listed.models;
    assert!(
        models.iter().all(|m| m.provider == "scripted"),
        "{models:?}"
    );
    let bad = a.send(json!({"type": "set_model", "model": "nosuch/model"}));
    assert_eq!(a.fails(&bad), ErrorCode::NotFound);
    let sw = a.send(json!({"type": "set_model", "model": "scripted/other"}));
    let changed = a.until_event(pick::model_changed);
    assert_eq!(changed.previous.id, "scripted/script");
    assert_eq!(changed.active.id, "scripted/other");
    assert_eq!(changed.effective, Effective::NextProviderCall);
    assert!(a.response(&sw).success);
    let lvl = a.send(json!({"type": "list_reasoning_levels"}));
    assert_eq!(a.fails(&lvl), ErrorCode::NotFound);
    assert!(a.finish().success());
}

#[test]
fn session_list_marks_the_current_one() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [text_turn("one"), text_turn("two")]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    a.until_type("sync");
    a.send(prompt("the first prompt of this session"));
    a.until_type("turn_end");
    assert!(a.finish().success());
    drop(a);
    let mut b = Agent::spawn(&sb, Some(&script), &[]);
    let current = b.until_event(pick::sync).session_id.unwrap();
    b.send(prompt("another"));
    b.until_type("turn_end");
    let id = b.send(json!({"type": "session_op", "op": "list"}));
    let listed: SessionListData = data_as(&b.response(&id));
    let sessions = &listed.sessions;
    assert_eq!(sessions.len(), 2, "{listed:?}");
    assert_eq!(sessions[0].session_id, current);
    assert!(sessions[0].current);
    assert!(!sessions[1].current);
    assert_eq!(sessions[1].title, "the first prompt of this session");
    let compact = b.send(json!({"type": "session_op", "op": "compact"}));
    // One short turn: nothing can be summarized while keeping the newest messages.
    let compacted: CompactData = data_as(&b.response(&compact));
    assert!(
        matches!(&compacted, CompactData::NoOp { reason, .. } if reason == "no_safe_cut"),
        "{compacted:?}"
    );
    // Fork at this session's first prompt: a third session, listed with its provenance,
    // and the source transcript unchanged.
    let first = b.find_seen(pick::message_complete).unwrap().message_id;
    let before = std::fs::read(sb.session_file(&current)).unwrap();
    let fork = b.send(json!({"type": "session_op", "op": "fork",
                             "args": {"from_entry_id": first}}));
    let forked: ForkData = data_as(&b.response(&fork));
    let fork_session = forked.session_id;
    assert_eq!(std::fs::read(sb.session_file(&current)).unwrap(), before);
    let id = b.send(json!({"type": "session_op", "op": "list"}));
    let listed: SessionListData = data_as(&b.response(&id));
    let sessions = &listed.sessions;
    assert_eq!(sessions.len(), 3, "{listed:?}");
    assert_eq!(sessions[0].session_id, fork_session);
    assert_eq!(
        sessions[0]
            .forked_from
            .as_ref()
            .map(|f| f.source_session_id.as_str()),
        Some(current.as_str())
    );
    assert!(b.finish().success());
}

#[test]
fn a_second_opener_of_the_session_gets_conflict() {
    let sb = Sandbox::new();
    let sid = "sess-01J0000000000000000000000B";
    let mut a = Agent::spawn(&sb, None, &["--session", sid]);
    a.until_type("sync");
    let mut b = Agent::spawn(&sb, None, &["--session", sid]);
    b.until_type("hello");
    let err = pick::error(&b.next_event()).expect("an error right after hello");
    assert_eq!(err.code, ErrorCode::Conflict);
    assert_eq!(err.fatal, Some(true));
    assert!(!b.finish().success());
    assert!(a.finish().success());
}

#[test]
fn a_torn_last_line_is_set_aside() {
    let sb = Sandbox::new();
    let sid = "sess-01J0000000000000000000000C";
    let script = sb.script(
        "s.json",
        json!({"turns": [text_turn("fine"), text_turn("still fine")]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &["--session", sid]);
    a.until_type("sync");
    a.send(prompt("one"));
    a.until_type("turn_end");
    assert!(a.finish().success());
    drop(a);
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(sb.session_file(sid))
        .unwrap();
    f.write_all(br#"{"type":"message","id":"ent-tor"#).unwrap();
    drop(f);
    let mut b = Agent::spawn(&sb, Some(&script), &["--session", sid]);
    let sync = b.until_event(pick::sync);
    assert_eq!(sync.live_window.messages.len(), 2);
    let notice = b.next_event();
    let notice =
        pick::error(&notice).unwrap_or_else(|| panic!("the repair is reported: {notice:?}"));
    assert_eq!(notice.fatal, Some(false));
    assert!(notice.message.contains("set aside"));
    b.send(prompt("two"));
    b.until_type("turn_end");
    assert!(b.finish().success());
    let torn: Vec<_> = std::fs::read_dir(sb.session_file(sid).parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("torn"))
        .collect();
    assert_eq!(torn.len(), 1);
    let messages = transcript(&sb.session_file(sid))
        .into_iter()
        .filter(|e| e["type"] == "message")
        .count();
    assert_eq!(messages, 4);
}

#[test]
fn provider_errors_end_the_turn_cleanly() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [{"steps": [{"text": "par"}, {"error": "upstream exploded"}]}, text_turn("recovered")]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    a.until_type("sync");
    a.send(prompt("x"));
    let err = a.until_event(pick::error);
    assert_eq!(err.code, ErrorCode::ProviderError);
    assert!(err.message.contains("upstream exploded"));
    a.until_type("turn_end");
    a.until_idle();
    a.send(prompt("again"));
    let done = a.until_event(pick::message_complete);
    assert_eq!(message_text(&done.message), "recovered");
    assert!(a.finish().success());
}

#[test]
fn tool_processes_do_not_see_secrets() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [tool_turn("e1", "bash", json!({"command": "env"})), text_turn("ok")]}),
    );
    let mut child = std::process::Command::new(shard_bin());
    child
        .args(["agent", "--provider", "scripted", "--script"])
        .arg(&script)
        .arg("--cwd")
        .arg(sb.work())
        .args(["--headless-policy", "allow_if_rule_matches"])
        .env("SHARD_HOME", sb.home())
        .env("ANTHROPIC_API_KEY", "sk-ant-secret-value")
        .env("OPENAI_API_KEY", "sk-openai-secret-value")
        .env("SHARD_AGENT_TOKEN", "agent-token-secret");
    sb.config("[[headless.allow]]\ntool = \"bash\"\ncommand = \"env\"\n");
    let out = child
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = out;
    {
        use std::io::Write;
        let stdin = out.stdin.as_mut().unwrap();
        stdin
            .write_all(b"{\"type\":\"prompt\",\"message\":\"env\"}\n")
            .unwrap();
    }
    drop(out.stdin.take());
    let output = out.wait_with_output().unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    let result = events_of(text.as_bytes())
        .iter()
        .find_map(pick::tool_result)
        .expect("a tool_result");
    assert!(!result.is_error, "{result:?}");
    let env_out = result_text(&result.content);
    assert!(env_out.contains("PAGER=cat"));
    for secret in [
        "sk-ant-secret-value",
        "sk-openai-secret-value",
        "agent-token-secret",
    ] {
        assert!(
            !text.contains(secret),
            "a secret reached the protocol stream"
        );
    }
    for file in walk(&sb.home()) {
        let body = std::fs::read(&file).unwrap_or_default();
        let body = String::from_utf8_lossy(&body);
        assert!(
            !body.contains("sk-ant-secret-value"),
            "secret in {}",
            file.display()
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn home_files_are_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let script = sb.script("s.json", json!({"turns": [text_turn("hi")]}));
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    a.until_type("sync");
    a.send(prompt("x"));
    a.until_type("turn_end");
    assert!(a.finish().success());
    for file in walk(&sb.home()) {
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        if file.file_name().unwrap() == "config.toml" {
            continue;
        }
        assert_eq!(mode & 0o077, 0, "{} is {mode:o}", file.display());
    }
}

#[test]
fn ui_requests_round_trip_through_ask_user() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("q1", "ask_user", json!({"question": "Which one?", "options": ["A", "B"]})),
            {"steps": [{"text": "You picked {{tool_result:q1}}"}]}
        ]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    a.until_type("sync");
    a.send(prompt("decide"));
    let req = a.until_event(pick::ui_request);
    assert_eq!(req.kind, UiKind::Select);
    assert_eq!(req.options, Some(vec!["A".to_string(), "B".to_string()]));
    assert_eq!(req.message.as_deref(), Some("Which one?"));
    assert!(
        a.find_seen(|e| match e {
            Event::Status(s) if s.status == AgentStatus::WaitingForUi => Some(()),
            _ => None,
        })
        .is_some(),
        "{}",
        a.dump()
    );
    // The pending request is re-shown in a fresh sync.
    a.send(json!({"type": "request_sync"}));
    let sync = a.until_event(pick::sync);
    match &sync.pending_requests[..] {
        [PendingRequest::Ui(u)] => assert_eq!(u.request_id, req.request_id),
        other => panic!("the pending ui_request is not re-shown: {other:?}"),
    }
    a.send(json!({"type": "ui_response", "request_id": "req-unknown", "value": "A"}));
    a.send(json!({"type": "ui_response", "request_id": req.request_id, "value": "B"}));
    let resolved = a.until_event(|e| match e {
        Event::UiResolved(r) => Some(r.clone()),
        _ => None,
    });
    assert_eq!(resolved.request_id, req.request_id);
    assert_eq!(resolved.value, json!("B"));
    let result = a.until_event(pick::tool_result);
    assert_eq!(result_text(&result.content), "The user answered: B");
    let done = a.until_event(pick::message_complete);
    assert_eq!(
        message_text(&done.message),
        "You picked The user answered: B"
    );
    assert!(a.finish().success());
}

#[test]
fn ui_requests_get_null_when_nobody_can_answer() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [tool_turn("q1", "ask_user", json!({"question": "Name?"})), text_turn("ok")]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &["--headless-policy", "deny"]);
    a.until_type("sync");
    let start = a.seen.len();
    a.send(prompt("ask"));
    let result = a.until_event(pick::tool_result);
    assert!(result_text(&result.content).contains("Nobody answered"));
    assert!(!a.types_since(start).contains(&"ui_request".to_string()));
    assert!(a.finish().success());
}

#[test]
fn reasoning_levels_with_the_model_precondition() {
    let sb = Sandbox::new();
    let mut a = Agent::spawn_env(
        &sb,
        None,
        &["--provider", "anthropic", "--model", "claude-sonnet-4-5"],
        &[("ANTHROPIC_API_KEY", "sk-ant-test-not-used")],
    );
    let hello = a.until_event(pick::hello);
    assert!(hello.capabilities.iter().any(|c| c == "reasoning-catalog"));
    a.until_type("sync");
    let list = a.send(json!({"type": "list_reasoning_levels"}));
    let listed = a.ok::<kind::ListReasoningLevels>(&list);
    let model_id = listed.model.id.clone();
    assert_eq!(model_id, "anthropic/claude-sonnet-4-5");
    let levels: Vec<String> = listed.levels.iter().map(|l| l.id.clone()).collect();
    assert!(levels.contains(&"high".to_string()), "{levels:?}");
    let stale = a
        .send(json!({"type": "set_reasoning_level", "model": "anthropic/other", "effort": "high"}));
    assert_eq!(a.fails(&stale), ErrorCode::Conflict);
    let unknown =
        a.send(json!({"type": "set_reasoning_level", "model": model_id, "effort": "ludicrous"}));
    assert_eq!(a.fails(&unknown), ErrorCode::NotFound);
    let set = a.send(json!({"type": "set_reasoning_level", "model": model_id, "effort": "high"}));
    let changed = a.until_event(pick::reasoning_level_changed);
    assert_eq!(changed.active, "high");
    assert_eq!(changed.effective, Effective::NextProviderCall);
    assert_eq!(a.ok::<kind::SetReasoningLevel>(&set).active, "high");
    let start = a.seen.len();
    let again = a.send(json!({"type": "set_reasoning_level", "model": model_id, "effort": "high"}));
    a.response(&again);
    assert_eq!(
        a.types_since(start),
        ["response"],
        "an idempotent set emits no event"
    );
    assert!(a.finish().success());
}

#[test]
fn an_unreadable_transcript_is_session_corrupt() {
    let sb = Sandbox::new();
    let sid = "sess-01J0000000000000000000000D";
    let dir = sb.home().join("sessions").join(sid);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("session.jsonl"), "garbage that is not a header\n").unwrap();
    let mut a = Agent::spawn(&sb, None, &["--session", sid]);
    a.until_type("hello");
    let err = a.next_event();
    let Event::Error(err) = &err else {
        panic!("an error after hello: {err:?}")
    };
    assert_eq!(err.code, ErrorCode::SessionCorrupt, "{err:?}");
    assert!(!a.finish().success());
    // Nothing was rewritten.
    assert_eq!(
        std::fs::read_to_string(dir.join("session.jsonl")).unwrap(),
        "garbage that is not a header\n"
    );
}

#[test]
fn a_killed_runtime_leaves_no_tool_process() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [tool_turn("s1", "bash", json!({"command": "sleep 307"}))]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    a.until_type("sync");
    a.send(prompt("sleep"));
    let req = a.until_event(pick::permission_request);
    a.send(
        json!({"type": "permission_response", "request_id": req.request_id, "choice_id": "allow"}),
    );
    a.until_type("tool_call");
    let find = || -> Vec<u32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c == b"sleep\x00307\x00")
            })
            .collect()
    };
    let deadline = std::time::Instant::now() + WAIT;
    while find().is_empty() {
        assert!(std::time::Instant::now() < deadline, "sleep never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    while !find().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the tool process outlived its Runtime"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn set_model_mid_stream_applies_at_the_next_provider_call() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [{"steps": [
            {"text": "first "}, {"delay_ms": 2000}, {"text": "second"},
            {"usage": {"input": 1, "output": 1}}
        ]}]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    a.until_type("sync");
    a.send(prompt("one"));
    a.until_type("message_delta");
    let id = a.send(json!({"type": "set_model", "model": "scripted/other"}));
    assert_eq!(
        a.ok::<kind::SetModel>(&id).effective,
        Effective::NextProviderCall
    );
    let done = a.until_event(pick::message_complete);
    assert_eq!(
        message_text(&done.message),
        "first second",
        "the stream was not cut"
    );
    let usage = a.until_event(pick::usage);
    assert_eq!(
        usage.usage.model.as_deref(),
        Some("scripted/script"),
        "the running call kept its model"
    );
    a.until_type("turn_end");
    a.send(prompt("two"));
    let usage = a.until_event(pick::usage);
    assert_eq!(usage.usage.model.as_deref(), Some("scripted/other"));
    assert!(a.finish().success());
}

#[test]
fn queued_requests_time_out_as_a_timeout_error() {
    let sb = Sandbox::new();
    sb.config("[headless]\ntimeout_secs = 1\n");
    let script = sb.script(
        "s.json",
        json!({"turns": [tool_turn("b1", "bash", json!({"command": "echo never"})), text_turn("ok")]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &["--headless-policy", "queue"]);
    a.until_type("sync");
    a.send(prompt("x"));
    let req = a.until_event(pick::permission_request);
    let resolved = a.until_event(pick::permission_resolved);
    assert_eq!(resolved.request_id, req.request_id);
    assert_eq!(
        resolved.answer,
        PermissionAnswer::Decision {
            decision: PermissionDecision::Deny
        }
    );
    assert_eq!(resolved.source.as_deref(), Some("headless_timeout"));
    let result = a.until_event(pick::tool_result);
    assert!(result.is_error);
    assert!(result_text(&result.content).starts_with("TIMEOUT"));
    a.until_type("turn_end");
    assert!(a.finish().success());
}
