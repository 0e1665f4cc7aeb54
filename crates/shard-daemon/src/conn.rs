//! One client connection: the peer check, `hello`, the read loop, `runtime.auth`, and
//! exactly one response per command. The read loop never waits on slow work: handlers
//! that need it come back as futures, spawned on the daemon's task tracker.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde::Deserialize;
use shard_protocol::event::{ErrorEvent, Hello};
use shard_protocol::orchestrator::{AuthPrincipal, RuntimeAuth, RuntimeAuthData, RuntimeAuthKind};
use shard_protocol::{CommandSpec, ErrorCode, Event, LineError, PROTOCOL_VERSION, decode_command};

use crate::commands::{self, Services};
use crate::core::Shared;
use crate::outbox::{Outbox, run_writer};
use crate::principal::{Principal, TransportKind};
use crate::reply::{Handled, ProtocolError, ReplySlot, Responder};
use crate::transport::{Connection, FrameSink};
use crate::wire::frame;

/// How long a closing connection may take to deliver what is queued for it.
const WRITER_DRAIN: Duration = Duration::from_secs(2);

/// The wire type of the Runtime claim (docs/daemon.md "Connection identity").
pub(crate) const RUNTIME_AUTH: &str = RuntimeAuthKind::TYPE;

/// Writes one fatal `error` line to a connection that is refused, then closes it.
pub(crate) async fn refuse(mut out: Box<dyn FrameSink>, code: ErrorCode, message: String) {
    let ev = Event::Error(ErrorEvent {
        agent_id: None,
        code,
        message,
        fatal: Some(true),
        kind: None,
        retry_after_ms: None,
    });
    let _ = tokio::time::timeout(WRITER_DRAIN, async {
        out.write_frame(&frame(&ev)).await?;
        out.flush().await?;
        out.shutdown().await
    })
    .await;
}

/// Counts a transport's live connections; the count drops with the connection.
pub(crate) struct ConnSlot(Arc<AtomicUsize>);

impl ConnSlot {
    /// Takes one slot of `live` (the accept loop counted it already).
    pub(crate) fn new(live: Arc<AtomicUsize>) -> Self {
        ConnSlot(live)
    }
}

impl Drop for ConnSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Serves one accepted connection until it closes or the daemon stops.
pub(crate) async fn serve(svc: Services, conn: Connection, _slot: ConnSlot) {
    let shared = Arc::clone(&svc.core);
    let Connection {
        peer,
        kind,
        principal,
        peer_pid,
        mut inbound,
        outbound,
    } = conn;
    // Who opened the connection, checked now and again whenever it answers a request.
    let checked = match (peer_pid, kind) {
        (Some(pid), _) => match crate::peer::check_peer(&shared, pid).await {
            Ok(start) => Some((pid, start)),
            Err(why) => {
                tracing::warn!(%peer, %why, "connection refused");
                refuse(outbound, ErrorCode::PermissionDenied, why).await;
                return;
            }
        },
        (None, TransportKind::UnixSocket) => {
            let why = "the connecting process cannot be identified; refused".to_string();
            tracing::warn!(%peer, %why, "connection refused");
            refuse(outbound, ErrorCode::PermissionDenied, why).await;
            return;
        }
        (None, _) => None,
    };
    let conn_id = shared.next();
    tracing::debug!(conn_id, %peer, ?principal, "client connected");
    let (outbox, rx) = Outbox::with_budget(shared.cfg.queue, &shared.queue_budget);
    let writer = tokio::spawn(run_writer(Arc::clone(&outbox), rx, outbound));
    shared.register_conn(conn_id, Arc::clone(&outbox), principal, true);
    outbox.push(frame(&Event::Hello(Hello {
        protocol_version: PROTOCOL_VERSION.into(),
        server_version: env!("CARGO_PKG_VERSION").into(),
        capabilities: kind.capabilities(),
    })));
    loop {
        let item = tokio::select! {
            _ = outbox.closed() => break,
            _ = shared.shutdown.cancelled() => break,
            item = inbound.next() => item,
        };
        match item {
            None | Some(Err(_)) => break,
            Some(Ok(Err(LineError::TooLong { limit, id }))) => {
                // The connection stays usable: the line is refused, not the client.
                outbox.push(frame(&Event::err(
                    id,
                    None,
                    ErrorCode::InvalidRequest,
                    format!(
                        "line longer than the {limit}-byte limit (docs/protocol.md) was discarded"
                    ),
                )));
            }
            Some(Ok(Ok(line))) => {
                if is_runtime_auth(&line) {
                    if !runtime_auth(&shared, conn_id, &outbox, &line) {
                        break;
                    }
                    continue;
                }
                match decode_command(&line) {
                    Ok(msg) => {
                        if let Some((pid, start)) = checked
                            && answers_a_request(&msg.command)
                            && let Err(why) = crate::peer::recheck_peer(&shared, pid, start).await
                        {
                            tracing::warn!(conn_id, %peer, %why, "an answer was refused; connection closed");
                            Responder::new(Arc::clone(&outbox), msg.id, msg.command.type_name())
                                .fail(ProtocolError::new(ErrorCode::PermissionDenied, why));
                            break;
                        }
                        let ty = msg.command.type_name();
                        let mut slot =
                            ReplySlot::new(Responder::new(Arc::clone(&outbox), msg.id, ty));
                        match commands::dispatch(&svc, conn_id, msg.command, &mut slot) {
                            Handled::Now(r) => slot.finish(r),
                            Handled::Later(work) => {
                                shared.tasks.spawn(async move {
                                    let r = work.await;
                                    slot.finish(r);
                                });
                            }
                        }
                    }
                    Err(e) => {
                        outbox.push(frame(&Event::err(
                            e.id,
                            e.type_name.as_deref(),
                            ErrorCode::InvalidRequest,
                            e.message,
                        )));
                    }
                }
            }
        }
    }
    shared.unregister_conn(conn_id);
    outbox.finish();
    let abort = writer.abort_handle();
    if tokio::time::timeout(outbox.writer_bound(WRITER_DRAIN), writer)
        .await
        .is_err()
    {
        abort.abort();
    }
    tracing::debug!(conn_id, "client disconnected");
}

/// Answers to permission and UI requests: the commands whose sender is checked again
/// when they arrive, not trusted from the connection's start.
fn answers_a_request(c: &shard_protocol::Command) -> bool {
    matches!(
        c,
        shard_protocol::Command::PermissionResponse(_) | shard_protocol::Command::UiResponse(_)
    )
}

/// True for a `runtime.auth` line (short lines that name the type only are parsed).
fn is_runtime_auth(line: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct TypeOnly {
        #[serde(rename = "type")]
        ty: String,
    }
    let needle = RUNTIME_AUTH.as_bytes();
    line.len() < 4096
        && line.windows(needle.len()).any(|w| w == needle)
        && serde_json::from_slice::<TypeOnly>(line).is_ok_and(|t| t.ty == RUNTIME_AUTH)
}

/// Handles a Runtime claim; false when the connection must close (a claim without a
/// valid token is refused).
fn runtime_auth(shared: &Shared, conn_id: u64, outbox: &Arc<Outbox>, line: &[u8]) -> bool {
    let Ok(auth) = serde_json::from_slice::<RuntimeAuth>(line) else {
        let id = shard_protocol::codec::top_level_id(line);
        Responder::new(Arc::clone(outbox), id, RUNTIME_AUTH).fail(ProtocolError::new(
            ErrorCode::InvalidRequest,
            "runtime.auth needs agent_id and token",
        ));
        return false;
    };
    let responder = Responder::new(Arc::clone(outbox), auth.id, RUNTIME_AUTH);
    if shared.runtime_token_valid(&auth.agent_id, &auth.token) {
        tracing::debug!(conn_id, agent_id = %auth.agent_id, "runtime authenticated");
        shared.set_principal(
            conn_id,
            Principal::Runtime {
                agent_id: auth.agent_id.clone(),
            },
        );
        responder.answer::<RuntimeAuthKind>(&RuntimeAuthData {
            principal: AuthPrincipal::Runtime,
            agent_id: auth.agent_id,
        });
        true
    } else {
        tracing::warn!(
            conn_id,
            "a connection claimed to be a runtime without a valid token"
        );
        responder.fail(ProtocolError::new(
            ErrorCode::PermissionDenied,
            "not a valid runtime token for that agent; connection closed",
        ));
        false
    }
}
