//! The turn loop (docs/architecture.md#turns-and-queues): model call → tool calls → model call … until the
//! model stops calling tools, the turn is aborted, or a call fails. Every step is
//! persisted before its event is emitted.

use shard_protocol::ErrorCode;
use shard_protocol::event::{ErrorEvent, Event, TurnEnd, TurnStart, UserMessage};
use shard_protocol::ids;
use shard_protocol::types::{AgentStatus, Message, Role};
use shard_session::EntryKind;

use super::Runtime;
use super::flight::{TurnState, UserInput};
use super::model_call::Call;
use shard_protocol::responses::SteerOutcome;

/// Model calls one turn may make before it is stopped as runaway.
const MAX_ITERATIONS: u32 = 500;

impl Runtime {
    /// No turn runs, or the running one was aborted.
    pub(super) fn cancelled(&self) -> bool {
        self.flight.cancelled()
    }

    /// A turn runs and was aborted (a permission asked outside a turn is not aborted).
    pub(super) fn turn_cancelled(&self) -> bool {
        self.flight.turn_cancelled()
    }

    /// Cancels the provider stream and every running tool of the current turn.
    pub(crate) fn request_abort(&mut self) {
        self.flight.request_abort();
    }

    pub(crate) async fn run_turn(&mut self, input: UserInput) {
        let turn_id = ids::new_id(ids::TURN);
        self.flight.turn = Some(TurnState::new(turn_id.clone()));
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
                    if self.flight.steers.is_empty() {
                        break;
                    }
                    failed = !self.deliver_steers().await;
                }
            }
        }
        // A session created off the start path is written by now, or this says loudly
        // that nothing of it was saved (the prompt included).
        if let Err(e) = self.conv.session.created() {
            let msg = format!("could not persist the conversation: {e}");
            self.emit_error(ErrorCode::InternalError, msg).await;
            failed = true;
        }
        let interrupted = self.flight.turn_cancelled();
        if interrupted && let Err(e) = self.append_message(None, EntryKind::interruption()) {
            tracing::error!(error = %e, "could not record the interruption");
        }
        self.conv.persist();
        self.resolve_all_ui().await;
        self.drop_strict_steers(&turn_id).await;
        let (usage, stop_reason) = match self.flight.turn.take() {
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
        let turn_id = self.flight.turn_id();
        let mut pending = std::mem::take(&mut self.flight.steers).into_iter();
        while let Some(steer) = pending.next() {
            if !self.append_user(&steer.input).await {
                // Not taken: strict ones are answered `conflict` at the turn's end.
                let rest = std::iter::once(steer).chain(pending);
                self.flight
                    .steers
                    .extend(rest.filter(|s| s.strict.is_some()));
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
        let (strict, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.flight.steers)
            .into_iter()
            .partition(|s| s.strict.is_some());
        self.flight.steers = rest;
        for steer in strict {
            if let Some(id) = steer.strict {
                self.answer_steer(id, SteerOutcome::Conflict, Some(turn_id.to_string()))
                    .await;
            }
        }
    }

    /// The system prompt of the active mode, built once per mode.
    pub(super) fn system_prompt(&mut self) -> String {
        let base = self.opts.system_prompt.as_deref();
        self.conv
            .system_prompt(base, &self.opts.cwd, self.choice.modes.active())
    }
}
