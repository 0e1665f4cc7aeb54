//! `shard run`: one prompt, one turn, printed as it streams. Drives a Runtime directly
//! (in-process, over the same protocol messages a stdio client would exchange).
//!
//! It never waits on nobody: with a person at the terminal it asks
//! inline; without one, permission requests follow the headless rules and UI requests are
//! answered with nothing at once, and the output says what was asked.

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use shard_agent::{Input, Runtime};
use shard_client::sanitize::strip;
use shard_client::view::{AgentView, Change, Pending};
use shard_protocol::command::{HeadlessPolicy, PermissionResponse, Prompt, UiResponse};
use shard_protocol::event::Event;
use shard_protocol::types::{PermissionDecision, UiKind};
use shard_protocol::{ClientMessage, Command, PermissionAnswer};
use tokio::sync::mpsc;

use crate::cmd_agent;
use crate::common::{self, usage};
use crate::prompter::{Prompter, Question, Reply};
use crate::run_print::{Printer, thousands};

/// Arguments of `shard run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The prompt; read from standard input when absent.
    pub prompt: Option<String>,
    /// Print every protocol event as JSONL instead of text.
    #[arg(long)]
    pub json: bool,
    /// Answer every permission request with allow (questions are still asked on a
    /// terminal, and answered with nothing without one).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Which agent: directory, provider, model, mode, session.
    #[command(flatten)]
    pub choice: common::AgentChoice,
}

/// Runs `shard run`.
pub fn run(args: RunArgs) -> ExitCode {
    common::init_logging();
    match run_inner(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("shard run: {e:#}");
            common::exit_for(&e)
        }
    }
}

/// Checks `--mode` against the mode catalog (built-ins and `[[modes]]` of config.toml).
fn check_mode(shard_home: &Path, mode: &str) -> anyhow::Result<()> {
    let config = shard_agent::config::Config::load(shard_home).map_err(|e| usage(e.to_string()))?;
    let mut modes = shard_agent::modes::ModeController::new(&config.modes);
    if modes.set(mode).is_err() {
        let names: Vec<String> = modes.descriptors().into_iter().map(|m| m.name).collect();
        return Err(usage(format!(
            "unknown mode `{mode}`: use one of {}",
            names.join(", ")
        )));
    }
    Ok(())
}

/// Checks that `--session` names an existing session.
fn check_session(shard_home: &Path, id: &str) -> anyhow::Result<()> {
    let store = shard_session::SessionStore::new(shard_home.to_path_buf());
    let listed = store
        .session_dir(id)
        .is_ok_and(|d| d.join("meta.json").exists());
    match store.inspect(id) {
        Ok(_) => Ok(()),
        Err(shard_session::SessionError::NotFound(_)) if listed => Err(usage(format!(
            "session {id} cannot be opened: its transcript is gone; \
             leave out --session to start a new one"
        ))),
        Err(shard_session::SessionError::NotFound(_)) => Err(usage(format!(
            "no session {id}: `shard sessions` lists this directory's sessions; \
             leave out --session to start a new one"
        ))),
        Err(shard_session::SessionError::InvalidId(_)) => Err(usage(format!(
            "`{id}` is not a session id (they look like sess-01J…)"
        ))),
        Err(e) => Err(anyhow::anyhow!("{e}")),
    }
}

fn run_inner(args: RunArgs) -> anyhow::Result<ExitCode> {
    let agent_args = args.choice.agent_args();
    let mut opts = cmd_agent::options(&agent_args).map_err(|e| usage(format!("{e:#}")))?;
    // Everything checkable is checked before the prompt is read and before anything
    // is created.
    if let Some(mode) = &args.choice.model.mode {
        check_mode(&opts.shard_home, mode)?;
    }
    if let Some(id) = &args.choice.session {
        check_session(&opts.shard_home, id)?;
    }
    if args.choice.continue_latest {
        let id = common::latest_session(&opts.shard_home, &opts.cwd)?;
        if let Some(why) = common::unopenable(&opts.shard_home, &id) {
            return Err(usage(format!(
                "the latest session here, {id}, cannot be opened: {why}; \
                 leave out --continue to start a new one"
            )));
        }
        opts.session_id = Some(id);
    }
    let prompt = match &args.prompt {
        Some(p) => p.clone(),
        None => {
            if std::io::stdin().is_terminal() {
                return Err(usage("give a prompt as an argument or on standard input"));
            }
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s)?;
            s
        }
    };
    if prompt.trim().is_empty() {
        return Err(usage("the prompt is empty"));
    }
    // A person at the terminal answers (questions always; permissions unless --yes);
    // with --yes this client allows; otherwise nobody is there and the headless rules
    // decide at once.
    let person = common::person_at_terminal();
    opts.headless_policy = if args.yes || person {
        None
    } else {
        Some(HeadlessPolicy::AllowIfRuleMatches)
    };
    // The process exits when the turn ends: its last sync goes to a helper process.
    opts.one_shot = true;
    let resuming = opts.session_id.is_some();
    let shard_home = opts.shard_home.clone();
    let prepared =
        shard_agent::prepare(opts, common::process_env()).map_err(|e| usage(e.to_string()))?;
    // A new session with no usable model could only fail: say how to configure one
    // instead, before anything is written. A resumed session's recorded model may differ.
    if !resuming && let Some(why) = prepared.model_problem() {
        return Err(usage(why));
    }
    if let Some(n) = prepared.model_notice() {
        eprintln!("shard run: {n}");
    }
    let rt = common::tokio_runtime()?;
    let how = How {
        json: args.json,
        yes: args.yes,
        person,
    };
    rt.block_on(drive(prepared, prompt, how, &shard_home))
}

/// Who answers what.
#[derive(Clone, Copy)]
struct How {
    json: bool,
    yes: bool,
    person: bool,
}

fn send(cmd: Command) -> Input {
    Input::Command(ClientMessage::new("run", cmd))
}

async fn drive(
    prepared: shard_agent::Prepared,
    prompt: String,
    how: How,
    shard_home: &Path,
) -> anyhow::Result<ExitCode> {
    use tokio::signal::unix::{SignalKind, signal};
    let (event_tx, mut event_rx) = mpsc::channel::<Event>(1024);
    let (input_tx, input_rx) = mpsc::channel::<Input>(64);
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let runtime =
        Runtime::open(prepared, event_tx, input_rx).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Err(err) = shard_sandbox::hardening::scrub_initial_environment(runtime.secret_env_vars())
    {
        tracing::warn!(%err, "cannot overwrite keys in the initial environment");
    }
    let session_id = runtime.session_id().to_string();
    let actor = tokio::spawn(runtime.run());
    input_tx
        .send(send(Command::Prompt(Prompt {
            agent_id: None,
            message: prompt,
            images: None,
            streaming_behavior: None,
        })))
        .await
        .map_err(|_| anyhow::anyhow!("the Runtime stopped before the prompt was sent"))?;

    let (reply_tx, mut reply_rx) = mpsc::unbounded_channel::<Reply>();
    let prompter = if how.person {
        Some(Prompter::spawn(reply_tx)?)
    } else {
        None
    };
    let mut view = AgentView::new();
    let mut printer = Printer::new(how.json, shard_home);
    let mut failed = false;
    let mut finished = false;
    let mut started = false;
    let mut interrupted: Option<u8> = None;
    loop {
        tokio::select! {
            ev = event_rx.recv() => {
                let Some(ev) = ev else { break };
                let changes = view.apply(&ev);
                printer.show(&ev, &changes, &view);
                for change in &changes {
                    if let Change::RequestAdded(id) = change
                        && let Some(p) = view.pending_request(id).cloned()
                    {
                        printer.end_line();
                        printer.flush();
                        answer(&input_tx, prompter.as_ref(), p, how).await;
                    }
                }
                match &ev {
                    // Notices before the turn (e.g. a repaired transcript) do not fail the run.
                    Event::TurnStart(_) => started = true,
                    Event::Error(_) if started => failed = true,
                    Event::Response(r) if !r.success => failed = true,
                    Event::TurnEnd(_) => {
                        finished = true;
                        let _ = input_tx.send(Input::Eof).await;
                    }
                    _ => {}
                }
                if event_rx.is_empty() {
                    printer.flush();
                }
            }
            Some(reply) = reply_rx.recv() => {
                let _ = input_tx.send(send(reply_command(reply))).await;
            }
            _ = sigint.recv() => {
                if interrupted.is_some() {
                    // The second Ctrl-C: leave now.
                    printer.finish();
                    eprintln!("shard run: interrupted");
                    std::process::exit(i32::from(common::EXIT_INTERRUPTED));
                }
                interrupted = Some(common::EXIT_INTERRUPTED);
                printer.end_line();
                printer.flush();
                // The terminal echoed `^C` mid-line: start a line of our own.
                eprintln!("\naborting the turn (Ctrl-C again to quit at once)");
                abort(&input_tx).await;
            }
            _ = sigterm.recv() => {
                if interrupted.is_none() {
                    interrupted = Some(common::EXIT_TERMINATED);
                    abort(&input_tx).await;
                }
            }
        }
    }
    let _ = actor.await;
    printer.finish();
    // On stderr in both modes: scripts reading --json from stdout still learn the session.
    // A failed run whose session was never written (its creation failed) names none.
    let saved = !failed
        || shard_session::SessionStore::new(shard_home.to_path_buf())
            .inspect(&session_id)
            .is_ok();
    if saved {
        eprintln!("{}", closing_line(&view, &session_id));
    } else {
        eprintln!("no session was saved");
    }
    Ok(match interrupted {
        Some(code) => ExitCode::from(code),
        None if failed || !finished => ExitCode::from(common::EXIT_FAILED),
        None => ExitCode::SUCCESS,
    })
}

/// Abort the turn, then end input: the Runtime saves the partial answer, kills its tool
/// processes and exits.
async fn abort(input_tx: &mpsc::Sender<Input>) {
    let _ = input_tx
        .send(send(Command::Abort(Default::default())))
        .await;
    let _ = input_tx.send(Input::Eof).await;
}

/// The last line: tokens, cost, and how to continue.
fn closing_line(view: &AgentView, session_id: &str) -> String {
    let u = &view.usage;
    let mut tokens = format!(
        "tokens: {} in, {} out",
        thousands(u.input),
        thousands(u.output)
    );
    if u.cache_read > 0 {
        tokens.push_str(&format!(", {} cache read", thousands(u.cache_read)));
    }
    if u.cache_write > 0 {
        tokens.push_str(&format!(", {} cache write", thousands(u.cache_write)));
    }
    let cost = match u.cost {
        Some(c) => format!("${c:.4}"),
        None => "unknown".into(),
    };
    format!(
        "{tokens} · cost: {cost} · session: {session_id} (continue with: shard run --session {session_id} \"…\")"
    )
}

fn reply_command(reply: Reply) -> Command {
    match reply {
        Reply::Permission { request_id, answer } => {
            Command::PermissionResponse(PermissionResponse {
                agent_id: None,
                request_id,
                answer,
                reason: None,
                source: Some("shard run (terminal)".into()),
            })
        }
        Reply::Ui { request_id, value } => Command::UiResponse(UiResponse {
            agent_id: None,
            request_id,
            value,
        }),
    }
}

/// Answers a request at once, or hands it to the person.
async fn answer(input_tx: &mpsc::Sender<Input>, prompter: Option<&Prompter>, p: Pending, how: How) {
    match p {
        Pending::Permission(req) if how.yes => {
            let answer = match &req.choices {
                Some(ch) if ch.iter().any(|c| c.id == "allow") => PermissionAnswer::Choice {
                    choice_id: "allow".into(),
                },
                _ => PermissionAnswer::Decision {
                    decision: PermissionDecision::Allow,
                },
            };
            let r = PermissionResponse {
                agent_id: None,
                request_id: req.request_id.clone(),
                answer,
                reason: None,
                source: Some("shard run --yes".into()),
            };
            let _ = input_tx.send(send(Command::PermissionResponse(r))).await;
        }
        Pending::Permission(req) => match prompter {
            Some(pr) => pr.ask(Question::Permission(req)),
            // Without a person the headless policy decides inside the Runtime; a
            // request that still reaches here is denied rather than left waiting.
            None => {
                let r = PermissionResponse {
                    agent_id: None,
                    request_id: req.request_id.clone(),
                    answer: PermissionAnswer::Decision {
                        decision: PermissionDecision::Deny,
                    },
                    reason: Some("nobody at a terminal to ask".into()),
                    source: Some("headless".into()),
                };
                let _ = input_tx.send(send(Command::PermissionResponse(r))).await;
            }
        },
        Pending::Ui(u) if u.kind == UiKind::Notify => {
            let title = u.title.as_deref().map(strip).unwrap_or_default();
            let msg = u.message.as_deref().map(strip).unwrap_or_default();
            eprintln!("! {title}{}{msg}", if title.is_empty() { "" } else { ": " });
            let r = UiResponse {
                agent_id: None,
                request_id: u.request_id.clone(),
                value: None,
            };
            let _ = input_tx.send(send(Command::UiResponse(r))).await;
        }
        Pending::Ui(u) => match prompter {
            Some(pr) => pr.ask(Question::Ui(u)),
            None => {
                let what = u.message.as_deref().or(u.title.as_deref()).unwrap_or("");
                let mut line = format!("? the agent asked: {}", strip(what));
                if let Some(opts) = &u.options {
                    let opts: Vec<String> = opts.iter().map(|o| strip(o)).collect();
                    line.push_str(&format!(" [{}]", opts.join(" / ")));
                }
                if !how.json {
                    eprintln!("{line}");
                    eprintln!("  no terminal to answer on: answered with nothing");
                }
                let r = UiResponse {
                    agent_id: None,
                    request_id: u.request_id.clone(),
                    value: None,
                };
                let _ = input_tx.send(send(Command::UiResponse(r))).await;
            }
        },
    }
}
