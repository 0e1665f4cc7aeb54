//! `shard daemon`, `shard ls`, `shard kill`: the daemon process and its small
//! command-line clients (docs/cli.md); `shard attach` and `shard new` live in their
//! own modules.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use shard_client::{Client, ClientError};
use shard_daemon::{Daemon, DaemonConfig, DaemonError, QueueCaps};
use shard_protocol::command::{AgentKill, AgentRef, Command};
use shard_protocol::types::AgentStatus;

use crate::common;

/// Arguments of `shard daemon`.
#[derive(Args)]
pub struct DaemonArgs {
    /// Reap a Runtime after it has been inactive this many seconds.
    #[arg(long, default_value_t = 600)]
    idle_runtime_timeout: u64,
    /// Reap a Runtime that an interactive client is attached to only after it has been
    /// inactive this many seconds (at least the idle timeout).
    #[arg(long, default_value_t = 3600)]
    attached_idle_timeout: u64,
    /// Seconds a queued permission request waits for a client before it is denied
    /// (default: `[headless] timeout_secs` of config.toml, else 600).
    #[arg(long)]
    headless_timeout: Option<u64>,
    /// Seconds a Runtime has to send `hello` and `sync`.
    #[arg(long, default_value_t = 20)]
    ready_timeout: u64,
    /// Most messages queued for one client before it is disconnected.
    #[arg(long, hide = true)]
    client_queue_messages: Option<usize>,
    /// Most bytes queued for one client before it is disconnected.
    #[arg(long, hide = true)]
    client_queue_bytes: Option<usize>,
    /// Most bytes queued for all clients together; past it the clients with the longest
    /// backlogs are disconnected first.
    #[arg(long, hide = true)]
    client_queue_total_bytes: Option<usize>,
    /// Most client connections held at once on each transport; one more is refused with
    /// a clear error and the daemon carries on.
    #[arg(long, default_value_t = 4096)]
    max_connections: usize,
    /// Most Runtimes starting at once (default: one per CPU, at least 2); more wait their turn.
    #[arg(long, hide = true)]
    max_concurrent_starts: Option<usize>,
    /// The web door's flags (HTTP and WebSocket, docs/web.md).
    #[command(flatten)]
    web: crate::cmd_web::WebFlags,
}

/// Arguments of `shard ls`.
#[derive(Args)]
pub struct LsArgs {
    /// Print the agents as JSON.
    #[arg(long)]
    json: bool,
    /// Also list archived agents (`shard rm`).
    #[arg(long)]
    all: bool,
}

/// Arguments of `shard rm`.
#[derive(Args)]
pub struct RmArgs {
    /// The agent id (`shard ls` lists them).
    agent: String,
}

/// Arguments of `shard kill`.
#[derive(Args)]
pub struct KillArgs {
    /// The agent id.
    agent: String,
    /// SIGKILL at once instead of abort, SIGTERM, SIGKILL.
    #[arg(long)]
    force: bool,
}

fn multi_thread(workers: usize) -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("shard: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        })
}

fn home() -> Result<PathBuf, ExitCode> {
    common::shard_home().map_err(|e| {
        eprintln!("shard: {e}");
        ExitCode::FAILURE
    })
}

/// Runs `shard daemon`.
pub fn daemon(args: DaemonArgs) -> ExitCode {
    common::init_logging();
    // One worker per CPU: each Runtime's reader delivers its agent's stream on whichever
    // worker is free, so the broker's work spreads over every core (docs/decisions.md
    // "Broker across the cores").
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    let (home, rt) = match (home(), multi_thread(workers)) {
        (Ok(h), Ok(r)) => (h, r),
        (Err(c), _) | (_, Err(c)) => return c,
    };
    // The daemon reads only the gate's sections, but its agents read the rest: a file
    // they would refuse is refused here, before anything listens.
    let agent_cfg = match shard_agent::config::Config::load(&home) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("shard: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut cfg = DaemonConfig::new(home);
    cfg.hosts = agent_cfg.hosts.clone();
    cfg.workspaces_root = match agent_cfg.workspaces.root_path() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("shard: {e}");
            return ExitCode::FAILURE;
        }
    };
    cfg.launch_limits = shard_daemon::LaunchLimits {
        max_tasks: agent_cfg.subagents.max_tasks_per_job as usize,
        max_depth: agent_cfg.subagents.max_depth,
    };
    if let Err(e) = cfg.load_headless() {
        eprintln!("shard: {e}");
        return ExitCode::FAILURE;
    }
    cfg.idle_runtime_timeout = Duration::from_secs(args.idle_runtime_timeout);
    cfg.attached_idle_timeout = Duration::from_secs(args.attached_idle_timeout);
    if let Some(t) = args.headless_timeout {
        cfg.headless_timeout = Duration::from_secs(t);
    }
    cfg.ready_timeout = Duration::from_secs(args.ready_timeout.max(1));
    cfg.max_connections = args.max_connections.max(1);
    if let Some(n) = args.max_concurrent_starts {
        cfg.max_concurrent_starts = n.max(1);
    }
    let d = QueueCaps::default();
    cfg.queue = QueueCaps {
        max_messages: args.client_queue_messages.unwrap_or(d.max_messages),
        max_bytes: args.client_queue_bytes.unwrap_or(d.max_bytes),
    };
    if let Some(n) = args.client_queue_total_bytes {
        cfg.queue_budget = n;
    }
    let web_cfg = match args.web.into_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("shard: {e}");
            return ExitCode::FAILURE;
        }
    };
    rt.block_on(async move {
        let check = std::sync::Arc::new(crate::cmd_agent::InProcessCheck);
        let mut daemon = match Daemon::bind(cfg.clone(), check).await {
            Ok(d) => d,
            Err(DaemonError::AlreadyRunning { home, .. }) => {
                eprintln!("shard: a daemon is already running for {}", home.display());
                return ExitCode::FAILURE;
            }
            Err(e) => {
                eprintln!("shard: cannot start the daemon: {e}");
                return ExitCode::FAILURE;
            }
        };
        let door = match start_door(web_cfg, &cfg.home, &mut daemon, cfg.max_line).await {
            Ok(d) => d,
            Err(code) => return code,
        };
        let handle = daemon.shutdown_handle();
        tokio::spawn(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let (Ok(mut term), Ok(mut int)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) else {
                return;
            };
            let mut force = false;
            loop {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
                handle.shutdown(force);
                force = true;
            }
        });
        eprintln!("shard daemon listening on {}", cfg.socket_path().display());
        let result = daemon.run().await;
        match &door {
            Some(d) => d.stop(),
            None => shard_web::remove_daemon_json(&cfg.home),
        }
        match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("shard: daemon failed: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

/// Starts the web door and writes `daemon.json`. When no port could be bound (the
/// default port and the ones after it all taken) the daemon serves its unix socket
/// without the door, and `daemon.json` says why (`None`); any other failure stops it.
async fn start_door(
    web_cfg: shard_web::WebConfig,
    home: &Path,
    daemon: &mut Daemon,
    max_line: usize,
) -> Result<Option<shard_web::WebDoor>, ExitCode> {
    let door = match shard_web::WebDoor::start(web_cfg, home, daemon, max_line).await {
        Ok(d) => d,
        Err(e @ shard_web::WebError::NoFreePort { .. }) => {
            let why = e.to_string();
            eprintln!("shard: {why}; the daemon runs without its web door");
            tracing::warn!("{why}");
            if let Err(e) = shard_web::write_doorless_daemon_json(home, &why) {
                eprintln!("shard: {e}");
                return Err(ExitCode::FAILURE);
            }
            return Ok(None);
        }
        Err(e) => {
            eprintln!("shard: cannot start the web door: {e}");
            return Err(ExitCode::FAILURE);
        }
    };
    if let Some(w) = &door.info().warning {
        eprintln!("shard: {w}");
        tracing::warn!("{w}");
    }
    if let Err(e) = door.write_daemon_json() {
        eprintln!("shard: {e}");
        // Leaves no admin socket (or half a door) behind.
        door.stop();
        return Err(ExitCode::FAILURE);
    }
    match &door.info().public_url {
        Some(p) => eprintln!("shard daemon serving {} (public {p})", door.info().url),
        None => eprintln!("shard daemon serving {}", door.info().url),
    }
    Ok(Some(door))
}

async fn connect(home: &Path) -> Result<Client, ExitCode> {
    Client::connect_daemon(home).await.map_err(|e| {
        match e {
            ClientError::Io { .. } => eprintln!(
                "shard: no daemon running at {}; start one with `shard daemon`",
                home.join("daemon.sock").display()
            ),
            other => eprintln!("shard: {other}"),
        }
        ExitCode::FAILURE
    })
}

/// Connects to the daemon and runs `f` with the client (one line and exit 1 when no
/// daemon runs).
pub(crate) fn with_client<F, Fut>(f: F) -> ExitCode
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = ExitCode>,
{
    common::init_logging();
    let (home, rt) = match (home(), multi_thread(2)) {
        (Ok(h), Ok(r)) => (h, r),
        (Err(c), _) | (_, Err(c)) => return c,
    };
    rt.block_on(async move {
        match connect(&home).await {
            Ok(c) => f(c).await,
            Err(code) => code,
        }
    })
}

/// The wire name of a status.
pub(crate) fn status_str(s: AgentStatus) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Runs `shard ls`.
pub fn ls(args: LsArgs) -> ExitCode {
    with_client(|c| async move {
        let agents = match c.list().await {
            Ok(a) => a
                .into_iter()
                .filter(|a| args.all || a.archived != Some(true))
                .collect::<Vec<_>>(),
            Err(e) => {
                eprintln!("shard: agent.list failed: {e}");
                return ExitCode::FAILURE;
            }
        };
        let mut out = std::io::stdout().lock();
        if args.json {
            let _ = writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&agents).unwrap_or_default()
            );
            return ExitCode::SUCCESS;
        }
        if agents.is_empty() {
            let _ = writeln!(out, "no agents");
            return ExitCode::SUCCESS;
        }
        let _ = writeln!(
            out,
            "{:<32} {:<24} {:<9} {:<12} {:<6} {:<28} {:<10} CWD",
            "AGENT", "STATUS", "RUNTIME", "NAME", "MODE", "MODEL", "HOST"
        );
        for a in agents {
            let rt = serde_json::to_value(a.runtime_state)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            // The model that answered last when the agent was created without one.
            let answered = a.usage.as_ref().and_then(|u| u.model.clone());
            let model = match (&a.provider, &a.model) {
                (_, Some(m)) if m.contains('/') => m.clone(),
                (Some(p), Some(m)) => format!("{p}/{m}"),
                (None, Some(m)) => m.clone(),
                _ => answered.unwrap_or_else(|| "(default)".into()),
            };
            let status = if a.archived == Some(true) {
                "archived".to_string()
            } else {
                status_str(a.status)
            };
            let _ = writeln!(
                out,
                "{:<32} {:<24} {:<9} {:<12} {:<6} {:<28} {:<10} {}",
                a.agent_id,
                status,
                rt,
                a.name.unwrap_or_else(|| "-".into()),
                a.mode.unwrap_or_else(|| "-".into()),
                model,
                a.host.unwrap_or_else(|| "-".into()),
                a.cwd
            );
        }
        ExitCode::SUCCESS
    })
}

/// Runs `shard rm`: archives the agent (its Runtime stops, its session stays).
pub fn rm(args: RmArgs) -> ExitCode {
    with_client(|c| async move {
        let session = c
            .list()
            .await
            .ok()
            .and_then(|l| l.into_iter().find(|a| a.agent_id == args.agent))
            .and_then(|a| a.session_id);
        let cmd = Command::AgentArchive(AgentRef {
            agent_id: args.agent.clone(),
        });
        match c.call(cmd).await {
            Ok(_) => {
                let kept = session
                    .map(|s| format!("its session {s} is kept"))
                    .unwrap_or_else(|| "its session is kept".into());
                println!(
                    "archived {} ({kept}; `shard ls --all` lists it)",
                    args.agent
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("shard: cannot archive {}: {e}", args.agent);
                ExitCode::FAILURE
            }
        }
    })
}

/// Runs `shard kill`.
pub fn kill(args: KillArgs) -> ExitCode {
    with_client(|c| async move {
        let cmd = Command::AgentKill(AgentKill {
            agent_id: args.agent.clone(),
            force: Some(args.force),
        });
        match c.call(cmd).await {
            Ok(_) => {
                println!("killed {}", args.agent);
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("shard: cannot kill {}: {e}", args.agent);
                ExitCode::FAILURE
            }
        }
    })
}
