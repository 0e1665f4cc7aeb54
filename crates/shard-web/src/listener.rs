//! The door's own accept loop, so a crowd of held connections cannot shut it: every
//! connection must send its request head within [`HEADER_READ_TIMEOUT`], goes after
//! [`IDLE_TIMEOUT`] with no byte either way (or a request busy longer than
//! [`REQUEST_TIMEOUT`]), and connections not yet upgraded to a WebSocket are capped per
//! peer address ([`MAX_PER_PEER`]) and in total ([`MAX_PENDING`]). At a cap the oldest
//! connection with no request in flight is closed to make room (a half-sent head, or a
//! body still arriving, counts as none: `body.rs` reads bodies under their own deadline),
//! so a newcomer — enrollment, a browser — still gets in while an
//! attacker's crowd turns over; when every slot is busy the newcomer is closed instead.
//! An upgraded WebSocket leaves this count: the daemon's connection cap governs it.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// A request head (line and headers) must arrive within this, or the connection closes.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection with no byte in either direction this long closes.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// A request whose handler runs longer than this closes (its body was read before, under
/// `body::BODY_READ_TIMEOUT`).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections not yet upgraded from one peer address.
pub const MAX_PER_PEER: usize = 128;
/// Connections not yet upgraded, in total.
pub const MAX_PENDING: usize = 512;
/// How often a connection looks at its clocks.
const TICK: Duration = Duration::from_millis(500);

/// One live connection's entry: who, its close switch, and whether a request is in
/// flight (`busy_since` in milliseconds since the registry's epoch, 0 when idle).
struct Slot {
    peer: IpAddr,
    close: CancellationToken,
    busy_since: Arc<AtomicU64>,
}

/// A request's mark in the registry, put in its extensions: `body.rs` starts it once the
/// body is in, so until then the connection may be closed to make room.
pub(crate) struct InFlight {
    busy_since: Arc<AtomicU64>,
    registry: Arc<Registry>,
}

impl InFlight {
    /// The handler starts: from now on the connection is not closed to make room.
    pub(crate) fn start(&self) {
        self.busy_since
            .store(self.registry.now(), Ordering::Release);
    }
}

/// Every connection not yet upgraded, oldest first (ids grow with each accept).
#[derive(Default)]
struct Slots {
    next: u64,
    live: BTreeMap<u64, Slot>,
    per_peer: HashMap<IpAddr, usize>,
}

/// The counts behind the caps; its methods lock briefly and never await.
pub(crate) struct Registry {
    slots: Mutex<Slots>,
    epoch: Instant,
    max_per_peer: usize,
    max_total: usize,
}

/// A connection's place in the registry; dropping it frees the place.
pub(crate) struct Admitted {
    registry: Arc<Registry>,
    id: u64,
    close: CancellationToken,
    busy_since: Arc<AtomicU64>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut s = self.registry.lock();
        if let Some(slot) = s.live.remove(&self.id)
            && let Some(n) = s.per_peer.get_mut(&slot.peer)
        {
            *n -= 1;
            if *n == 0 {
                s.per_peer.remove(&slot.peer);
            }
        }
    }
}

impl Registry {
    pub(crate) fn new(max_per_peer: usize, max_total: usize) -> Arc<Registry> {
        Arc::new(Registry {
            slots: Mutex::new(Slots::default()),
            epoch: Instant::now(),
            max_per_peer,
            max_total,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Milliseconds since the epoch, never 0 (0 means "not busy").
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64 + 1
    }

    /// A place for a new connection from `peer`, closing the oldest idle connection of
    /// that peer (at its cap) or of anyone (at the total cap); `None` when every
    /// connection in the way has a request in flight.
    pub(crate) fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<Admitted> {
        let mut s = self.lock();
        if s.per_peer.get(&peer).copied().unwrap_or(0) >= self.max_per_peer {
            evict(&mut s, |slot| slot.peer == peer)?;
        }
        if s.live.len() >= self.max_total {
            evict(&mut s, |_| true)?;
        }
        let id = s.next;
        s.next += 1;
        let close = CancellationToken::new();
        let busy_since = Arc::new(AtomicU64::new(0));
        s.live.insert(
            id,
            Slot {
                peer,
                close: close.clone(),
                busy_since: Arc::clone(&busy_since),
            },
        );
        *s.per_peer.entry(peer).or_insert(0) += 1;
        Some(Admitted {
            registry: Arc::clone(self),
            id,
            close,
            busy_since,
        })
    }

    /// Connections not yet upgraded.
    #[cfg(test)]
    fn pending(&self) -> usize {
        self.lock().live.len()
    }
}

/// Closes the oldest idle connection that `pick` accepts, and forgets it at once (its
/// task may take a moment to notice). `None` when there is none.
fn evict(s: &mut Slots, pick: impl Fn(&Slot) -> bool) -> Option<()> {
    let id = s
        .live
        .iter()
        .find(|(_, slot)| pick(slot) && slot.busy_since.load(Ordering::Acquire) == 0)
        .map(|(id, _)| *id)?;
    let slot = s.live.remove(&id)?;
    slot.close.cancel();
    if let Some(n) = s.per_peer.get_mut(&slot.peer) {
        *n -= 1;
        if *n == 0 {
            s.per_peer.remove(&slot.peer);
        }
    }
    Some(())
}

/// Accepts until `stop`, serving each admitted connection with `app`.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    registry: Arc<Registry>,
    stop: CancellationToken,
) {
    loop {
        let (stream, addr) = tokio::select! {
            _ = stop.cancelled() => break,
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "web accept failed");
                    // EMFILE and friends: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Some(admitted) = registry.admit(addr.ip()) else {
            tracing::debug!(peer = %addr, "web connection closed: every slot has a request in flight");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let registry = Arc::clone(&registry);
        let stop = stop.clone();
        tokio::spawn(async move { serve_one(stream, addr, app, registry, admitted, stop).await });
    }
}

async fn serve_one(
    stream: TcpStream,
    addr: SocketAddr,
    app: Router,
    registry: Arc<Registry>,
    admitted: Admitted,
    stop: CancellationToken,
) {
    let last = Arc::new(AtomicU64::new(registry.now()));
    let io = TokioIo::new(Watched {
        inner: stream,
        last: Arc::clone(&last),
        registry: Arc::clone(&registry),
    });
    let busy = Arc::clone(&admitted.busy_since);
    let reg = Arc::clone(&registry);
    let svc = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let busy = Arc::clone(&busy);
        let mut req = req.map(Body::new);
        req.extensions_mut().insert(ConnectInfo(addr));
        req.extensions_mut().insert(Arc::new(InFlight {
            busy_since: Arc::clone(&busy),
            registry: Arc::clone(&reg),
        }));
        let mut app = app.clone();
        async move {
            let res = tower_service::Service::call(&mut app, req).await;
            busy.store(0, Ordering::Release);
            res
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .keep_alive(true);
    let conn = builder.serve_connection(io, svc).with_upgrades();
    tokio::pin!(conn);
    let mut tick = tokio::time::interval(TICK);
    loop {
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(peer = %addr, error = %e, "web connection ended");
                }
                break;
            }
            _ = admitted.close.cancelled() => {
                tracing::debug!(peer = %addr, "web connection closed to make room");
                break;
            }
            _ = stop.cancelled() => break,
            _ = tick.tick() => {
                let now = registry.now();
                let idle = now.saturating_sub(last.load(Ordering::Acquire));
                let since = admitted.busy_since.load(Ordering::Acquire);
                let busy_for = if since == 0 { 0 } else { now.saturating_sub(since) };
                if idle >= IDLE_TIMEOUT.as_millis() as u64
                    || busy_for >= REQUEST_TIMEOUT.as_millis() as u64
                {
                    tracing::debug!(peer = %addr, idle, busy_for, "web connection timed out");
                    break;
                }
            }
        }
    }
    // The connection (and its socket) drops here, unless it was upgraded: then the
    // WebSocket task holds the socket and only this count goes.
    drop(admitted);
}

/// The TCP stream, noting the time of each byte moved either way.
struct Watched {
    inner: TcpStream,
    last: Arc<AtomicU64>,
    registry: Arc<Registry>,
}

impl Watched {
    fn touch(&self) {
        self.last.store(self.registry.now(), Ordering::Release);
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.touch();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn at_a_cap_the_oldest_idle_connection_makes_room() {
        let r = Registry::new(2, 2);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let a1 = r.admit(a).unwrap();
        let a2 = r.admit(a).unwrap();
        // a1 has a request in flight: a2 goes for the third from a.
        a1.busy_since.store(5, Ordering::Release);
        let a3 = r.admit(a).unwrap();
        assert!(a2.close.is_cancelled() && !a1.close.is_cancelled());
        // Total cap 2: b's first goes in by closing the oldest idle one (a3).
        let _b1 = r.admit(b).unwrap();
        assert!(a3.close.is_cancelled());
        assert_eq!(r.pending(), 2);
        // Everyone in the way busy: a newcomer is refused.
        let r = Registry::new(1, 1);
        let x = r.admit(a).unwrap();
        x.busy_since.store(5, Ordering::Release);
        assert!(r.admit(b).is_none());
        drop(x);
        assert!(r.admit(b).is_some());
    }

    #[test]
    fn a_request_counts_as_in_flight_only_once_its_body_is_in() {
        let r = Registry::new(1, 1);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let trickler = r.admit(a).unwrap();
        // Head in, body still arriving: a newcomer closes it.
        let next = r.admit(a).unwrap();
        assert!(trickler.close.is_cancelled());
        // Body in, handler running: the newcomer is refused instead.
        let mark_next = InFlight {
            busy_since: Arc::clone(&next.busy_since),
            registry: Arc::clone(&r),
        };
        mark_next.start();
        assert!(r.admit(a).is_none());
        assert!(!next.close.is_cancelled());
    }
}
