//! The authoritative snapshot (`sync`, ARCHITECTURE §16 items 5 and 9).

use shard_protocol::event::{Event, LiveWindow, PendingRequest, Sync};
use shard_protocol::types::{Message, Role};
use shard_session::{SessionError, SessionReader};

use super::Runtime;

/// Byte budget of `sync.live_window` (§16 item 9), and the most one history page holds.
pub const LIVE_WINDOW_BUDGET: usize = 8 * 1024 * 1024;
/// Smallest live-window budget accepted, so a page always holds a typical message.
pub const LIVE_WINDOW_MIN: usize = 4 * 1024;
/// Environment variable that lowers the live-window budget: tests use it to page through
/// a short session as the browser does through a long one (docs/daemon.md). Runtimes
/// started by the daemon inherit its environment.
pub const LIVE_WINDOW_ENV: &str = "SHARD_LIVE_WINDOW_BYTES";

/// The live-window budget from [`LIVE_WINDOW_ENV`]'s value: unset or empty is the default;
/// anything but a byte count from [`LIVE_WINDOW_MIN`] to [`LIVE_WINDOW_BUDGET`] is refused.
pub fn live_window_budget(value: Option<&str>) -> Result<usize, String> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(LIVE_WINDOW_BUDGET);
    };
    match v.parse::<usize>() {
        Ok(n) if (LIVE_WINDOW_MIN..=LIVE_WINDOW_BUDGET).contains(&n) => Ok(n),
        _ => Err(format!(
            "{LIVE_WINDOW_ENV}=`{v}`: expected a byte count from {LIVE_WINDOW_MIN} to \
             {LIVE_WINDOW_BUDGET} (unset it for the default)"
        )),
    }
}

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
        let budget = self.live_window_budget;
        let window = self
            .read_session(move |reader| reader.live_window(budget))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_window_knob_accepts_byte_counts_in_range_only() {
        assert_eq!(live_window_budget(None), Ok(LIVE_WINDOW_BUDGET));
        assert_eq!(live_window_budget(Some(" ")), Ok(LIVE_WINDOW_BUDGET));
        assert_eq!(live_window_budget(Some("8192")), Ok(8192));
        assert_eq!(live_window_budget(Some("4096")), Ok(LIVE_WINDOW_MIN));
        for bad in ["4095", "9999999999", "8k", "-1"] {
            let e = live_window_budget(Some(bad)).unwrap_err();
            assert!(e.contains(LIVE_WINDOW_ENV) && e.contains(bad), "{e}");
        }
    }
}
