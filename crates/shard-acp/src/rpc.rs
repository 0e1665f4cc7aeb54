//! JSON-RPC 2.0 as ACP frames it: one JSON object per line on stdio. Requests the editor
//! sends come out of [`classify`]; what the agent sends (responses, notifications, its own
//! requests such as `session/request_permission`) goes through a [`Peer`], whose one writer
//! task keeps lines whole and in order.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// JSON-RPC error codes ACP uses.
pub mod code {
    /// The line is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a JSON-RPC message.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Bad `params` (the message names the field).
    pub const INVALID_PARAMS: i64 = -32602;
    /// The agent failed.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// ACP: authentication is required first.
    pub const AUTH_REQUIRED: i64 = -32000;
    /// ACP: a resource (a session) was not found.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} ({code})")]
pub struct RpcError {
    /// The code (see [`code`]).
    pub code: i64,
    /// One sentence for the person.
    pub message: String,
    /// Structured detail, e.g. `{"field": "prompt[0].type"}`.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with a code and a message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// -32603 with a message.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(code::INTERNAL_ERROR, message)
    }

    /// -32602 naming `field`.
    pub fn invalid_params(field: &str, message: impl Into<String>) -> Self {
        RpcError {
            code: code::INVALID_PARAMS,
            message: message.into(),
            data: Some(json!({ "field": field })),
        }
    }

    fn to_json(&self) -> Value {
        let mut e = json!({ "code": self.code, "message": self.message });
        if let (Some(d), Some(obj)) = (&self.data, e.as_object_mut()) {
            obj.insert("data".into(), d.clone());
        }
        e
    }

    fn from_json(v: &Value) -> Self {
        RpcError {
            code: v.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: v
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("error")
                .to_string(),
            data: v.get("data").cloned(),
        }
    }
}

/// Decodes `params` into `T`, or -32602 naming the first bad field (`cwd`,
/// `prompt[1].type`, …) so the editor's log says what to fix.
pub fn params<T: DeserializeOwned>(method: &str, params: Option<Value>) -> Result<T, RpcError> {
    let value = params.unwrap_or(Value::Null);
    if !value.is_object() {
        return Err(RpcError::invalid_params(
            "params",
            format!("{method}: params must be an object"),
        ));
    }
    let de = value;
    match serde_path_to_error::deserialize::<_, T>(de) {
        Ok(t) => Ok(t),
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner().to_string();
            // A missing field is reported at its parent; name the field itself.
            let field = match missing_field(&inner) {
                Some(f) if path == "." => f.to_string(),
                Some(f) => format!("{path}.{f}"),
                None => path,
            };
            Err(RpcError::invalid_params(
                &field,
                format!("{method}: invalid `{field}`: {inner}"),
            ))
        }
    }
}

fn missing_field(msg: &str) -> Option<&str> {
    let rest = msg.strip_prefix("missing field `")?;
    rest.split('`').next()
}

/// A message the editor sent.
#[derive(Debug)]
pub enum Incoming {
    /// A request: answer it with [`Peer::respond`].
    Request {
        /// Its id, echoed in the response.
        id: Value,
        /// The method.
        method: String,
        /// The params.
        params: Option<Value>,
    },
    /// A notification (no answer).
    Notification {
        /// The method.
        method: String,
        /// The params.
        params: Option<Value>,
    },
    /// Already handled (a response to one of the agent's requests) or answered with an
    /// error (an invalid message).
    Done,
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>>>;

/// The agent's side of the connection: everything it writes goes through here.
#[derive(Clone)]
pub struct Peer {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    pending: Pending,
    next: Arc<AtomicU64>,
}

impl Peer {
    /// A peer writing to `writer` from its own task.
    pub fn new<W: AsyncWrite + Send + 'static>(writer: W) -> (Peer, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(write_loop(Box::pin(writer), rx));
        (
            Peer {
                tx,
                pending: Arc::default(),
                next: Arc::new(AtomicU64::new(0)),
            },
            task,
        )
    }

    fn write(&self, v: &Value) {
        match serde_json::to_vec(v) {
            Ok(mut line) => {
                line.push(b'\n');
                let _ = self.tx.send(line);
            }
            Err(e) => tracing::error!(error = %e, "cannot encode a message"),
        }
    }

    /// Answers request `id`.
    pub fn respond(&self, id: Value, result: Result<Value, RpcError>) {
        let msg = match result {
            Ok(r) => json!({ "jsonrpc": "2.0", "id": id, "result": r }),
            Err(e) => json!({ "jsonrpc": "2.0", "id": id, "error": e.to_json() }),
        };
        self.write(&msg);
    }

    /// Sends a notification.
    pub fn notify<P: Serialize>(&self, method: &str, params: &P) {
        match serde_json::to_value(params) {
            Ok(p) => self.write(&json!({ "jsonrpc": "2.0", "method": method, "params": p })),
            Err(e) => tracing::error!(error = %e, method, "cannot encode a notification"),
        }
    }

    /// Sends a request to the editor; the returned receiver gets its answer (or is
    /// dropped if the connection ends first).
    pub fn request<P: Serialize>(
        &self,
        method: &str,
        params: &P,
    ) -> oneshot::Receiver<Result<Value, RpcError>> {
        let (tx, rx) = oneshot::channel();
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let params = match serde_json::to_value(params) {
            Ok(p) => p,
            Err(e) => {
                let _ = tx.send(Err(RpcError::internal(e.to_string())));
                return rx;
            }
        };
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, tx);
        }
        self.write(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        rx
    }

    fn answer(&self, id: &Value, result: Result<Value, RpcError>) {
        let Some(n) = id.as_u64() else { return };
        let tx = self.pending.lock().ok().and_then(|mut p| p.remove(&n));
        if let Some(tx) = tx {
            let _ = tx.send(result);
        }
    }

    /// Sorts one line from the editor: requests and notifications are returned; a
    /// response completes the agent's request; anything else is answered with an error.
    pub fn classify(&self, line: &[u8]) -> Incoming {
        let v: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => {
                let err = RpcError::new(code::PARSE_ERROR, format!("malformed JSON: {e}"));
                self.respond(Value::Null, Err(err));
                return Incoming::Done;
            }
        };
        let Some(obj) = v.as_object() else {
            let err = RpcError::new(code::INVALID_REQUEST, "expected a JSON-RPC object");
            self.respond(Value::Null, Err(err));
            return Incoming::Done;
        };
        let id = obj.get("id").cloned();
        match (obj.get("method"), id) {
            (Some(Value::String(m)), Some(id)) => Incoming::Request {
                id,
                method: m.clone(),
                params: obj.get("params").cloned(),
            },
            (Some(Value::String(m)), None) => Incoming::Notification {
                method: m.clone(),
                params: obj.get("params").cloned(),
            },
            (None, Some(id)) if obj.contains_key("result") || obj.contains_key("error") => {
                let result = match obj.get("error") {
                    Some(e) => Err(RpcError::from_json(e)),
                    None => Ok(obj.get("result").cloned().unwrap_or(Value::Null)),
                };
                self.answer(&id, result);
                Incoming::Done
            }
            (_, id) => {
                let err = RpcError::new(code::INVALID_REQUEST, "not a JSON-RPC 2.0 message");
                self.respond(id.unwrap_or(Value::Null), Err(err));
                Incoming::Done
            }
        }
    }

    /// Fails every request still waiting for the editor (the connection ended).
    pub fn close_pending(&self) {
        if let Ok(mut p) = self.pending.lock() {
            p.clear();
        }
    }
}

async fn write_loop(
    mut w: Pin<Box<dyn AsyncWrite + Send>>,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(mut buf) = rx.recv().await {
        while let Ok(more) = rx.try_recv() {
            buf.extend_from_slice(&more);
        }
        if w.write_all(&buf).await.is_err() || w.flush().await.is_err() {
            return;
        }
    }
    let _ = w.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct P {
        cwd: String,
        items: Vec<Item>,
    }
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Item {
        n: u32,
    }

    #[test]
    fn invalid_params_name_the_field() {
        let e = params::<P>("m", Some(json!({"items": []}))).unwrap_err();
        assert_eq!(e.code, code::INVALID_PARAMS);
        assert_eq!(e.data, Some(json!({"field": "cwd"})));
        let e = params::<P>(
            "m",
            Some(json!({"cwd": "/", "items": [{"n": 1}, {"n": "x"}]})),
        )
        .unwrap_err();
        assert_eq!(e.data, Some(json!({"field": "items[1].n"})));
        let e = params::<P>("m", Some(json!({"cwd": "/", "items": [{}]}))).unwrap_err();
        assert_eq!(e.data, Some(json!({"field": "items[0].n"})));
        let e = params::<P>("m", None).unwrap_err();
        assert_eq!(e.data, Some(json!({"field": "params"})));
    }
}
