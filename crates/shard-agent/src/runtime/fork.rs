//! `session_op fork` (docs/protocol.md §9.2): a between-turn operation that writes a new session
//! under this one's `forks/` folder; this session is only read.

use shard_protocol::command::{SessionOpArgs, kind};
use shard_protocol::responses::{ForkData, SessionOpData};
use shard_protocol::{ErrorCode, Event};
use shard_session::SessionError;

use super::Runtime;

impl Runtime {
    /// Validates `from_entry_id`, refuses while turn work is queued or running (decided
    /// right after validation, so a fork at an unknown entry during a turn is `CONFLICT`),
    /// then writes the fork off the executor.
    pub(crate) async fn fork(
        &mut self,
        id: Option<String>,
        name: &str,
        args: Option<SessionOpArgs>,
    ) {
        let from = args.and_then(|a| a.from_entry_id).filter(|s| !s.is_empty());
        let Some(from) = from else {
            let msg = "fork needs args.from_entry_id, a non-empty entry id";
            self.emit(Event::err(id, Some(name), ErrorCode::InvalidRequest, msg))
                .await;
            return;
        };
        if self.flight.work_pending() {
            let msg = "fork runs between turns: a turn is queued or running";
            self.emit(Event::err(id, Some(name), ErrorCode::Conflict, msg))
                .await;
            return;
        }
        if let Err(e) = self.conv.session.sync_data() {
            tracing::warn!(error = %e, "could not sync the transcript before a fork");
        }
        let reader = match self.conv.session.reader() {
            Ok(r) => r,
            Err(e) => {
                let msg = format!("cannot read the session: {e}");
                self.emit(Event::err(id, Some(name), ErrorCode::InternalError, msg))
                    .await;
                return;
            }
        };
        let store = self.conv.store.clone();
        let done = tokio::task::spawn_blocking(move || store.fork(&reader, &from)).await;
        let event = match done {
            Ok(Ok(f)) => {
                let data = ForkData {
                    fork_id: f.fork_id,
                    session_id: f.session_id,
                    head_entry_id: f.head_entry_id,
                };
                Event::answer::<kind::SessionOp>(id, &SessionOpData::Fork(data))
            }
            Ok(Err(SessionError::NotFound(what))) => {
                Event::err(id, Some(name), ErrorCode::NotFound, format!("no {what}"))
            }
            Ok(Err(e)) => Event::err(
                id,
                Some(name),
                ErrorCode::InternalError,
                format!("the fork could not be written: {e}"),
            ),
            Err(e) => Event::err(
                id,
                Some(name),
                ErrorCode::InternalError,
                format!("the fork could not be written: {e}"),
            ),
        };
        self.emit(event).await;
    }
}
