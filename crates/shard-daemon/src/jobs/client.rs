//! The daemon as a client of its own agents: the coordinator prompts children, steers or
//! prompts parents with completion reports, and aborts stopped runs. Commands go through
//! the core (`Shared::drive`) with a responder on this client's queue; a reader task
//! hands each `response` to whoever sent the command.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use shard_protocol::event::Response;
use shard_protocol::{Command, Event, IncomingEvent, decode_event_lenient};
use tokio::sync::oneshot;

use crate::core::Shared;
use crate::outbox::{Outbox, QueueCaps};
use crate::reply::{ProtocolError, Responder};

type Waiting = Arc<Mutex<HashMap<String, oneshot::Sender<Response>>>>;

/// One in-process client; cheap to share.
pub(crate) struct InternalClient {
    outbox: Arc<Outbox>,
    waiting: Waiting,
    /// Set when the reader ended: no response can arrive any more.
    closed: Arc<std::sync::atomic::AtomicBool>,
}

impl InternalClient {
    /// A client with its reader task.
    pub fn new(caps: QueueCaps) -> Self {
        let (outbox, mut rx) = Outbox::new(caps);
        let waiting: Waiting = Arc::default();
        let reader_outbox = Arc::clone(&outbox);
        let reader_waiting = Arc::clone(&waiting);
        let closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader_closed = Arc::clone(&closed);
        tokio::spawn(async move {
            while let Some(frame) = rx.recv().await {
                reader_outbox.taken(&frame);
                let Ok(IncomingEvent::Known(Event::Response(r))) = decode_event_lenient(&frame)
                else {
                    continue;
                };
                let Some(id) = r.id.clone() else { continue };
                let tx = reader_waiting
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&id);
                if let Some(tx) = tx {
                    let _ = tx.send(r);
                }
            }
            // The queue closed (over its caps): nobody will answer what is waiting, so
            // those receivers fail now instead of hanging, and later sends are refused.
            let mut w = reader_waiting.lock().unwrap_or_else(|p| p.into_inner());
            w.clear();
            w.shrink_to_fit();
            reader_closed.store(true, std::sync::atomic::Ordering::Release);
        });
        InternalClient {
            outbox,
            waiting,
            closed,
        }
    }

    /// Sends `command` to `agent_id`; the receiver gets the Runtime's response (or the
    /// daemon's failure when the Runtime dies first).
    pub fn send(
        &self,
        shared: &Arc<Shared>,
        agent_id: &str,
        command: Command,
    ) -> Result<oneshot::Receiver<Response>, ProtocolError> {
        let id = format!("job-client-{}", shared.next());
        let (tx, rx) = oneshot::channel();
        {
            let mut w = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            if self.closed.load(std::sync::atomic::Ordering::Acquire) {
                return Err(ProtocolError::new(
                    shard_protocol::ErrorCode::InternalError,
                    "the daemon's internal client queue closed",
                ));
            }
            w.insert(id.clone(), tx);
        }
        let responder = Responder::new(
            Arc::clone(&self.outbox),
            Some(id.clone()),
            command.type_name(),
        );
        if let Err(e) = shared.drive(agent_id, command, responder) {
            self.waiting
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&id);
            return Err(e);
        }
        Ok(rx)
    }
}
