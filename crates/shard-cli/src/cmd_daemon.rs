//! `shard daemon`, `shard ls`, `shard kill`, `shard attach`: the daemon process and its
//! small command-line clients (ARCHITECTURE §13).

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use shard_client::{Client, ClientError};
use shard_daemon::{Daemon, DaemonConfig, DaemonError, QueueCaps};
use shard_protocol::command::{
    AgentKill, AttachRole, Command, PermissionResponse, Prompt, StreamingBehavior, UiResponse,
};
use shard_protocol::event::{PendingRequest, PermissionRequest, UiRequest};
use shard_protocol::types::{AgentStatus, UiValue};
use shard_protocol::{Event, IncomingEvent, PermissionAnswer};
use tokio::io::AsyncBufReadExt;

use crate::common;

/// Arguments of `shard daemon`.
#[derive(Args)]
pub struct DaemonArgs {
    /// Reap a Runtime after it has been inactive this many seconds.
    #[arg(long, default_value_t = 600)]
    idle_runtime_timeout: u64,
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
}

/// Arguments of `shard ls`.
#[derive(Args)]
pub struct LsArgs {
    /// Print the agents as JSON.
    #[arg(long)]
    json: bool,
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

/// Arguments of `shard attach`.
#[derive(Args)]
pub struct AttachArgs {
    /// The agent id.
    agent: String,
    /// Watch only: never answer or prompt.
    #[arg(long)]
    observer: bool,
}

fn multi_thread() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
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
    let (home, rt) = match (home(), multi_thread()) {
        (Ok(h), Ok(r)) => (h, r),
        (Err(c), _) | (_, Err(c)) => return c,
    };
    let mut cfg = DaemonConfig::new(home);
    if let Err(e) = cfg.load_headless() {
        eprintln!("shard: {e}");
        return ExitCode::FAILURE;
    }
    cfg.idle_runtime_timeout = Duration::from_secs(args.idle_runtime_timeout);
    if let Some(t) = args.headless_timeout {
        cfg.headless_timeout = Duration::from_secs(t);
    }
    cfg.ready_timeout = Duration::from_secs(args.ready_timeout.max(1));
    let d = QueueCaps::default();
    cfg.queue = QueueCaps {
        max_messages: args.client_queue_messages.unwrap_or(d.max_messages),
        max_bytes: args.client_queue_bytes.unwrap_or(d.max_bytes),
    };
    rt.block_on(async move {
        let daemon = match Daemon::bind(cfg.clone()).await {
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
        match daemon.run().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("shard: daemon failed: {e}");
                ExitCode::FAILURE
            }
        }
    })
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

fn with_client<F, Fut>(f: F) -> ExitCode
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = ExitCode>,
{
    common::init_logging();
    let (home, rt) = match (home(), multi_thread()) {
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

fn status_str(s: AgentStatus) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Runs `shard ls`.
pub fn ls(args: LsArgs) -> ExitCode {
    with_client(|c| async move {
        let agents = match c.list().await {
            Ok(a) => a,
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
            "{:<32} {:<24} {:<9} {:<12} CWD",
            "AGENT", "STATUS", "RUNTIME", "NAME"
        );
        for a in agents {
            let rt = serde_json::to_value(a.runtime_state)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{:<32} {:<24} {:<9} {:<12} {}",
                a.agent_id,
                status_str(a.status),
                rt,
                a.name.unwrap_or_else(|| "-".into()),
                a.cwd
            );
        }
        ExitCode::SUCCESS
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

/// Runs `shard attach`: prints the stream; a line typed while a request is pending
/// answers it, any other line is sent as a prompt; end of input detaches.
pub fn attach(args: AttachArgs) -> ExitCode {
    with_client(|c| async move {
        let role = if args.observer {
            AttachRole::Observer
        } else {
            AttachRole::Interactive
        };
        let (data, mut events) = match c.attach(&args.agent, role).await {
            Ok(x) => x,
            Err(e) => {
                eprintln!("shard: cannot attach to {}: {e}", args.agent);
                return ExitCode::FAILURE;
            }
        };
        println!("attached to {} ({})", args.agent, status_str(data.status));
        let mut view = View {
            agent: args.agent.clone(),
            status: data.status,
            asks: VecDeque::new(),
            observer: args.observer,
        };
        let mut stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        loop {
            tokio::select! {
                ev = events.recv() => match ev {
                    Some(ev) => view.show(ev),
                    None => { eprintln!("shard: the daemon closed the connection"); return ExitCode::FAILURE; }
                },
                line = stdin.next_line() => match line {
                    Ok(Some(l)) => view.input(&c, l.trim()),
                    _ => { let _ = c.detach(&args.agent).await; return ExitCode::SUCCESS; }
                },
                o = c.next_event() => if o.is_none() {
                    eprintln!("shard: the daemon closed the connection");
                    return ExitCode::FAILURE;
                } else if let Some(IncomingEvent::Known(Event::AgentExited(e))) = o && e.agent_id == args.agent {
                    println!("[runtime exited: {}]", e.reason);
                },
            }
        }
    })
}

enum Ask {
    Permission(Box<PermissionRequest>),
    Ui(UiRequest),
}

struct View {
    agent: String,
    status: AgentStatus,
    asks: VecDeque<Ask>,
    observer: bool,
}

impl View {
    fn show(&mut self, ev: Event) {
        let mut out = std::io::stdout().lock();
        match ev {
            Event::Sync(s) => {
                self.status = s.status;
                let _ = writeln!(
                    out,
                    "[sync] status {} mode {} ({} messages, runtime epoch {})",
                    status_str(s.status),
                    s.mode,
                    s.live_window.messages.len(),
                    s.runtime_epoch.unwrap_or(0)
                );
                self.asks.clear();
                for p in s.pending_requests {
                    match p {
                        PendingRequest::Permission(p) => self.ask_permission(&mut out, p),
                        PendingRequest::Ui(u) => self.ask_ui(&mut out, u),
                    }
                }
            }
            Event::Status(s) => {
                self.status = s.status;
                let _ = writeln!(out, "[{}]", status_str(s.status));
            }
            Event::MessageDelta(d) => {
                if let Some(t) = d.text_delta {
                    let _ = write!(out, "{t}");
                }
            }
            Event::MessageComplete(_) => {
                let _ = writeln!(out);
            }
            Event::ToolCall(t) => {
                let _ = writeln!(out, "-> {} {}", t.name, serde_json::Value::Object(t.args));
            }
            Event::ToolResult(r) => {
                let text = match &r.content {
                    shard_protocol::types::ToolResultContent::Text { text } => text.clone(),
                    shard_protocol::types::ToolResultContent::Error { message } => message.clone(),
                    other => serde_json::to_string(other).unwrap_or_default(),
                };
                let first = text.lines().next().unwrap_or("");
                let _ = writeln!(
                    out,
                    "<- {}{}",
                    if r.is_error { "error: " } else { "" },
                    first
                );
            }
            Event::PermissionRequest(p) => self.ask_permission(&mut out, p),
            Event::UiRequest(u) => self.ask_ui(&mut out, u),
            Event::PermissionResolved(r) => {
                self.asks
                    .retain(|a| !matches!(a, Ask::Permission(p) if p.request_id == r.request_id));
                let _ = writeln!(
                    out,
                    "[permission {} resolved by {}]",
                    r.request_id,
                    r.source.unwrap_or_else(|| "?".into())
                );
            }
            Event::UiResolved(r) => {
                self.asks
                    .retain(|a| !matches!(a, Ask::Ui(u) if u.request_id == r.request_id));
            }
            Event::Error(e) => {
                let _ = writeln!(out, "[error {}] {}", e.code, e.message);
            }
            _ => {}
        }
        let _ = out.flush();
    }

    fn ask_permission(&mut self, out: &mut impl Write, p: Box<PermissionRequest>) {
        let _ = writeln!(out, "\n[permission] {}", p.prompt);
        match &p.choices {
            Some(choices) if !choices.is_empty() => {
                for (i, c) in choices.iter().enumerate() {
                    let _ = writeln!(out, "  {}) {}", i + 1, c.label);
                }
            }
            _ => {
                let _ = writeln!(
                    out,
                    "  options: {}",
                    p.options
                        .iter()
                        .map(|o| serde_json::to_string(o).unwrap_or_default())
                        .collect::<Vec<_>>()
                        .join(" ")
                );
            }
        }
        if !self.observer {
            let _ = writeln!(out, "answer with a number (or allow / deny):");
        }
        self.asks.push_back(Ask::Permission(p));
    }

    fn ask_ui(&mut self, out: &mut impl Write, u: UiRequest) {
        let _ = writeln!(
            out,
            "\n[question] {} {}",
            u.title.clone().unwrap_or_default(),
            u.message.clone().unwrap_or_default()
        );
        if let Some(opts) = &u.options {
            for (i, o) in opts.iter().enumerate() {
                let _ = writeln!(out, "  {}) {o}", i + 1);
            }
        }
        self.asks.push_back(Ask::Ui(u));
    }

    fn input(&mut self, c: &Client, line: &str) {
        if line.is_empty() || self.observer {
            return;
        }
        let command = match self.asks.pop_front() {
            Some(Ask::Permission(p)) => {
                let answer = match (&p.choices, line.parse::<usize>()) {
                    (Some(ch), Ok(n)) if n >= 1 && n <= ch.len() => PermissionAnswer::Choice {
                        choice_id: ch[n - 1].id.clone(),
                    },
                    _ => {
                        match serde_json::from_value(serde_json::Value::String(line.to_string())) {
                            Ok(decision) => PermissionAnswer::Decision { decision },
                            Err(_) => {
                                println!(
                                    "answer with a choice number, allow, allow_always or deny"
                                );
                                self.asks.push_front(Ask::Permission(p));
                                return;
                            }
                        }
                    }
                };
                Command::PermissionResponse(PermissionResponse {
                    agent_id: Some(self.agent.clone()),
                    request_id: p.request_id.clone(),
                    answer,
                    reason: None,
                    source: None,
                })
            }
            Some(Ask::Ui(u)) => {
                let value = match (&u.options, line.parse::<usize>()) {
                    (Some(o), Ok(n)) if n >= 1 && n <= o.len() => o[n - 1].clone(),
                    _ => line.to_string(),
                };
                Command::UiResponse(UiResponse {
                    agent_id: Some(self.agent.clone()),
                    request_id: u.request_id.clone(),
                    value: Some(UiValue::Text(value)),
                })
            }
            None => Command::Prompt(Prompt {
                agent_id: Some(self.agent.clone()),
                message: line.to_string(),
                images: None,
                streaming_behavior: (self.status != AgentStatus::Idle)
                    .then_some(StreamingBehavior::FollowUp),
            }),
        };
        let _ = c.send(&shard_protocol::ClientMessage { id: None, command });
    }
}
