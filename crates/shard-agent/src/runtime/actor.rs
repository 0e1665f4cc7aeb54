//! The actor's main loop: serve inputs and internal messages, start the next turn or the
//! queued compaction, and finish persisting at end of input.

use shard_protocol::ErrorCode;
use shard_protocol::event::{Event, Hello};
use shard_protocol::types::AgentStatus;

use super::Runtime;
use super::inbox::{Input, Internal, Next};
use super::toolbox::Answer;

impl Runtime {
    /// Serves until end of input, then finishes persisting. Emits `hello` and `sync`
    /// first.
    pub async fn run(mut self) {
        let hello = Event::Hello(Hello {
            protocol_version: shard_protocol::PROTOCOL_VERSION.to_string(),
            server_version: env!("CARGO_PKG_VERSION").to_string(),
            capabilities: self.capabilities(),
        });
        self.emit(hello).await;
        let sync = self.first_sync().await;
        self.emit(sync).await;
        // In the background: a slow server never delays `hello`, `sync` or a prompt.
        self.start_mcp().await;
        if let Some(torn) = self.conv.session.torn() {
            // Reported, never fatal: a crash mid-write left a partial last line.
            let name = torn
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let message = format!(
                "the transcript's last line was incomplete (a crash mid-write): {} bytes were \
                 set aside in {name}; everything before it was restored",
                torn.len
            );
            self.emit(Event::Error(shard_protocol::event::ErrorEvent {
                agent_id: None,
                code: ErrorCode::SessionCorrupt,
                message,
                fatal: Some(false),
                kind: None,
                retry_after_ms: None,
            }))
            .await;
        }
        loop {
            if let Some(request) = self.flight.compact_next.take() {
                self.run_manual_compaction(request).await;
                continue;
            }
            let idle = self.status == AgentStatus::Idle;
            if let Some(input) = self.flight.next_turn_input(idle) {
                self.run_turn(input).await;
                continue;
            }
            if self.eof {
                break;
            }
            let next = self.next_input().await;
            self.handle_next(next).await;
        }
        if let Some(mcp) = self.toolbox.mcp.take() {
            mcp.stop().await;
        }
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.conv.persist();
        // Also removes the runtime state file, if tool groups made one.
        self.toolbox.processes.kill_all();
    }

    /// Waits for a transport input or an internal message (a tool's UI request, a tool
    /// change). After end of input only internal messages arrive (UI requests are then
    /// answered with null at once).
    pub(crate) async fn next_input(&mut self) -> Next {
        let eof = self.eof;
        // Internal messages first: a tool change sent before a command applies before it.
        tokio::select! {
            biased;
            Some(internal) = self.internal.recv() => Next::Internal(internal),
            input = self.inputs.recv(), if !eof => Next::Input(input),
            else => std::future::pending().await,
        }
    }

    pub(crate) async fn handle_next(&mut self, next: Next) {
        match next {
            Next::Input(input) => {
                self.handle_input(input).await;
                if self.eof {
                    self.resolve_all_ui().await;
                }
            }
            Next::Internal(Internal::Ui(ask)) => self.open_ui(ask).await,
            // No client holds a tool list (PROTOCOL has none on the wire), so there is
            // nothing to notify; docs/decisions.md, "Runtime seams".
            Next::Internal(Internal::Tools(change)) => self.toolbox.tools.apply(change),
            Next::Internal(Internal::Mcp(update)) => self.apply_mcp(update).await,
        }
    }

    async fn handle_input(&mut self, input: Option<Input>) {
        match input {
            None | Some(Input::Eof) => self.on_eof(),
            Some(Input::Invalid(err)) => {
                let ev = Event::err(
                    err.id.clone(),
                    err.type_name.as_deref(),
                    ErrorCode::InvalidRequest,
                    err.message,
                );
                self.emit(ev).await;
            }
            Some(Input::Command(msg)) => self.handle_command(msg).await,
        }
    }

    pub(super) fn on_eof(&mut self) {
        self.eof = true;
        // Under a daemon, end of input means the daemon died: nobody is left to watch,
        // so the turn stops now (no more provider calls or tools unattended) and the
        // Runtime exits. A direct Runtime lets its turn finish.
        if self.opts.agent_id.is_some() {
            self.flight.start_next = None;
            if self.flight.turn.is_some() {
                self.request_abort();
            }
        }
        // Nobody can answer any more: pending requests resolve through the headless path.
        if self.toolbox.pending.is_some() && self.toolbox.pending_answer.is_none() {
            self.toolbox.pending_answer = Some(Answer::no_responder());
        }
    }
}
