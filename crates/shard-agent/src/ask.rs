//! `ask_user`: the model asks the user a question through the protocol's UI requests
//! (`ui_request` / `ui_response` / `ui_resolved`). It is the Runtime's own tool because
//! it needs the Runtime's UI plumbing, which extensions use the same way.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use shard_protocol::event::UiRequest;
use shard_protocol::types::UiKind;
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

/// A cloneable handle for asking the user something.
#[derive(Debug, Clone)]
pub struct UiHandle {
    tx: mpsc::Sender<UiAsk>,
}

impl UiHandle {
    /// A handle that feeds the Runtime's UI queue.
    pub fn new(tx: mpsc::Sender<UiAsk>) -> Self {
        UiHandle { tx }
    }

    /// Asks and waits for the answer; `Value::Null` when nobody can answer.
    pub async fn ask(&self, request: UiRequest) -> Value {
        let (reply, rx) = oneshot::channel();
        if self.tx.send(UiAsk { request, reply }).await.is_err() {
            return Value::Null;
        }
        rx.await.unwrap_or(Value::Null)
    }
}

/// Arguments of `ask_user`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AskArgs {
    /// The question, in one or two sentences.
    pub question: String,
    /// Answers to choose from; omit for a free-text answer.
    #[serde(default)]
    pub options: Option<Vec<String>>,
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

impl TypedTool for AskUser {
    type Args = AskArgs;
    const NAME: &'static str = "ask_user";
    const DESCRIPTION: &'static str = "Ask the user a question and wait for the answer. Use it \
        only when you cannot proceed without a decision. Give `options` for a multiple-choice \
        question.";
    const READ_ONLY: bool = true;

    fn run<'a>(&'a self, args: AskArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let options = args.options.filter(|o| !o.is_empty());
            let request = UiRequest {
                agent_id: None,
                request_id: String::new(),
                kind: if options.is_some() {
                    UiKind::Select
                } else {
                    UiKind::Input
                },
                title: Some("The agent asks".into()),
                message: Some(args.question),
                options,
                placeholder: None,
                prefill: None,
                notify_type: None,
            };
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
