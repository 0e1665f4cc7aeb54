//! The link to one host: for an `ssh` host, the pool of OpenSSH connections its agents
//! share, and for every host the check that its `shard` speaks this protocol. sshd
//! carries at most `MaxSessions` sessions (default 10) on one connection and refuses the
//! next, so every session — a Runtime, a settings check — holds a [`Lease`] on one
//! connection, and a connection that is full makes the link open another. One task per
//! host owns that state; launches ask it for a lease and, while the host is unreachable,
//! get the last error at once until the backoff has passed (docs/hosts.md).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use shard_gate::hosts::{HostConfig, HostKind};
use tokio::sync::{mpsc, oneshot};

use super::master::{self, Master};

/// First and longest wait before reconnecting to a host that failed.
const BACKOFF_FIRST: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// A host ready for one session.
#[derive(Debug)]
pub(crate) struct Ready {
    /// The control socket of the `ssh` connection the session goes through.
    pub ctl: Option<PathBuf>,
    /// Counts, for this host, the times its `shard` was found and checked: a settings
    /// check made under one value holds until the link reconnects.
    pub generation: u64,
    /// The session's place on that connection; dropped when the session has ended.
    pub lease: Option<Lease>,
}

/// One session's place on one connection of a host. Dropping it frees the place.
#[derive(Debug)]
pub(crate) struct Lease {
    tx: mpsc::UnboundedSender<Msg>,
    conn: u64,
}

impl Lease {
    /// The host refused this session on its connection (sshd's `MaxSessions` is lower
    /// than `max_sessions` says): that connection takes no more than it holds now.
    pub fn refused(self) {
        let _ = self.tx.send(Msg::Refused(self.conn));
        // Drop sends the release.
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Release(self.conn));
    }
}

#[derive(Debug)]
enum Msg {
    Ready(oneshot::Sender<Result<Ready, String>>),
    Release(u64),
    Refused(u64),
}

/// Handle on the task that owns one host's link.
#[derive(Clone)]
pub(crate) struct Link {
    tx: mpsc::UnboundedSender<Msg>,
}

impl Link {
    /// Starts the owner task of host `name`.
    pub fn spawn(name: String, cfg: HostConfig, home: &Path) -> Link {
        let (tx, rx) = mpsc::unbounded_channel();
        // The connection's own keep-alive session is one of sshd's MaxSessions.
        let per_conn = usize::try_from(cfg.max_sessions().saturating_sub(1))
            .unwrap_or(1)
            .max(1);
        let state = LinkState {
            name,
            cfg,
            logs: home.join("logs"),
            dir: home.join("hosts"),
            tx: tx.downgrade(),
            conns: Vec::new(),
            next_conn: 0,
            per_conn,
            verified: false,
            generation: 0,
            failures: 0,
            retry_at: None,
            last_error: String::new(),
        };
        tokio::spawn(state.run(rx));
        Link { tx }
    }

    /// A lease on a connection (opened or reused) to a host whose `shard` was checked.
    pub async fn ready(&self) -> Result<Ready, String> {
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(Msg::Ready(tx))
            .map_err(|_| "the host link has stopped".to_string())?;
        rx.await
            .map_err(|_| "the host link has stopped".to_string())?
    }
}

/// One shared connection and the sessions placed on it.
struct Conn {
    id: u64,
    ctl: PathBuf,
    master: Master,
    /// Sessions holding a lease on it.
    used: usize,
    /// Sessions it may carry besides its own.
    cap: usize,
}

struct LinkState {
    name: String,
    cfg: HostConfig,
    logs: PathBuf,
    dir: PathBuf,
    /// For the leases this task hands out; weak, so the task ends once the launcher
    /// and every session are gone.
    tx: mpsc::WeakUnboundedSender<Msg>,
    conns: Vec<Conn>,
    next_conn: u64,
    per_conn: usize,
    verified: bool,
    generation: u64,
    failures: u32,
    retry_at: Option<Instant>,
    last_error: String,
}

impl LinkState {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Msg>) {
        while let Some(msg) = rx.recv().await {
            match msg {
                Msg::Ready(reply) => {
                    let r = self.ensure().await;
                    let _ = reply.send(r);
                }
                Msg::Release(id) => {
                    if let Some(c) = self.conns.iter_mut().find(|c| c.id == id) {
                        c.used = c.used.saturating_sub(1);
                    }
                }
                Msg::Refused(id) => {
                    if let Some(c) = self.conns.iter_mut().find(|c| c.id == id) {
                        // The refused session's own lease is still counted in `used`.
                        c.cap = c.used.saturating_sub(1);
                        tracing::warn!(
                            host = %self.name,
                            sessions = c.cap + 1,
                            "the host refused a session on a connection (its sshd MaxSessions is lower than max_sessions): opening another"
                        );
                    }
                }
            }
        }
        for mut c in self.conns.drain(..) {
            let _ = c.master.child.start_kill();
            let _ = std::fs::remove_file(&c.ctl);
        }
    }

    /// Forgets connections whose ssh has exited.
    fn prune(&mut self) {
        let before = self.conns.len();
        self.conns.retain_mut(|c| {
            let alive = matches!(c.master.child.try_wait(), Ok(None));
            if !alive {
                let _ = std::fs::remove_file(&c.ctl);
            }
            alive
        });
        if self.conns.len() < before {
            tracing::warn!(host = %self.name, "a connection to the host was lost");
            if self.conns.is_empty() {
                // The next connection checks the host's shard again.
                self.verified = false;
            }
        }
    }

    fn lease(&mut self, at: usize) -> Result<Ready, String> {
        // The asker holds a sender while it waits, so this only fails once it is gone.
        let tx = self.tx.upgrade().ok_or("the host link has stopped")?;
        let c = self
            .conns
            .get_mut(at)
            .ok_or("the host link lost its connection")?;
        c.used += 1;
        Ok(Ready {
            ctl: Some(c.ctl.clone()),
            generation: self.generation,
            lease: Some(Lease { tx, conn: c.id }),
        })
    }

    async fn ensure(&mut self) -> Result<Ready, String> {
        let ssh = matches!(self.cfg.kind(), Some(HostKind::Ssh { .. }));
        if ssh {
            self.prune();
            if let Some(at) = self.conns.iter().position(|c| c.used < c.cap) {
                return self.lease(at);
            }
        } else if self.verified {
            return Ok(self.unshared());
        }
        if let Some(at) = self.retry_at {
            let now = Instant::now();
            if now < at {
                return Err(format!(
                    "host {} is unreachable: {} (next attempt in {:.1} s)",
                    self.name,
                    self.last_error,
                    (at - now).as_secs_f64()
                ));
            }
        }
        match self.connect(ssh).await {
            Ok(()) => {
                self.failures = 0;
                self.retry_at = None;
                if !self.verified {
                    self.verified = true;
                    self.generation += 1;
                }
                if ssh {
                    self.lease(self.conns.len().saturating_sub(1))
                } else {
                    Ok(self.unshared())
                }
            }
            Err(e) => {
                self.failures = self.failures.saturating_add(1);
                let wait = BACKOFF_FIRST
                    .saturating_mul(1 << self.failures.saturating_sub(1).min(8))
                    .min(BACKOFF_MAX);
                self.retry_at = Some(Instant::now() + wait);
                self.last_error = e.clone();
                Err(format!("host {}: {e}", self.name))
            }
        }
    }

    /// A `command` host: every session is its own process, nothing to count.
    fn unshared(&self) -> Ready {
        Ready {
            ctl: None,
            generation: self.generation,
            lease: None,
        }
    }

    /// Opens one more connection (an `ssh` host) and checks the host's `shard` when it
    /// has not been checked since the last connection was lost.
    async fn connect(&mut self, ssh: bool) -> Result<(), String> {
        let mut opened = None;
        if let Some(HostKind::Ssh { dest, options }) = self.cfg.kind() {
            let id = self.next_conn;
            self.next_conn += 1;
            let ctl = self.dir.join(format!("{}.{id}.sock", self.name));
            let m = master::start_master(&ctl, &self.logs, &self.name, dest, options).await?;
            opened = Some(Conn {
                id,
                ctl,
                master: m,
                used: 0,
                cap: self.per_conn,
            });
        }
        if !self.verified {
            let ctl = opened.as_ref().map(|c| c.ctl.as_path());
            if let Err(e) = master::check_version(&self.name, &self.cfg, ctl).await {
                if let Some(mut c) = opened {
                    let _ = c.master.child.start_kill();
                    let _ = std::fs::remove_file(&c.ctl);
                }
                return Err(e);
            }
        }
        if ssh && let Some(c) = opened {
            self.conns.push(c);
        }
        Ok(())
    }
}
