//! The recorded event streams of `tests/fixtures/event-streams/` through `AgentView`: each
//! `NAME.jsonl` (lines the real `shard agent` wrote) must give the view in
//! `NAME.view.json`. The browser's reducer reads the same files and must give the same
//! views (`tests/browser/event-streams.mjs`), so the two clients cannot drift apart.
//! `SHARD_UPDATE_FIXTURES=1` writes the views this side computes (check them by hand).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use shard_client::view::{AgentView, StreamBlock};
use shard_protocol::decode::decode_event;
use shard_protocol::types::ContentBlock;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/event-streams")
}

/// The part of a view both clients keep: status, mode, the messages in order with their
/// text, the tool calls and whether they finished or failed, the pending requests.
fn shared_view(v: &AgentView) -> Value {
    let mut messages: Vec<Value> = v
        .messages
        .iter()
        .map(|m| {
            let text: String = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            json!({"id": m.id, "role": m.role, "text": text})
        })
        .collect();
    if let Some(s) = &v.streaming {
        let text: String = s
            .blocks
            .iter()
            .filter_map(|b| match b {
                StreamBlock::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        messages.push(json!({"id": s.message_id, "role": "assistant", "text": text}));
    }
    let mut tools: Vec<Value> = v
        .tool_calls
        .iter()
        .map(|t| {
            json!({
                "id": t.id,
                "name": t.name,
                "done": t.result.is_some(),
                "is_error": t.result.as_ref().is_some_and(|r| r.is_error),
            })
        })
        .collect();
    tools.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    let mut pending: Vec<&str> = v.pending.iter().map(|p| p.request_id()).collect();
    pending.sort_unstable();
    json!({
        "status": v.status,
        "mode": v.mode,
        "messages": messages,
        "tools": tools,
        "pending": pending,
    })
}

fn streams() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("tests/fixtures/event-streams")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    out.sort();
    out
}

#[test]
fn every_recorded_stream_gives_its_expected_view() {
    let update = std::env::var_os("SHARD_UPDATE_FIXTURES").is_some();
    let streams = streams();
    assert!(streams.len() >= 5, "fixtures missing: {streams:?}");
    for path in streams {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut view = AgentView::new();
        for (n, line) in text.lines().enumerate() {
            // Typed: every recorded line is an event of the protocol, decoded strictly.
            let ev = decode_event(line.as_bytes())
                .unwrap_or_else(|e| panic!("{name}.jsonl line {}: {e}", n + 1));
            view.apply(&ev);
        }
        let got = shared_view(&view);
        let expected_path = path.with_extension("view.json");
        if update {
            let pretty = serde_json::to_string_pretty(&got).unwrap() + "\n";
            std::fs::write(&expected_path, pretty).unwrap();
            continue;
        }
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(&expected_path)
                .unwrap_or_else(|e| panic!("{}: {e}", expected_path.display())),
        )
        .unwrap();
        assert_eq!(
            got,
            expected,
            "{name}: AgentView differs from {}",
            expected_path.display()
        );
    }
}

#[test]
fn every_expected_view_has_its_stream() {
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if let Some(stem) = name.strip_suffix(".view.json") {
            assert!(
                fixtures().join(format!("{stem}.jsonl")).exists(),
                "{name} has no {stem}.jsonl"
            );
        }
    }
}

/// A stream cut anywhere and resumed by its `sync` is not what this checks (view.rs does
/// that); here the cut that matters is the one a reconnect makes: replaying the stream
/// from its first `sync` after a later `sync` must give the same view as reading it once.
#[test]
fn a_stream_replayed_from_a_later_sync_gives_the_same_view() {
    for path in streams() {
        let text = std::fs::read_to_string(&path).unwrap();
        let events: Vec<_> = text
            .lines()
            .map(|l| decode_event(l.as_bytes()).unwrap())
            .collect();
        let syncs: Vec<usize> = events
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e, shard_protocol::Event::Sync(_)))
            .map(|(i, _)| i)
            .collect();
        let Some(&last) = syncs.last() else { continue };
        let mut once = AgentView::new();
        for e in &events {
            once.apply(e);
        }
        let mut resumed = AgentView::new();
        for e in &events[last..] {
            resumed.apply(e);
        }
        assert_eq!(
            shared_view(&resumed),
            shared_view(&once),
            "{}",
            path.display()
        );
    }
}
