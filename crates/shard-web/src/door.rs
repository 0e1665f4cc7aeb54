//! The web door's in-memory state: pending enrollment codes, live tickets, failed
//! enrollment attempts per peer, and the live WebSockets of each browser (so a revocation
//! closes them at once). Codes and tickets are kept as SHA-256 only, like the store.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::WebConfig;
use crate::error::WebError;
use crate::secret::{self, Digest32};
use crate::store::{SecurityStore, SessionRef};

/// Failed enrollments from one peer within [`FAILURE_WINDOW`] before every further
/// attempt gets `429`.
pub const MAX_FAILURES: usize = 10;
/// The brute-force window.
pub const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Most enrollment codes pending at once (older ones are dropped first).
const MAX_CODES: usize = 64;
/// Most tickets outstanding at once (older ones are dropped first).
const MAX_TICKETS: usize = 4096;

/// A ticket's binding (docs/protocol.md §4.1).
#[derive(Debug, Clone)]
struct Ticket {
    session: SessionRef,
    origin: String,
    expires: Instant,
}

/// Why an upgrade's ticket was refused (all are `401`; the reason goes to the log only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TicketRefusal {
    /// Unknown (never minted, or already used: single use).
    Unknown,
    /// Past its lifetime.
    Expired,
    /// Minted for another Origin.
    OtherOrigin,
    /// Its browser was revoked since.
    Revoked,
}

/// Everything the HTTP handlers share.
pub struct Door {
    /// The checked settings.
    pub cfg: WebConfig,
    /// The Host every request must carry.
    pub expected_host: String,
    /// The exact Origins allowed.
    pub origins: Vec<String>,
    /// The local listening URL (`http://127.0.0.1:PORT` in loopback mode).
    pub local_url: String,
    /// The URL browsers use: the local one, or the first allowed origin in remote mode.
    pub public_url: String,
    /// The durable store.
    pub store: SecurityStore,
    /// Largest inbound WebSocket message (the daemon's line limit).
    pub max_message: usize,
    /// Where upgraded WebSockets go: the daemon's transport.
    pub(crate) conns: mpsc::Sender<shard_daemon::transport::Connection>,
    /// Cancelled when the daemon stops: every socket closes.
    pub(crate) stop: CancellationToken,
    codes: Mutex<VecDeque<(Digest32, Instant)>>,
    tickets: Mutex<HashMap<Digest32, Ticket>>,
    failures: Mutex<HashMap<IpAddr, VecDeque<Instant>>>,
    live: Mutex<HashMap<String, CancellationToken>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Door {
    /// A door for a bound port.
    pub(crate) fn new(
        cfg: WebConfig,
        port: u16,
        store: SecurityStore,
        max_message: usize,
        conns: mpsc::Sender<shard_daemon::transport::Connection>,
    ) -> Arc<Door> {
        let local_url = format!("http://127.0.0.1:{port}");
        let (expected_host, origins, public_url) = match &cfg.public_host {
            Some(h) if cfg.remote() => (
                h.clone(),
                cfg.allowed_origins.clone(),
                cfg.allowed_origins.first().cloned().unwrap_or_default(),
            ),
            _ => (
                format!("127.0.0.1:{port}"),
                vec![local_url.clone()],
                local_url.clone(),
            ),
        };
        let local_url = if cfg.remote() {
            format!("http://{}", std::net::SocketAddr::new(cfg.bind, port))
        } else {
            local_url
        };
        Arc::new(Door {
            cfg,
            expected_host,
            origins,
            local_url,
            public_url,
            store,
            max_message,
            conns,
            stop: CancellationToken::new(),
            codes: Mutex::new(VecDeque::new()),
            tickets: Mutex::new(HashMap::new()),
            failures: Mutex::new(HashMap::new()),
            live: Mutex::new(HashMap::new()),
        })
    }

    /// A fresh one-time enrollment code (only its hash is kept).
    pub fn new_code(&self) -> Result<String, WebError> {
        let code = secret::new_secret()?;
        let mut codes = lock(&self.codes);
        let now = Instant::now();
        codes.retain(|(_, exp)| *exp > now);
        if codes.len() >= MAX_CODES {
            codes.pop_front();
        }
        codes.push_back((secret::hash(&code), now + self.cfg.code_ttl));
        Ok(code)
    }

    /// Consumes a code: true once per valid, unexpired code.
    pub fn redeem_code(&self, code: &str) -> bool {
        if !secret::well_formed(code) {
            return false;
        }
        let presented = secret::hash(code);
        let now = Instant::now();
        let mut codes = lock(&self.codes);
        codes.retain(|(_, exp)| *exp > now);
        let hit = codes.iter().position(|(kept, _)| {
            bool::from(subtle::ConstantTimeEq::ct_eq(&kept[..], &presented[..]))
        });
        match hit {
            Some(i) => codes.remove(i).is_some(),
            None => false,
        }
    }

    /// True when `peer` has used up its failures for the window (`429`).
    pub fn throttled(&self, peer: IpAddr) -> bool {
        let mut f = lock(&self.failures);
        let now = Instant::now();
        let Some(q) = f.get_mut(&peer) else {
            return false;
        };
        while q
            .front()
            .is_some_and(|t| now.duration_since(*t) >= FAILURE_WINDOW)
        {
            q.pop_front();
        }
        if q.is_empty() {
            f.remove(&peer);
            return false;
        }
        q.len() >= MAX_FAILURES
    }

    /// Counts one failed enrollment from `peer`.
    pub fn record_failure(&self, peer: IpAddr) {
        let mut f = lock(&self.failures);
        let now = Instant::now();
        if f.len() > 10_000 {
            f.retain(|_, q| {
                q.back()
                    .is_some_and(|t| now.duration_since(*t) < FAILURE_WINDOW)
            });
        }
        let q = f.entry(peer).or_default();
        q.push_back(now);
        while q.len() > MAX_FAILURES {
            q.pop_front();
        }
    }

    /// Mints a ticket bound to a session and the exact Origin.
    pub fn mint_ticket(&self, session: SessionRef, origin: &str) -> Result<String, WebError> {
        let t = secret::new_secret()?;
        let now = Instant::now();
        let mut tickets = lock(&self.tickets);
        if tickets.len() >= MAX_TICKETS {
            tickets.retain(|_, v| v.expires > now);
        }
        if tickets.len() >= MAX_TICKETS
            && let Some(oldest) = tickets
                .iter()
                .min_by_key(|(_, v)| v.expires)
                .map(|(k, _)| *k)
        {
            tickets.remove(&oldest);
        }
        tickets.insert(
            secret::hash(&t),
            Ticket {
                session,
                origin: origin.to_string(),
                expires: now + self.cfg.ticket_ttl,
            },
        );
        Ok(t)
    }

    /// Consumes a ticket presented with `origin`. Whatever the verdict, the ticket is
    /// gone: one presentation per ticket.
    pub fn consume_ticket(&self, ticket: &str, origin: &str) -> Result<SessionRef, TicketRefusal> {
        if !secret::well_formed(ticket) {
            return Err(TicketRefusal::Unknown);
        }
        // Keyed by SHA-256 of the ticket: a lookup's timing says nothing about the
        // ticket itself.
        let t = lock(&self.tickets)
            .remove(&secret::hash(ticket))
            .ok_or(TicketRefusal::Unknown)?;
        if Instant::now() >= t.expires {
            return Err(TicketRefusal::Expired);
        }
        let same: bool =
            subtle::ConstantTimeEq::ct_eq(t.origin.as_bytes(), origin.as_bytes()).into();
        if !same {
            return Err(TicketRefusal::OtherOrigin);
        }
        if !self.store.session_live(&t.session) {
            return Err(TicketRefusal::Revoked);
        }
        Ok(t.session)
    }

    /// A cancellation token for one WebSocket of `principal_id`; revoking the principal
    /// cancels it.
    pub(crate) fn socket_token(&self, principal_id: &str) -> CancellationToken {
        lock(&self.live)
            .entry(principal_id.to_string())
            .or_insert_with(|| self.stop.child_token())
            .child_token()
    }

    /// Revokes a browser: removed from the store (persisted), its live sockets closed,
    /// its outstanding tickets dropped.
    pub async fn revoke(&self, principal_id: &str) -> Result<bool, WebError> {
        let found = self.store.revoke(principal_id).await?;
        if let Some(tok) = lock(&self.live).remove(principal_id) {
            tok.cancel();
        }
        lock(&self.tickets).retain(|_, t| t.session.principal_id != principal_id);
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::WebOptions;

    fn door(ttl: Duration) -> (Arc<Door>, tempfile::TempDir) {
        let home = tempfile::tempdir().unwrap();
        let store = SecurityStore::open(home.path()).unwrap();
        let opts = WebOptions {
            ticket_ttl: ttl,
            code_ttl: ttl,
            ..WebOptions::default()
        };
        let (tx, _rx) = mpsc::channel(1);
        (
            Door::new(opts.validate().unwrap(), 7420, store, 1 << 20, tx),
            home,
        )
    }

    #[test]
    fn codes_are_single_use_and_expire() {
        let (d, _h) = door(Duration::from_secs(60));
        let c = d.new_code().unwrap();
        assert!(!d.redeem_code("x"));
        assert!(d.redeem_code(&c));
        assert!(!d.redeem_code(&c));
        let (d, _h) = door(Duration::ZERO);
        let c = d.new_code().unwrap();
        assert!(!d.redeem_code(&c));
    }

    #[test]
    fn tickets_are_single_use_origin_bound_and_expire() {
        let (d, _h) = door(Duration::from_secs(60));
        let s = SessionRef {
            principal_id: "brw-1".into(),
            session_id: "s".into(),
        };
        let t = d.mint_ticket(s.clone(), "http://127.0.0.1:7420").unwrap();
        assert_eq!(
            d.consume_ticket(&t, "http://evil.example").unwrap_err(),
            TicketRefusal::OtherOrigin
        );
        // Refused once, gone for good.
        assert_eq!(
            d.consume_ticket(&t, "http://127.0.0.1:7420").unwrap_err(),
            TicketRefusal::Unknown
        );
        let (d, _h) = door(Duration::ZERO);
        let t = d.mint_ticket(s, "http://127.0.0.1:7420").unwrap();
        assert_eq!(
            d.consume_ticket(&t, "http://127.0.0.1:7420").unwrap_err(),
            TicketRefusal::Expired
        );
    }

    #[test]
    fn ten_failures_throttle_a_peer_and_only_that_peer() {
        let (d, _h) = door(Duration::from_secs(60));
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        for _ in 0..MAX_FAILURES {
            assert!(!d.throttled(a));
            d.record_failure(a);
        }
        assert!(d.throttled(a));
        assert!(!d.throttled(b));
    }
}
