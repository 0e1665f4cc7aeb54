//! The turn loop (ARCHITECTURE §4.2): model call → tool calls → model call … until the
//! model stops calling tools, the turn is aborted, or a call fails. Every step is
//! persisted before its event is emitted.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Map, Value};
use shard_ai::{ModelRequest, ProviderError, StopReason, StreamEvent, ToolSpec};
use shard_protocol::ErrorCode;
use shard_protocol::event::{
    DeltaKind, ErrorEvent, Event, MessageComplete, MessageDelta, StatusEvent, ToolCallEvent,
    ToolResultEvent, TurnEnd, TurnStart, UsageEvent,
};
use shard_protocol::ids;
use shard_protocol::types::{AgentStatus, ContentBlock, Message, Role, ToolResultContent, Usage};
use shard_session::{EntryKind, MessageEntry};
use shard_tools::{Tool, ToolOutput};
use tokio_util::sync::CancellationToken;

use super::permissions::Gate;
use super::{Runtime, UserInput};

/// Model calls one turn may make before it is stopped as runaway.
const MAX_ITERATIONS: u32 = 500;
/// How long aborted tools get to wind down before their tasks are dropped.
const ABORT_GRACE: Duration = Duration::from_secs(10);

/// The running turn.
pub(crate) struct TurnState {
    pub(crate) cancel: CancellationToken,
    usage: Usage,
}

/// The assistant message being streamed, kept so `sync` can include it.
pub(crate) struct PartialMessage {
    pub(crate) message_id: String,
    blocks: Vec<PartialBlock>,
    by_provider_index: HashMap<u32, usize>,
}

enum PartialBlock {
    Text(String),
    Thinking {
        text: String,
        signature: Option<String>,
    },
    ToolCall {
        id: String,
        name: String,
        args_json: String,
    },
}

/// A tool call the model asked for.
struct CallRequest {
    id: String,
    name: String,
    args: Map<String, Value>,
    parse_error: Option<String>,
}

enum Call {
    Stop,
    Again,
    Tools(Vec<CallRequest>),
    Finished,
}

enum StreamOutcome {
    Done(StopReason),
    Aborted,
    Failed(String),
}

impl PartialMessage {
    fn new(message_id: String) -> Self {
        PartialMessage {
            message_id,
            blocks: Vec::new(),
            by_provider_index: HashMap::new(),
        }
    }

    /// The local block index for a provider index, opening a block when new.
    fn slot(&mut self, index: u32, make: impl FnOnce() -> PartialBlock) -> usize {
        if let Some(&i) = self.by_provider_index.get(&index) {
            return i;
        }
        self.blocks.push(make());
        let i = self.blocks.len() - 1;
        self.by_provider_index.insert(index, i);
        i
    }

    /// Blocks as they stand, for `sync`. Tool calls whose arguments are incomplete show
    /// the arguments parsed so far as an empty object.
    pub(crate) fn snapshot_blocks(&self) -> Vec<ContentBlock> {
        self.blocks
            .iter()
            .map(|b| match b {
                PartialBlock::Text(t) => ContentBlock::Text { text: t.clone() },
                PartialBlock::Thinking { text, signature } => ContentBlock::Thinking {
                    text: text.clone(),
                    signature: signature.clone(),
                },
                PartialBlock::ToolCall {
                    id,
                    name,
                    args_json,
                } => ContentBlock::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    args: parse_args(args_json).unwrap_or_default(),
                },
            })
            .collect()
    }

    /// The final blocks and the calls to run. With `keep_calls` false (abort, failure)
    /// unfinished tool calls are dropped: they never ran and must not reach the model
    /// without a result.
    fn finish(self, keep_calls: bool) -> (Vec<ContentBlock>, Vec<CallRequest>) {
        let mut blocks = Vec::new();
        let mut calls = Vec::new();
        for b in self.blocks {
            match b {
                PartialBlock::Text(text) => {
                    if !text.is_empty() {
                        blocks.push(ContentBlock::Text { text });
                    }
                }
                PartialBlock::Thinking { text, signature } => {
                    blocks.push(ContentBlock::Thinking { text, signature });
                }
                PartialBlock::ToolCall {
                    id,
                    name,
                    args_json,
                } if keep_calls => {
                    let (args, parse_error) = match parse_args(&args_json) {
                        Ok(a) => (a, None),
                        Err(e) => (Map::new(), Some(e)),
                    };
                    blocks.push(ContentBlock::ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        args: args.clone(),
                    });
                    calls.push(CallRequest {
                        id,
                        name,
                        args,
                        parse_error,
                    });
                }
                PartialBlock::ToolCall { .. } => {}
            }
        }
        (blocks, calls)
    }
}

fn parse_args(json: &str) -> Result<Map<String, Value>, String> {
    if json.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(format!("the arguments must be a JSON object, got {other}")),
        Err(e) => Err(format!("the arguments are not valid JSON ({e})")),
    }
}

impl Runtime {
    fn cancelled(&self) -> bool {
        self.turn.as_ref().is_none_or(|t| t.cancel.is_cancelled())
    }

    /// Cancels the provider stream and every running tool of the current turn.
    pub(crate) fn request_abort(&mut self) {
        if let Some(t) = &self.turn {
            t.cancel.cancel();
        }
        self.steers.clear();
        self.follow_ups.clear();
    }

    pub(crate) async fn run_turn(&mut self, input: UserInput) {
        let turn_id = ids::new_id(ids::TURN);
        self.turn = Some(TurnState {
            cancel: CancellationToken::new(),
            usage: Usage::default(),
        });
        self.set_status(AgentStatus::Streaming).await;
        self.emit(Event::TurnStart(TurnStart {
            agent_id: None,
            turn_id: turn_id.clone(),
        }))
        .await;
        let mut failed = !self.append_user(&input).await;
        let mut iterations = 0;
        while !failed && !self.cancelled() {
            iterations += 1;
            if iterations > MAX_ITERATIONS {
                let msg = format!("the turn stopped after {MAX_ITERATIONS} model calls");
                self.emit_error(ErrorCode::InternalError, msg).await;
                break;
            }
            match self.model_call().await {
                Call::Stop => failed = true,
                Call::Again => {}
                Call::Tools(calls) => {
                    self.run_tools(calls).await;
                    failed = !self.deliver_steers().await;
                }
                Call::Finished => {
                    if self.steers.is_empty() {
                        break;
                    }
                    failed = !self.deliver_steers().await;
                }
            }
        }
        if let Err(e) = self.session.sync_data() {
            tracing::error!(error = %e, "could not sync the transcript");
        }
        if let Err(e) = self.session.write_meta() {
            tracing::error!(error = %e, "could not write session meta");
        }
        self.resolve_all_ui().await;
        let usage = self.turn.take().map(|t| t.usage);
        self.emit(Event::TurnEnd(TurnEnd {
            agent_id: None,
            turn_id,
            usage,
        }))
        .await;
        self.set_status(AgentStatus::Idle).await;
    }

    async fn emit_error(&mut self, code: ErrorCode, message: String) {
        self.emit(Event::Error(ErrorEvent {
            agent_id: None,
            code,
            message,
            fatal: Some(false),
        }))
        .await;
    }

    async fn append_user(&mut self, input: &UserInput) -> bool {
        let message = Message {
            id: String::new(),
            role: Role::User,
            content: Runtime::user_blocks(input),
        };
        match self.append_message(None, EntryKind::message(message)) {
            Ok(_) => true,
            Err(e) => {
                let msg = format!("could not persist the prompt: {e}");
                self.emit_error(ErrorCode::InternalError, msg).await;
                false
            }
        }
    }

    /// Steers are delivered after the current tool calls, before the next model call.
    async fn deliver_steers(&mut self) -> bool {
        for input in std::mem::take(&mut self.steers) {
            if !self.append_user(&input).await {
                return false;
            }
        }
        true
    }

    fn tool_specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .map(|t| ToolSpec {
                name: t.name().to_string(),
                description: t.description().to_string(),
                input_schema: t.input_schema(),
            })
            .collect()
    }

    async fn model_call(&mut self) -> Call {
        let active = match self.models.active() {
            Ok(a) => a.clone(),
            Err(msg) => {
                self.emit_error(ErrorCode::ProviderError, msg).await;
                return Call::Stop;
            }
        };
        if self.context.is_none() {
            let loaded = match self.session.reader() {
                Ok(reader) => tokio::task::spawn_blocking(move || reader.context_messages())
                    .await
                    .map_err(|e| e.to_string())
                    .and_then(|r| r.map_err(|e| e.to_string())),
                Err(e) => Err(e.to_string()),
            };
            match loaded {
                Ok(m) => self.context = Some(m),
                Err(e) => {
                    let msg = format!("could not read the session: {e}");
                    self.emit_error(ErrorCode::SessionCorrupt, msg).await;
                    return Call::Stop;
                }
            }
        }
        let messages = self.context.clone().unwrap_or_default();
        let request = ModelRequest {
            model: active.info.model.clone(),
            system: crate::prompt::system_prompt(
                self.opts.system_prompt.as_deref(),
                &self.opts.cwd,
                self.modes.active(),
                &self.instructions,
            ),
            messages,
            tools: self.tool_specs(),
            max_output_tokens: active.info.max_output.filter(|m| *m > 0),
            reasoning_effort: self.models.reasoning().map(str::to_string),
        };
        let cancel = match &self.turn {
            Some(t) => t.cancel.child_token(),
            None => return Call::Stop,
        };
        let mut stream = active.provider.stream(request, cancel);
        let message_id = ids::new_id(ids::ENTRY);
        self.streaming = Some(PartialMessage::new(message_id.clone()));
        let mut usage: Option<Usage> = None;
        let outcome = loop {
            tokio::select! {
                biased;
                next = self.next_input() => {
                    self.handle_next(next).await;
                    if self.cancelled() {
                        break StreamOutcome::Aborted;
                    }
                }
                ev = stream.next() => match ev {
                    None => break StreamOutcome::Failed(
                        "the model's stream ended before it finished".into()),
                    Some(Err(ProviderError::Cancelled)) => break StreamOutcome::Aborted,
                    Some(Err(e)) => break StreamOutcome::Failed(e.to_string()),
                    Some(Ok(StreamEvent::Done { stop_reason })) => {
                        break StreamOutcome::Done(stop_reason)
                    }
                    Some(Ok(StreamEvent::Usage(u))) => usage = Some(u),
                    Some(Ok(StreamEvent::Retrying { attempt, delay_ms, reason })) => {
                        let detail = format!("retrying (attempt {attempt}, in {delay_ms} ms): {reason}");
                        self.emit(Event::Status(StatusEvent {
                            agent_id: None,
                            status: self.status,
                            detail: Some(detail),
                        })).await;
                    }
                    Some(Ok(ev)) => {
                        if let Some(delta) = self.apply_delta(ev) {
                            self.emit(Event::MessageDelta(delta)).await;
                        }
                    }
                }
            }
        };
        drop(stream);
        let Some(partial) = self.streaming.take() else {
            return Call::Stop;
        };
        let (keep_calls, stop_reason, error) = match outcome {
            StreamOutcome::Done(r) => (true, Some(r), None),
            StreamOutcome::Aborted => (false, None, None),
            StreamOutcome::Failed(e) => (false, None, Some(e)),
        };
        let (blocks, calls) = partial.finish(keep_calls);
        let stop_text = match (&stop_reason, &error) {
            (Some(r), _) => stop_reason_text(r),
            (None, Some(_)) => "error".to_string(),
            (None, None) => "aborted".to_string(),
        };
        let message = Message {
            id: message_id.clone(),
            role: Role::Assistant,
            content: blocks,
        };
        if !message.content.is_empty() {
            let entry = EntryKind::Message(MessageEntry {
                message: message.clone(),
                aborted: stop_reason.is_none(),
                stop_reason: Some(stop_text),
                usage: usage.clone(),
                model: Some(active.info.id.clone()),
            });
            if let Err(e) = self.append_message(Some(message_id.clone()), entry) {
                let msg = format!("could not persist the assistant message: {e}");
                self.emit_error(ErrorCode::InternalError, msg).await;
                return Call::Stop;
            }
        }
        self.emit(Event::MessageComplete(Box::new(MessageComplete {
            agent_id: None,
            message_id,
            message,
        })))
        .await;
        if let Some(mut u) = usage {
            u.cost = self.models.cost(&u);
            u.model = Some(active.info.id.clone());
            u.context_tokens =
                Some(u.input + u.output + u.cache_read.unwrap_or(0) + u.cache_write.unwrap_or(0));
            if let Some(t) = &mut self.turn {
                add_usage(&mut t.usage, &u);
            }
            self.emit(Event::Usage(UsageEvent {
                agent_id: None,
                usage: u,
            }))
            .await;
        }
        if let Some(e) = error {
            self.emit_error(ErrorCode::ProviderError, e).await;
            return Call::Stop;
        }
        match stop_reason {
            None => Call::Stop,
            Some(_) if !calls.is_empty() => Call::Tools(calls),
            Some(StopReason::PauseTurn) => Call::Again,
            Some(StopReason::MaxTokens) => {
                let msg = "the model hit its output limit before finishing".to_string();
                self.emit_error(ErrorCode::ProviderError, msg).await;
                Call::Finished
            }
            Some(_) => Call::Finished,
        }
    }

    fn apply_delta(&mut self, ev: StreamEvent) -> Option<MessageDelta> {
        let partial = self.streaming.as_mut()?;
        let message_id = partial.message_id.clone();
        let delta = |block_index: usize, kind: DeltaKind| MessageDelta {
            agent_id: None,
            message_id: message_id.clone(),
            block_index: block_index as u32,
            kind,
            text_delta: None,
            tool_call_id: None,
            name: None,
            args_delta: None,
        };
        match ev {
            StreamEvent::TextDelta { index, text } => {
                let i = partial.slot(index, || PartialBlock::Text(String::new()));
                if let PartialBlock::Text(t) = &mut partial.blocks[i] {
                    t.push_str(&text);
                }
                Some(MessageDelta {
                    text_delta: Some(text),
                    ..delta(i, DeltaKind::Text)
                })
            }
            StreamEvent::ThinkingDelta { index, text } => {
                let i = partial.slot(index, || PartialBlock::Thinking {
                    text: String::new(),
                    signature: None,
                });
                if let PartialBlock::Thinking { text: t, .. } = &mut partial.blocks[i] {
                    t.push_str(&text);
                }
                Some(MessageDelta {
                    text_delta: Some(text),
                    ..delta(i, DeltaKind::Thinking)
                })
            }
            StreamEvent::ThinkingSignature { index, signature } => {
                let i = partial.slot(index, || PartialBlock::Thinking {
                    text: String::new(),
                    signature: None,
                });
                if let PartialBlock::Thinking { signature: s, .. } = &mut partial.blocks[i] {
                    *s = Some(signature);
                }
                None
            }
            StreamEvent::ToolCallStart { index, id, name } => {
                let i = partial.slot(index, || PartialBlock::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    args_json: String::new(),
                });
                Some(MessageDelta {
                    tool_call_id: Some(id),
                    name: Some(name),
                    ..delta(i, DeltaKind::ToolCall)
                })
            }
            StreamEvent::ToolCallArgsDelta { index, json } => {
                let i = partial.slot(index, || PartialBlock::ToolCall {
                    id: String::new(),
                    name: String::new(),
                    args_json: String::new(),
                });
                if let PartialBlock::ToolCall { args_json, .. } = &mut partial.blocks[i] {
                    args_json.push_str(&json);
                }
                Some(MessageDelta {
                    args_delta: Some(json),
                    ..delta(i, DeltaKind::ToolCall)
                })
            }
            _ => None,
        }
    }

    async fn run_tools(&mut self, calls: Vec<CallRequest>) {
        let all_read_only = calls.len() > 1
            && calls
                .iter()
                .all(|c| self.tool(&c.name).is_some_and(|t| t.is_read_only()));
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
            let Some(tool) = self.prepare(&call).await else {
                continue;
            };
            let args = Value::Object(call.args.clone());
            match self.gate(&call.name, tool.is_read_only(), &args).await {
                Gate::Refuse(reason) => {
                    self.record_result(&call.id, ToolOutput::error(reason))
                        .await;
                }
                Gate::Run => {
                    let output = self.execute(tool, &call, args).await;
                    self.record_result(&call.id, output).await;
                }
            }
        }
    }

    /// Checks that the tool exists and the arguments parsed; records an error result and
    /// returns `None` otherwise.
    async fn prepare(&mut self, call: &CallRequest) -> Option<Arc<dyn Tool>> {
        let Some(tool) = self.tool(&call.name) else {
            let names: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
            let msg = format!(
                "There is no tool named `{}`. Available tools: {}.",
                call.name,
                names.join(", ")
            );
            self.record_result(&call.id, ToolOutput::error(msg)).await;
            return None;
        };
        if let Some(e) = &call.parse_error {
            let msg = format!(
                "`{}` was not run: {e}. Send the arguments as one JSON object.",
                call.name
            );
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
            read_only: Some(tool.is_read_only()),
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
        let Some(cancel) = self.turn.as_ref().map(|t| t.cancel.child_token()) else {
            return aborted_output("Not run: the turn was aborted.");
        };
        let ctx = self.tool_context(cancel.clone());
        let mut task = tokio::spawn(async move { tool.execute(args, &ctx).await });
        let mut deadline: Option<tokio::time::Instant> = None;
        loop {
            let grace = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                joined = &mut task => {
                    return joined.unwrap_or_else(|e| ToolOutput::error(format!("the tool failed unexpectedly: {e}")));
                }
                next = self.next_input() => {
                    self.handle_next(next).await;
                    if cancel.is_cancelled() && deadline.is_none() {
                        deadline = Some(tokio::time::Instant::now() + ABORT_GRACE);
                    }
                }
                _ = grace => {
                    task.abort();
                    return aborted_output("Aborted by the user; the tool did not stop in time and was dropped.");
                }
            }
        }
    }

    async fn run_concurrently(&mut self, calls: Vec<CallRequest>) {
        let mut set = tokio::task::JoinSet::new();
        let mut names: HashMap<tokio::task::Id, String> = HashMap::new();
        for call in &calls {
            let Some(tool) = self.prepare(call).await else {
                continue;
            };
            let args = Value::Object(call.args.clone());
            match self.gate(&call.name, tool.is_read_only(), &args).await {
                Gate::Refuse(reason) => {
                    self.record_result(&call.id, ToolOutput::error(reason))
                        .await;
                }
                Gate::Run => {
                    self.announce(&tool, call, &args).await;
                    let Some(cancel) = self.turn.as_ref().map(|t| t.cancel.child_token()) else {
                        continue;
                    };
                    let ctx = self.tool_context(cancel);
                    let id = call.id.clone();
                    let handle = set.spawn(async move { (id, tool.execute(args, &ctx).await) });
                    names.insert(handle.id(), call.id.clone());
                }
            }
        }
        let mut deadline: Option<tokio::time::Instant> = None;
        while !set.is_empty() {
            let grace = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                joined = set.join_next_with_id() => match joined {
                    Some(Ok((_, (id, output)))) => self.record_result(&id, output).await,
                    Some(Err(e)) => {
                        if let Some(id) = names.get(&e.id()).cloned() {
                            let out = ToolOutput::error(format!("the tool failed unexpectedly: {e}"));
                            self.record_result(&id, out).await;
                        }
                    }
                    None => break,
                },
                next = self.next_input() => {
                    self.handle_next(next).await;
                    if self.cancelled() && deadline.is_none() {
                        deadline = Some(tokio::time::Instant::now() + ABORT_GRACE);
                    }
                }
                _ = grace => {
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
                            self.record_result(&id, aborted_output("Aborted by the user.")).await;
                        }
                    }
                }
            }
        }
    }

    /// Persists a tool result, then emits it.
    async fn record_result(&mut self, call_id: &str, output: ToolOutput) {
        let block = ContentBlock::ToolResult {
            tool_call_id: call_id.to_string(),
            content: output.content.clone(),
            is_error: Some(output.is_error),
            exit_code: output.exit_code,
            duration_ms: output.duration_ms,
            render: output.render.clone(),
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
    }
}

fn add_usage(total: &mut Usage, u: &Usage) {
    total.input += u.input;
    total.output += u.output;
    let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    total.cache_read = sum(total.cache_read, u.cache_read);
    total.cache_write = sum(total.cache_write, u.cache_write);
    total.cost = match (total.cost, u.cost) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    };
    total.context_tokens = u.context_tokens.or(total.context_tokens);
    total.model = u.model.clone().or(total.model.take());
}

fn stop_reason_text(r: &StopReason) -> String {
    match r {
        StopReason::EndTurn => "end_turn".into(),
        StopReason::ToolUse => "tool_use".into(),
        StopReason::MaxTokens => "max_tokens".into(),
        StopReason::Refusal => "refusal".into(),
        StopReason::PauseTurn => "pause_turn".into(),
        StopReason::Other(s) => s.clone(),
    }
}
