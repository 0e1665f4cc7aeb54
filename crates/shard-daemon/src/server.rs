//! The daemon process: single-instance lock, transports, accept loops with a
//! connection cap, background tasks and a graceful shutdown that awaits every tracked
//! task. The per-connection loop lives in `conn`.

use std::fs::File;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::commands::Services;
use crate::config::DaemonConfig;
use crate::conn::ConnSlot;
use crate::core::Shared;
use crate::core::subscribe::{Subscription, Topic};
use crate::error::DaemonError;
use crate::launcher::{ProcessLauncher, RuntimeLauncher, SettingsCheck};
use crate::lines::LineBudget;
use crate::transport::{Transport, UnixTransport};

/// How long shutdown waits for connections to deliver their last frames.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// A bound daemon, ready to [`run`](Daemon::run).
pub struct Daemon {
    shared: Arc<Shared>,
    services: Services,
    transports: Vec<Box<dyn Transport>>,
    budget: Arc<LineBudget>,
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
        crate::core::begin_shutdown(&self.shared, force);
    }

    /// Subscribes an in-process component to an agent's events or the orchestrator
    /// events, through the same bounded fan-out clients use.
    pub fn subscribe(&self, topic: Topic) -> Result<Subscription, String> {
        self.shared.subscribe(topic).map_err(|e| e.message)
    }

    /// `Err(reason)` when local process `pid` descends from one of the daemon's Runtimes
    ///, for side doors such as the web door's admin socket; the same check
    /// the unix socket makes, and like it refusing when the check itself fails.
    pub async fn check_peer(&self, pid: u32) -> Result<(), String> {
        crate::peer::check_peer(&self.shared, pid).await.map(|_| ())
    }
}

impl Daemon {
    /// Takes the `SHARD_HOME` lock, binds `daemon.sock` and loads the manifests; Runtimes
    /// are spawned as `<current exe> agent` (or `config.agent_exe`), and `agent.create`
    /// validates settings with `settings` first.
    pub async fn bind(
        config: DaemonConfig,
        settings: Arc<dyn SettingsCheck>,
    ) -> Result<Self, DaemonError> {
        let exe = match &config.agent_exe {
            Some(p) => p.clone(),
            None => std::env::current_exe()
                .map_err(|e| DaemonError::io("finding the shard executable", e))?,
        };
        let local = Arc::new(ProcessLauncher::new(exe, Arc::clone(&settings)));
        let launcher = crate::hosts::HostsLauncher::new(
            local,
            config.hosts.clone(),
            config.home.clone(),
            settings,
        );
        Self::bind_with_launcher(config, Arc::new(launcher)).await
    }

    /// Like [`bind`](Daemon::bind) with another way to start Runtimes.
    pub async fn bind_with_launcher(
        config: DaemonConfig,
        launcher: Arc<dyn RuntimeLauncher>,
    ) -> Result<Self, DaemonError> {
        crate::fdlimit::raise_to_hard_limit();
        let home = config.home.clone();
        let lock = tokio::task::spawn_blocking(move || take_lock(&home))
            .await
            .map_err(|e| DaemonError::io("lock task", std::io::Error::other(e)))??;
        let budget = LineBudget::new(config.max_inbound_buffered);
        let unix =
            UnixTransport::bind(&config.socket_path(), config.max_line, Arc::clone(&budget))?;
        let shared = Arc::new(Shared::new(config, launcher));
        let manifests = shared.store.load_all().await?;
        shared.add_loaded(manifests);
        let services = Services::new(Arc::clone(&shared));
        services
            .jobs
            .load()
            .await
            .map_err(|e| DaemonError::io("loading subagent job records", e))?;
        services
            .workspaces
            .load()
            .await
            .map_err(|e| DaemonError::io("reading workspace records", e))?;
        Ok(Daemon {
            shared,
            services,
            transports: vec![Box::new(unix)],
            budget,
            _lock: lock,
        })
    }

    /// The daemon-wide budget of partial-line bytes, for transports added later.
    pub fn line_budget(&self) -> Arc<LineBudget> {
        Arc::clone(&self.budget)
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
        crate::core::spawn_background(&shared);
        self.services.jobs.resume_reports();
        let mut accept_tasks = Vec::new();
        for t in self.transports {
            tracing::info!(transport = %t.describe(), "listening");
            accept_tasks.push(tokio::spawn(accept_loop(self.services.clone(), t)));
        }
        shared.shutdown.cancelled().await;
        for t in accept_tasks {
            let _ = t.await;
        }
        // Every connection delivers what is queued (the `daemon.shutdown` response among
        // it), then closes; shutdown waits for exactly those tasks, bounded.
        for o in shared.outboxes() {
            o.finish();
        }
        shared.tasks.close();
        if tokio::time::timeout(DRAIN_TIMEOUT, shared.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                left = shared.tasks.len(),
                "connections still draining at the shutdown deadline"
            );
        }
        tracing::info!("daemon stopped");
        Ok(())
    }
}

async fn accept_loop(svc: Services, mut t: Box<dyn Transport>) {
    let shared = Arc::clone(&svc.core);
    let live = Arc::new(AtomicUsize::new(0));
    let cap = shared.cfg.max_connections;
    loop {
        let c = tokio::select! {
            _ = shared.shutdown.cancelled() => break,
            c = t.accept() => c,
        };
        let Some(c) = c else { break };
        if live.load(Ordering::Acquire) >= cap {
            tracing::warn!(cap, peer = %c.peer, "connection refused: at the connection cap");
            let msg = format!(
                "the daemon is at its limit of {cap} connections on this transport; close some or raise --max-connections"
            );
            shared.tasks.spawn(crate::conn::refuse(
                c.outbound,
                shard_protocol::ErrorCode::Other("TOO_MANY_CONNECTIONS".into()),
                msg,
            ));
            continue;
        }
        live.fetch_add(1, Ordering::AcqRel);
        let slot = ConnSlot::new(Arc::clone(&live));
        shared.tasks.spawn(crate::conn::serve(svc.clone(), c, slot));
    }
    drop(t);
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
