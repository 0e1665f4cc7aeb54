//! Cache-warm requests: a mock that applies Anthropic's prompt-caching rules to
//! the bodies `anthropic::request_body` builds, over a scripted 20-turn session with tools
//! and steers, measuring `cache_read / (input + cache_read + cache_write)`.
//!
//! The rules modelled: the prompt is tools, then system, then message blocks, in that order;
//! a cache entry is written for the prefix ending at each `cache_control` breakpoint and
//! lives 5 minutes from its last use; a request reads the longest cached prefix ending at a
//! breakpoint or at one of the 20 blocks before it; everything after the read prefix up to
//! the last breakpoint is written, the rest is plain input. Entries are per model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};
use shard_ai::ToolSpec;
use shard_ai::anthropic::request_body;
use shard_ai::provider::ModelRequest;
use shard_protocol::types::{ContentBlock, Message, Role, ToolResultContent};

const LIFETIME_MS: u64 = 5 * 60 * 1000;
const LOOKBACK: usize = 20;

#[derive(Default)]
struct MockCache {
    /// (model, prefix hash) → expiry.
    entries: HashMap<(String, u64), u64>,
    input: u64,
    read: u64,
    write: u64,
}

fn tokens(v: &Value) -> u64 {
    (v.to_string().len() as u64).div_ceil(4)
}

fn hash(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

impl MockCache {
    /// Bills one request at time `now_ms`.
    fn bill(&mut self, body: &Value, now_ms: u64) {
        let model = body["model"].as_str().unwrap_or("").to_string();
        let mut blocks: Vec<Value> = Vec::new();
        blocks.extend(body["tools"].as_array().cloned().unwrap_or_default());
        blocks.extend(body["system"].as_array().cloned().unwrap_or_default());
        for m in body["messages"].as_array().cloned().unwrap_or_default() {
            for b in m["content"].as_array().cloned().unwrap_or_default() {
                // The role is part of what is cached.
                blocks.push(json!({"role": m["role"], "block": b}));
            }
        }
        let is_break = |v: &Value| {
            v.get("cache_control").is_some() || v["block"].get("cache_control").is_some()
        };
        let mut prefix_hashes = Vec::with_capacity(blocks.len());
        let mut running = String::new();
        let mut sizes = Vec::with_capacity(blocks.len());
        for b in &blocks {
            // cache_control itself is not content.
            let mut clean = b.clone();
            if let Some(o) = clean.as_object_mut() {
                o.remove("cache_control");
            }
            if let Some(o) = clean.get_mut("block").and_then(Value::as_object_mut) {
                o.remove("cache_control");
            }
            running.push_str(&clean.to_string());
            prefix_hashes.push(hash(&running));
            sizes.push(tokens(&clean));
        }
        let breaks: Vec<usize> = (0..blocks.len())
            .filter(|&i| is_break(&blocks[i]))
            .collect();
        self.entries.retain(|_, exp| *exp > now_ms);
        let mut hit: Option<usize> = None;
        for &b in breaks.iter().rev() {
            let low = b.saturating_sub(LOOKBACK);
            for p in (low..=b).rev() {
                if self
                    .entries
                    .contains_key(&(model.clone(), prefix_hashes[p]))
                {
                    hit = Some(hit.map_or(p, |h: usize| h.max(p)));
                    break;
                }
            }
        }
        let total: u64 = sizes.iter().sum();
        let read: u64 = hit.map_or(0, |p| sizes[..=p].iter().sum());
        let last_break = breaks.last().copied();
        let written_to: u64 = last_break.map_or(0, |b| sizes[..=b].iter().sum());
        let write = written_to.saturating_sub(read);
        self.read += read;
        self.write += write;
        self.input += total - read - write;
        if let Some(p) = hit {
            self.entries
                .insert((model.clone(), prefix_hashes[p]), now_ms + LIFETIME_MS);
        }
        for &b in &breaks {
            self.entries
                .insert((model.clone(), prefix_hashes[b]), now_ms + LIFETIME_MS);
        }
    }

    fn ratio(&self) -> f64 {
        self.read as f64 / (self.input + self.read + self.write) as f64
    }
}

fn msg(n: &mut u32, role: Role, content: Vec<ContentBlock>) -> Arc<Message> {
    *n += 1;
    Arc::new(Message {
        id: format!("ent-{n}"),
        role,
        content,
    })
}

fn text(t: String) -> ContentBlock {
    ContentBlock::Text { text: t }
}

fn tools() -> Arc<[ToolSpec]> {
    [
        "read", "write", "edit", "bash", "grep", "find", "ls", "ask_user",
    ]
    .iter()
    .map(|n| ToolSpec {
        name: n.to_string(),
        description: format!("The {n} tool. ").repeat(20),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    })
    .collect()
}

/// Runs a scripted session of `turns` turns (3 tool iterations each, a steer every fourth
/// turn, a request every 20 s) and returns the mock's figures. `mode_change_at` and
/// `model_change_at` change the system prompt or the model from that turn on.
fn session(turns: u32, mode_change_at: Option<u32>, model_change_at: Option<u32>) -> MockCache {
    let mut cache = MockCache::default();
    let mut messages: Vec<Arc<Message>> = Vec::new();
    let mut n = 0;
    let mut now = 0;
    let tools = tools();
    for turn in 0..turns {
        let system = if mode_change_at.is_some_and(|t| turn >= t) {
            "You are Shard in plan mode. ".repeat(100)
        } else {
            "You are Shard in build mode. ".repeat(100)
        };
        let model = if model_change_at.is_some_and(|t| turn >= t) {
            "claude-opus-4-1"
        } else {
            "claude-sonnet-4-5"
        };
        messages.push(msg(
            &mut n,
            Role::User,
            vec![text(format!("Turn {turn}: {}", "fix the bug ".repeat(60)))],
        ));
        for it in 0..4 {
            let req = ModelRequest {
                model: model.into(),
                system: system.clone(),
                messages: messages.clone(),
                tools: tools.clone(),
                max_output_tokens: Some(8_000),
                reasoning_effort: None,
            };
            cache.bill(&request_body(&req), now);
            now += 20_000;
            if it == 3 {
                messages.push(msg(
                    &mut n,
                    Role::Assistant,
                    vec![text("Done. ".repeat(40))],
                ));
                break;
            }
            let id = format!("call-{turn}-{it}");
            let mut args = serde_json::Map::new();
            args.insert("path".into(), json!(format!("src/f{turn}_{it}.rs")));
            messages.push(msg(
                &mut n,
                Role::Assistant,
                vec![ContentBlock::ToolCall {
                    id: id.clone(),
                    name: "read".into(),
                    args,
                }],
            ));
            messages.push(msg(
                &mut n,
                Role::User,
                vec![ContentBlock::ToolResult {
                    tool_call_id: id,
                    content: ToolResultContent::Text {
                        text: "fn body() {}\n".repeat(300),
                    },
                    is_error: None,
                    exit_code: None,
                    duration_ms: None,
                    render: None,
                    images: None,
                }],
            ));
            if it == 1 && turn % 4 == 3 {
                messages.push(msg(
                    &mut n,
                    Role::User,
                    vec![text("also check the tests".into())],
                ));
            }
        }
    }
    cache
}

#[test]
fn a_twenty_turn_session_reads_at_least_90_percent_from_the_cache() {
    let plain = session(20, None, None);
    let changed = session(20, Some(10), Some(15));
    println!(
        "cache-read ratio over 20 turns: {:.1} % (tools and steers); {:.1} % with a mode change \
         at turn 10 and a model change at turn 15",
        plain.ratio() * 100.0,
        changed.ratio() * 100.0
    );
    assert!(plain.ratio() >= 0.90, "ratio {:.3}", plain.ratio());
    assert!(changed.ratio() < plain.ratio());
}

#[test]
fn the_mock_charges_a_cold_prefix_as_a_write_and_an_expired_one_again() {
    let mut c = MockCache::default();
    let body = json!({"model": "m", "system": [{"type": "text", "text": "s".repeat(400), "cache_control": {"type": "ephemeral"}}],
                      "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]});
    c.bill(&body, 0);
    assert_eq!(c.read, 0);
    assert!(c.write > 0);
    let w = c.write;
    c.bill(&body, 1_000);
    assert_eq!(c.read, w);
    c.bill(&body, 1_000 + LIFETIME_MS + 1);
    assert_eq!(c.write, 2 * w);
}
