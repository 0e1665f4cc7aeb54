//! The turn loop (ARCHITECTURE §4.2): model call → tool calls → model call … until the
//! model stops calling tools, the turn is aborted, or a call fails. Every step is
//! persisted before its event is emitted.

use futures::StreamExt;
use shard_ai::{ErrorKind, ModelRequest, ProviderError, StopReason, StreamEvent};
use shard_protocol::event::{
    ErrorEvent, Event, MessageComplete, MessageDelta, StatusEvent, TurnEnd, TurnStart, UsageEvent,
    UserMessage,
};
use shard_protocol::ids;
use shard_protocol::types::{AgentStatus, Message, Role, Usage};
use shard_protocol::{ErrorCode, ProviderErrorKind};
use shard_session::{EntryKind, MessageEntry};
use tokio_util::sync::CancellationToken;

use super::partial::PartialMessage;
use super::tool_calls::CallRequest;
use super::{Runtime, UserInput};
use crate::hooks::{HookOutcome, ModelCallView, SharedContext};
use shard_protocol::responses::SteerOutcome;

/// Model calls one turn may make before it is stopped as runaway.
const MAX_ITERATIONS: u32 = 500;

/// The running turn.
pub(crate) struct TurnState {
    pub(crate) cancel: CancellationToken,
    /// The id `turn_start` announced; a strict steer names it.
    pub(crate) turn_id: String,
    /// Mirrors `cancel` (only `request_abort` cancels it): read once per streamed event,
    /// where the token's lock would cost more than the event.
    aborted: bool,
    usage: Usage,
    /// A `context_window_exceeded` refusal was answered by compacting once already.
    overflow_retried: bool,
    /// How the last model call stopped (`turn_end.stop_reason`).
    last_stop: Option<String>,
}

impl TurnState {
    /// True once the turn was aborted.
    pub(crate) fn is_aborted(&self) -> bool {
        self.aborted
    }
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
    /// The model call failed (always `PROVIDER_ERROR` on the wire).
    Failed(Failure),
}

/// A failed model call as the `error` event reports it.
struct Failure {
    message: String,
    kind: Option<ProviderErrorKind>,
    retry_after_ms: Option<u64>,
    /// The provider said the context does not fit its window.
    overflow: bool,
}

impl Runtime {
    /// No turn runs, or the running one was aborted.
    pub(super) fn cancelled(&self) -> bool {
        self.turn.as_ref().is_none_or(|t| t.aborted)
    }

    /// A turn runs and was aborted (a permission asked outside a turn is not aborted).
    pub(super) fn turn_cancelled(&self) -> bool {
        self.turn.as_ref().is_some_and(|t| t.aborted)
    }

    /// Cancels the provider stream and every running tool of the current turn.
    pub(crate) fn request_abort(&mut self) {
        if let Some(t) = &mut self.turn {
            t.aborted = true;
            t.cancel.cancel();
        }
        if let Some(c) = &self.compaction_cancel {
            c.cancel();
        }
        // Strict steers stay, to be answered `conflict` when the turn ends.
        self.steers.retain(|s| s.strict.is_some());
        self.follow_ups.clear();
    }

    pub(crate) async fn run_turn(&mut self, input: UserInput) {
        let turn_id = ids::new_id(ids::TURN);
        self.turn = Some(TurnState {
            cancel: CancellationToken::new(),
            turn_id: turn_id.clone(),
            aborted: false,
            usage: Usage::default(),
            overflow_retried: false,
            last_stop: None,
        });
        self.set_status(AgentStatus::Streaming).await;
        self.emit(Event::TurnStart(TurnStart {
            agent_id: None,
            turn_id: turn_id.clone(),
        }))
        .await;
        let mut failed = !self.ensure_context().await || !self.append_user(&input).await;
        if !failed {
            self.wait_for_mcp().await;
        }
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
        let interrupted = self.turn.as_ref().is_some_and(|t| t.aborted);
        if interrupted && let Err(e) = self.append_message(None, EntryKind::interruption()) {
            tracing::error!(error = %e, "could not record the interruption");
        }
        if let Err(e) = self.session.sync_data() {
            tracing::error!(error = %e, "could not sync the transcript");
        }
        if let Err(e) = self.session.write_meta() {
            tracing::error!(error = %e, "could not write session meta");
        }
        self.resolve_all_ui().await;
        self.drop_strict_steers(&turn_id).await;
        let (usage, stop_reason) = match self.turn.take() {
            Some(t) if t.aborted => (Some(t.usage), Some("aborted".to_string())),
            Some(t) if failed => (Some(t.usage), Some("error".to_string())),
            Some(t) => (Some(t.usage), t.last_stop),
            None => (None, None),
        };
        self.emit(Event::TurnEnd(TurnEnd {
            agent_id: None,
            turn_id,
            usage,
            interrupted: interrupted.then_some(true),
            stop_reason,
        }))
        .await;
        self.set_status(AgentStatus::Idle).await;
        self.compact_between_turns().await;
    }

    pub(super) async fn emit_error(&mut self, code: ErrorCode, message: String) {
        self.emit(Event::Error(ErrorEvent {
            agent_id: None,
            code,
            message,
            fatal: Some(false),
            kind: None,
            retry_after_ms: None,
        }))
        .await;
    }

    /// Persists a user message, then shows it to every attached client (`user_message`),
    /// so a prompt typed in one client appears in the others before the answer.
    async fn append_user(&mut self, input: &UserInput) -> bool {
        let message_id = ids::new_id(ids::ENTRY);
        let message = Message {
            id: message_id.clone(),
            role: Role::User,
            content: Runtime::user_blocks(input),
        };
        match self.append_message(
            Some(message_id.clone()),
            EntryKind::message(message.clone()),
        ) {
            Ok(_) => {
                self.emit(Event::UserMessage(Box::new(UserMessage {
                    agent_id: None,
                    message_id,
                    message,
                })))
                .await;
                true
            }
            Err(e) => {
                let msg = format!("could not persist the prompt: {e}");
                self.emit_error(ErrorCode::InternalError, msg).await;
                false
            }
        }
    }

    /// Steers are delivered after the current tool calls, before the next model call
    /// (never into an aborted turn). A strict steer is answered `injected` once its
    /// message is persisted.
    async fn deliver_steers(&mut self) -> bool {
        if self.turn_cancelled() {
            return true;
        }
        let turn_id = self.turn.as_ref().map(|t| t.turn_id.clone());
        let mut pending = std::mem::take(&mut self.steers).into_iter();
        while let Some(steer) = pending.next() {
            if !self.append_user(&steer.input).await {
                // Not taken: strict ones are answered `conflict` at the turn's end.
                let rest = std::iter::once(steer).chain(pending);
                self.steers.extend(rest.filter(|s| s.strict.is_some()));
                return false;
            }
            if let Some(id) = steer.strict {
                self.answer_steer(id, SteerOutcome::Injected, turn_id.clone())
                    .await;
            }
        }
        true
    }

    /// The turn ends: strict steers it did not take are answered `conflict` and dropped,
    /// so none becomes part of a later turn.
    async fn drop_strict_steers(&mut self, turn_id: &str) {
        let (strict, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.steers)
            .into_iter()
            .partition(|s| s.strict.is_some());
        self.steers = rest;
        for steer in strict {
            if let Some(id) = steer.strict {
                self.answer_steer(id, SteerOutcome::Conflict, Some(turn_id.to_string()))
                    .await;
            }
        }
    }

    /// The system prompt of the active mode, built once per mode.
    fn system_prompt(&mut self) -> String {
        let mode = self.modes.active();
        match &self.system {
            Some((name, prompt)) if *name == mode.name => prompt.clone(),
            _ => {
                let prompt = crate::prompt::system_prompt(
                    self.opts.system_prompt.as_deref(),
                    &self.opts.cwd,
                    mode,
                    &self.instructions,
                );
                self.system = Some((mode.name.clone(), prompt.clone()));
                prompt
            }
        }
    }

    /// The context for the next call, after the model-call hook saw it (and perhaps
    /// replaced it). `None` after an error event, or when the turn was aborted meanwhile.
    async fn context_for_call(&mut self, model: &shard_ai::ModelInfo) -> Option<SharedContext> {
        if !self.ensure_context().await {
            return None;
        }
        let messages = self.context.clone().unwrap_or_default();
        let Some(hook) = self.hook.clone() else {
            return Some(messages);
        };
        let view = ModelCallView {
            messages,
            model: model.clone(),
            last_usage: self.last_usage.clone(),
        };
        let decided = self
            .serve_while(hook.before_model_call(view), Runtime::cancelled)
            .await?;
        match decided {
            Ok(HookOutcome::Keep) => self.context.clone(),
            Ok(HookOutcome::Replace(messages)) => {
                self.context = Some(messages.clone());
                Some(messages)
            }
            Err(e) => {
                self.emit_error(ErrorCode::InternalError, e).await;
                None
            }
        }
    }

    async fn model_call(&mut self) -> Call {
        let active = match self.models.active() {
            Ok(a) => a.clone(),
            Err(msg) => {
                self.emit_error(ErrorCode::ProviderError, msg).await;
                return Call::Stop;
            }
        };
        if !self.compact_if_full().await {
            return Call::Stop;
        }
        let Some(messages) = self.context_for_call(&active.info).await else {
            return Call::Stop;
        };
        let request = ModelRequest {
            model: active.info.model.clone(),
            system: self.system_prompt(),
            messages,
            tools: self.tools.specs(),
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
        let mut first = true;
        let outcome = loop {
            let Some(ev) = self.serve_while(stream.next(), Runtime::cancelled).await else {
                break StreamOutcome::Aborted;
            };
            if std::mem::take(&mut first) {
                // The sandbox's zygote starts once the model is answering (a no-op after
                // the first time): its fork and set-up never delay the request itself,
                // and the rest of the answer hides them. An agent that is only created
                // costs no process, and a burst of creates starts no zygotes
                // (docs/sandbox.md).
                self.sandbox.prewarm();
            }
            match ev {
                None => {
                    break StreamOutcome::Failed(Failure {
                        message: "the model's stream ended before it finished".into(),
                        kind: Some(ProviderErrorKind::Network),
                        retry_after_ms: None,
                        overflow: false,
                    });
                }
                Some(Err(ProviderError::Cancelled)) => break StreamOutcome::Aborted,
                Some(Err(e)) => {
                    break StreamOutcome::Failed(Failure {
                        message: e.to_string(),
                        kind: e.wire_kind(),
                        retry_after_ms: e.kind().and_then(|k| k.retry_after_ms()),
                        overflow: e.kind() == Some(ErrorKind::ContextWindowExceeded),
                    });
                }
                Some(Ok(StreamEvent::Done { stop_reason })) => {
                    break StreamOutcome::Done(stop_reason);
                }
                Some(Ok(StreamEvent::Usage(u))) => usage = Some(u),
                Some(Ok(StreamEvent::Retrying {
                    attempt,
                    delay_ms,
                    reason,
                })) => {
                    let detail =
                        format!("retrying (attempt {attempt}, in {delay_ms} ms): {reason}");
                    self.emit(Event::Status(StatusEvent {
                        agent_id: None,
                        status: self.status,
                        detail: Some(detail),
                    }))
                    .await;
                }
                Some(Ok(ev)) => {
                    if let Some(delta) = self.apply_delta(ev) {
                        self.emit(Event::MessageDelta(delta)).await;
                    }
                }
            }
        };
        drop(stream);
        let Some(partial) = self.streaming.take() else {
            return Call::Stop;
        };
        let (stop_reason, error) = match outcome {
            StreamOutcome::Done(r) => (Some(r), None),
            StreamOutcome::Aborted => (None, None),
            StreamOutcome::Failed(f) => (None, Some(f)),
        };
        let (blocks, calls) = partial.finish();
        let stop_text = match (&stop_reason, &error) {
            (Some(r), _) => stop_reason_text(r),
            (None, Some(_)) => "error".to_string(),
            (None, None) => "aborted".to_string(),
        };
        if let Some(t) = &mut self.turn {
            t.last_stop = Some(stop_text.clone());
        }
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
        if stop_reason.is_none() && !calls.is_empty() {
            // Stopped mid-stream: the calls never run, but each is answered.
            let ids: Vec<String> = calls.iter().map(|c| c.id.clone()).collect();
            self.answer_unrun_calls(&ids).await;
        }
        if let Some(mut u) = usage {
            u.cost = self.models.cost(&u);
            u.model = Some(active.info.id.clone());
            u.context_tokens =
                Some(u.input + u.output + u.cache_read.unwrap_or(0) + u.cache_write.unwrap_or(0));
            self.last_usage = Some(u.clone());
            let len = self.context.as_ref().map_or(0, Vec::len);
            self.usage_mark = u.context_tokens.map(|t| (t, len));
            if let Some(t) = &mut self.turn {
                add_usage(&mut t.usage, &u);
            }
            self.emit(Event::Usage(UsageEvent {
                agent_id: None,
                usage: u,
            }))
            .await;
        }
        if let Some(failure) = error {
            let retry = failure.overflow
                && self.config.compaction.enabled
                && self.turn.as_ref().is_some_and(|t| !t.overflow_retried);
            if retry {
                if let Some(t) = &mut self.turn {
                    t.overflow_retried = true;
                }
                if self
                    .compact_in_turn("the provider refused the context as too long")
                    .await
                {
                    return Call::Again;
                }
            }
            self.emit(Event::Error(ErrorEvent {
                agent_id: None,
                code: ErrorCode::ProviderError,
                message: failure.message,
                fatal: Some(false),
                kind: failure.kind,
                retry_after_ms: failure.retry_after_ms,
            }))
            .await;
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
        self.streaming.as_mut()?.apply(ev)
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
