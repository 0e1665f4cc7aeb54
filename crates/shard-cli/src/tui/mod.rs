//! The interactive terminal client: `shard` with no arguments, `shard
//! --continue`, and `shard attach AGENT` on a terminal. Through the daemon when its
//! socket accepts a connection (so other terminals and browsers see the same agent),
//! else on an in-process Runtime that ends with the client. Events go through the
//! shared `AgentView` reducer; this module only connects, loops and draws.

mod app;
mod conversation;
mod dialogs;
mod editor;
mod highlight;
mod link;
mod markdown;
mod md_table;
mod requests;
mod slash;
mod status;
mod terminal;
mod theme;
mod tool_view;
mod ui;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_kinds;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Args;
use crossterm::event::{Event as TermEvent, KeyEventKind};
use shard_client::Client;
use shard_protocol::Command;
use shard_protocol::command::{AgentCreate, AgentTarget};
use tokio::sync::mpsc;

use crate::cmd_agent::{self, AgentArgs};
use crate::common::{self, usage};
use app::{Action, App, Connection, Target};
use link::{Daemon, Incoming, Link};
use slash::Purpose;

/// Options of the interactive client (`shard` with no subcommand).
#[derive(Args, Debug, Clone, Default)]
pub struct TuiArgs {
    /// Which agent: directory, provider, model, mode, session (as for `shard run`).
    #[command(flatten)]
    pub choice: common::AgentChoice,
    /// Never use the daemon: run the agent in this process.
    #[arg(long)]
    pub no_daemon: bool,
}

/// Where the client gets its agents.
#[derive(Clone)]
enum Source {
    /// In-process Runtimes built from these arguments.
    Direct(AgentArgs),
    /// Daemon agents, created from these arguments.
    Daemon(Daemon, AgentArgs),
}

/// Runs the client on a new (or continued) agent for the current directory.
pub fn run(args: TuiArgs) -> ExitCode {
    finish(start(Start::New(args)))
}

/// Runs the client on an existing daemon agent (`shard attach` on a terminal).
pub fn attach(agent: String, observer: bool) -> ExitCode {
    finish(start(Start::Attach { agent, observer }))
}

fn finish(r: anyhow::Result<ExitCode>) -> ExitCode {
    match r {
        Ok(c) => c,
        Err(e) => {
            eprintln!("shard: {e:#}");
            common::exit_for(&e)
        }
    }
}

enum Start {
    New(TuiArgs),
    Attach { agent: String, observer: bool },
}

/// Logs go to `SHARD_HOME/tui.log` when `SHARD_LOG` is set: the screen is the client's.
fn init_logging(home: &std::path::Path) {
    let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("SHARD_LOG") else {
        return;
    };
    let Ok(file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.join("tui.log"))
    else {
        return;
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .try_init();
}

fn start(start: Start) -> anyhow::Result<ExitCode> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(usage(
            "the interactive client needs a terminal; `shard run PROMPT` works without one",
        ));
    }
    let home = common::shard_home()?;
    common::ensure_home(&home)?;
    init_logging(&home);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let code = rt.block_on(async move { main_loop(start, home).await });
    rt.shutdown_background();
    code
}

fn agent_args(args: &TuiArgs, home: &std::path::Path) -> anyhow::Result<AgentArgs> {
    let mut a = args.choice.agent_args();
    if args.choice.continue_latest {
        let cwd = a.cwd.clone().map_or_else(std::env::current_dir, Ok)?;
        a.session = Some(common::latest_session(home, &cwd)?);
    }
    if let Some(id) = a.session.clone()
        && let Some(why) = common::unopenable(home, &id)
    {
        if !offer_new_session(&id, &why) {
            return Err(usage(format!("session {id} cannot be opened: {why}")));
        }
        a.session = None;
    }
    Ok(a)
}

/// The newest idle, unarchived top-level agent of the daemon working in this directory,
/// when the person takes the offer to continue it (Enter or `y`); `None` otherwise.
async fn idle_agent_here(d: &link::Daemon, base: &AgentArgs) -> Option<String> {
    let cwd = base
        .cwd
        .clone()
        .map_or_else(std::env::current_dir, Ok)
        .ok()?;
    let cwd = std::fs::canonicalize(&cwd).unwrap_or(cwd);
    let agents = d.client.list().await.ok()?;
    let a = agents
        .into_iter()
        .filter(|a| {
            a.archived != Some(true)
                && a.parent_agent_id.is_none()
                && a.status == shard_protocol::types::AgentStatus::Idle
                && std::path::Path::new(&a.cwd) == cwd
        })
        .max_by_key(|a| a.created_at)?;
    let name = a.name.clone().unwrap_or_else(|| a.agent_id.clone());
    use std::io::{BufRead, Write};
    let mut err = std::io::stderr();
    let _ = write!(
        err,
        "shard: agent {name} ({}) is idle here. Continue it instead of a new one? [Y/n] ",
        a.agent_id
    );
    let _ = err.flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    matches!(line.trim().to_ascii_lowercase().as_str(), "" | "y" | "yes").then_some(a.agent_id)
}

/// One line saying why the session cannot be opened, and the offer of a new one (Enter
/// or `y` accepts), asked before the screen is taken.
fn offer_new_session(id: &str, why: &str) -> bool {
    use std::io::{BufRead, Write};
    let mut err = std::io::stderr();
    let _ = write!(
        err,
        "shard: session {id} cannot be opened: {why}. Start a new session instead? [Y/n] "
    );
    let _ = err.flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
        return false;
    }
    matches!(line.trim().to_ascii_lowercase().as_str(), "" | "y" | "yes")
}

/// Opens a link on `source` for `session` (None: a new one; `Some(None)` keeps the
/// arguments' own).
async fn open_link(
    source: &Source,
    session: Option<Option<String>>,
    inbox: &link::Inbox,
    generation: u64,
) -> anyhow::Result<Link> {
    match source {
        Source::Direct(base) => {
            let mut a = base.clone();
            if let Some(s) = session {
                a.session = s;
            }
            let resuming = a.session.is_some();
            let opts = cmd_agent::options(&a).map_err(|e| usage(format!("{e:#}")))?;
            let prepared = shard_agent::prepare(opts, common::process_env())
                .map_err(|e| usage(e.to_string()))?;
            if !resuming && let Some(why) = prepared.model_problem() {
                return Err(usage(why));
            }
            link::direct(prepared, inbox.clone(), generation)
        }
        Source::Daemon(d, base) => {
            let mut a = base.clone();
            if let Some(s) = session {
                a.session = s;
            }
            let cwd = a.cwd.clone().map_or_else(std::env::current_dir, Ok)?;
            let cwd = std::fs::canonicalize(&cwd)
                .map_err(|e| usage(format!("{}: {e}", cwd.display())))?;
            let (provider, model) = match &a.script {
                Some(s) => {
                    let s = std::fs::canonicalize(s).unwrap_or_else(|_| s.clone());
                    (Some("scripted".to_string()), Some(s.display().to_string()))
                }
                None => (a.provider.clone(), a.model.clone()),
            };
            let create = AgentCreate {
                cwd: cwd.display().to_string(),
                session_id: a.session.clone(),
                model,
                provider,
                mode: a.mode.clone(),
                tools: None,
                skills: None,
                headless_policy: None,
                mcp_servers: None,
                name: None,
                parent_agent_id: None,
                system_prompt: None,
                depth: None,
                launch_policy: None,
                alias: None,
                definition_name: None,
                display_name: None,
                names: None,
                host: None,
            };
            let id = link::create(&d.client, create).await?;
            link::attach(d, id, false, inbox.clone(), generation).await
        }
    }
}

fn connection_of(link: &Link) -> Connection {
    match link.agent_id() {
        Some(id) => Connection::Daemon(id),
        None => Connection::Direct,
    }
}

fn after_link(app: &mut App) {
    app.connection = app
        .link
        .as_ref()
        .map_or(Connection::Connecting, connection_of);
    let target = AgentTarget {
        agent_id: app.agent_id(),
    };
    if app.link.as_ref().is_some_and(|l| l.agent_id().is_none()) {
        app.send(Command::RequestSync(target.clone()), Purpose::Quiet);
    }
    app.send(Command::ListModes(target.clone()), Purpose::Modes(false));
    app.send(Command::ListModels(target), Purpose::Models(false));
}

/// Reads terminal events on a thread (crossterm's reader blocks); paused while
/// `$EDITOR` owns the terminal.
fn spawn_input(tx: mpsc::UnboundedSender<TermEvent>, paused: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        loop {
            if paused.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            match crossterm::event::poll(Duration::from_millis(50)) {
                Ok(true) => match crossterm::event::read() {
                    Ok(ev) => {
                        if tx.send(ev).is_err() {
                            return;
                        }
                    }
                    Err(_) => return,
                },
                Ok(false) => {}
                Err(_) => return,
            }
        }
    });
}

async fn main_loop(start: Start, home: PathBuf) -> anyhow::Result<ExitCode> {
    use tokio::signal::unix::{SignalKind, signal};
    let (inbox, mut incoming) = mpsc::unbounded_channel::<(u64, Incoming)>();
    let mut generation = 1;
    // A daemon is running when its socket accepts a connection; `shard` never starts one.
    let daemon = match &start {
        Start::New(a) if a.no_daemon => None,
        _ => match Client::connect_daemon(&home).await {
            Ok(c) => Some(link::daemon(Arc::new(c), inbox.clone())),
            // A socket someone else serves is not "no daemon": say so, never fall back.
            Err(e @ shard_client::ClientError::ForeignPeer { .. }) => {
                return Err(anyhow::anyhow!("{e}"));
            }
            Err(_) => None,
        },
    };
    let (source, link, observer) = match start {
        Start::Attach { agent, observer } => {
            let Some(d) = daemon else {
                return Err(anyhow::anyhow!(
                    "no daemon running at {}; start one with `shard daemon`",
                    home.join("daemon.sock").display()
                ));
            };
            let link = link::attach(&d, agent, observer, inbox.clone(), generation).await?;
            (Source::Daemon(d, AgentArgs::default()), link, observer)
        }
        Start::New(args) => {
            let base = agent_args(&args, &home)?;
            // An idle agent of this directory is offered before another is created.
            let idle = match &daemon {
                Some(d) if base.session.is_none() && !args.choice.continue_latest => {
                    idle_agent_here(d, &base).await
                }
                _ => None,
            };
            let source = match daemon {
                Some(d) => Source::Daemon(d, base),
                None => Source::Direct(base),
            };
            let link = match (&source, idle) {
                (Source::Daemon(d, _), Some(agent)) => {
                    link::attach(d, agent, false, inbox.clone(), generation).await?
                }
                _ => open_link(&source, None, &inbox, generation).await?,
            };
            (source, link, false)
        }
    };
    let cwd = match &source {
        Source::Direct(a) | Source::Daemon(_, a) => a.cwd.clone(),
    }
    .map_or_else(std::env::current_dir, Ok)?;
    let cwd = std::fs::canonicalize(&cwd).unwrap_or(cwd);
    let editor = editor::Editor::with_history(&home, &cwd);
    let mut app = App::new(editor, theme::Theme::from_env(), cwd);
    app.observer = observer;
    app.has_daemon = matches!(source, Source::Daemon(..));
    app.link = Some(link);
    after_link(&mut app);

    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let (guard, mut term) = terminal::Guard::enter()?;
    let (key_tx, mut keys) = mpsc::unbounded_channel();
    let paused = Arc::new(AtomicBool::new(false));
    spawn_input(key_tx, paused.clone());
    let mut tick = tokio::time::interval(Duration::from_millis(80));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut code = ExitCode::SUCCESS;
    term.draw(|f| ui::draw(f, &mut app))?;
    // After the first paint, so loading the grammars never delays it; under NO_COLOR
    // nothing is highlighted, so they are never loaded.
    if app.theme.coloured_output() {
        highlight::preload();
    }
    'outer: loop {
        let mut actions = Vec::new();
        tokio::select! {
            m = incoming.recv() => {
                let Some((g, m)) = m else { break };
                handle(&mut app, g, generation, m);
                // Drain what is already there: one frame for a burst of deltas.
                while let Ok((g, m)) = incoming.try_recv() {
                    handle(&mut app, g, generation, m);
                }
            }
            ev = keys.recv() => {
                let Some(ev) = ev else { break };
                actions.extend(terminal_event(&mut app, ev));
                while let Ok(ev) = keys.try_recv() {
                    actions.extend(terminal_event(&mut app, ev));
                }
            }
            _ = tick.tick() => {
                if app.turn_started.is_some() || app.quit_armed.is_some() {
                    app.dirty = true;
                }
            }
            _ = sigterm.recv() => { code = ExitCode::from(common::EXIT_TERMINATED); break }
            _ = sigint.recv() => { code = ExitCode::from(common::EXIT_INTERRUPTED); break }
            _ = sighup.recv() => break,
        }
        for action in actions {
            match action {
                Action::Quit => break 'outer,
                Action::Editor { request_id, text } => {
                    paused.store(true, Ordering::SeqCst);
                    guard.suspend();
                    let result = tokio::task::block_in_place(|| run_editor(&text));
                    guard.resume(&mut term)?;
                    paused.store(false, Ordering::SeqCst);
                    match result {
                        Ok(t) => app.editor_done(request_id, Some(t)),
                        Err(e) => {
                            app.note_text(format!("$EDITOR: {e:#}"), app.theme.error());
                            if request_id.is_some() {
                                app.editor_done(request_id, None);
                            }
                        }
                    }
                }
                Action::Relink(target) => {
                    generation += 1;
                    let result = match (&source, target) {
                        (Source::Daemon(d, _), Target::Agent(id)) => {
                            link::attach(d, id, app.observer, inbox.clone(), generation).await
                        }
                        (Source::Direct(_), Target::Agent(_)) => {
                            Err(anyhow::anyhow!("/agents needs the daemon"))
                        }
                        (s, Target::NewSession) => {
                            open_link(s, Some(None), &inbox, generation).await
                        }
                        (s, Target::Session(id)) => {
                            open_link(s, Some(Some(id)), &inbox, generation).await
                        }
                    };
                    match result {
                        Ok(new) => {
                            if let Some(old) = app.link.replace(new) {
                                old.close().await;
                            }
                            app.reset_view();
                            after_link(&mut app);
                        }
                        Err(e) => app.note_text(format!("error: {e:#}"), app.theme.error()),
                    }
                }
            }
        }
        if app.dirty {
            app.dirty = false;
            term.draw(|f| ui::draw(f, &mut app))?;
        }
    }
    drop(term);
    drop(guard);
    if let Some(link) = app.link.take() {
        link.close().await;
    }
    Ok(code)
}

fn handle(app: &mut App, g: u64, current: u64, m: Incoming) {
    if g != current {
        return;
    }
    match m {
        Incoming::Event(ev) => app.apply(&ev),
        Incoming::Reply { token, result } => app.reply(token, result),
        Incoming::Closed(why) => {
            app.note_text(why.clone(), app.theme.error());
            app.connection = Connection::Closed(why);
        }
    }
}

fn terminal_event(app: &mut App, ev: TermEvent) -> Vec<Action> {
    match ev {
        TermEvent::Key(k) if k.kind != KeyEventKind::Release => app.key(k),
        TermEvent::Mouse(m) => {
            app.mouse(m);
            Vec::new()
        }
        TermEvent::Paste(p) => {
            app.paste(&p);
            Vec::new()
        }
        TermEvent::Resize(..) => {
            app.dirty = true;
            Vec::new()
        }
        _ => Vec::new(),
    }
}

/// Runs `$VISUAL`/`$EDITOR` (default `vi`) on a private temporary file.
fn run_editor(text: &str) -> anyhow::Result<String> {
    let editor = std::env::var("VISUAL")
        .ok()
        .filter(|e| !e.is_empty())
        .or_else(|| std::env::var("EDITOR").ok().filter(|e| !e.is_empty()))
        .unwrap_or_else(|| "vi".into());
    let file = tempfile::Builder::new().suffix(".md").tempfile()?;
    std::fs::write(file.path(), text)?;
    let mut parts = editor.split_whitespace();
    let prog = parts.next().unwrap_or("vi");
    let status = std::process::Command::new(prog)
        .args(parts)
        .arg(file.path())
        .status()
        .map_err(|e| anyhow::anyhow!("cannot run {prog}: {e}"))?;
    if !status.success() {
        return Err(anyhow::anyhow!("{prog} exited with {status}"));
    }
    Ok(std::fs::read_to_string(file.path())?)
}
