//! The assistant message being streamed: blocks keyed by the provider's indexes, kept so
//! `sync` can include it and finished into the persisted message and the calls to run.

use std::collections::HashMap;

use serde_json::{Map, Value};
use shard_ai::StreamEvent;
use shard_protocol::event::{DeltaKind, MessageDelta};
use shard_protocol::types::ContentBlock;

/// The largest total of tool-call arguments one assistant message may carry: half the
/// protocol's line limit, leaving room for the text, the envelope and JSON escaping, so
/// `message_complete`, `tool_call` and the transcript line always fit.
pub(super) const MAX_TOOL_ARGS_BYTES: usize = shard_protocol::codec::DEFAULT_MAX_LINE / 2;

/// Tool-call arguments go to clients in pieces of at least this many bytes (the rest
/// when the stream ends). A provider streams arguments a few characters at a time; one
/// event per piece made a large argument hundreds of thousands of events, which filled
/// an attached client's queue faster than it could read and cost it its connection.
/// Arguments are only shown as progress, so nothing is lost by sending them in batches.
pub(super) const ARGS_DELTA_BATCH: usize = 16 * 1024;

/// Held-back argument bytes are sent once they are this old, whatever their size: a
/// slow stream still shows its progress, at most ten argument events a second.
pub(super) const ARGS_DELTA_MAX_AGE: std::time::Duration = std::time::Duration::from_millis(100);

/// A tool call the model asked for.
pub(crate) struct CallRequest {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) args: Map<String, Value>,
    pub(crate) parse_error: Option<String>,
}

/// The assistant message being streamed, kept so `sync` can include it.
pub(crate) struct PartialMessage {
    pub(crate) message_id: String,
    pub(super) blocks: Vec<PartialBlock>,
    by_provider_index: HashMap<u32, usize>,
    /// Per tool-call block: bytes of its arguments not yet sent in a delta.
    unsent_args: HashMap<usize, usize>,
    /// [`ARGS_DELTA_BATCH`], smaller in tests that cut streams mid-arguments.
    args_batch: usize,
    /// When the oldest argument bytes still held back arrived.
    held_since: Option<std::time::Instant>,
}

pub(super) enum PartialBlock {
    Text(String),
    Thinking {
        text: String,
        signature: Option<String>,
    },
    ToolCall {
        id: String,
        name: String,
        args_json: String,
    },
}

impl PartialMessage {
    pub(super) fn new(message_id: String) -> Self {
        PartialMessage {
            message_id,
            blocks: Vec::new(),
            by_provider_index: HashMap::new(),
            unsent_args: HashMap::new(),
            args_batch: ARGS_DELTA_BATCH,
            held_since: None,
        }
    }

    /// Whether argument bytes are held back, so the stream's reader should flush them
    /// ([`PartialMessage::flush_args`]) if the model goes quiet.
    pub(crate) fn holds_args(&self) -> bool {
        self.held_since.is_some()
    }

    /// The same message with argument deltas sent every `bytes` (tests of recovery from
    /// a stream cut mid-arguments, whose fixtures hold small arguments).
    #[cfg(test)]
    pub(super) fn with_args_batch(mut self, bytes: usize) -> Self {
        self.args_batch = bytes;
        self
    }

    /// The local block index for a provider index, opening a block when new.
    pub(super) fn slot(&mut self, index: u32, make: impl FnOnce() -> PartialBlock) -> usize {
        if let Some(&i) = self.by_provider_index.get(&index) {
            return i;
        }
        self.blocks.push(make());
        let i = self.blocks.len() - 1;
        self.by_provider_index.insert(index, i);
        i
    }

    /// Blocks as they stand, for `sync`. Tool calls whose arguments are incomplete show
    /// the arguments parsed so far as an empty object.
    pub(crate) fn snapshot_blocks(&self) -> Vec<ContentBlock> {
        self.blocks
            .iter()
            .map(|b| match b {
                PartialBlock::Text(t) => ContentBlock::Text { text: t.clone() },
                PartialBlock::Thinking { text, signature } => ContentBlock::Thinking {
                    text: text.clone(),
                    signature: signature.clone(),
                },
                PartialBlock::ToolCall {
                    id,
                    name,
                    args_json,
                } => ContentBlock::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    args: parse_args(args_json).unwrap_or_default(),
                },
            })
            .collect()
    }

    /// Folds one stream event into the message; the delta clients get, if any.
    pub(crate) fn apply(&mut self, ev: StreamEvent) -> Option<MessageDelta> {
        let partial = self;
        let message_id = partial.message_id.clone();
        let delta = |block_index: usize, kind: DeltaKind| MessageDelta {
            agent_id: None,
            message_id: message_id.clone(),
            block_index: block_index as u32,
            kind,
            text_delta: None,
            tool_call_id: None,
            name: None,
            args_delta: None,
        };
        match ev {
            StreamEvent::TextDelta { index, text } => {
                let i = partial.slot(index, || PartialBlock::Text(String::new()));
                if let PartialBlock::Text(t) = &mut partial.blocks[i] {
                    t.push_str(&text);
                }
                Some(MessageDelta {
                    text_delta: Some(text),
                    ..delta(i, DeltaKind::Text)
                })
            }
            StreamEvent::ThinkingDelta { index, text } => {
                let i = partial.slot(index, || PartialBlock::Thinking {
                    text: String::new(),
                    signature: None,
                });
                if let PartialBlock::Thinking { text: t, .. } = &mut partial.blocks[i] {
                    t.push_str(&text);
                }
                Some(MessageDelta {
                    text_delta: Some(text),
                    ..delta(i, DeltaKind::Thinking)
                })
            }
            StreamEvent::ThinkingSignature { index, signature } => {
                let i = partial.slot(index, || PartialBlock::Thinking {
                    text: String::new(),
                    signature: None,
                });
                if let PartialBlock::Thinking { signature: s, .. } = &mut partial.blocks[i] {
                    *s = Some(signature);
                }
                None
            }
            StreamEvent::ToolCallStart { index, id, name } => {
                let i = partial.slot(index, || PartialBlock::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    args_json: String::new(),
                });
                Some(MessageDelta {
                    tool_call_id: Some(id),
                    name: Some(name),
                    ..delta(i, DeltaKind::ToolCall)
                })
            }
            StreamEvent::ToolCallArgsDelta { index, json } => {
                let i = partial.slot(index, || PartialBlock::ToolCall {
                    id: String::new(),
                    name: String::new(),
                    args_json: String::new(),
                });
                let PartialBlock::ToolCall { args_json, .. } = &mut partial.blocks[i] else {
                    return None;
                };
                args_json.push_str(&json);
                let total = args_json.len();
                let unsent = partial.unsent_args.entry(i).or_default();
                *unsent += json.len();
                // Past the budget the call is refused: no client needs the rest.
                if total - *unsent > MAX_TOOL_ARGS_BYTES {
                    *unsent = 0;
                    return None;
                }
                let since = *partial
                    .held_since
                    .get_or_insert_with(std::time::Instant::now);
                if *unsent < partial.args_batch && since.elapsed() < ARGS_DELTA_MAX_AGE {
                    return None;
                }
                let piece = args_json[total - *unsent..].to_string();
                *unsent = 0;
                if partial.unsent_args.values().all(|n| *n == 0) {
                    partial.held_since = None;
                }
                Some(MessageDelta {
                    args_delta: Some(piece),
                    ..delta(i, DeltaKind::ToolCall)
                })
            }
            _ => None,
        }
    }

    /// The argument bytes still held back (see [`ARGS_DELTA_BATCH`]), one delta per
    /// tool call, for the end of the stream.
    pub(crate) fn flush_args(&mut self) -> Vec<MessageDelta> {
        self.held_since = None;
        let mut held: Vec<(usize, usize)> =
            self.unsent_args.drain().filter(|(_, n)| *n > 0).collect();
        held.sort_unstable();
        held.into_iter()
            .filter_map(|(i, unsent)| match self.blocks.get(i) {
                Some(PartialBlock::ToolCall { args_json, .. })
                    if args_json.len() - unsent <= MAX_TOOL_ARGS_BYTES =>
                {
                    Some(MessageDelta {
                        agent_id: None,
                        message_id: self.message_id.clone(),
                        block_index: i as u32,
                        kind: DeltaKind::ToolCall,
                        text_delta: None,
                        tool_call_id: None,
                        name: None,
                        args_delta: Some(args_json[args_json.len() - unsent..].to_string()),
                    })
                }
                _ => None,
            })
            .collect()
    }

    /// The final blocks and the calls they hold. After an abort or a failure the caller
    /// answers every call with an "interrupted" result instead of running it, so the
    /// message keeps what the model asked for and the history stays valid.
    pub(super) fn finish(self) -> (Vec<ContentBlock>, Vec<CallRequest>) {
        self.finish_within(MAX_TOOL_ARGS_BYTES)
    }

    /// [`PartialMessage::finish`] with the argument budget as a parameter (tests use a
    /// small one).
    fn finish_within(self, args_budget: usize) -> (Vec<ContentBlock>, Vec<CallRequest>) {
        let mut budget = args_budget;
        let mut blocks = Vec::new();
        let mut calls = Vec::new();
        for b in self.blocks {
            match b {
                PartialBlock::Text(text) => {
                    if !text.is_empty() {
                        blocks.push(ContentBlock::Text { text });
                    }
                }
                PartialBlock::Thinking { text, signature } => {
                    blocks.push(ContentBlock::Thinking { text, signature });
                }
                PartialBlock::ToolCall {
                    id,
                    name,
                    args_json,
                } => {
                    let (args, parse_error) = if args_json.len() > budget {
                        // Too large for one protocol line (message_complete, tool_call,
                        // the transcript): the model learns it from the tool result.
                        let e = format!(
                            "its arguments are {} bytes, over the {args_budget}-byte limit \
                             of one message; make several smaller calls (for a large file, \
                             write a first part and add the rest with edit)",
                            args_json.len()
                        );
                        (Map::new(), Some(e))
                    } else {
                        budget -= args_json.len();
                        match parse_args(&args_json) {
                            Ok(a) => (a, None),
                            Err(e) => (
                                Map::new(),
                                Some(format!("{e}; send the arguments as one JSON object")),
                            ),
                        }
                    };
                    blocks.push(ContentBlock::ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        args: args.clone(),
                    });
                    calls.push(CallRequest {
                        id,
                        name,
                        args,
                        parse_error,
                    });
                }
            }
        }
        (blocks, calls)
    }
}

fn parse_args(json: &str) -> Result<Map<String, Value>, String> {
    if json.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(format!("the arguments must be a JSON object, got {other}")),
        Err(e) => Err(format!("the arguments are not valid JSON ({e})")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn call(p: &mut PartialMessage, index: u32, id: &str, args: &str) {
        let i = p.slot(index, || PartialBlock::ToolCall {
            id: id.into(),
            name: "write".into(),
            args_json: String::new(),
        });
        if let PartialBlock::ToolCall { args_json, .. } = &mut p.blocks[i] {
            args_json.push_str(args);
        }
    }

    /// Arguments streamed a few bytes at a time reach clients in batches that add up to
    /// the whole; nothing past the budget is sent.
    #[test]
    fn argument_deltas_are_batched_and_flushed_whole() {
        let mut p = PartialMessage::new("m".into());
        let start = StreamEvent::ToolCallStart {
            index: 0,
            id: "c".into(),
            name: "write".into(),
        };
        assert!(p.apply(start).is_some(), "the call's start goes at once");
        let piece = "abcdefg\u{e9}";
        let n = 10_000;
        let mut sent = String::new();
        let mut deltas = 0;
        let began = std::time::Instant::now();
        for _ in 0..n {
            let ev = StreamEvent::ToolCallArgsDelta {
                index: 0,
                json: piece.into(),
            };
            if let Some(d) = p.apply(ev) {
                deltas += 1;
                sent.push_str(&d.args_delta.unwrap());
            }
        }
        for d in p.flush_args() {
            deltas += 1;
            sent.push_str(&d.args_delta.unwrap());
        }
        assert_eq!(sent, piece.repeat(n));
        // One per batch, plus one per 100 ms this loop took (a slow machine).
        let aged = (began.elapsed().as_millis() / ARGS_DELTA_MAX_AGE.as_millis()) as usize;
        assert!(
            deltas <= piece.len() * n / ARGS_DELTA_BATCH + 2 + aged,
            "{deltas}"
        );
        assert!(p.flush_args().is_empty(), "flushed once");
    }

    #[test]
    fn oversized_arguments_become_an_error_the_model_sees() {
        let mut p = PartialMessage::new("ent-x".into());
        call(&mut p, 0, "c1", r#"{"path":"a","content":"small"}"#);
        call(
            &mut p,
            1,
            "c2",
            &format!(r#"{{"path":"b","content":"{}"}}"#, "x".repeat(200)),
        );
        let (blocks, calls) = p.finish_within(100);
        assert_eq!(blocks.len(), 2);
        assert!(calls[0].parse_error.is_none());
        let e = calls[1].parse_error.as_deref().unwrap();
        assert!(e.contains("100-byte limit"), "{e}");
        // The persisted block carries no oversized arguments.
        assert!(matches!(&blocks[1], ContentBlock::ToolCall { args, .. } if args.is_empty()));
    }

    #[test]
    fn unfinished_calls_are_kept_for_an_interrupted_result() {
        let mut p = PartialMessage::new("ent-x".into());
        call(&mut p, 0, "c1", r#"{"path":"#);
        let (blocks, calls) = p.finish();
        assert_eq!(blocks.len(), 1);
        assert_eq!(calls[0].id, "c1");
    }
}
