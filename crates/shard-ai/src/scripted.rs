//! The `scripted` provider: replays a script file of model turns, so every behaviour of
//! the Runtime can be tested deterministically and the demo runs with no API key.
//!
//! A script is JSON: `{ "turns": [ { "steps": [...], "stop_reason"?: "..." } ] }`. Each
//! provider call plays the next turn. Steps:
//!
//! - `{"text": "...", "chunk_chars"?: n, "repeat"?: n}` — text deltas, split every
//!   `chunk_chars` characters (default: one delta), the whole step repeated `repeat` times.
//!   `{{tool_result:ID}}` in the text is replaced by the text of that tool result
//!   found in the request, so an answer can quote what a tool returned. Consecutive
//!   text steps (with only delays or usage between them) continue one text block.
//! - `{"thinking": "...", "signature"?: "..."}` — a thinking block.
//! - `{"tool_call": {"id": "...", "name": "...", "args": {...}}, "chunk_chars"?: n}` —
//!   a tool call whose JSON arguments stream in pieces.
//! - `{"usage": {"input": n, "output": n, "cache_read"?: n, "cache_write"?: n}}`.
//! - `{"delay_ms": n}` — a pause (cancellable).
//! - `{"error": "...", "kind"?: KIND, "status"?: N, "retry_after_ms"?: N}` — the call
//!   fails here with a provider error of that kind (`auth`, `rate_limited`, `overloaded`,
//!   `context_window_exceeded`, `invalid_request`, `network`, `server`; default `server`);
//!   `retry_after_ms` is the wait a rate limit asks for.
//! - `{"wait_for_tool_result": "ID"}` — the turn fails unless the request carries the
//!   result of tool call `ID` (checks that results really reach the model).
//!
//! A turn without a `stop_reason` stops with `tool_use` when it called a tool, else
//! `end_turn`.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde::Deserialize;
use serde_json::Value;
use shard_protocol::types::{ContentBlock, Message, ToolResultContent, Usage};
use tokio_util::sync::CancellationToken;

use crate::provider::{
    ErrorKind, EventStream, ModelRequest, Provider, ProviderError, StopReason, StreamEvent,
};

/// A parsed script.
#[derive(Debug, Clone, Deserialize)]
pub struct Script {
    /// Model turns, one per provider call.
    pub turns: Vec<ScriptTurn>,
}

/// One scripted provider call.
#[derive(Debug, Clone, Deserialize)]
pub struct ScriptTurn {
    /// What the model emits.
    #[serde(default)]
    pub steps: Vec<Value>,
    /// Stop reason override.
    #[serde(default)]
    pub stop_reason: Option<String>,
}

/// Errors loading a script.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read.
    #[error("cannot read script {path}: {source}")]
    Read {
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a valid script.
    #[error("invalid script {path}: {source}")]
    Parse {
        /// The path.
        path: String,
        /// The cause.
        source: serde_json::Error,
    },
}

/// Replays a [`Script`]; each call plays the next turn.
#[derive(Debug, Clone)]
pub struct ScriptedProvider {
    script: Arc<Script>,
    next: Arc<AtomicUsize>,
}

impl ScriptedProvider {
    /// A provider replaying `script`.
    pub fn new(script: Script) -> Self {
        ScriptedProvider {
            script: Arc::new(script),
            next: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Loads a script file.
    pub fn from_file(path: &Path) -> Result<Self, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let script = serde_json::from_str(&text).map_err(|source| ScriptError::Parse {
            path: path.display().to_string(),
            source,
        })?;
        Ok(ScriptedProvider::new(script))
    }
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> EventStream {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let Some(turn) = self.script.turns.get(n).cloned() else {
            let total = self.script.turns.len();
            return futures::stream::once(async move {
                Err(ProviderError::Config(format!(
                    "scripted provider: the script has {total} turn(s) and all were played"
                )))
            })
            .boxed();
        };
        let (tx, rx) = tokio::sync::mpsc::channel(256);
        tokio::spawn(async move {
            let result = play(turn, &request, &tx, &cancel).await;
            if let Err(e) = result {
                let _ = tx.send(Err(e)).await;
            }
        });
        tokio_stream_from(rx)
    }
}

fn tokio_stream_from(
    mut rx: tokio::sync::mpsc::Receiver<Result<StreamEvent, ProviderError>>,
) -> EventStream {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}

type Tx = tokio::sync::mpsc::Sender<Result<StreamEvent, ProviderError>>;

async fn send(tx: &Tx, ev: StreamEvent) -> Result<(), ProviderError> {
    tx.send(Ok(ev)).await.map_err(|_| ProviderError::Cancelled)
}

async fn play(
    turn: ScriptTurn,
    request: &ModelRequest,
    tx: &Tx,
    cancel: &CancellationToken,
) -> Result<(), ProviderError> {
    let mut index: u32 = 0;
    let mut called_tool = false;
    // The block index of the text block still open, so split text continues it.
    let mut open_text: Option<u32> = None;
    for step in &turn.steps {
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        let chunk = step.get("chunk_chars").and_then(Value::as_u64).unwrap_or(0) as usize;
        if let Some(text) = step.get("text").and_then(Value::as_str) {
            let repeat = step.get("repeat").and_then(Value::as_u64).unwrap_or(1);
            let text = substitute_tool_results(text, &request.messages);
            let block = match open_text {
                Some(b) => b,
                None => {
                    index += 1;
                    index - 1
                }
            };
            open_text = Some(block);
            for _ in 0..repeat {
                for piece in split_chars(&text, chunk) {
                    let ev = StreamEvent::TextDelta {
                        index: block,
                        text: piece,
                    };
                    send(tx, ev).await?;
                }
            }
            continue;
        }
        let content_step = step.get("thinking").is_some() || step.get("tool_call").is_some();
        if content_step {
            open_text = None;
        }
        if let Some(text) = step.get("thinking").and_then(Value::as_str) {
            for piece in split_chars(text, chunk) {
                send(tx, StreamEvent::ThinkingDelta { index, text: piece }).await?;
            }
            if let Some(sig) = step.get("signature").and_then(Value::as_str) {
                let signature = sig.to_string();
                send(tx, StreamEvent::ThinkingSignature { index, signature }).await?;
            }
            index += 1;
        } else if let Some(call) = step.get("tool_call") {
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("call")
                .to_string();
            let name = call
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let args = call
                .get("args")
                .cloned()
                .unwrap_or_else(|| Value::Object(Default::default()));
            let json = serde_json::to_string(&args).unwrap_or_else(|_| "{}".into());
            send(tx, StreamEvent::ToolCallStart { index, id, name }).await?;
            for piece in split_chars(&json, chunk) {
                send(tx, StreamEvent::ToolCallArgsDelta { index, json: piece }).await?;
            }
            called_tool = true;
            index += 1;
        } else if let Some(u) = step.get("usage") {
            let field = |k: &str| u.get(k).and_then(Value::as_u64);
            let usage = Usage {
                input: field("input").unwrap_or(0),
                output: field("output").unwrap_or(0),
                cache_read: field("cache_read"),
                cache_write: field("cache_write"),
                ..Usage::default()
            };
            send(tx, StreamEvent::Usage(usage)).await?;
        } else if let Some(ms) = step.get("delay_ms").and_then(Value::as_u64) {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
                _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
            }
        } else if let Some(msg) = step.get("error").and_then(Value::as_str) {
            let status = step
                .get("status")
                .and_then(Value::as_u64)
                .and_then(|s| u16::try_from(s).ok());
            let kind = match step.get("kind").and_then(Value::as_str) {
                None | Some("server") => ErrorKind::Server,
                Some("auth") => ErrorKind::Auth,
                Some("rate_limited") => ErrorKind::RateLimited {
                    retry_after: step
                        .get("retry_after_ms")
                        .and_then(Value::as_u64)
                        .map(Duration::from_millis),
                },
                Some("overloaded") => ErrorKind::Overloaded,
                Some("context_window_exceeded") => ErrorKind::ContextWindowExceeded,
                Some("invalid_request") => ErrorKind::InvalidRequest,
                Some("network" | "stream") => ErrorKind::Network,
                Some(other) => {
                    return Err(ProviderError::Config(format!(
                        "scripted provider: unknown error kind {other:?} (use auth, \
                         rate_limited, overloaded, context_window_exceeded, \
                         invalid_request, network or server)"
                    )));
                }
            };
            return Err(ProviderError::api(kind, status, msg));
        } else if let Some(id) = step.get("wait_for_tool_result").and_then(Value::as_str) {
            if tool_result_text(&request.messages, id).is_none() {
                return Err(ProviderError::api(
                    ErrorKind::InvalidRequest,
                    None,
                    format!(
                        "scripted provider: expected the result of tool call {id} in the request"
                    ),
                ));
            }
        } else {
            return Err(ProviderError::Config(format!(
                "scripted provider: unknown step {step}"
            )));
        }
    }
    let stop_reason = match turn.stop_reason.as_deref() {
        None if called_tool => StopReason::ToolUse,
        None | Some("end_turn") => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("refusal") => StopReason::Refusal,
        Some("pause_turn") => StopReason::PauseTurn,
        Some(other) => StopReason::Other(other.to_string()),
    };
    send(tx, StreamEvent::Done { stop_reason }).await
}

fn split_chars(text: &str, chunk: usize) -> Vec<String> {
    if chunk == 0 || text.is_empty() {
        return vec![text.to_string()];
    }
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(chunk).map(|c| c.iter().collect()).collect()
}

fn tool_result_text(messages: &[Arc<Message>], id: &str) -> Option<String> {
    messages
        .iter()
        .rev()
        .flat_map(|m| m.content.iter())
        .find_map(|b| match b {
            ContentBlock::ToolResult {
                tool_call_id,
                content,
                ..
            } if tool_call_id == id => Some(match content {
                ToolResultContent::Text { text } => text.clone(),
                ToolResultContent::Error { message } => message.clone(),
                ToolResultContent::Json { value } => value.to_string(),
                ToolResultContent::Image { mime_type, .. } => format!("[image {mime_type}]"),
            }),
            _ => None,
        })
}

fn substitute_tool_results(text: &str, messages: &[Arc<Message>]) -> String {
    const OPEN: &str = "{{tool_result:";
    if !text.contains(OPEN) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        out.push_str(&rest[..start]);
        let after = &rest[start + OPEN.len()..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let id = &after[..end];
        out.push_str(&tool_result_text(messages, id).unwrap_or_default());
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}
