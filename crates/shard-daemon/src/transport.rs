//! Transports turn a client connection into a stream of framed lines and a sink of
//! frames (docs/protocol.md §2). The broker only sees [`Connection`]s, so a WebSocket
//! transport plugs in beside the unix socket without touching it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::net::UnixListener;
use tokio::net::unix::OwnedWriteHalf;

use crate::error::DaemonError;
use crate::fsutil;
pub use crate::lines::InboundStream;
use crate::lines::{LineBudget, budgeted_lines};
use crate::principal::{Principal, TransportKind};

/// Where outgoing frames go. A frame is one JSON message ending in `\n`; a message
/// transport (WebSocket) strips the newline.
#[async_trait]
pub trait FrameSink: Send {
    /// Queues one frame for writing (may buffer).
    async fn write_frame(&mut self, frame: &[u8]) -> std::io::Result<()>;
    /// Pushes buffered frames out.
    async fn flush(&mut self) -> std::io::Result<()>;
    /// Closes the outgoing side.
    async fn shutdown(&mut self) -> std::io::Result<()>;
}

/// One accepted client connection.
pub struct Connection {
    /// For logs: who this is.
    pub peer: String,
    /// The transport it came in on (decides `hello.capabilities`).
    pub kind: TransportKind,
    /// Who it is, as far as the transport can tell (a Runtime proves more in-band).
    pub principal: Principal,
    /// The peer process, when the transport knows it (unix socket: `SO_PEERCRED`); the
    /// daemon refuses processes descended from its Runtimes.
    pub peer_pid: Option<u32>,
    /// Incoming records.
    pub inbound: InboundStream,
    /// Outgoing frames.
    pub outbound: Box<dyn FrameSink>,
}

/// A source of client connections.
#[async_trait]
pub trait Transport: Send {
    /// The next authorised connection; `None` when the transport is closed.
    async fn accept(&mut self) -> Option<Connection>;
    /// For logs.
    fn describe(&self) -> String;
}

/// The owner-only unix socket `SHARD_HOME/daemon.sock` (§16 item 17).
pub struct UnixTransport {
    listener: UnixListener,
    path: PathBuf,
    uid: u32,
    max_line: usize,
    budget: Arc<LineBudget>,
}

impl UnixTransport {
    /// Binds `path` under umask 077 in a 0700 directory, replacing a stale socket. The
    /// caller must hold the single-instance lock, which is what makes a leftover socket
    /// stale rather than live.
    pub fn bind(
        path: &Path,
        max_line: usize,
        budget: Arc<LineBudget>,
    ) -> Result<Self, DaemonError> {
        let dir = path
            .parent()
            .ok_or_else(|| DaemonError::io("socket path", std::io::Error::other("no parent")))?;
        fsutil::ensure_private_dir(dir)
            .map_err(|e| DaemonError::io(format!("creating {}", dir.display()), e))?;
        match std::fs::remove_file(path) {
            Ok(()) => tracing::info!(path = %path.display(), "replaced a stale socket"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(DaemonError::io(format!("removing {}", path.display()), e)),
        }
        let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
        let bound = UnixListener::bind(path);
        nix::sys::stat::umask(old);
        let listener =
            bound.map_err(|e| DaemonError::io(format!("binding {}", path.display()), e))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| DaemonError::io(format!("chmod {}", path.display()), e))?;
        Ok(UnixTransport {
            listener,
            path: path.to_path_buf(),
            uid: nix::unistd::getuid().as_raw(),
            max_line,
            budget,
        })
    }
}

struct UnixSink(BufWriter<OwnedWriteHalf>);

#[async_trait]
impl FrameSink for UnixSink {
    async fn write_frame(&mut self, frame: &[u8]) -> std::io::Result<()> {
        self.0.write_all(frame).await
    }
    async fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush().await
    }
    async fn shutdown(&mut self) -> std::io::Result<()> {
        self.0.shutdown().await
    }
}

#[async_trait]
impl Transport for UnixTransport {
    async fn accept(&mut self) -> Option<Connection> {
        loop {
            let (stream, _) = match self.listener.accept().await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    // EMFILE and friends: back off instead of spinning.
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            match stream.peer_cred() {
                Ok(cred) if cred.uid() == self.uid => {
                    let pid = cred.pid().and_then(|p| u32::try_from(p).ok());
                    let peer = format!("unix pid {}", cred.pid().map_or(-1, |p| p));
                    let (r, w) = stream.into_split();
                    let inbound = budgeted_lines(r, self.max_line, Arc::clone(&self.budget));
                    return Some(Connection {
                        peer,
                        kind: TransportKind::UnixSocket,
                        principal: Principal::LocalUser { uid: self.uid, pid },
                        peer_pid: pid,
                        inbound,
                        outbound: Box::new(UnixSink(BufWriter::with_capacity(64 * 1024, w))),
                    });
                }
                Ok(cred) => {
                    tracing::warn!(uid = cred.uid(), "refused a connection from another user");
                }
                Err(e) => tracing::warn!(error = %e, "no peer credentials; connection refused"),
            }
        }
    }

    fn describe(&self) -> String {
        format!("unix:{}", self.path.display())
    }
}

impl Drop for UnixTransport {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
