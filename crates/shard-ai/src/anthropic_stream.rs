//! Decoding of the Anthropic Messages event stream into normalized events.
//!
//! Blocks the Runtime does not model (server tools, compaction, fallback, web search
//! results) are skipped with their deltas; `ping` and unknown events are ignored.

use std::collections::HashMap;

use serde_json::Value;
use shard_protocol::types::Usage;

use crate::anthropic::REDACTED_PREFIX;
use crate::errors::classify_event;
use crate::http::{DecodeError, Decoder};
use crate::provider::{StopReason, StreamEvent};
use crate::sse::SseEvent;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Text,
    Thinking,
    Tool,
    /// Server tools, compaction, fallback and other blocks the Runtime does not model.
    Skip,
}

#[derive(Debug)]
struct Slot {
    kind: Kind,
    ours: Option<u32>,
    args_seen: bool,
    closed: bool,
    /// A complete `input` given in content_block_start by some compatible servers.
    start_input: Option<String>,
}

/// Decodes one Messages stream.
#[derive(Debug, Default)]
pub(crate) struct AnthropicDecoder {
    slots: HashMap<u64, Slot>,
    next: u32,
    usage: Usage,
    stop: Option<StopReason>,
    saw_message_delta: bool,
}

fn u(v: &Value, k: &str) -> Option<u64> {
    v.get(k).and_then(Value::as_u64)
}

/// Maps a Messages `stop_reason`.
pub fn stop_reason(s: &str) -> StopReason {
    match s {
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
        "refusal" => StopReason::Refusal,
        "pause_turn" => StopReason::PauseTurn,
        other => StopReason::Other(other.to_string()),
    }
}

impl AnthropicDecoder {
    fn index_of(&mut self, idx: u64) -> Option<(u32, Kind)> {
        let next = &mut self.next;
        let slot = self.slots.get_mut(&idx)?;
        if slot.kind == Kind::Skip {
            return None;
        }
        let ours = *slot.ours.get_or_insert_with(|| {
            let i = *next;
            *next += 1;
            i
        });
        Some((ours, slot.kind))
    }

    fn merge_usage(&mut self, v: &Value) {
        if let Some(n) = u(v, "input_tokens") {
            self.usage.input = n;
        }
        if let Some(n) = u(v, "output_tokens") {
            self.usage.output = n;
        }
        if let Some(n) = u(v, "cache_read_input_tokens") {
            self.usage.cache_read = Some(n);
        }
        if let Some(n) = u(v, "cache_creation_input_tokens") {
            self.usage.cache_write = Some(n);
        }
    }

    fn close(&mut self, idx: u64, out: &mut Vec<StreamEvent>) {
        let Some(slot) = self.slots.get(&idx) else {
            return;
        };
        if slot.closed || slot.kind != Kind::Tool || slot.args_seen {
            if let Some(s) = self.slots.get_mut(&idx) {
                s.closed = true;
            }
            return;
        }
        let json = slot.start_input.clone().unwrap_or_else(|| "{}".to_string());
        if let Some((index, _)) = self.index_of(idx) {
            out.push(StreamEvent::ToolCallArgsDelta { index, json });
        }
        if let Some(s) = self.slots.get_mut(&idx) {
            s.closed = true;
            s.args_seen = true;
        }
    }

    fn close_all(&mut self, out: &mut Vec<StreamEvent>) {
        let mut open: Vec<u64> = self
            .slots
            .iter()
            .filter(|(_, s)| !s.closed)
            .map(|(k, _)| *k)
            .collect();
        open.sort_unstable();
        for idx in open {
            self.close(idx, out);
        }
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) {
        self.close_all(out);
        let stop_reason = self.stop.clone().unwrap_or(StopReason::EndTurn);
        out.push(StreamEvent::Done { stop_reason });
    }
}

fn bad_json(e: &serde_json::Error, data: &str) -> DecodeError {
    let head: String = data.chars().take(120).collect();
    DecodeError::malformed(format!("invalid JSON in the event stream ({e}): {head}"))
}

impl Decoder for AnthropicDecoder {
    fn event(&mut self, ev: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<bool, DecodeError> {
        if ev.event == "ping" && ev.data.trim().is_empty() {
            return Ok(false);
        }
        let v: Value = serde_json::from_str(&ev.data).map_err(|e| bad_json(&e, &ev.data))?;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(ev.event.as_str());
        match kind {
            "message_start" => {
                if let Some(usage) = v.pointer("/message/usage") {
                    self.merge_usage(usage);
                }
            }
            "content_block_start" => {
                let idx = u(&v, "index").unwrap_or(0);
                let block = v.get("content_block").cloned().unwrap_or(Value::Null);
                let btype = block.get("type").and_then(Value::as_str).unwrap_or("");
                let kind = match btype {
                    "text" => Kind::Text,
                    "thinking" | "redacted_thinking" => Kind::Thinking,
                    "tool_use" => Kind::Tool,
                    _ => Kind::Skip,
                };
                let start_input = block
                    .get("input")
                    .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                    .map(Value::to_string);
                self.slots.insert(
                    idx,
                    Slot {
                        kind,
                        ours: None,
                        args_seen: false,
                        closed: false,
                        start_input,
                    },
                );
                let str_of = |k: &str| {
                    block
                        .get(k)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                match btype {
                    "text" => {
                        let text = str_of("text");
                        if !text.is_empty()
                            && let Some((index, _)) = self.index_of(idx)
                        {
                            out.push(StreamEvent::TextDelta { index, text });
                        }
                    }
                    "thinking" => {
                        let text = str_of("thinking");
                        if !text.is_empty()
                            && let Some((index, _)) = self.index_of(idx)
                        {
                            out.push(StreamEvent::ThinkingDelta { index, text });
                        }
                        let signature = str_of("signature");
                        if !signature.is_empty()
                            && let Some((index, _)) = self.index_of(idx)
                        {
                            out.push(StreamEvent::ThinkingSignature { index, signature });
                        }
                    }
                    "redacted_thinking" => {
                        if let Some((index, _)) = self.index_of(idx) {
                            let signature = format!("{REDACTED_PREFIX}{}", str_of("data"));
                            out.push(StreamEvent::ThinkingSignature { index, signature });
                        }
                    }
                    "tool_use" => {
                        if let Some((index, _)) = self.index_of(idx) {
                            out.push(StreamEvent::ToolCallStart {
                                index,
                                id: str_of("id"),
                                name: str_of("name"),
                            });
                        }
                    }
                    _ => tracing::debug!(block = btype, "ignoring an unsupported content block"),
                }
            }
            "content_block_delta" => {
                let idx = u(&v, "index").unwrap_or(0);
                let delta = v.get("delta").unwrap_or(&Value::Null);
                let text_of = |k: &str| delta.get(k).and_then(Value::as_str).unwrap_or("");
                let dtype = delta.get("type").and_then(Value::as_str).unwrap_or("");
                // Some proxies skip content_block_start: infer text and thinking blocks
                // from their deltas (a tool call cannot be, it has no name).
                self.slots.entry(idx).or_insert_with(|| Slot {
                    kind: match dtype {
                        "text_delta" => Kind::Text,
                        "thinking_delta" | "signature_delta" => Kind::Thinking,
                        _ => Kind::Skip,
                    },
                    ours: None,
                    args_seen: false,
                    closed: false,
                    start_input: None,
                });
                match dtype {
                    "text_delta" => {
                        let text = text_of("text");
                        if !text.is_empty()
                            && let Some((index, Kind::Text)) = self.index_of(idx)
                        {
                            out.push(StreamEvent::TextDelta {
                                index,
                                text: text.to_string(),
                            });
                        }
                    }
                    "thinking_delta" => {
                        let text = text_of("thinking");
                        if !text.is_empty()
                            && let Some((index, Kind::Thinking)) = self.index_of(idx)
                        {
                            out.push(StreamEvent::ThinkingDelta {
                                index,
                                text: text.to_string(),
                            });
                        }
                    }
                    "signature_delta" => {
                        let signature = text_of("signature");
                        if !signature.is_empty()
                            && let Some((index, Kind::Thinking)) = self.index_of(idx)
                        {
                            out.push(StreamEvent::ThinkingSignature {
                                index,
                                signature: signature.to_string(),
                            });
                        }
                    }
                    "input_json_delta" => {
                        let json = text_of("partial_json");
                        if !json.is_empty()
                            && let Some((index, Kind::Tool)) = self.index_of(idx)
                        {
                            out.push(StreamEvent::ToolCallArgsDelta {
                                index,
                                json: json.to_string(),
                            });
                            if let Some(s) = self.slots.get_mut(&idx) {
                                s.args_seen = true;
                            }
                        }
                    }
                    other => tracing::debug!(delta = other, "ignoring an unsupported delta"),
                }
            }
            "content_block_stop" => {
                let idx = u(&v, "index").unwrap_or(0);
                self.close(idx, out);
            }
            "message_delta" => {
                self.saw_message_delta = true;
                if let Some(s) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(stop_reason(s));
                }
                if let Some(usage) = v.get("usage") {
                    self.merge_usage(usage);
                }
                out.push(StreamEvent::Usage(self.usage.clone()));
            }
            "message_stop" => {
                self.finish(out);
                return Ok(true);
            }
            "error" => {
                let etype = v
                    .pointer("/error/type")
                    .and_then(Value::as_str)
                    .unwrap_or("error");
                let msg = v
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let text = format!("anthropic stream error: {etype}: {msg}");
                return Err(DecodeError::event(classify_event(&v), text));
            }
            "ping" => {}
            other => tracing::debug!(event = other, "ignoring an unknown event"),
        }
        Ok(false)
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), DecodeError> {
        if self.saw_message_delta {
            // Everything but the closing event arrived; the answer is complete.
            self.finish(out);
            return Ok(());
        }
        Err(DecodeError::truncated(
            "anthropic stream ended before the message was complete",
        ))
    }
}
