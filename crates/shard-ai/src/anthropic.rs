//! Anthropic Messages API (`POST {base}/v1/messages`, streaming).
//!
//! Request: the system prompt, the last tool and the last blocks of the two newest user
//! turns carry `cache_control` breakpoints (at most 4, the API's limit). Thinking blocks go
//! back with their signatures; unsigned thinking is dropped (the API would reject it).
//! A redacted thinking block travels as a thinking block whose signature is
//! `redacted:<data>`.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use shard_protocol::types::{ContentBlock, Role};
use tokio_util::sync::CancellationToken;

use crate::anthropic_stream::AnthropicDecoder;
pub use crate::anthropic_stream::stop_reason;
use crate::convert::{role_runs, tool_result_images, tool_result_is_error, tool_result_text};
use crate::http::{self, Call, Decoder, DecoderFactory, Transport};
use crate::provider::{EventStream, ModelRequest, Provider, ProviderError};
use crate::settings::ProviderSettings;

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
        let transport = Transport::for_settings(&settings)?;
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
                    images,
                    ..
                } => {
                    let text = tool_result_text(content, *exit_code);
                    let pictures = tool_result_images(content, images);
                    // tool_result blocks take image and text blocks side by side.
                    let content_value = if pictures.is_empty() {
                        Value::String(text)
                    } else {
                        let mut parts: Vec<Value> =
                            pictures.iter().map(|(m, d)| image(m, d)).collect();
                        if !text.is_empty() {
                            parts.push(json!({"type": "text", "text": text}));
                        }
                        Value::Array(parts)
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
