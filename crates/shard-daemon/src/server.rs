//! The daemon process: single-instance lock, transports, connection loops, background
//! tasks and shutdown.

use std::fs::File;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use shard_protocol::event::Hello;
use shard_protocol::{ErrorCode, Event, PROTOCOL_VERSION, decode_command};

use crate::broker::frame;
use crate::commands;
use crate::error::DaemonError;
use crate::launcher::{ProcessLauncher, RuntimeLauncher};
use crate::outbox::{Outbox, run_writer};
use crate::state::{AgentEntry, ConnEntry, DaemonConfig, Shared};
use crate::supervisor;
use crate::transport::{Connection, Transport, UnixTransport};

/// Capabilities of the daemon's own `hello`: transport-scoped (PROTOCOL §7); a
/// Runtime's capabilities arrive in its `sync`.
pub const DAEMON_CAPABILITIES: &[&str] = &["streaming-deltas", "multi-client", "unix-socket"];

/// A bound daemon, ready to [`run`](Daemon::run).
pub struct Daemon {
    shared: Arc<Shared>,
    transports: Vec<Box<dyn Transport>>,
    _lock: File,
}

/// Stops a running daemon from outside (signals, tests).
#[derive(Clone)]
pub struct ShutdownHandle {
    shared: Arc<Shared>,
}

impl ShutdownHandle {
    /// Graceful (`force = false`: turns finish, bounded) or forced shutdown.
    pub fn shutdown(&self, force: bool) {
        supervisor::begin_shutdown(&self.shared, force);
    }
}

impl Daemon {
    /// Takes the `SHARD_HOME` lock, binds `daemon.sock` and loads the manifests; Runtimes
    /// are spawned as `<current exe> agent` (or `config.agent_exe`).
    pub async fn bind(config: DaemonConfig) -> Result<Self, DaemonError> {
        let exe = match &config.agent_exe {
            Some(p) => p.clone(),
            None => std::env::current_exe()
                .map_err(|e| DaemonError::io("finding the shard executable", e))?,
        };
        Self::bind_with_launcher(config, Arc::new(ProcessLauncher::new(exe))).await
    }

    /// Like [`bind`](Daemon::bind) with another way to start Runtimes.
    pub async fn bind_with_launcher(
        config: DaemonConfig,
        launcher: Arc<dyn RuntimeLauncher>,
    ) -> Result<Self, DaemonError> {
        let home = config.home.clone();
        let lock = tokio::task::spawn_blocking(move || take_lock(&home))
            .await
            .map_err(|e| DaemonError::io("lock task", std::io::Error::other(e)))??;
        let unix = UnixTransport::bind(&config.socket_path(), config.max_line)?;
        let shared = Arc::new(Shared::new(config, launcher));
        let manifests = shared.store.load_all().await?;
        {
            let mut st = shared.lock();
            for m in manifests {
                st.agents.insert(m.agent_id.clone(), AgentEntry::new(m));
            }
        }
        Ok(Daemon {
            shared,
            transports: vec![Box::new(unix)],
            _lock: lock,
        })
    }

    /// Adds another transport (e.g. WebSocket); the broker does not change.
    pub fn add_transport(&mut self, transport: Box<dyn Transport>) {
        self.transports.push(transport);
    }

    /// A handle to stop the daemon.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Serves until `daemon.shutdown` (or the handle) stops it and its Runtimes are gone.
    pub async fn run(self) -> Result<(), DaemonError> {
        let shared = self.shared;
        if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
            tracing::warn!(error = %e, "could not become a child subreaper; orphaned tool processes may escape");
        }
        tokio::spawn(supervisor::reap_idle(Arc::clone(&shared)));
        tokio::spawn(crate::orphans::collect_orphans(Arc::clone(&shared)));
        let mut accept_tasks = Vec::new();
        for mut t in self.transports {
            tracing::info!(transport = %t.describe(), "listening");
            let shared = Arc::clone(&shared);
            accept_tasks.push(tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = shared.shutdown.cancelled() => break,
                        c = t.accept() => match c {
                            Some(c) => { tokio::spawn(serve(Arc::clone(&shared), c)); }
                            None => break,
                        },
                    }
                }
                drop(t);
            }));
        }
        shared.shutdown.cancelled().await;
        for t in accept_tasks {
            let _ = t.await;
        }
        let outboxes: Vec<_> = shared
            .lock()
            .conns
            .values()
            .map(|c| Arc::clone(&c.outbox))
            .collect();
        for o in outboxes {
            o.close("the daemon is shutting down".into());
        }
        // Give writers a moment to deliver the last frames.
        tokio::time::sleep(Duration::from_millis(100)).await;
        tracing::info!("daemon stopped");
        Ok(())
    }
}

fn take_lock(home: &std::path::Path) -> Result<File, DaemonError> {
    use std::io::Write;
    crate::fsutil::ensure_private_dir(home)
        .map_err(|e| DaemonError::io(format!("creating {}", home.display()), e))?;
    let path = home.join("daemon.lock");
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .mode(0o600)
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| DaemonError::io(format!("opening {}", path.display()), e))?;
    match f.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(DaemonError::AlreadyRunning {
                home: home.to_path_buf(),
                lock: path,
            });
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(DaemonError::io(format!("locking {}", path.display()), e));
        }
    }
    let _ = f.set_len(0);
    let _ = writeln!(f, "{}", std::process::id());
    Ok(f)
}

async fn serve(shared: Arc<Shared>, conn: Connection) {
    let Connection {
        peer,
        mut inbound,
        outbound,
    } = conn;
    let conn_id = shared.next();
    tracing::debug!(conn_id, %peer, "client connected");
    let (outbox, rx) = Outbox::new(shared.cfg.queue);
    let writer = tokio::spawn(run_writer(Arc::clone(&outbox), rx, outbound));
    shared.lock().conns.insert(
        conn_id,
        ConnEntry {
            outbox: Arc::clone(&outbox),
        },
    );
    outbox.push(frame(&Event::Hello(Hello {
        protocol_version: PROTOCOL_VERSION.into(),
        server_version: env!("CARGO_PKG_VERSION").into(),
        capabilities: DAEMON_CAPABILITIES.iter().map(|s| s.to_string()).collect(),
    })));
    loop {
        let item = tokio::select! {
            _ = outbox.closed() => break,
            _ = shared.shutdown.cancelled() => break,
            item = inbound.next() => item,
        };
        match item {
            None | Some(Err(_)) => break,
            Some(Ok(Err(e))) => {
                outbox.push(frame(&Event::err(
                    None,
                    None,
                    ErrorCode::InvalidRequest,
                    e.to_string(),
                )));
            }
            Some(Ok(Ok(line))) => match decode_command(&line) {
                Ok(msg) => commands::dispatch(&shared, conn_id, msg).await,
                Err(e) => {
                    outbox.push(frame(&Event::err(
                        e.id,
                        e.type_name.as_deref(),
                        ErrorCode::InvalidRequest,
                        e.message,
                    )));
                }
            },
        }
    }
    {
        let mut guard = shared.lock();
        let st = &mut *guard;
        st.conns.remove(&conn_id);
        for e in st.agents.values_mut() {
            e.attachments.remove(&conn_id);
            for p in &mut e.pending {
                p.delivered_to.remove(&conn_id);
            }
        }
        crate::requests::recheck_responders(&shared, st);
    }
    outbox.close("connection closed".into());
    let _ = writer.await;
    tracing::debug!(conn_id, "client disconnected");
}
