//! Anthropic Messages API (`POST {base}/v1/messages`, streaming).
//!
//! Request: the system prompt, the last tool and the last blocks of the two newest user
//! turns carry `cache_control` breakpoints (at most 4, the API's limit). Thinking blocks go
//! back with their signatures; unsigned thinking is dropped (the API would reject it).
//! A redacted thinking block travels as a thinking block whose signature is
//! `redacted:<data>`.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use shard_protocol::types::{ContentBlock, Role, ToolResultContent, Usage};
use tokio_util::sync::CancellationToken;

use crate::convert::{role_runs, tool_result_is_error, tool_result_text};
use crate::http::{self, Call, DecodeError, Decoder, DecoderFactory, Transport};
use crate::provider::{
    EventStream, ModelRequest, Provider, ProviderError, StopReason, StreamEvent,
};
use crate::settings::ProviderSettings;
use crate::sse::SseEvent;

/// The API version header value.
pub const API_VERSION: &str = "2023-06-01";
/// Output budget when the request names none.
pub const DEFAULT_MAX_TOKENS: u64 = 16_384;
/// Prefix marking a redacted thinking block's data inside a thinking signature.
pub const REDACTED_PREFIX: &str = "redacted:";

/// Thinking budget (tokens) for a reasoning level; `None` disables thinking.
pub fn thinking_budget(level: &str) -> Option<u64> {
    match level {
        "minimal" => Some(1_024),
        "low" => Some(4_096),
        "medium" => Some(12_288),
        "high" => Some(32_768),
        "xhigh" | "max" => Some(63_999),
        _ => None,
    }
}

/// The Anthropic Messages provider.
pub struct AnthropicProvider {
    settings: ProviderSettings,
    transport: Transport,
    factory: Arc<DecoderFactory>,
}

impl std::fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("settings", &self.settings)
            .finish()
    }
}

impl AnthropicProvider {
    /// A provider calling `{base_url}/v1/messages`.
    pub fn new(settings: ProviderSettings) -> Result<Self, ProviderError> {
        let transport = Transport::new(
            settings.connect_timeout,
            settings.idle_timeout,
            settings.retry,
        )?;
        Ok(AnthropicProvider {
            settings,
            transport,
            factory: Arc::new(Box::new(|| {
                Box::new(AnthropicDecoder::default()) as Box<dyn Decoder>
            })),
        })
    }
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        &self.settings.name
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> EventStream {
        let s = &self.settings;
        let call = s
            .header_map(&[("x-api-key", s.api_key.expose().to_string())])
            .and_then(|mut headers| {
                if !headers.contains_key("anthropic-version") {
                    headers.insert(
                        "anthropic-version",
                        reqwest::header::HeaderValue::from_static(API_VERSION),
                    );
                }
                let body = serde_json::to_vec(&request_body(&request)).map_err(|e| {
                    ProviderError::Config(format!("cannot encode the request: {e}"))
                })?;
                Ok(Call {
                    provider: s.name.clone(),
                    url: format!("{}/v1/messages", s.base_url),
                    headers,
                    body: body.into(),
                    key: s.api_key.clone(),
                    key_source: s.key_source.clone(),
                })
            });
        match call {
            Ok(call) => http::run(self.transport.clone(), call, self.factory.clone(), cancel),
            Err(e) => Box::pin(futures::stream::once(async move { Err(e) })),
        }
    }
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// The JSON body of a streaming Messages request.
pub fn request_body(req: &ModelRequest) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    let mut max_tokens = req.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    let budget = req
        .reasoning_effort
        .as_deref()
        .and_then(thinking_budget)
        .and_then(|b| {
            if b < max_tokens {
                Some(b)
            } else if max_tokens / 2 >= 1_024 {
                Some(max_tokens / 2)
            } else {
                None
            }
        });
    if req.max_output_tokens.is_none()
        && let Some(b) = budget
    {
        max_tokens = max_tokens.max(b + DEFAULT_MAX_TOKENS);
    }
    body.insert("max_tokens".into(), json!(max_tokens));
    if !req.system.is_empty() {
        body.insert(
            "system".into(),
            json!([{"type": "text", "text": req.system, "cache_control": ephemeral()}]),
        );
    }
    let mut messages = messages(req);
    mark_newest_user_turns(&mut messages, 2);
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        let n = req.tools.len();
        let tools: Vec<Value> = req
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut tool = json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.input_schema,
                });
                if i + 1 == n {
                    tool["cache_control"] = ephemeral();
                }
                tool
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(b) = budget {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": b}),
        );
    }
    body.insert("stream".into(), json!(true));
    Value::Object(body)
}

fn image(mime_type: &str, data: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data}})
}

fn messages(req: &ModelRequest) -> Vec<Value> {
    let mut out = Vec::new();
    for (role, blocks) in role_runs(&req.messages) {
        let mut first = Vec::new();
        let mut rest = Vec::new();
        for b in blocks {
            match b {
                ContentBlock::Text { text } if !text.is_empty() => {
                    rest.push(json!({"type": "text", "text": text}));
                }
                ContentBlock::Text { .. } => {}
                ContentBlock::Image { data, mime_type } => rest.push(image(mime_type, data)),
                ContentBlock::Thinking { text, signature } if role == Role::Assistant => {
                    match signature.as_deref() {
                        Some(sig) if sig.starts_with(REDACTED_PREFIX) => rest.push(json!({
                            "type": "redacted_thinking",
                            "data": &sig[REDACTED_PREFIX.len()..],
                        })),
                        Some(sig) => rest.push(json!({
                            "type": "thinking", "thinking": text, "signature": sig,
                        })),
                        None => {}
                    }
                }
                ContentBlock::Thinking { .. } => {}
                ContentBlock::ToolCall { id, name, args } => rest.push(json!({
                    "type": "tool_use", "id": id, "name": name, "input": args,
                })),
                ContentBlock::ToolResult {
                    tool_call_id,
                    content,
                    is_error,
                    exit_code,
                    ..
                } => {
                    let text = tool_result_text(content, *exit_code);
                    let content_value = match content {
                        ToolResultContent::Image { data, mime_type } => {
                            let mut parts = vec![image(mime_type, data)];
                            if !text.is_empty() {
                                parts.push(json!({"type": "text", "text": text}));
                            }
                            Value::Array(parts)
                        }
                        _ => Value::String(text),
                    };
                    let mut block = json!({
                        "type": "tool_result",
                        "tool_use_id": tool_call_id,
                        "content": content_value,
                    });
                    if tool_result_is_error(content, *is_error) {
                        block["is_error"] = json!(true);
                    }
                    // The API wants tool results before any other content of the turn.
                    first.push(block);
                }
            }
        }
        first.extend(rest);
        if first.is_empty() {
            continue;
        }
        let role = match role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        // Dropping an empty message can leave two runs of one role side by side.
        if let Some(prev) = out.last_mut().filter(|m: &&mut Value| m["role"] == role)
            && let Some(content) = prev["content"].as_array_mut()
        {
            content.extend(first);
            continue;
        }
        out.push(json!({"role": role, "content": first}));
    }
    out
}

/// Puts a breakpoint on the last cacheable block of the `n` newest user messages.
fn mark_newest_user_turns(messages: &mut [Value], n: usize) {
    let mut marked = 0;
    for m in messages.iter_mut().rev() {
        if marked == n {
            break;
        }
        if m["role"] != "user" {
            continue;
        }
        if let Some(blocks) = m["content"].as_array_mut()
            && let Some(block) = blocks
                .iter_mut()
                .rev()
                .find(|b| !matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")))
        {
            block["cache_control"] = ephemeral();
            marked += 1;
        }
    }
}

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
    DecodeError::Fatal(ProviderError::Stream(format!(
        "invalid JSON in the event stream ({e}): {head}"
    )))
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
                match delta.get("type").and_then(Value::as_str).unwrap_or("") {
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
                return Err(
                    if matches!(etype, "overloaded_error" | "api_error" | "rate_limit_error") {
                        DecodeError::Retryable(text)
                    } else {
                        DecodeError::Fatal(ProviderError::Stream(text))
                    },
                );
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
        Err(DecodeError::Retryable(
            "anthropic stream ended before the message was complete".to_string(),
        ))
    }
}
