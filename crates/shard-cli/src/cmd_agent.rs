//! `shard agent`: one Runtime on stdio.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use shard_agent::models::EnvLookup;
use shard_agent::transport::{read_commands, write_events};
use shard_agent::{Input, Runtime, RuntimeOptions, StartError};
use shard_protocol::ErrorCode;
use shard_protocol::command::HeadlessPolicy;
use shard_protocol::event::{ErrorEvent, Event, Hello};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use crate::common;

/// Arguments of `shard agent`.
#[derive(Args, Debug, Clone, Default)]
pub struct AgentArgs {
    /// Working directory (default: the current directory).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Provider name (anthropic, openai, openai-responses, scripted, or a configured one).
    #[arg(long)]
    pub provider: Option<String>,
    /// Model name or catalog id.
    #[arg(long)]
    pub model: Option<String>,
    /// Mode (build, plan, or a configured one); on a resumed session it overrides the
    /// recorded mode, which is used otherwise.
    #[arg(long)]
    pub mode: Option<String>,
    /// Resume this session, or create it with this id.
    #[arg(long)]
    pub session: Option<String>,
    /// Who answers permission requests when no client can; without it the stdio peer
    /// answers them.
    #[arg(long, value_enum)]
    pub headless_policy: Option<PolicyArg>,
    /// Display name.
    #[arg(long)]
    pub name: Option<String>,
    /// Script file for the scripted provider.
    #[arg(long)]
    pub script: Option<PathBuf>,
    /// Comma-separated tool allow-list.
    #[arg(long, value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// A file whose text replaces the base system prompt.
    #[arg(long)]
    pub system_prompt_file: Option<PathBuf>,
    /// Only check that these flags would start a Runtime able to answer (mode, provider,
    /// model, credentials, configuration), open nothing, and exit: 0 and no output when
    /// they would, else the start failure (`hello`, fatal `error`) and 1. For the daemon's
    /// `agent.create` and scripts.
    #[arg(long)]
    pub check: bool,
    /// Run as a daemon's Runtime on another host: the first input line is the daemon's
    /// `runtime.settings` (keys, base URLs, policy, SHARD_HOME); end of input ends it.
    /// With `--check`, only the start check, with those settings.
    #[arg(long)]
    pub remote: bool,
}

/// `--headless-policy` values.
#[derive(ValueEnum, Debug, Clone, Copy)]
#[value(rename_all = "snake_case")]
pub enum PolicyArg {
    /// Deny at once.
    Deny,
    /// Allow what the `[headless] allow` rules match.
    AllowIfRuleMatches,
    /// Keep the request pending until answered or timed out.
    Queue,
}

impl From<PolicyArg> for HeadlessPolicy {
    fn from(p: PolicyArg) -> Self {
        match p {
            PolicyArg::Deny => HeadlessPolicy::Deny,
            PolicyArg::AllowIfRuleMatches => HeadlessPolicy::AllowIfRuleMatches,
            PolicyArg::Queue => HeadlessPolicy::Queue,
        }
    }
}

/// Builds Runtime options from flags and the environment.
pub fn options(args: &AgentArgs) -> anyhow::Result<RuntimeOptions> {
    let shard_home = common::shard_home()?;
    common::ensure_home(&shard_home)?;
    let cwd = match &args.cwd {
        Some(c) => c.clone(),
        None => std::env::current_dir()?,
    };
    let system_prompt = read_system_prompt(args)?;
    Ok(RuntimeOptions {
        shard_home,
        cwd,
        provider: args.provider.clone(),
        model: args.model.clone(),
        mode: args.mode.clone(),
        session_id: args.session.clone(),
        headless_policy: args.headless_policy.map(Into::into),
        name: args.name.clone(),
        script: args.script.clone(),
        agent_id: std::env::var("SHARD_AGENT_ID")
            .ok()
            .filter(|s| !s.is_empty()),
        tools: args.tools.clone(),
        system_prompt,
        forwarded: None,
        client_mcp_servers: client_mcp_servers()?,
        one_shot: false,
    })
}

/// The client-supplied MCP servers a launcher passed in the environment (never on the
/// command line: other users can read that). The error quotes no value: they hold tokens.
fn client_mcp_servers() -> anyhow::Result<Vec<shard_protocol::mcp::ClientMcpServer>> {
    use shard_protocol::mcp::CLIENT_MCP_ENV;
    let Some(text) = std::env::var_os(CLIENT_MCP_ENV) else {
        return Ok(Vec::new());
    };
    let text = text.to_string_lossy();
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "{CLIENT_MCP_ENV} is not a JSON list of MCP servers (line {}, column {})",
            e.line(),
            e.column()
        )
    })
}

/// The text of `--system-prompt-file`, if given.
pub(crate) fn read_system_prompt(args: &AgentArgs) -> anyhow::Result<Option<String>> {
    match &args.system_prompt_file {
        Some(p) => {
            Ok(Some(std::fs::read_to_string(p).map_err(|e| {
                anyhow::anyhow!("cannot read {}: {e}", p.display())
            })?))
        }
        None => Ok(None),
    }
}

/// Runs `shard agent`.
pub fn run(args: AgentArgs) -> ExitCode {
    common::init_logging();
    if args.remote {
        return crate::remote_agent::run(args);
    }
    let opts = match options(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("shard agent: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let rt = match common::tokio_runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("shard agent: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    if args.check {
        return rt.block_on(check(opts, common::process_env()));
    }
    let code = rt.block_on(serve(opts, common::process_env(), daemon_managed()));
    // The stdin reader sits in a blocking read that only the peer can end; waiting for it
    // would keep a Runtime told to stop (SIGTERM, SIGINT) alive while its stdin is open.
    rt.shutdown_background();
    code
}

/// Serves one Runtime on stdio; `managed`: a daemon's, which aborts and exits at end of
/// input.
pub(crate) async fn serve(opts: RuntimeOptions, env: EnvLookup, managed: bool) -> ExitCode {
    let (event_tx, event_rx) = mpsc::channel::<Event>(1024);
    let (input_tx, input_rx) = mpsc::channel::<Input>(256);
    let runtime = match Runtime::start(opts, env, event_tx, input_rx) {
        Ok(r) => r,
        Err(e) => return report_start_failure(e).await,
    };
    // Configured provider keys with names the start-up pass did not recognise.
    if let Err(err) = shard_sandbox::hardening::scrub_initial_environment(runtime.secret_env_vars())
    {
        tracing::warn!(%err, "cannot overwrite keys in the initial environment");
    }
    let journal = Some(runtime.stream_journal());
    let writer = tokio::spawn(write_events(tokio::io::stdout(), event_rx, journal));
    let reader = if managed {
        // Under a daemon, end of input means the daemon is gone (or deliberately done
        // with this Runtime, which it only is when idle or after an abort): abort the turn
        // at once and exit, so no provider call or tool runs unattended. A
        // direct Runtime lets its turn finish instead.
        let (raw_tx, raw_rx) = mpsc::channel::<Input>(256);
        tokio::spawn(abort_on_eof(raw_rx, input_tx.clone()));
        tokio::spawn(read_commands(tokio::io::stdin(), raw_tx))
    } else {
        tokio::spawn(read_commands(tokio::io::stdin(), input_tx.clone()))
    };
    tokio::spawn(forward_signals(input_tx));
    runtime.run().await;
    reader.abort();
    let _ = writer.await;
    ExitCode::SUCCESS
}

/// `--check`: exit 0 (a notice on stderr) when `opts` would start, else the start failure.
pub(crate) async fn check(opts: RuntimeOptions, env: EnvLookup) -> ExitCode {
    match check_settings(opts, env) {
        Ok(notice) => {
            // stdout is the protocol; the notice is for the person reading stderr.
            if let Some(n) = notice {
                eprintln!("shard agent: {n}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => report_start_failure(e).await,
    }
}

/// The Runtime's own start check, opening nothing: `Ok` when a Runtime started with
/// `opts` would serve and answer (mode, provider, model, credentials, configuration).
/// Blocking: it reads the configuration and the project's grants.
fn check_settings(opts: RuntimeOptions, env: EnvLookup) -> Result<Option<String>, StartError> {
    let prepared = shard_agent::prepare(opts, env)?;
    match prepared.model_problem() {
        None => Ok(prepared.model_notice()),
        Some(why) => Err(StartError::Config(why)),
    }
}

/// The daemon's `agent.create` check: the Runtime's own, run in the daemon's process
/// (it cannot link the Runtime) instead of a `shard agent --check` child,
/// one process start fewer per create. The daemon's environment is what its Runtimes
/// inherit (hardening only overwrites the initial block `/proc` shows), so the keys and
/// `HOME` seen here are theirs; `SHARD_HOME` and the flags come from the launch spec as
/// they would on the command line.
pub struct InProcessCheck;

impl shard_daemon::SettingsCheck for InProcessCheck {
    fn check(&self, spec: &shard_daemon::LaunchSpec) -> Result<Option<String>, String> {
        let system_prompt = match &spec.system_prompt_file {
            Some(p) => Some(
                std::fs::read_to_string(p)
                    .map_err(|e| format!("cannot read {}: {e}", p.display()))?,
            ),
            None => None,
        };
        let opts = RuntimeOptions {
            shard_home: spec.home.clone(),
            cwd: spec.cwd.clone(),
            provider: spec.provider.clone(),
            model: spec.model.clone(),
            mode: spec.mode.clone(),
            session_id: Some(spec.session_id.clone()),
            headless_policy: None,
            name: None,
            script: spec.script.as_ref().map(PathBuf::from),
            agent_id: None,
            tools: spec.tools.clone(),
            system_prompt,
            forwarded: None,
            client_mcp_servers: Vec::new(),
            one_shot: false,
        };
        check_settings(opts, common::process_env()).map_err(|e| e.to_string())
    }

    fn forwarded(
        &self,
        spec: &shard_daemon::LaunchSpec,
    ) -> Result<shard_protocol::remote::RuntimeSettings, String> {
        crate::cmd_hosts::forwarded_settings(spec)
    }
}

/// True for a Runtime the daemon started: the daemon sets `SHARD_DAEMON_SOCK` and
/// `SHARD_AGENT_ID` for its children only (docs/protocol.md §16 item 13).
fn daemon_managed() -> bool {
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    set("SHARD_DAEMON_SOCK") && set("SHARD_AGENT_ID")
}

/// Passes inputs through; at end of input, an `abort` goes first.
async fn abort_on_eof(mut raw: mpsc::Receiver<Input>, inputs: mpsc::Sender<Input>) {
    while let Some(input) = raw.recv().await {
        if matches!(input, Input::Eof) {
            break;
        }
        if inputs.send(input).await.is_err() {
            return;
        }
    }
    tracing::info!("end of input from the daemon: aborting and exiting");
    let abort = shard_protocol::ClientMessage {
        id: None,
        command: shard_protocol::Command::Abort(Default::default()),
    };
    let _ = inputs.send(Input::Command(abort)).await;
    let _ = inputs.send(Input::Eof).await;
}

/// SIGTERM and SIGINT abort the current turn and end input, so the Runtime persists
/// what it has and kills its tool processes before exiting.
async fn forward_signals(inputs: mpsc::Sender<Input>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    let abort = shard_protocol::ClientMessage {
        id: None,
        command: shard_protocol::Command::Abort(Default::default()),
    };
    let _ = inputs.send(Input::Command(abort)).await;
    let _ = inputs.send(Input::Eof).await;
}

pub(crate) async fn report_start_failure(e: StartError) -> ExitCode {
    let code = match &e {
        StartError::Session { code, .. } => code.clone(),
        StartError::Config(_) | StartError::Cwd(..) => ErrorCode::InvalidRequest,
    };
    let hello = Event::Hello(Hello {
        protocol_version: shard_protocol::PROTOCOL_VERSION.to_string(),
        server_version: env!("CARGO_PKG_VERSION").to_string(),
        capabilities: Vec::new(),
    });
    let error = Event::Error(ErrorEvent {
        agent_id: None,
        code,
        message: e.to_string(),
        fatal: Some(true),
        kind: None,
        retry_after_ms: None,
    });
    let mut out = tokio::io::stdout();
    let mut bytes = shard_protocol::to_line(&hello);
    bytes.extend(shard_protocol::to_line(&error));
    let _ = out.write_all(&bytes).await;
    let _ = out.flush().await;
    eprintln!("shard agent: {e}");
    ExitCode::FAILURE
}
