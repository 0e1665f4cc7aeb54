//! One model call of a turn, in its steps: prepare the request (the active model, an
//! emergency compaction, the context), run the model-call hook on the context, stream the
//! answer (serving commands meanwhile), record it (persist, `message_complete`, usage),
//! and decide what the turn does next.

use futures::StreamExt;
use shard_ai::{ErrorKind, ModelRequest, ProviderError, StopReason, StreamEvent};
use shard_protocol::event::{
    ErrorEvent, Event, MessageComplete, MessageDelta, StatusEvent, UsageEvent,
};
use shard_protocol::ids;
use shard_protocol::types::{Message, Role, Usage};
use shard_protocol::{ErrorCode, ProviderErrorKind};
use shard_session::{EntryKind, MessageEntry};

use super::Runtime;
use super::partial::{CallRequest, PartialMessage};
use crate::hooks::{HookOutcome, ModelCallView, SharedContext};
use crate::models::ActiveModel;

/// What the turn does after a model call.
pub(super) enum Call {
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

/// What one stream produced.
struct Streamed {
    message_id: String,
    partial: PartialMessage,
    usage: Option<Usage>,
    outcome: StreamOutcome,
}

/// A recorded answer: how it stopped, or why it failed, and the calls it holds.
struct Recorded {
    stop_reason: Option<StopReason>,
    error: Option<Failure>,
    calls: Vec<CallRequest>,
}

impl Runtime {
    /// One model call: prepare, stream, record, then decide the turn's next step.
    pub(super) async fn model_call(&mut self) -> Call {
        let Some((active, request)) = self.prepare_request().await else {
            return Call::Stop;
        };
        let Some(streamed) = self.stream_answer(&active, request).await else {
            return Call::Stop;
        };
        let Some(recorded) = self.record_answer(&active, streamed).await else {
            return Call::Stop;
        };
        self.next_step(recorded).await
    }

    /// The active model and the request to send it; `None` after an error event, or when
    /// the turn was aborted meanwhile.
    async fn prepare_request(&mut self) -> Option<(ActiveModel, ModelRequest)> {
        let active = match self.choice.models.active() {
            Ok(a) => a.clone(),
            Err(msg) => {
                self.emit_error(ErrorCode::ProviderError, msg).await;
                return None;
            }
        };
        if !self.compact_if_full().await {
            return None;
        }
        let messages = self.context_for_call(&active.info).await?;
        let request = ModelRequest {
            model: active.info.model.clone(),
            system: self.system_prompt(),
            messages,
            tools: self.toolbox.tools.specs(),
            max_output_tokens: active.info.max_output.filter(|m| *m > 0),
            reasoning_effort: self.choice.models.reasoning().map(str::to_string),
        };
        Some((active, request))
    }

    /// The context for the next call, after the model-call hook saw it (and perhaps
    /// replaced it). `None` after an error event, or when the turn was aborted meanwhile.
    async fn context_for_call(&mut self, model: &shard_ai::ModelInfo) -> Option<SharedContext> {
        if !self.ensure_context().await {
            return None;
        }
        let messages = self.conv.context.clone().unwrap_or_default();
        let Some(hook) = self.choice.hook.clone() else {
            return Some(messages);
        };
        let view = ModelCallView {
            messages,
            model: model.clone(),
            last_usage: self.conv.last_usage.clone(),
        };
        let decided = self
            .serve_while(hook.before_model_call(view), Runtime::cancelled)
            .await?;
        match decided {
            Ok(HookOutcome::Keep) => self.conv.context.clone(),
            Ok(HookOutcome::Replace(messages)) => {
                self.conv.context = Some(messages.clone());
                Some(messages)
            }
            Err(e) => {
                self.emit_error(ErrorCode::InternalError, e).await;
                None
            }
        }
    }

    /// Streams the answer, folding it into the message being streamed and emitting its
    /// deltas, while serving commands (an abort ends it). `None` when no turn runs.
    async fn stream_answer(
        &mut self,
        active: &ActiveModel,
        request: ModelRequest,
    ) -> Option<Streamed> {
        let cancel = self.flight.child_token()?;
        let mut stream = active.provider.stream(request, cancel);
        let message_id = ids::new_id(ids::ENTRY);
        self.flight.streaming = Some(PartialMessage::new(message_id.clone()));
        let mut usage: Option<Usage> = None;
        let mut first = true;
        let outcome = loop {
            // Argument bytes held back go out when the model goes quiet for a moment.
            let holding = self
                .flight
                .streaming
                .as_ref()
                .is_some_and(PartialMessage::holds_args);
            let next = async {
                if holding {
                    tokio::time::timeout(super::partial::ARGS_DELTA_MAX_AGE, stream.next())
                        .await
                        .map_err(|_| ())
                } else {
                    Ok(stream.next().await)
                }
            };
            let Some(next) = self.serve_while(next, Runtime::cancelled).await else {
                break StreamOutcome::Aborted;
            };
            let Ok(ev) = next else {
                let held = self
                    .flight
                    .streaming
                    .as_mut()
                    .map(PartialMessage::flush_args)
                    .unwrap_or_default();
                for delta in held {
                    self.emit(Event::MessageDelta(delta)).await;
                }
                continue;
            };
            if std::mem::take(&mut first) {
                // The sandbox's zygote starts once the model is answering (a no-op after
                // the first time): its fork and set-up never delay the request itself,
                // and the rest of the answer hides them. An agent that is only created
                // costs no process, and a burst of creates starts no zygotes
                // (docs/sandbox.md).
                self.toolbox.sandbox.prewarm();
                // Likewise the exit's sync helper of `shard run`: started while the model
                // answers, not on the way out (docs/sessions.md).
                self.conv.arm_exit();
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
        let held = self
            .flight
            .streaming
            .as_mut()
            .map(|p| p.flush_args())
            .unwrap_or_default();
        for delta in held {
            self.emit(Event::MessageDelta(delta)).await;
        }
        let partial = self.flight.streaming.take()?;
        Some(Streamed {
            message_id,
            partial,
            usage,
            outcome,
        })
    }

    /// Persists the answer, then emits `message_complete`, an "interrupted" result for
    /// each call a stopped stream left, and the usage. `None` after an error event (the
    /// answer could not be persisted).
    async fn record_answer(
        &mut self,
        active: &ActiveModel,
        streamed: Streamed,
    ) -> Option<Recorded> {
        let Streamed {
            message_id,
            partial,
            usage,
            outcome,
        } = streamed;
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
        if let Some(t) = &mut self.flight.turn {
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
                return None;
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
            u.cost = self.choice.models.cost(&u);
            u.model = Some(active.info.id.clone());
            u.context_tokens =
                Some(u.input + u.output + u.cache_read.unwrap_or(0) + u.cache_write.unwrap_or(0));
            self.conv.record_usage(&u);
            if let Some(t) = &mut self.flight.turn {
                add_usage(&mut t.usage, &u);
            }
            self.emit(Event::Usage(UsageEvent {
                agent_id: None,
                usage: u,
            }))
            .await;
        }
        Some(Recorded {
            stop_reason,
            error,
            calls,
        })
    }

    /// What the turn does after a recorded answer: run its calls, call again (a paused
    /// turn, or once after compacting a context the provider refused as too long), stop
    /// on a failure, or finish.
    async fn next_step(&mut self, recorded: Recorded) -> Call {
        let Recorded {
            stop_reason,
            error,
            calls,
        } = recorded;
        if let Some(failure) = error {
            let retry = failure.overflow
                && self.config.compaction.enabled
                && self
                    .flight
                    .turn
                    .as_ref()
                    .is_some_and(|t| !t.overflow_retried);
            if retry {
                if let Some(t) = &mut self.flight.turn {
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
        self.flight.streaming.as_mut()?.apply(ev)
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
