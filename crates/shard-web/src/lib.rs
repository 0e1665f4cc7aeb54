//! The daemon's HTTP and WebSocket door (docs/protocol.md §2.2, §4.1; docs/architecture.md#security-model): per-browser
//! enrollment, session cookies, single-use WebSocket tickets bound to principal, session
//! and Origin, exact Host and Origin checks, and the opt-in remote mode of §4.1.2.
//!
//! An upgraded WebSocket enters the daemon as a [`shard_daemon::transport::Connection`]
//! with a browser principal, through [`WebTransport`], so every command behaves as on the
//! unix socket. The HTTP contract is docs/web.md.

// Standard output is the protocol (`shard agent`) and standard error belongs to the
// binary: a library reports through return values and `tracing`, never by printing.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod admin;
mod assets;
mod body;
pub mod config;
pub mod door;
pub mod error;
mod http;
mod listener;
mod pages;
pub mod secret;
pub mod store;
mod ws;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use shard_daemon::transport::{Connection, Transport};
use shard_daemon::{Daemon, ShutdownHandle};
use tokio::sync::mpsc;

pub use config::{DEFAULT_PORT, Mode, PORT_RETRIES, WebConfig, WebOptions};
pub use error::WebError;
pub use http::{COOKIE_PLAIN, COOKIE_SECURE, SESSION_KEY_HEADER, SUBPROTOCOL};

/// Upgraded WebSockets, handed to the daemon's accept loop like unix-socket clients.
pub struct WebTransport {
    rx: mpsc::Receiver<Connection>,
    addr: SocketAddr,
}

#[async_trait]
impl Transport for WebTransport {
    async fn accept(&mut self) -> Option<Connection> {
        self.rx.recv().await
    }

    fn describe(&self) -> String {
        format!("websocket:http://{}/ws", self.addr)
    }
}

/// Binds the door's port: the configured one, else (default port only) the next free
/// of the [`config::PORT_RETRIES`] after it, as Jupyter does. A taken explicit port is
/// [`WebError::PortTaken`]; no bindable port at all is [`WebError::NoFreePort`].
async fn bind(cfg: &WebConfig) -> Result<tokio::net::TcpListener, WebError> {
    let first = cfg.port;
    let last = first.saturating_add(cfg.port_retries);
    let mut last_error = String::new();
    for port in first..=last {
        let addr = SocketAddr::new(cfg.bind, port);
        match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => {
                if port != first {
                    tracing::info!(taken = first, port, "the default web port is taken");
                }
                return Ok(l);
            }
            Err(e) if cfg.port_retries == 0 && e.kind() == std::io::ErrorKind::AddrInUse => {
                return Err(WebError::PortTaken(port));
            }
            Err(e) if cfg.port_retries == 0 => {
                return Err(WebError::io(format!("binding {addr}"), e));
            }
            Err(e) => last_error = e.to_string(),
        }
    }
    Err(WebError::NoFreePort {
        first,
        last,
        last_error,
    })
}

/// Writes `SHARD_HOME/daemon.json` (owner-only) for a daemon serving without its web
/// door: `{"pid", "web": null, "web_error"}`, so `shard web` can say why there is no
/// link instead of only that nothing answers.
pub fn write_doorless_daemon_json(home: &Path, why: &str) -> Result<(), WebError> {
    let v = serde_json::json!({
        "pid": std::process::id(),
        "web": serde_json::Value::Null,
        "web_error": why,
    });
    let bytes = serde_json::to_vec_pretty(&v)
        .map_err(|e| WebError::io("daemon.json", std::io::Error::other(e)))?;
    store::write_atomic(&home.join("daemon.json"), &bytes)
}

/// Removes `SHARD_HOME/daemon.json` (a doorless daemon's, at exit).
pub fn remove_daemon_json(home: &Path) {
    let _ = std::fs::remove_file(home.join("daemon.json"));
}

/// What a started door tells its caller (and `daemon.json`).
#[derive(Debug, Clone)]
pub struct WebInfo {
    /// The bound port.
    pub port: u16,
    /// The local listening URL.
    pub url: String,
    /// In remote mode, the URL browsers use.
    pub public_url: Option<String>,
    /// The one-line plaintext warning owed at startup, if any.
    pub warning: Option<String>,
}

/// A running door; dropping it leaves the server running until the process ends, while
/// [`WebDoor::stop`] closes every socket.
pub struct WebDoor {
    door: Arc<door::Door>,
    info: WebInfo,
    home: PathBuf,
}

impl WebDoor {
    /// Opens the security store (refusing wider permissions), binds the HTTP port and the
    /// admin socket, adds the WebSocket transport to `daemon` and starts serving.
    pub async fn start(
        cfg: WebConfig,
        home: &Path,
        daemon: &mut Daemon,
        max_message: usize,
    ) -> Result<WebDoor, WebError> {
        let h = home.to_path_buf();
        let store = tokio::task::spawn_blocking(move || store::SecurityStore::open(&h))
            .await
            .map_err(|e| WebError::io("store task", std::io::Error::other(e)))??;
        let tcp = bind(&cfg).await?;
        let bound = tcp
            .local_addr()
            .map_err(|e| WebError::io("reading the bound address", e))?;
        let (tx, rx) = mpsc::channel(64);
        let warning = cfg.warning();
        let d = door::Door::new(cfg, bound.port(), store, max_message, tx);
        // Sessions bound to an Origin this door does not serve (it moved port) or
        // without a key go before the first request: see `SecurityStore::prune`.
        let dropped = d.store.prune(&d.origins).await?;
        if dropped > 0 {
            tracing::info!(
                dropped,
                "browser sessions of another origin or without a session key were dropped; those browsers enroll again"
            );
        }
        let admin = admin::bind(home)?;
        daemon.add_transport(Box::new(WebTransport { rx, addr: bound }));
        let handle: ShutdownHandle = daemon.shutdown_handle();
        tokio::spawn(admin::serve(admin, Arc::clone(&d), handle));
        let app = http::router(Arc::clone(&d));
        let registry = listener::Registry::new(listener::MAX_PER_PEER, listener::MAX_PENDING);
        tokio::spawn(listener::serve(tcp, app, registry, d.stop.clone()));
        let info = WebInfo {
            port: bound.port(),
            url: d.local_url.clone(),
            public_url: d.cfg.remote().then(|| d.public_url.clone()),
            warning,
        };
        Ok(WebDoor {
            door: d,
            info,
            home: home.to_path_buf(),
        })
    }

    /// Where it listens.
    pub fn info(&self) -> &WebInfo {
        &self.info
    }

    /// Writes `SHARD_HOME/daemon.json` (owner-only): `{"pid", "url", "port", "web"}`
    /// (`web` is the URL again: the door is up) and `public_url` in remote mode.
    pub fn write_daemon_json(&self) -> Result<(), WebError> {
        let mut v = serde_json::json!({
            "pid": std::process::id(),
            "url": self.info.url,
            "port": self.info.port,
            "web": self.info.url,
        });
        if let Some(p) = &self.info.public_url {
            v["public_url"] = serde_json::Value::String(p.clone());
        }
        let path = self.home.join("daemon.json");
        let bytes = serde_json::to_vec_pretty(&v)
            .map_err(|e| WebError::io("daemon.json", std::io::Error::other(e)))?;
        store::write_atomic(&path, &bytes)
    }

    /// Closes every WebSocket and stops serving; removes `daemon.json` and the admin
    /// socket.
    pub fn stop(&self) {
        self.door.stop.cancel();
        let _ = std::fs::remove_file(self.home.join("daemon.json"));
        let _ = std::fs::remove_file(admin::socket_path(&self.home));
    }
}
