//! Running the tool calls of one assistant message: gate, announce, execute (cancellable,
//! with a grace period on abort), persist the result, then emit it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use shard_protocol::ErrorCode;
use shard_protocol::event::{Event, ToolCallEvent, ToolResultEvent};
use shard_protocol::types::{ContentBlock, Message, Role, ToolResultContent};
use shard_session::EntryKind;
use shard_tools::{Tool, ToolOutput};
use tokio_util::sync::CancellationToken;

use super::Runtime;
use super::partial::CallRequest;
use super::toolbox::Gate;

/// The answer to a `subagent` call on a Runtime on another host (docs/hosts.md).
const REMOTE_SUBAGENT: &str = "`subagent` is not available for agents on hosts yet: do the work yourself, or ask the user to run a delegating agent on the daemon's machine.";

/// How long aborted tools get to wind down before their tasks are dropped.
const ABORT_GRACE: Duration = Duration::from_secs(10);

impl Runtime {
    pub(super) async fn run_tools(&mut self, calls: Vec<CallRequest>) {
        let all_read_only = calls.len() > 1
            && calls.iter().all(|c| {
                self.tool(&c.name)
                    .is_some_and(|t| t.is_read_only(&Value::Object(c.args.clone())))
            });
        if all_read_only {
            self.run_concurrently(calls).await;
            return;
        }
        for call in calls {
            if self.cancelled() {
                self.record_result(&call.id, aborted_output("Not run: the turn was aborted."))
                    .await;
                continue;
            }
            let Some((tool, args)) = self.admit(&call).await else {
                continue;
            };
            let output = self.execute(tool, &call, args).await;
            self.record_result(&call.id, output).await;
        }
    }

    /// The one way a call is let through, for the sequential and the concurrent path
    /// alike: the tool exists and its arguments parsed ([`Runtime::prepare`]), then the
    /// gate allows it (asking when it must). Otherwise the call's error result is recorded
    /// here and `None` returned; `Some` is the tool and its arguments, to run.
    async fn admit(&mut self, call: &CallRequest) -> Option<(Arc<dyn Tool>, Value)> {
        let tool = self.prepare(call).await?;
        let args = Value::Object(call.args.clone());
        match self
            .gate(&call.id, &call.name, tool.is_read_only(&args), &args)
            .await
        {
            Gate::Run => Some((tool, args)),
            Gate::Refuse(reason) => {
                self.record_result(&call.id, ToolOutput::error(reason))
                    .await;
                None
            }
        }
    }

    /// Checks that the tool exists and the arguments parsed; records an error result and
    /// returns `None` otherwise.
    async fn prepare(&mut self, call: &CallRequest) -> Option<Arc<dyn Tool>> {
        let Some(tool) = self.tool(&call.name) else {
            let names = self.toolbox.tools.registry.names();
            // A Runtime on another host has no way back to the daemon's `subagent.*`.
            let msg = if call.name == "subagent" && self.opts.forwarded.is_some() {
                REMOTE_SUBAGENT.to_string()
            } else {
                format!(
                    "There is no tool named `{}`. Available tools: {}.",
                    call.name,
                    names.join(", ")
                )
            };
            self.record_result(&call.id, ToolOutput::error(msg)).await;
            return None;
        };
        if let Some(e) = &call.parse_error {
            let msg = format!("`{}` was not run: {e}.", call.name);
            self.record_result(&call.id, ToolOutput::error(msg)).await;
            return None;
        }
        Some(tool)
    }

    async fn announce(&mut self, tool: &Arc<dyn Tool>, call: &CallRequest, args: &Value) {
        let ctx = self.tool_context(CancellationToken::new());
        let render = tool.start_render(args, &ctx);
        self.emit(Event::ToolCall(ToolCallEvent {
            agent_id: None,
            tool_call_id: call.id.clone(),
            name: call.name.clone(),
            args: call.args.clone(),
            render,
            read_only: Some(tool.is_read_only(args)),
        }))
        .await;
    }

    async fn execute(
        &mut self,
        tool: Arc<dyn Tool>,
        call: &CallRequest,
        args: Value,
    ) -> ToolOutput {
        self.announce(&tool, call, &args).await;
        let Some(cancel) = self.flight.child_token() else {
            return aborted_output("Not run: the turn was aborted.");
        };
        let ctx = self.tool_context(cancel.clone());
        let mut task = tokio::spawn(async move { tool.execute(args, &ctx).await });
        let failed = |e: tokio::task::JoinError| {
            ToolOutput::error(format!("the tool failed unexpectedly: {e}"))
        };
        let stopped = |_: &Runtime| cancel.is_cancelled();
        if let Some(joined) = self.serve_while(&mut task, stopped).await {
            return joined.unwrap_or_else(failed);
        }
        // Aborted: the tool saw its token and gets a grace period to stop on its own.
        let grace = tokio::time::timeout(ABORT_GRACE, &mut task);
        match self.serve_while(grace, |_| false).await {
            Some(Ok(joined)) => joined.unwrap_or_else(failed),
            _ => {
                task.abort();
                aborted_output(
                    "Aborted by the user; the tool did not stop in time and was dropped.",
                )
            }
        }
    }

    async fn run_concurrently(&mut self, calls: Vec<CallRequest>) {
        let mut set = tokio::task::JoinSet::new();
        let mut names: HashMap<tokio::task::Id, String> = HashMap::new();
        for call in &calls {
            let Some((tool, args)) = self.admit(call).await else {
                continue;
            };
            self.announce(&tool, call, &args).await;
            let Some(cancel) = self.flight.child_token() else {
                continue;
            };
            let ctx = self.tool_context(cancel);
            let id = call.id.clone();
            let handle = set.spawn(async move { (id, tool.execute(args, &ctx).await) });
            names.insert(handle.id(), call.id.clone());
        }
        let mut deadline: Option<tokio::time::Instant> = None;
        while !set.is_empty() {
            let joined = match deadline {
                None => {
                    let next = self
                        .serve_while(set.join_next_with_id(), Runtime::cancelled)
                        .await;
                    if next.is_none() {
                        // Aborted: the tools saw their tokens and get a grace period.
                        deadline = Some(tokio::time::Instant::now() + ABORT_GRACE);
                        continue;
                    }
                    next
                }
                Some(d) => {
                    let next = tokio::time::timeout_at(d, set.join_next_with_id());
                    match self.serve_while(next, |_| false).await {
                        Some(Ok(joined)) => Some(joined),
                        _ => {
                            self.drop_late_tools(&mut set, &names).await;
                            break;
                        }
                    }
                }
            };
            match joined.flatten() {
                Some(Ok((_, (id, output)))) => self.record_result(&id, output).await,
                Some(Err(e)) => {
                    if let Some(id) = names.get(&e.id()).cloned() {
                        let out = ToolOutput::error(format!("the tool failed unexpectedly: {e}"));
                        self.record_result(&id, out).await;
                    }
                }
                None => break,
            }
        }
    }

    /// Drops the tools that outlived the abort grace period; each still gets a result.
    async fn drop_late_tools(
        &mut self,
        set: &mut tokio::task::JoinSet<(String, ToolOutput)>,
        names: &HashMap<tokio::task::Id, String>,
    ) {
        set.abort_all();
        while let Some(joined) = set.join_next_with_id().await {
            let id = match joined {
                Ok((_, (id, output))) => {
                    self.record_result(&id, output).await;
                    continue;
                }
                Err(e) => names.get(&e.id()).cloned(),
            };
            if let Some(id) = id {
                self.record_result(&id, aborted_output("Aborted by the user."))
                    .await;
            }
        }
    }

    /// Persists a tool result, then emits it.
    pub(super) async fn record_result(&mut self, call_id: &str, output: ToolOutput) {
        let block = ContentBlock::ToolResult {
            tool_call_id: call_id.to_string(),
            content: output.content.clone(),
            is_error: Some(output.is_error),
            exit_code: output.exit_code,
            duration_ms: output.duration_ms,
            render: output.render.clone(),
            images: (!output.images.is_empty()).then(|| output.images.clone()),
        };
        let message = Message {
            id: String::new(),
            role: Role::User,
            content: vec![block],
        };
        if let Err(e) = self.append_message(None, EntryKind::message(message)) {
            let msg = format!("could not persist a tool result: {e}");
            self.emit_error(ErrorCode::InternalError, msg).await;
        }
        self.emit(Event::ToolResult(Box::new(ToolResultEvent {
            agent_id: None,
            tool_call_id: call_id.to_string(),
            content: output.content,
            is_error: output.is_error,
            exit_code: output.exit_code,
            duration_ms: output.duration_ms,
            render: output.render,
            images: (!output.images.is_empty()).then_some(output.images),
        })))
        .await;
    }
}

fn aborted_output(message: &str) -> ToolOutput {
    ToolOutput {
        content: ToolResultContent::Error {
            message: message.to_string(),
        },
        is_error: true,
        exit_code: None,
        duration_ms: None,
        render: None,
        images: Vec::new(),
    }
}
