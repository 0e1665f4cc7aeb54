//! OpenAI Chat Completions (`POST {base}/chat/completions`, streaming), which also serves
//! Ollama, llama.cpp, vLLM, LM Studio and OpenRouter through a base URL.
//!
//! Tolerated quirks: a whole tool call in one chunk, a tool call that never gets an
//! arguments chunk (`{}` is emitted), `role` repeated in every delta, unknown keys,
//! `usage: null`, a first chunk with empty `choices`, no `[DONE]` after a finish reason.
//! Only choice 0 is followed (Shard never asks for `n > 1`). Thinking blocks are not sent
//! back: the API has no field for them.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use shard_protocol::types::{ContentBlock, Role, Usage};
use tokio_util::sync::CancellationToken;

use crate::convert::{args_json, data_url, flagged_tool_text, role_runs, tool_result_images};
use crate::errors::classify_event;
use crate::http::{self, Call, DecodeError, Decoder, DecoderFactory, Transport};
use crate::provider::{
    EventStream, ModelRequest, Provider, ProviderError, StopReason, StreamEvent,
};
use crate::settings::ProviderSettings;
use crate::sse::SseEvent;

/// Which request field carries the output limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxTokensField {
    /// `max_completion_tokens`: OpenAI itself (required by its reasoning models).
    MaxCompletionTokens,
    /// `max_tokens`: what most compatible servers understand.
    MaxTokens,
}

/// The Chat Completions provider.
pub struct OpenAiChatProvider {
    settings: ProviderSettings,
    transport: Transport,
    factory: Arc<DecoderFactory>,
    max_tokens_field: MaxTokensField,
}

impl std::fmt::Debug for OpenAiChatProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiChatProvider")
            .field("settings", &self.settings)
            .finish()
    }
}

impl OpenAiChatProvider {
    /// A provider calling `{base_url}/chat/completions`.
    pub fn new(settings: ProviderSettings) -> Result<Self, ProviderError> {
        let transport = Transport::for_settings(&settings)?;
        let max_tokens_field = if settings.base_url.contains("api.openai.com") {
            MaxTokensField::MaxCompletionTokens
        } else {
            MaxTokensField::MaxTokens
        };
        Ok(OpenAiChatProvider {
            settings,
            transport,
            factory: Arc::new(Box::new(|| {
                Box::new(ChatDecoder::default()) as Box<dyn Decoder>
            })),
            max_tokens_field,
        })
    }
}

impl Provider for OpenAiChatProvider {
    fn name(&self) -> &str {
        &self.settings.name
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> EventStream {
        let s = &self.settings;
        let call = s
            .header_map(&[("authorization", format!("Bearer {}", s.api_key.expose()))])
            .and_then(|headers| {
                let body = serde_json::to_vec(&request_body(&request, self.max_tokens_field))
                    .map_err(|e| {
                        ProviderError::Config(format!("cannot encode the request: {e}"))
                    })?;
                Ok(Call {
                    provider: s.name.clone(),
                    url: format!("{}/chat/completions", s.base_url),
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

/// The JSON body of a streaming Chat Completions request.
pub fn request_body(req: &ModelRequest, max_field: MaxTokensField) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    for (role, blocks) in role_runs(&req.messages) {
        match role {
            Role::Assistant => assistant_message(&blocks, &mut messages),
            Role::User => user_messages(&blocks, &mut messages),
        }
    }
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.input_schema,
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(n) = req.max_output_tokens {
        let key = match max_field {
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
            MaxTokensField::MaxTokens => "max_tokens",
        };
        body.insert(key.into(), json!(n));
    }
    if let Some(effort) = &req.reasoning_effort {
        body.insert("reasoning_effort".into(), json!(effort));
    }
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    Value::Object(body)
}

fn assistant_message(blocks: &[&ContentBlock], out: &mut Vec<Value>) {
    let mut text = String::new();
    let mut calls = Vec::new();
    for b in blocks {
        match b {
            ContentBlock::Text { text: t } => text.push_str(t),
            ContentBlock::ToolCall { id, name, args } => calls.push(json!({
                "id": id, "type": "function",
                "function": {"name": name, "arguments": args_json(args)},
            })),
            _ => {}
        }
    }
    if text.is_empty() && calls.is_empty() {
        return;
    }
    let mut m = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
    if !calls.is_empty() {
        m["tool_calls"] = Value::Array(calls);
    }
    out.push(m);
}

fn user_messages(blocks: &[&ContentBlock], out: &mut Vec<Value>) {
    let mut parts = Vec::new();
    for b in blocks {
        match b {
            ContentBlock::ToolResult {
                tool_call_id,
                content,
                is_error,
                exit_code,
                images,
                ..
            } => {
                let mut text = flagged_tool_text(content, *is_error, *exit_code);
                let pictures = tool_result_images(content, images);
                if !pictures.is_empty() {
                    // Tool messages hold text only: the images follow in a user message.
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(match pictures.len() {
                        1 => "[image attached in the next message]",
                        _ => "[images attached in the next message]",
                    });
                }
                for (mime_type, data) in pictures {
                    parts.push(json!({"type": "image_url", "image_url": {"url": data_url(mime_type, data)}}));
                }
                out.push(json!({"role": "tool", "tool_call_id": tool_call_id, "content": text}));
            }
            ContentBlock::Text { text } if !text.is_empty() => {
                parts.push(json!({"type": "text", "text": text}));
            }
            ContentBlock::Image { data, mime_type } => {
                parts.push(
                    json!({"type": "image_url", "image_url": {"url": data_url(mime_type, data)}}),
                );
            }
            _ => {}
        }
    }
    match parts.as_slice() {
        [] => {}
        [one] if one["type"] == "text" => out.push(json!({"role": "user", "content": one["text"]})),
        _ => out.push(json!({"role": "user", "content": parts})),
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Open {
    Text(u32),
    Thinking(u32),
}

#[derive(Debug, Default)]
struct ToolState {
    ours: Option<u32>,
    id: String,
    name: String,
    pending: String,
    args_seen: bool,
}

/// Decodes one Chat Completions stream.
#[derive(Debug, Default)]
pub(crate) struct ChatDecoder {
    next: u32,
    open: Option<Open>,
    tools: HashMap<u64, ToolState>,
    tool_order: Vec<u64>,
    finish: Option<String>,
    refusal: bool,
    /// Tool calls seen without an `index`.
    unindexed: u64,
}

/// First key of tool calls that arrive without an `index`.
const UNINDEXED_BASE: u64 = 1 << 40;

/// Normalized usage from a Chat Completions `usage` object: cached tokens are a subset
/// of `prompt_tokens`, so they are subtracted from `input`.
pub fn chat_usage(u: &Value) -> Usage {
    let get = |p: &str| u.pointer(p).and_then(Value::as_u64);
    let prompt = get("/prompt_tokens").unwrap_or(0);
    let cached = get("/prompt_tokens_details/cached_tokens");
    Usage {
        input: prompt.saturating_sub(cached.unwrap_or(0)),
        output: get("/completion_tokens").unwrap_or(0),
        cache_read: cached,
        ..Usage::default()
    }
}

impl ChatDecoder {
    fn alloc(&mut self) -> u32 {
        let i = self.next;
        self.next += 1;
        i
    }

    fn text(&mut self, text: &str, out: &mut Vec<StreamEvent>) {
        let index = match self.open {
            Some(Open::Text(i)) => i,
            _ => {
                let i = self.alloc();
                self.open = Some(Open::Text(i));
                i
            }
        };
        out.push(StreamEvent::TextDelta {
            index,
            text: text.to_string(),
        });
    }

    fn thinking(&mut self, text: &str, out: &mut Vec<StreamEvent>) {
        let index = match self.open {
            Some(Open::Thinking(i)) => i,
            _ => {
                let i = self.alloc();
                self.open = Some(Open::Thinking(i));
                i
            }
        };
        out.push(StreamEvent::ThinkingDelta {
            index,
            text: text.to_string(),
        });
    }

    fn tool_delta(&mut self, tc: &Value, out: &mut Vec<StreamEvent>) {
        let id = tc.get("id").and_then(Value::as_str).unwrap_or("");
        let key = match tc.get("index").and_then(Value::as_u64) {
            Some(i) => i,
            // No index (some servers): a new id starts a new call, else the latest one.
            // Their keys live far above any real index so the two never collide.
            None if !id.is_empty() && !self.tools.values().any(|t| t.id == id) => {
                self.unindexed += 1;
                UNINDEXED_BASE + self.unindexed
            }
            None => match self
                .tools
                .iter()
                .find(|(_, t)| !id.is_empty() && t.id == id)
            {
                Some((k, _)) => *k,
                None => self.tool_order.last().copied().unwrap_or(0),
            },
        };
        if let std::collections::hash_map::Entry::Vacant(e) = self.tools.entry(key) {
            e.insert(ToolState::default());
            self.tool_order.push(key);
        }
        let name = tc
            .pointer("/function/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let args = tc
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut start = None;
        if let Some(t) = self.tools.get_mut(&key) {
            if t.id.is_empty() && !id.is_empty() {
                t.id = id.to_string();
            }
            if t.ours.is_none() {
                t.name.push_str(name);
                t.pending.push_str(args);
                if !t.name.is_empty() {
                    start = Some((t.id.clone(), t.name.clone(), std::mem::take(&mut t.pending)));
                }
            }
        }
        if let Some((id, name, pending)) = start {
            let index = self.alloc();
            self.open = None;
            out.push(StreamEvent::ToolCallStart { index, id, name });
            if let Some(t) = self.tools.get_mut(&key) {
                t.ours = Some(index);
                if !pending.is_empty() {
                    t.args_seen = true;
                    out.push(StreamEvent::ToolCallArgsDelta {
                        index,
                        json: pending,
                    });
                }
            }
            return;
        }
        if let Some(t) = self.tools.get_mut(&key)
            && let Some(index) = t.ours
            && !args.is_empty()
        {
            t.args_seen = true;
            out.push(StreamEvent::ToolCallArgsDelta {
                index,
                json: args.to_string(),
            });
        }
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) {
        for key in self.tool_order.clone() {
            let Some(t) = self.tools.get_mut(&key) else {
                continue;
            };
            let index = match t.ours {
                Some(i) => i,
                None => {
                    // A call whose name never arrived: surface it so the Runtime can
                    // answer with an error rather than lose it.
                    let i = self.next;
                    self.next += 1;
                    t.ours = Some(i);
                    out.push(StreamEvent::ToolCallStart {
                        index: i,
                        id: t.id.clone(),
                        name: t.name.clone(),
                    });
                    if !t.pending.is_empty() {
                        t.args_seen = true;
                        out.push(StreamEvent::ToolCallArgsDelta {
                            index: i,
                            json: std::mem::take(&mut t.pending),
                        });
                    }
                    i
                }
            };
            if !t.args_seen {
                t.args_seen = true;
                out.push(StreamEvent::ToolCallArgsDelta {
                    index,
                    json: "{}".to_string(),
                });
            }
        }
        let called = !self.tool_order.is_empty();
        let stop_reason = match self.finish.as_deref() {
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            Some("stop") | None if called => StopReason::ToolUse,
            Some("stop") | None if self.refusal => StopReason::Refusal,
            Some("stop") | None => StopReason::EndTurn,
            Some("length") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::Refusal,
            Some(other) => StopReason::Other(other.to_string()),
        };
        out.push(StreamEvent::Done { stop_reason });
    }
}

impl Decoder for ChatDecoder {
    fn event(&mut self, ev: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<bool, DecodeError> {
        let data = ev.data.trim();
        if data == "[DONE]" {
            self.finish(out);
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            let head: String = data.chars().take(120).collect();
            DecodeError::malformed(format!("invalid JSON in the event stream ({e}): {head}"))
        })?;
        if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
            let msg = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error");
            let code = err.get("code").map(|c| c.to_string()).unwrap_or_default();
            let text = format!("stream error {code}: {msg}");
            return Err(DecodeError::event(classify_event(&v), text));
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            out.push(StreamEvent::Usage(chat_usage(u)));
        }
        let Some(choices) = v.get("choices").and_then(Value::as_array) else {
            return Ok(false);
        };
        for choice in choices {
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.get("delta") {
                for key in ["reasoning_content", "reasoning"] {
                    if let Some(t) = delta
                        .get(key)
                        .and_then(Value::as_str)
                        .filter(|t| !t.is_empty())
                    {
                        self.thinking(t, out);
                    }
                }
                if let Some(t) = delta
                    .get("content")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    self.text(t, out);
                }
                if let Some(t) = delta
                    .get("refusal")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    self.refusal = true;
                    self.text(t, out);
                }
                if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                    for tc in calls {
                        self.tool_delta(tc, out);
                    }
                }
            }
            if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish = Some(f.to_string());
            }
        }
        Ok(false)
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), DecodeError> {
        if self.finish.is_some() {
            self.finish(out);
            return Ok(());
        }
        Err(DecodeError::truncated(
            "the stream ended before a finish reason",
        ))
    }
}
