//! The authoritative snapshot (`sync`, ARCHITECTURE §16 items 5 and 9).

use shard_protocol::event::{Event, LiveWindow, PendingRequest, Sync};
use shard_protocol::types::{Message, Role};
use shard_session::{SessionError, SessionReader};

use super::Runtime;

/// Byte budget of `sync.live_window` (§16 item 9).
pub const LIVE_WINDOW_BUDGET: usize = 8 * 1024 * 1024;

impl Runtime {
    /// Runs a read of the transcript on a blocking thread (the actor waits, so ordering
    /// holds, while the executor keeps serving the transport).
    pub(crate) async fn read_session<T: Send + 'static>(
        &self,
        read: impl FnOnce(SessionReader) -> Result<T, SessionError> + Send + 'static,
    ) -> Result<T, String> {
        let reader = self.session.reader().map_err(|e| e.to_string())?;
        match tokio::task::spawn_blocking(move || read(reader)).await {
            Ok(result) => result.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// A `sync` reflecting everything emitted so far, including a message still being
    /// streamed (so later deltas apply to it) and pending requests.
    pub(crate) async fn build_sync(&self) -> Event {
        let window = self.read_live_window().await;
        self.sync_from(window)
    }

    /// The persisted part of the live window, read on a blocking thread.
    pub(crate) async fn read_live_window(&self) -> LiveWindow {
        let window = self
            .read_session(|reader| reader.live_window(LIVE_WINDOW_BUDGET))
            .await;
        window.unwrap_or_else(|e| {
            tracing::error!(error = %e, "could not read the live window");
            LiveWindow::default()
        })
    }

    /// A `sync` around an already read window.
    pub(crate) fn sync_from(&self, mut live_window: LiveWindow) -> Event {
        if let Some(partial) = &self.streaming {
            live_window.messages.push(Message {
                id: partial.message_id.clone(),
                role: Role::Assistant,
                content: partial.snapshot_blocks(),
            });
        }
        let pending_requests = self
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
            mode: self.modes.active().name.clone(),
            capabilities: Some(self.capabilities()),
            runtime_epoch: None,
            session_id: Some(self.session.id().to_string()),
            live_window,
            pending_requests,
        }))
    }
}
