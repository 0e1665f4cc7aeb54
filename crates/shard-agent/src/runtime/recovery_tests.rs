//! A message cut off at any point of a real captured stream (every fixture of the three
//! APIs under `crates/shard-ai/tests/fixtures/llm/`) comes back from the streaming
//! journal as an interrupted message that the next request of each API carries validly:
//! the deltas are made by the Runtime's own fold, the journal lines are the events
//! clients got, and each request body is checked against the rules each API enforces
//! (tool calls answered right after, arguments JSON objects, no empty text).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use shard_ai::config::ProviderKind;
use shard_ai::{ModelRequest, StreamEvent};
use shard_protocol::Event;
use shard_protocol::types::{ContentBlock, Message, Role};
use shard_session::streaming::recover;

use super::partial::PartialMessage;

fn fixtures(folder: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shard-ai/tests/fixtures/llm");
    let mut out = Vec::new();
    let mut stack = vec![root.join(folder)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "sse" || x == "txt") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The journal lines the event writer keeps for the first `n` events of a stream.
fn journal(events: &[StreamEvent], n: usize) -> Vec<u8> {
    // Every argument piece journaled, as a large argument's batches are: the fixtures'
    // arguments are smaller than one batch.
    let mut p = PartialMessage::new("ent-01M8YKR4FXHSF9M9VV230DZ40Y".into()).with_args_batch(1);
    let mut out = Vec::new();
    for ev in events.iter().take(n) {
        if let Some(d) = p.apply(ev.clone()) {
            out.extend(serde_json::to_vec(&Event::MessageDelta(d)).unwrap());
            out.push(b'\n');
        }
    }
    out
}

fn user(text: &str) -> Arc<Message> {
    Arc::new(Message {
        id: "ent-u".into(),
        role: Role::User,
        content: vec![ContentBlock::Text { text: text.into() }],
    })
}

fn request(messages: Vec<Arc<Message>>) -> ModelRequest {
    ModelRequest {
        model: "m".into(),
        system: "s".into(),
        messages,
        tools: Arc::from(Vec::new()),
        max_output_tokens: Some(1024),
        reasoning_effort: None,
    }
}

fn object_args(s: &str) -> bool {
    matches!(serde_json::from_str::<Value>(s), Ok(Value::Object(_)))
}

/// Anthropic Messages: every `tool_use` is answered by a `tool_result` at the start of
/// the next (user) message; input is an object; text blocks are not blank; thinking is
/// signed; no message is empty.
fn check_anthropic(body: &Value) -> Result<(), String> {
    let msgs = body["messages"].as_array().ok_or("no messages")?;
    for (i, m) in msgs.iter().enumerate() {
        let content = m["content"].as_array().ok_or("content is not a list")?;
        if content.is_empty() {
            return Err(format!("message {i} is empty"));
        }
        let mut uses = Vec::new();
        for b in content {
            match b["type"].as_str() {
                Some("text") if b["text"].as_str().is_none_or(|t| t.trim().is_empty()) => {
                    return Err(format!("blank text in message {i}"));
                }
                Some("tool_use") => {
                    if !b["input"].is_object() {
                        return Err(format!("tool_use input is not an object: {b}"));
                    }
                    uses.push(b["id"].as_str().unwrap_or_default().to_string());
                }
                Some("thinking") if b["signature"].as_str().is_none() => {
                    return Err("unsigned thinking".into());
                }
                _ => {}
            }
        }
        if uses.is_empty() {
            continue;
        }
        let next = msgs.get(i + 1).ok_or("tool_use in the last message")?;
        if next["role"] != "user" {
            return Err("tool_use not followed by a user message".into());
        }
        let results: Vec<&str> = next["content"]
            .as_array()
            .unwrap()
            .iter()
            .take_while(|b| b["type"] == "tool_result")
            .filter_map(|b| b["tool_use_id"].as_str())
            .collect();
        for u in &uses {
            if !results.contains(&u.as_str()) {
                return Err(format!("tool_use {u} has no tool_result right after"));
            }
        }
    }
    Ok(())
}

/// OpenAI Chat: each assistant `tool_calls` entry has string arguments holding a JSON
/// object and is answered by a `tool` message before the next user or assistant one;
/// an assistant message has content or calls.
fn check_chat(body: &Value) -> Result<(), String> {
    let msgs = body["messages"].as_array().ok_or("no messages")?;
    for (i, m) in msgs.iter().enumerate() {
        if m["role"] != "assistant" {
            continue;
        }
        let calls = m["tool_calls"].as_array().cloned().unwrap_or_default();
        if m["content"].is_null() && calls.is_empty() {
            return Err(format!("assistant message {i} is empty"));
        }
        let answered: Vec<&str> = msgs[i + 1..]
            .iter()
            .take_while(|n| n["role"] == "tool")
            .filter_map(|n| n["tool_call_id"].as_str())
            .collect();
        for c in &calls {
            let args = c["function"]["arguments"]
                .as_str()
                .ok_or("arguments not a string")?;
            if !object_args(args) {
                return Err(format!("arguments are not a JSON object: {args}"));
            }
            let id = c["id"].as_str().unwrap_or_default();
            if id.is_empty() || !answered.contains(&id) {
                return Err(format!("call {id:?} is not answered right after"));
            }
        }
    }
    Ok(())
}

/// OpenAI Responses: each `function_call` has object arguments and a
/// `function_call_output` with its `call_id` before the next message item.
fn check_responses(body: &Value) -> Result<(), String> {
    let items = body["input"].as_array().ok_or("no input")?;
    for (i, it) in items.iter().enumerate() {
        if it["type"] == "message" && it["content"].as_array().is_none_or(|c| c.is_empty()) {
            return Err(format!("empty message item {i}"));
        }
        if it["type"] != "function_call" {
            continue;
        }
        let args = it["arguments"].as_str().ok_or("arguments not a string")?;
        if !object_args(args) {
            return Err(format!("arguments are not a JSON object: {args}"));
        }
        let id = it["call_id"].as_str().unwrap_or_default();
        let answered = items[i + 1..]
            .iter()
            .take_while(|n| n["type"] == "function_call" || n["type"] == "function_call_output")
            .any(|n| n["type"] == "function_call_output" && n["call_id"] == id);
        if id.is_empty() || !answered {
            return Err(format!(
                "call {id:?} is not answered before the next message"
            ));
        }
    }
    Ok(())
}

#[test]
fn a_stream_cut_anywhere_comes_back_valid_for_every_api() {
    let mut checked = 0usize;
    let mut kept_calls = 0usize;
    let mut cut_calls = 0usize;
    for (folder, kind) in [
        ("anthropic", ProviderKind::Anthropic),
        ("openai-chat", ProviderKind::OpenAi),
        ("openai-responses", ProviderKind::OpenAiResponses),
    ] {
        for file in fixtures(folder) {
            let bytes = std::fs::read(&file).unwrap();
            // Error captures and streams the decoder refuses have nothing to cut.
            let Ok(events) = shard_ai::decode::decode(kind, [bytes.as_slice()]) else {
                continue;
            };
            for n in 0..=events.len() {
                let Some(r) = recover(&journal(&events, n)) else {
                    continue;
                };
                let calls = r
                    .message
                    .content
                    .iter()
                    .filter(|b| matches!(b, ContentBlock::ToolCall { .. }))
                    .count();
                kept_calls += calls;
                cut_calls += r
                    .results
                    .iter()
                    .filter(|m| serde_json::to_string(m).unwrap().contains("cut off after"))
                    .count();
                assert_eq!(calls, r.results.len(), "every call is answered");
                let mut messages = vec![user("hi"), Arc::new(r.message.clone())];
                messages.extend(r.results.iter().cloned().map(Arc::new));
                messages.push(user("go on"));
                let req = request(messages);
                let at = format!("{} cut after {n} events", file.display());
                check_anthropic(&shard_ai::anthropic::request_body(&req))
                    .unwrap_or_else(|e| panic!("Anthropic, {at}: {e}"));
                check_chat(&shard_ai::openai_chat::request_body(
                    &req,
                    shard_ai::openai_chat::MaxTokensField::MaxCompletionTokens,
                ))
                .unwrap_or_else(|e| panic!("OpenAI Chat, {at}: {e}"));
                check_responses(&shard_ai::openai_responses::request_body(&req))
                    .unwrap_or_else(|e| panic!("OpenAI Responses, {at}: {e}"));
                checked += 1;
            }
        }
    }
    // The fixtures hold text and tool calls, cut both whole and mid-arguments.
    assert!(checked > 100, "{checked}");
    assert!(kept_calls > 0 && cut_calls > 0, "{kept_calls} {cut_calls}");
}

#[test]
fn the_checks_catch_what_the_apis_refuse() {
    // A dangling call and unfinished arguments: what a naive recovery would send.
    let bad = Arc::new(Message {
        id: "ent-a".into(),
        role: Role::Assistant,
        content: vec![ContentBlock::ToolCall {
            id: "c1".into(),
            name: "read".into(),
            args: serde_json::Map::new(),
        }],
    });
    let req = request(vec![user("hi"), bad, user("go on")]);
    assert!(check_anthropic(&shard_ai::anthropic::request_body(&req)).is_err());
    assert!(
        check_chat(&shard_ai::openai_chat::request_body(
            &req,
            shard_ai::openai_chat::MaxTokensField::MaxTokens
        ))
        .is_err()
    );
    assert!(check_responses(&shard_ai::openai_responses::request_body(&req)).is_err());
}
