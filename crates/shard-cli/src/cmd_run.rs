//! `shard run`: one prompt, one turn, printed as it streams. Drives a Runtime directly
//! (in-process, over the same protocol messages a stdio client would exchange).

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use shard_agent::{Input, Runtime};
use shard_protocol::command::{HeadlessPolicy, PermissionResponse, Prompt};
use shard_protocol::event::{DeltaKind, Event};
use shard_protocol::types::ToolResultContent;
use shard_protocol::{ClientMessage, Command, PermissionAnswer};
use tokio::sync::mpsc;

use crate::cmd_agent::{self, AgentArgs};
use crate::common;

/// Arguments of `shard run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The prompt; read from standard input when absent.
    pub prompt: Option<String>,
    /// Print every protocol event as JSONL instead of text.
    #[arg(long)]
    pub json: bool,
    /// Answer every permission request with allow.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Continue the latest session of this directory.
    #[arg(long = "continue", short = 'c', conflicts_with = "session")]
    pub continue_latest: bool,
    /// Working directory.
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Provider name.
    #[arg(long)]
    pub provider: Option<String>,
    /// Model name or catalog id.
    #[arg(long)]
    pub model: Option<String>,
    /// Mode.
    #[arg(long)]
    pub mode: Option<String>,
    /// Continue this session.
    #[arg(long)]
    pub session: Option<String>,
    /// Script file for the scripted provider.
    #[arg(long)]
    pub script: Option<PathBuf>,
}

/// Runs `shard run`.
pub fn run(args: RunArgs) -> ExitCode {
    common::init_logging();
    match run_inner(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("shard run: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_inner(args: RunArgs) -> anyhow::Result<ExitCode> {
    let prompt = match &args.prompt {
        Some(p) => p.clone(),
        None => {
            if std::io::stdin().is_terminal() {
                anyhow::bail!("give a prompt as an argument or on standard input");
            }
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s)?;
            s
        }
    };
    if prompt.trim().is_empty() {
        anyhow::bail!("the prompt is empty");
    }
    let agent_args = AgentArgs {
        cwd: args.cwd.clone(),
        provider: args.provider.clone(),
        model: args.model.clone(),
        mode: args.mode.clone(),
        session: args.session.clone(),
        script: args.script.clone(),
        ..AgentArgs::default()
    };
    let mut opts = cmd_agent::options(&agent_args)?;
    if args.continue_latest {
        let store = shard_session::SessionStore::new(opts.shard_home.clone());
        let cwd = std::fs::canonicalize(&opts.cwd)?;
        match store.latest_for_cwd(&cwd)? {
            Some(id) => opts.session_id = Some(id),
            None => anyhow::bail!("no earlier session in {}", cwd.display()),
        }
    }
    // With --yes this client answers every request; otherwise nobody is there to ask.
    opts.headless_policy = if args.yes {
        None
    } else {
        Some(HeadlessPolicy::AllowIfRuleMatches)
    };
    let resuming = opts.session_id.is_some();
    let prepared =
        shard_agent::prepare(opts, common::process_env()).map_err(|e| anyhow::anyhow!("{e}"))?;
    // A new session with no usable model could only fail: say how to configure one
    // instead, before anything is written. A resumed session's recorded model may differ.
    if !resuming && let Some(why) = prepared.model_problem() {
        eprintln!("shard run: {why}");
        return Ok(ExitCode::from(2));
    }
    let rt = common::tokio_runtime()?;
    rt.block_on(drive(prepared, prompt, args.json, args.yes))
}

async fn drive(
    prepared: shard_agent::Prepared,
    prompt: String,
    json: bool,
    yes: bool,
) -> anyhow::Result<ExitCode> {
    let (event_tx, mut event_rx) = mpsc::channel::<Event>(1024);
    let (input_tx, input_rx) = mpsc::channel::<Input>(64);
    let runtime =
        Runtime::open(prepared, event_tx, input_rx).map_err(|e| anyhow::anyhow!("{e}"))?;
    let session_id = runtime.session_id().to_string();
    let actor = tokio::spawn(runtime.run());
    let send = |cmd: Command| Input::Command(ClientMessage::new("run", cmd));
    input_tx
        .send(send(Command::Prompt(Prompt {
            agent_id: None,
            message: prompt,
            images: None,
            streaming_behavior: None,
        })))
        .await
        .map_err(|_| anyhow::anyhow!("the Runtime stopped before the prompt was sent"))?;

    let mut printer = Printer::new(json);
    let mut failed = false;
    let mut finished = false;
    let mut started = false;
    while let Some(ev) = event_rx.recv().await {
        printer.show(&ev);
        match &ev {
            Event::PermissionRequest(req) if yes => {
                let answer = PermissionResponse {
                    agent_id: None,
                    request_id: req.request_id.clone(),
                    answer: PermissionAnswer::Choice {
                        choice_id: "allow".into(),
                    },
                    reason: None,
                    source: Some("shard run --yes".into()),
                };
                let _ = input_tx
                    .send(send(Command::PermissionResponse(answer)))
                    .await;
            }
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
    let _ = actor.await;
    printer.finish();
    eprintln!("session: {session_id} (continue with: shard run --session {session_id} \"…\")");
    Ok(if failed || !finished {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Text or JSONL presentation of the stream.
struct Printer {
    json: bool,
    out: std::io::BufWriter<std::io::Stdout>,
    at_line_start: bool,
}

impl Printer {
    fn new(json: bool) -> Self {
        Printer {
            json,
            out: std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout()),
            at_line_start: true,
        }
    }

    fn show(&mut self, ev: &Event) {
        if self.json {
            let _ = self.out.write_all(&shard_protocol::to_line(ev));
            return;
        }
        match ev {
            Event::MessageDelta(d) if d.kind == DeltaKind::Text => {
                if let Some(t) = &d.text_delta {
                    let _ = self.out.write_all(t.as_bytes());
                    self.at_line_start = t.ends_with('\n');
                }
            }
            Event::ToolCall(c) => {
                self.end_line();
                self.flush();
                eprintln!("▸ {} {}", c.name, brief_args(&c.args));
            }
            Event::ToolResult(r) => {
                let text = match &r.content {
                    ToolResultContent::Text { text } => first_line(text),
                    ToolResultContent::Error { message } => first_line(message),
                    ToolResultContent::Json { value } => first_line(&value.to_string()),
                    ToolResultContent::Image { mime_type, .. } => format!("[{mime_type}]"),
                };
                if r.is_error {
                    eprintln!("  ✗ {text}");
                } else {
                    let code = r
                        .exit_code
                        .map(|c| format!(" [exit {c}]"))
                        .unwrap_or_default();
                    eprintln!("  ✓{code} {text}");
                }
            }
            Event::Error(e) => {
                self.end_line();
                self.flush();
                eprintln!("error: {} ({})", e.message, e.code);
            }
            Event::Response(r) if !r.success => {
                if let Some(err) = &r.error {
                    eprintln!("error: {} ({})", err.message, err.code);
                }
            }
            _ => {}
        }
    }

    fn end_line(&mut self) {
        if !self.at_line_start {
            let _ = self.out.write_all(b"\n");
            self.at_line_start = true;
        }
    }

    /// Flushed whenever the event queue runs dry, so output is prompt yet batched.
    fn flush(&mut self) {
        let _ = self.out.flush();
    }

    fn finish(&mut self) {
        if !self.json {
            self.end_line();
        }
        self.flush();
    }
}

fn brief_args(args: &serde_json::Map<String, serde_json::Value>) -> String {
    for key in ["command", "path", "pattern"] {
        if let Some(v) = args.get(key).and_then(|v| v.as_str()) {
            return first_line(v);
        }
    }
    String::new()
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(100).collect();
    if out.len() < s.trim_end().len() {
        out.push('…');
    }
    out
}
