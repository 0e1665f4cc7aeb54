//! In-process subscribers: components inside the daemon (the subagent
//! coordinator, workspace busy checks) watch an agent's events or the orchestrator
//! events through the same bounded queue and fan-out a socket client gets, without a
//! socket. A subscriber that falls too far behind is closed like a slow client.

use std::sync::Arc;

use shard_protocol::command::AttachRole;
use shard_protocol::{Event, IncomingEvent, decode_event_lenient};

use super::state::{Attachment, ConnId, Shared};
use crate::outbox::{Outbox, OutboxReceiver};
use crate::principal::Principal;
use crate::reply::ProtocolError;

/// What an in-process subscriber receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topic {
    /// Orchestrator events (`agent_spawned`, `agent_status_changed`, `agent_activity`,
    /// `agent_exited`, …), as every client gets them.
    Orchestrator,
    /// One agent's events (tagged with its `agent_id`), as an observer gets them, from
    /// now on (no `sync` handshake: the subscriber reads the registry for the past).
    Agent(String),
}

/// A live subscription; dropping it unsubscribes.
pub struct Subscription {
    shared: Arc<Shared>,
    conn: ConnId,
    outbox: Arc<Outbox>,
    rx: OutboxReceiver,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("conn", &self.conn)
            .finish()
    }
}

impl Subscription {
    /// The next event; `None` once the subscription was closed (daemon stopping, or the
    /// subscriber fell behind its queue caps).
    pub async fn recv(&mut self) -> Option<Event> {
        loop {
            let frame = tokio::select! {
                biased;
                f = self.rx.recv() => f?,
                _ = self.outbox.closed() => return None,
            };
            self.outbox.taken(&frame);
            match decode_event_lenient(&frame) {
                Ok(IncomingEvent::Known(ev)) => return Some(ev),
                Ok(IncomingEvent::Unknown { .. }) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "undecodable frame for an in-process subscriber");
                    continue;
                }
            }
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.outbox.close("unsubscribed".into());
        self.shared.unregister_conn(self.conn);
    }
}

impl Shared {
    /// Subscribes an in-process component to a topic.
    pub(crate) fn subscribe(self: &Arc<Self>, topic: Topic) -> Result<Subscription, ProtocolError> {
        let (outbox, rx) = Outbox::new(self.cfg.queue);
        let conn = self.next();
        let mut st = self.lock();
        match &topic {
            Topic::Orchestrator => {}
            Topic::Agent(id) => {
                let entry = st.agents.get_mut(id).ok_or_else(|| {
                    ProtocolError::new(shard_protocol::ErrorCode::NotFound, "no such agent")
                })?;
                entry.insert_attachment(
                    conn,
                    Attachment {
                        role: AttachRole::Observer,
                        awaiting_sync: false,
                        attach_reply: None,
                        outbox: Arc::clone(&outbox),
                    },
                );
            }
        }
        st.conns.insert(
            conn,
            super::state::ConnEntry {
                outbox: Arc::clone(&outbox),
                principal: Principal::Internal,
                broadcasts: topic == Topic::Orchestrator,
            },
        );
        drop(st);
        Ok(Subscription {
            shared: Arc::clone(self),
            conn,
            outbox,
            rx,
        })
    }
}
