//! Loading the model's context once per Runtime, and answering tool calls a previous run
//! left without a result (kill -9, a forced kill, a crash mid-tool): each gets a persisted
//! "interrupted" error result, placed before the next user message, so no request this
//! session produces can be refused by a provider for an unanswered `tool_use`.

use shard_protocol::ErrorCode;
use shard_protocol::types::{ContentBlock, Message, Role};
use shard_session::repair::{self, is_synthesized};
use shard_session::{EntryKind, MessageEntry, streaming};

use super::Runtime;

impl Runtime {
    /// Reads the context if it is not in memory yet, persisting an "interrupted" result
    /// for every unanswered tool call it finds. `false` (after an error event) when the
    /// session cannot be read.
    pub(super) async fn ensure_context(&mut self) -> bool {
        if self.conv.context.is_some() {
            return true;
        }
        let messages = match self
            .conv
            .read_session(|reader| reader.context_messages())
            .await
        {
            Ok(m) => m,
            Err(e) => {
                let msg = format!("could not read the session: {e}");
                self.emit_error(ErrorCode::SessionCorrupt, msg).await;
                return false;
            }
        };
        let mut context = Vec::with_capacity(messages.len());
        for mut message in messages {
            if is_synthesized(&message) {
                match self
                    .conv
                    .session
                    .append(EntryKind::message(message.clone()))
                {
                    Ok(entry) => message.id = entry.id,
                    Err(e) => {
                        tracing::error!(error = %e, "could not persist an interrupted tool result");
                    }
                }
            }
            context.push(std::sync::Arc::new(message));
        }
        self.conv.context = Some(context);
        true
    }

    /// The first `sync` of this Runtime. A previous run that died mid-tool (kill -9, a
    /// forced kill) left calls without a result at the end of the transcript: each gets its
    /// persisted "interrupted" result now, so clients never show a call as running forever
    /// and the next request is valid. Only the live window is inspected (bounded work at
    /// start); older unanswered calls are paired when the context is read.
    pub(super) async fn first_sync(&mut self) -> shard_protocol::Event {
        let mut window = self.conv.read_live_window().await;
        self.recover_streamed(&mut window);
        for id in repair::unanswered_calls(&window.messages) {
            let message = Message {
                id: String::new(),
                role: Role::User,
                content: vec![repair::interrupted_result(&id)],
            };
            self.append_result(&mut window, message);
        }
        self.sync_from(window)
    }

    /// Persists a made-up tool result at start and shows it in the first `sync`.
    fn append_result(&mut self, window: &mut shard_protocol::event::LiveWindow, m: Message) {
        match self.conv.session.append(EntryKind::message(m)) {
            Ok(entry) => {
                if let EntryKind::Message(m) = entry.kind {
                    window.messages.push(m.message);
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "could not persist an interrupted tool result");
            }
        }
    }

    /// A previous run killed while a message streamed left its deltas in the streaming
    /// journal: what clients saw becomes an interrupted assistant message (unless the
    /// message reached the transcript before the kill), its calls answered, so the next
    /// request carries it validly. Then the journal goes.
    fn recover_streamed(&mut self, window: &mut shard_protocol::event::LiveWindow) {
        // A session still being created is brand new: it has no journal (and maybe no
        // folder yet).
        if self.conv.session.being_created() {
            return;
        }
        let dir = self.conv.session.dir().to_path_buf();
        let recovered = match streaming::read_journal(&dir) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the streaming journal");
                return;
            }
        };
        if let Some(r) = recovered
            && !window.messages.iter().any(|m| m.id == r.message.id)
        {
            let entry = EntryKind::Message(MessageEntry {
                message: r.message.clone(),
                aborted: true,
                stop_reason: Some(streaming::INTERRUPTED_STOP.into()),
                usage: None,
                model: None,
            });
            match self
                .conv
                .session
                .append_with_id(r.message.id.clone(), entry)
            {
                Ok(_) => window.messages.push(r.message),
                Err(e) => {
                    // Kept for the next start rather than lost.
                    tracing::error!(error = %e, "could not persist the interrupted message");
                    return;
                }
            }
            for result in r.results {
                self.append_result(window, result);
            }
        }
        if let Err(e) = streaming::discard(&dir) {
            tracing::warn!(error = %e, "could not remove the streaming journal");
        }
    }

    /// Records an "interrupted" result for each call of an assistant message whose turn
    /// stopped before the calls could run (abort or a failed stream): the message keeps
    /// its calls, and each is answered, so the history stays valid for every API.
    pub(super) async fn answer_unrun_calls(&mut self, calls: &[String]) {
        for id in calls {
            let block = repair::interrupted_result(id);
            let message = Message {
                id: String::new(),
                role: Role::User,
                content: vec![block],
            };
            if let Err(e) = self.append_message(None, EntryKind::message(message)) {
                let msg = format!("could not persist a tool result: {e}");
                self.emit_error(ErrorCode::InternalError, msg).await;
            }
            let ContentBlock::ToolResult { content, .. } = repair::interrupted_result(id) else {
                continue;
            };
            self.emit(shard_protocol::Event::ToolResult(Box::new(
                shard_protocol::event::ToolResultEvent {
                    agent_id: None,
                    tool_call_id: id.clone(),
                    content,
                    is_error: true,
                    exit_code: None,
                    duration_ms: None,
                    render: None,
                    images: None,
                },
            )))
            .await;
        }
    }
}
