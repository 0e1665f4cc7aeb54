//! `ask_user`: the model asks the user a question through the protocol's UI requests
//! (`ui_request` / `ui_response` / `ui_resolved`). It is the Runtime's own tool because
//! it needs the Runtime's UI plumbing, which extensions use the same way.

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use shard_protocol::event::UiRequest;
use shard_protocol::types::{NotifyType, UiKind};
use shard_tools::{ToolContext, ToolOutput, TypedTool};
use tokio::sync::{mpsc, oneshot};

/// A UI request from a tool or an extension, answered through the Runtime.
#[derive(Debug)]
pub struct UiAsk {
    /// The request; the Runtime assigns its `request_id`.
    pub request: UiRequest,
    /// Receives the answer (`null` when nobody answers).
    pub reply: oneshot::Sender<Value>,
}

/// Where a [`UiHandle`]'s requests go: the Runtime's internal queue
/// (`runtime/inbox.rs` implements this for it). A trait, so that this module, which the
/// Runtime uses, never names the Runtime back.
pub(crate) trait UiQueue: Send + Sync {
    /// Queues `ask`; false when the Runtime is gone.
    fn send(&self, ask: UiAsk) -> BoxFuture<'_, bool>;
}

/// A plain channel of requests is a queue too (a Runtime-less tool list, tests).
impl UiQueue for mpsc::Sender<UiAsk> {
    fn send(&self, ask: UiAsk) -> BoxFuture<'_, bool> {
        Box::pin(async move { mpsc::Sender::send(self, ask).await.is_ok() })
    }
}

/// A cloneable handle for asking the user something.
#[derive(Clone)]
pub struct UiHandle {
    tx: Arc<dyn UiQueue>,
}

impl std::fmt::Debug for UiHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UiHandle").finish_non_exhaustive()
    }
}

impl UiHandle {
    /// A handle that feeds `queue` (the Runtime's internal queue).
    pub(crate) fn new(queue: impl UiQueue + 'static) -> Self {
        UiHandle {
            tx: Arc::new(queue),
        }
    }

    /// Shows a notification. Returns once the Runtime has emitted it (so it comes before
    /// the tool's result); nothing waits for a client's acknowledgement, which (or the end
    /// of the turn) resolves the request later.
    pub async fn notify(&self, request: UiRequest) {
        let (reply, shown) = oneshot::channel();
        if self.tx.send(UiAsk { request, reply }).await {
            let _ = shown.await;
        }
    }

    /// Asks and waits for the answer; `Value::Null` when nobody can answer.
    pub async fn ask(&self, request: UiRequest) -> Value {
        let (reply, rx) = oneshot::channel();
        if !self.tx.send(UiAsk { request, reply }).await {
            return Value::Null;
        }
        rx.await.unwrap_or(Value::Null)
    }
}

/// Which dialog `ask_user` opens (docs/protocol.md §9 `ui_request.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[schemars(description = "")]
#[serde(rename_all = "snake_case")]
pub enum AskKind {
    /// Pick one of `options`.
    Select,
    /// A yes/no question.
    Confirm,
    /// One line of free text.
    Input,
    /// Longer text in the user's editor (a commit message, a description).
    Editor,
    /// Tell the user something; no answer is awaited.
    Notify,
}

/// Severity of a `notify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[schemars(description = "")]
#[serde(rename_all = "snake_case")]
pub enum AskLevel {
    /// Information.
    Info,
    /// A warning.
    Warning,
    /// An error.
    Error,
}

/// Arguments of `ask_user`. Most fields carry no schema description, and the enums none of
/// their own: the tool's description says what the model needs, once.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AskArgs {
    /// The question (or, for `notify`, the message), in one or two sentences.
    #[schemars(description = "Question or `notify` message; one or two sentences.")]
    pub question: String,
    /// The dialog: `select` (give `options`), `confirm` (yes/no), `input` (one line),
    /// `editor` (multi-line text), `notify` (no answer awaited). Default: `select` when
    /// `options` are given, else `input`.
    #[schemars(description = "")]
    #[serde(default)]
    pub kind: Option<AskKind>,
    /// Answers to choose from (`select`).
    #[schemars(description = "")]
    #[serde(default)]
    pub options: Option<Vec<String>>,
    /// Text to start from (`input`, `editor`).
    #[schemars(description = "")]
    #[serde(default)]
    pub prefill: Option<String>,
    /// Severity of a `notify` (default `info`).
    #[schemars(description = "")]
    #[serde(default)]
    pub level: Option<AskLevel>,
}

/// The `ask_user` tool.
pub struct AskUser {
    ui: UiHandle,
}

impl AskUser {
    /// The tool, asking through `ui`.
    pub fn new(ui: UiHandle) -> Self {
        AskUser { ui }
    }
}

/// The protocol request for `args`, or why the arguments do not make one.
fn request_for(args: AskArgs) -> Result<UiRequest, String> {
    let options = args.options.filter(|o| !o.is_empty());
    let kind = match (args.kind, &options) {
        (Some(k), _) => k,
        (None, Some(_)) => AskKind::Select,
        (None, None) => AskKind::Input,
    };
    if kind == AskKind::Select && options.is_none() {
        return Err(
            "`select` needs `options`: give the answers to choose from, or use \
                    kind `input` for a free-text answer"
                .into(),
        );
    }
    let (ui_kind, title) = match kind {
        AskKind::Select => (UiKind::Select, "The agent asks"),
        AskKind::Confirm => (UiKind::Confirm, "The agent asks"),
        AskKind::Input => (UiKind::Input, "The agent asks"),
        AskKind::Editor => (UiKind::Editor, "The agent asks for text"),
        AskKind::Notify => (UiKind::Notify, "The agent says"),
    };
    let notify_type = (kind == AskKind::Notify).then_some(match args.level {
        Some(AskLevel::Warning) => NotifyType::Warning,
        Some(AskLevel::Error) => NotifyType::Error,
        Some(AskLevel::Info) | None => NotifyType::Info,
    });
    let with_text = matches!(kind, AskKind::Input | AskKind::Editor);
    Ok(UiRequest {
        agent_id: None,
        request_id: String::new(),
        kind: ui_kind,
        title: Some(title.into()),
        message: Some(args.question),
        options: if kind == AskKind::Select {
            options
        } else {
            None
        },
        placeholder: None,
        prefill: if with_text { args.prefill } else { None },
        notify_type,
    })
}

impl TypedTool for AskUser {
    type Args = AskArgs;
    const NAME: &'static str = "ask_user";
    const DESCRIPTION: &'static str = "Ask the user and wait for the answer (only when you \
        cannot proceed without their decision), or tell them something. `kind`: `select` from \
        `options`, `confirm` yes/no, `input` one line, `editor` long text, `notify` (no wait).";
    const READ_ONLY: bool = true;

    fn run<'a>(&'a self, args: AskArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let request = match request_for(args) {
                Ok(r) => r,
                Err(e) => return ToolOutput::error(e),
            };
            if request.kind == UiKind::Notify {
                self.ui.notify(request).await;
                return ToolOutput::text("The user was notified.");
            }
            let answer = tokio::select! {
                a = self.ui.ask(request) => a,
                _ = ctx.cancel.cancelled() => return ToolOutput::error("Aborted before the user answered."),
            };
            match answer {
                Value::String(s) => ToolOutput::text(format!("The user answered: {s}")),
                Value::Array(items) => {
                    let parts: Vec<String> = items
                        .iter()
                        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                        .collect();
                    ToolOutput::text(format!("The user answered: {}", parts.join(", ")))
                }
                Value::Null => ToolOutput::text(
                    "Nobody answered (no user is attached). Proceed with your best judgement \
                     and say what you assumed.",
                ),
                other => ToolOutput::text(format!("The user answered: {other}")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn args(v: serde_json::Value) -> AskArgs {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn every_kind_makes_its_request() {
        let r = request_for(args(
            serde_json::json!({"question": "which?", "options": ["a", "b"]}),
        ))
        .unwrap();
        assert_eq!(r.kind, UiKind::Select);
        assert_eq!(r.options.unwrap(), vec!["a", "b"]);
        let r = request_for(args(
            serde_json::json!({"question": "go?", "kind": "confirm"}),
        ))
        .unwrap();
        assert_eq!(r.kind, UiKind::Confirm);
        let r = request_for(args(serde_json::json!({"question": "name?"}))).unwrap();
        assert_eq!(r.kind, UiKind::Input);
        let r = request_for(args(
            serde_json::json!({"question": "msg?", "kind": "editor", "prefill": "fix: "}),
        ))
        .unwrap();
        assert_eq!(
            (r.kind, r.prefill.as_deref()),
            (UiKind::Editor, Some("fix: "))
        );
        let r = request_for(args(
            serde_json::json!({"question": "done", "kind": "notify", "level": "warning"}),
        ))
        .unwrap();
        assert_eq!(
            (r.kind, r.notify_type),
            (UiKind::Notify, Some(NotifyType::Warning))
        );
        assert!(request_for(args(serde_json::json!({"question": "x", "kind": "select"}))).is_err());
    }
}
