//! The authoritative snapshot (`sync`, docs/protocol.md §16 items 5 and 9).

use shard_protocol::event::{Event, LiveWindow, PendingRequest, Sync};
use shard_protocol::types::{Message, Role};

use super::Runtime;

impl Runtime {
    /// A `sync` reflecting everything emitted so far, including a message still being
    /// streamed (so later deltas apply to it) and pending requests.
    pub(crate) async fn build_sync(&self) -> Event {
        let window = self.conv.read_live_window().await;
        self.sync_from(window)
    }

    /// A `sync` around an already read window.
    pub(crate) fn sync_from(&self, mut live_window: LiveWindow) -> Event {
        if let Some(partial) = &self.flight.streaming {
            live_window.messages.push(Message {
                id: partial.message_id.clone(),
                role: Role::Assistant,
                content: partial.snapshot_blocks(),
            });
        }
        let pending_requests = self
            .toolbox
            .pending
            .iter()
            .map(|p| PendingRequest::Permission(Box::new(p.request.clone())))
            .chain(
                self.pending_ui
                    .iter()
                    .map(|(r, _)| PendingRequest::Ui(r.clone())),
            )
            .collect();
        Event::Sync(Box::new(Sync {
            agent_id: None,
            status: self.status,
            mode: self.choice.modes.active().name.clone(),
            capabilities: Some(self.capabilities()),
            runtime_epoch: None,
            session_id: Some(self.conv.session.id().to_string()),
            live_window,
            pending_requests,
        }))
    }
}
