//! UI requests from tools (`ask_user`): shown to the interactive client, answered by its
//! `ui_response`, or answered with null when nobody can answer.

use shard_protocol::command::HeadlessPolicy;
use shard_protocol::event::Event;
use shard_protocol::ids;
use shard_protocol::types::AgentStatus;

use super::Runtime;
use crate::ask::UiAsk;

impl Runtime {
    pub(super) async fn open_ui(&mut self, ask: UiAsk) {
        let interactive = self
            .opts
            .headless_policy
            .is_none_or(|p| p == HeadlessPolicy::Queue);
        if self.eof || !interactive {
            let _ = ask.reply.send(serde_json::Value::Null);
            return;
        }
        let mut request = ask.request;
        request.request_id = ids::new_id(ids::REQUEST);
        // A notification waits for nobody, so the agent is not waiting for the UI.
        let waits = request.kind != shard_protocol::types::UiKind::Notify;
        if waits {
            self.pending_ui.push((request.clone(), ask.reply));
            self.set_status(AgentStatus::WaitingForUi).await;
            self.emit(Event::UiRequest(request)).await;
        } else {
            // Pending until acknowledged; the tool is released once it is shown.
            self.pending_ui
                .push((request.clone(), tokio::sync::oneshot::channel().0));
            self.emit(Event::UiRequest(request)).await;
            let _ = ask.reply.send(serde_json::Value::Null);
        }
    }

    /// Resolves a pending UI request; unknown or late answers are dropped silently.
    pub(crate) async fn answer_ui(&mut self, request_id: &str, value: serde_json::Value) {
        let Some(pos) = self
            .pending_ui
            .iter()
            .position(|(r, _)| r.request_id == request_id)
        else {
            return;
        };
        let (request, reply) = self.pending_ui.remove(pos);
        let _ = reply.send(value.clone());
        self.emit(Event::UiResolved(shard_protocol::event::UiResolved {
            agent_id: None,
            request_id: request.request_id,
            value,
        }))
        .await;
        let still_waiting = self
            .pending_ui
            .iter()
            .any(|(r, _)| r.kind != shard_protocol::types::UiKind::Notify);
        if !still_waiting && self.status == AgentStatus::WaitingForUi {
            let back = if self.flight.turn.is_some() {
                AgentStatus::Streaming
            } else {
                AgentStatus::Idle
            };
            self.set_status(back).await;
        }
    }

    /// Answers every pending UI request with null (nobody is left, or the turn ended).
    pub(crate) async fn resolve_all_ui(&mut self) {
        let ids: Vec<String> = self
            .pending_ui
            .iter()
            .map(|(r, _)| r.request_id.clone())
            .collect();
        for id in ids {
            self.answer_ui(&id, serde_json::Value::Null).await;
        }
    }
}
