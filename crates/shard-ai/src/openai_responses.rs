//! OpenAI Responses API (`POST {base}/responses`, streaming), stateless (`store: false`).
//!
//! Output items are matched by `output_index`, never by `item_id` (GitHub Copilot's
//! endpoint rotates item ids on every event). When a `*.done` event carries more text
//! than the deltas did, the missing suffix is emitted, so the final text wins where it
//! can without retracting anything already streamed.
//!
//! Reasoning continuity: a reasoning item's `encrypted_content` becomes the thinking
//! block's signature and is sent back as a `reasoning` item (without its id, which a
//! `store: false` server would not find). Reasoning without encrypted content is not sent
//! back.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use shard_protocol::types::{ContentBlock, Role, Usage};
use tokio_util::sync::CancellationToken;

use crate::convert::{args_json, data_url, flagged_tool_text, role_runs, tool_result_images};
use crate::errors::ErrorFields;
use crate::http::{self, Call, DecodeError, Decoder, DecoderFactory, Transport};
use crate::provider::{
    ErrorKind, EventStream, ModelRequest, Provider, ProviderError, StopReason, StreamEvent,
};
use crate::settings::ProviderSettings;
use crate::sse::SseEvent;

/// The Responses provider.
pub struct OpenAiResponsesProvider {
    settings: ProviderSettings,
    transport: Transport,
    factory: Arc<DecoderFactory>,
}

impl std::fmt::Debug for OpenAiResponsesProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiResponsesProvider")
            .field("settings", &self.settings)
            .finish()
    }
}

impl OpenAiResponsesProvider {
    /// A provider calling `{base_url}/responses`.
    pub fn new(settings: ProviderSettings) -> Result<Self, ProviderError> {
        let transport = Transport::for_settings(&settings)?;
        Ok(OpenAiResponsesProvider {
            settings,
            transport,
            factory: Arc::new(Box::new(|| {
                Box::new(ResponsesDecoder::default()) as Box<dyn Decoder>
            })),
        })
    }
}

impl Provider for OpenAiResponsesProvider {
    fn name(&self) -> &str {
        &self.settings.name
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> EventStream {
        let s = &self.settings;
        let call = s
            .header_map(&[("authorization", format!("Bearer {}", s.api_key.expose()))])
            .and_then(|headers| {
                let body = serde_json::to_vec(&request_body(&request)).map_err(|e| {
                    ProviderError::Config(format!("cannot encode the request: {e}"))
                })?;
                Ok(Call {
                    provider: s.name.clone(),
                    url: format!("{}/responses", s.base_url),
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

fn input_image(mime_type: &str, data: &str) -> Value {
    json!({"type": "input_image", "image_url": data_url(mime_type, data)})
}

/// The JSON body of a streaming Responses request.
pub fn request_body(req: &ModelRequest) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    if !req.system.is_empty() {
        body.insert("instructions".into(), json!(req.system));
    }
    let mut input = Vec::new();
    for (role, blocks) in role_runs(&req.messages) {
        match role {
            Role::User => user_items(&blocks, &mut input),
            Role::Assistant => assistant_items(&blocks, &mut input),
        }
    }
    body.insert("input".into(), Value::Array(input));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "name": t.name, "description": t.description,
                       "parameters": t.input_schema, "strict": false})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(n) = req.max_output_tokens {
        body.insert("max_output_tokens".into(), json!(n));
    }
    if let Some(effort) = &req.reasoning_effort {
        body.insert(
            "reasoning".into(),
            json!({"effort": effort, "summary": "auto"}),
        );
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    body.insert("store".into(), json!(false));
    body.insert("stream".into(), json!(true));
    Value::Object(body)
}

fn user_items(blocks: &[&ContentBlock], out: &mut Vec<Value>) {
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
                let text = flagged_tool_text(content, *is_error, *exit_code);
                let pictures = tool_result_images(content, images);
                let output = if pictures.is_empty() {
                    Value::String(text)
                } else {
                    let mut items: Vec<Value> =
                        pictures.iter().map(|(m, d)| input_image(m, d)).collect();
                    if !text.is_empty() {
                        items.push(json!({"type": "input_text", "text": text}));
                    }
                    Value::Array(items)
                };
                out.push(json!({"type": "function_call_output", "call_id": tool_call_id, "output": output}));
            }
            ContentBlock::Text { text } if !text.is_empty() => {
                parts.push(json!({"type": "input_text", "text": text}));
            }
            ContentBlock::Image { data, mime_type } => parts.push(input_image(mime_type, data)),
            _ => {}
        }
    }
    if !parts.is_empty() {
        out.push(json!({"role": "user", "content": parts}));
    }
}

fn assistant_items(blocks: &[&ContentBlock], out: &mut Vec<Value>) {
    for b in blocks {
        match b {
            ContentBlock::Text { text } if !text.is_empty() => out.push(json!({
                "type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": text}],
            })),
            ContentBlock::Thinking {
                text,
                signature: Some(sig),
            } => {
                let summary = if text.is_empty() {
                    json!([])
                } else {
                    json!([{"type": "summary_text", "text": text}])
                };
                out.push(
                    json!({"type": "reasoning", "summary": summary, "encrypted_content": sig}),
                );
            }
            ContentBlock::ToolCall { id, name, args } => out.push(json!({
                "type": "function_call", "call_id": id, "name": name, "arguments": args_json(args),
            })),
            _ => {}
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Message,
    Reasoning,
    Function,
    Other,
}

#[derive(Debug)]
struct Item {
    kind: Kind,
    ours: Option<u32>,
    /// Text streamed so far per content part (messages) or summary part (reasoning).
    streamed: HashMap<u64, String>,
    last_part: Option<u64>,
    args_seen: bool,
    signed: bool,
}

impl Item {
    fn new(kind: Kind) -> Self {
        Item {
            kind,
            ours: None,
            streamed: HashMap::new(),
            last_part: None,
            args_seen: false,
            signed: false,
        }
    }
}

/// Decodes one Responses stream.
#[derive(Debug, Default)]
pub(crate) struct ResponsesDecoder {
    items: HashMap<u64, Item>,
    next: u32,
    called: bool,
    refusal: bool,
}

/// Normalized usage from a Responses `usage` object: cached (and cache-write) tokens are
/// subsets of `input_tokens`; reasoning tokens are already inside `output_tokens`.
pub fn responses_usage(u: &Value) -> Usage {
    let get = |p: &str| u.pointer(p).and_then(Value::as_u64);
    let input = get("/input_tokens").unwrap_or(0);
    let cached = get("/input_tokens_details/cached_tokens");
    let written = get("/input_tokens_details/cache_write_tokens");
    Usage {
        input: input
            .saturating_sub(cached.unwrap_or(0))
            .saturating_sub(written.unwrap_or(0)),
        output: get("/output_tokens").unwrap_or(0),
        cache_read: cached,
        cache_write: written,
        ..Usage::default()
    }
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

impl ResponsesDecoder {
    fn item(&mut self, idx: u64, kind: Kind) -> &mut Item {
        self.items.entry(idx).or_insert_with(|| Item::new(kind))
    }

    fn ours(&mut self, idx: u64, kind: Kind) -> u32 {
        let next = &mut self.next;
        let item = self.items.entry(idx).or_insert_with(|| Item::new(kind));
        *item.ours.get_or_insert_with(|| {
            let i = *next;
            *next += 1;
            i
        })
    }

    /// Appends streamed text of part `part` of item `idx`.
    fn text(&mut self, idx: u64, part: u64, kind: Kind, text: &str, out: &mut Vec<StreamEvent>) {
        if text.is_empty() {
            return;
        }
        let index = self.ours(idx, kind);
        let item = self.item(idx, kind);
        let mut piece = String::new();
        if kind == Kind::Reasoning && item.last_part.is_some_and(|p| p != part) {
            // Summary parts are separate paragraphs.
            piece.push_str("\n\n");
        }
        item.last_part = Some(part);
        piece.push_str(text);
        item.streamed.entry(part).or_default().push_str(text);
        out.push(match kind {
            Kind::Reasoning => StreamEvent::ThinkingDelta { index, text: piece },
            _ => StreamEvent::TextDelta { index, text: piece },
        });
    }

    /// A part's final text: emit whatever the deltas missed.
    fn reconcile(
        &mut self,
        idx: u64,
        part: u64,
        kind: Kind,
        full: &str,
        out: &mut Vec<StreamEvent>,
    ) {
        let streamed = self
            .items
            .get(&idx)
            .and_then(|i| i.streamed.get(&part))
            .cloned()
            .unwrap_or_default();
        if let Some(rest) = full.strip_prefix(streamed.as_str()) {
            self.text(idx, part, kind, rest, out);
        } else {
            tracing::warn!(
                output_index = idx,
                "final text differs from the streamed deltas; keeping the deltas"
            );
        }
    }

    fn start_call(&mut self, idx: u64, item: &Value, out: &mut Vec<StreamEvent>) {
        if self.items.get(&idx).is_some_and(|i| i.ours.is_some()) {
            return;
        }
        self.called = true;
        let index = self.ours(idx, Kind::Function);
        out.push(StreamEvent::ToolCallStart {
            index,
            id: s(item, "call_id").to_string(),
            name: s(item, "name").to_string(),
        });
    }

    fn args(&mut self, idx: u64, json: &str, out: &mut Vec<StreamEvent>) {
        if json.is_empty() {
            return;
        }
        let Some(item) = self.items.get_mut(&idx) else {
            return;
        };
        let Some(index) = item.ours.filter(|_| item.kind == Kind::Function) else {
            return;
        };
        item.args_seen = true;
        out.push(StreamEvent::ToolCallArgsDelta {
            index,
            json: json.to_string(),
        });
    }

    fn item_done(&mut self, idx: u64, item: &Value, out: &mut Vec<StreamEvent>) {
        match s(item, "type") {
            "message" => {
                let parts = item
                    .get("content")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for (part, c) in parts.iter().enumerate() {
                    let full = match s(c, "type") {
                        "output_text" => s(c, "text"),
                        "refusal" => {
                            self.refusal = true;
                            s(c, "refusal")
                        }
                        _ => continue,
                    };
                    self.reconcile(idx, part as u64, Kind::Message, full, out);
                }
            }
            "reasoning" => {
                let summaries = item
                    .get("summary")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for (part, c) in summaries.iter().enumerate() {
                    self.reconcile(idx, part as u64, Kind::Reasoning, s(c, "text"), out);
                }
                let sig = s(item, "encrypted_content");
                if !sig.is_empty() && !self.items.get(&idx).is_some_and(|i| i.signed) {
                    let index = self.ours(idx, Kind::Reasoning);
                    self.item(idx, Kind::Reasoning).signed = true;
                    out.push(StreamEvent::ThinkingSignature {
                        index,
                        signature: sig.to_string(),
                    });
                }
            }
            "function_call" => {
                self.start_call(idx, item, out);
                if !self.items.get(&idx).is_some_and(|i| i.args_seen) {
                    let a = s(item, "arguments");
                    self.args(idx, if a.is_empty() { "{}" } else { a }, out);
                }
            }
            _ => {}
        }
    }

    fn failure(&self, code: &str, message: &str) -> DecodeError {
        let text = format!("responses stream error: {code}: {message}");
        let fields = ErrorFields {
            kind: None,
            code: Some(code.to_string()),
            message: Some(message.to_string()),
        };
        DecodeError::event(fields.kind().unwrap_or(ErrorKind::Server), text)
    }
}

impl Decoder for ResponsesDecoder {
    fn event(&mut self, ev: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<bool, DecodeError> {
        let data = ev.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(false);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            let head: String = data.chars().take(120).collect();
            DecodeError::malformed(format!("invalid JSON in the event stream ({e}): {head}"))
        })?;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(ev.event.as_str())
            .to_string();
        let idx = v.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        let part = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
        match kind.as_str() {
            "response.output_item.added" => {
                let item = v.get("item").unwrap_or(&Value::Null);
                let k = match s(item, "type") {
                    "message" => Kind::Message,
                    "reasoning" => Kind::Reasoning,
                    "function_call" => Kind::Function,
                    _ => Kind::Other,
                };
                self.item(idx, k);
                if k == Kind::Function {
                    self.start_call(idx, item, out);
                    let a = s(item, "arguments").to_string();
                    self.args(idx, &a, out);
                }
            }
            "response.output_text.delta" => self.text(
                idx,
                part("content_index"),
                Kind::Message,
                s(&v, "delta"),
                out,
            ),
            "response.refusal.delta" => {
                self.refusal = true;
                self.text(
                    idx,
                    part("content_index"),
                    Kind::Message,
                    s(&v, "delta"),
                    out,
                );
            }
            "response.output_text.done" => self.reconcile(
                idx,
                part("content_index"),
                Kind::Message,
                s(&v, "text"),
                out,
            ),
            "response.refusal.done" => self.reconcile(
                idx,
                part("content_index"),
                Kind::Message,
                s(&v, "refusal"),
                out,
            ),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let p = if kind.ends_with("summary_text.delta") {
                    part("summary_index")
                } else {
                    part("content_index")
                };
                self.text(idx, p, Kind::Reasoning, s(&v, "delta"), out);
            }
            "response.reasoning_summary_text.done" => {
                self.reconcile(
                    idx,
                    part("summary_index"),
                    Kind::Reasoning,
                    s(&v, "text"),
                    out,
                );
            }
            "response.function_call_arguments.delta" => self.args(idx, s(&v, "delta"), out),
            "response.function_call_arguments.done"
                if self.items.get(&idx).is_some_and(|i| !i.args_seen) =>
            {
                let a = s(&v, "arguments");
                self.args(idx, if a.is_empty() { "{}" } else { a }, out);
            }
            "response.output_item.done" => {
                let item = v.get("item").cloned().unwrap_or(Value::Null);
                self.item_done(idx, &item, out);
            }
            "response.completed" | "response.incomplete" => {
                if let Some(u) = v.pointer("/response/usage").filter(|u| u.is_object()) {
                    out.push(StreamEvent::Usage(responses_usage(u)));
                }
                let stop_reason = if kind == "response.incomplete" {
                    match v
                        .pointer("/response/incomplete_details/reason")
                        .and_then(Value::as_str)
                    {
                        Some("max_output_tokens") => StopReason::MaxTokens,
                        Some("content_filter") => StopReason::Refusal,
                        Some(other) => StopReason::Other(other.to_string()),
                        None => StopReason::Other("incomplete".to_string()),
                    }
                } else if self.called {
                    StopReason::ToolUse
                } else if self.refusal {
                    StopReason::Refusal
                } else {
                    StopReason::EndTurn
                };
                out.push(StreamEvent::Done { stop_reason });
                return Ok(true);
            }
            "response.failed" => {
                let err = v.pointer("/response/error").unwrap_or(&Value::Null);
                return Err(self.failure(s(err, "code"), s(err, "message")));
            }
            "error" => {
                let err = v.get("error").filter(|e| e.is_object()).unwrap_or(&v);
                let code = if s(err, "code").is_empty() {
                    s(err, "type")
                } else {
                    s(err, "code")
                };
                return Err(self.failure(code, s(err, "message")));
            }
            _ => {}
        }
        Ok(false)
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), DecodeError> {
        let _ = out;
        Err(DecodeError::truncated(
            "the stream ended before response.completed",
        ))
    }
}
