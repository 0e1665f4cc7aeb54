//! Pieces shared by the subcommands: `SHARD_HOME`, logging, the tokio runtime.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::cmd_agent::AgentArgs;

/// The agent a client opens: the choices `shard run` and the terminal client share, so
/// both accept and explain them the same way.
#[derive(Args, Debug, Clone, Default)]
pub struct AgentChoice {
    /// Continue the latest session of this directory.
    #[arg(long = "continue", short = 'c', conflicts_with = "session")]
    pub continue_latest: bool,
    /// Working directory (default: the current directory).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Provider, model, mode and script.
    #[command(flatten)]
    pub model: ModelChoice,
    /// Continue this session (`shard sessions` lists them).
    #[arg(long)]
    pub session: Option<String>,
}

/// What a new session runs with; `shard acp` takes these alone (the editor names the
/// directory and the session).
#[derive(Args, Debug, Clone, Default)]
pub struct ModelChoice {
    /// Provider: anthropic, openai, openai-responses, scripted (with --script), or a
    /// [providers.NAME] of config.toml. `shard models` lists what is usable.
    #[arg(long)]
    pub provider: Option<String>,
    /// Model: a catalog id `provider/model` or a model name of the catalog, e.g.
    /// anthropic/claude-sonnet-4-5. `shard models` lists them.
    #[arg(long)]
    pub model: Option<String>,
    /// Mode: build (default), plan (read-only), or a [[modes]] of config.toml.
    #[arg(long)]
    pub mode: Option<String>,
    /// Script file for the scripted provider.
    #[arg(long)]
    pub script: Option<PathBuf>,
}

impl AgentChoice {
    /// The Runtime arguments these choices stand for (`--continue` is resolved apart, by
    /// [`latest_session`], once `SHARD_HOME` is known).
    pub fn agent_args(&self) -> AgentArgs {
        AgentArgs {
            cwd: self.cwd.clone(),
            provider: self.model.provider.clone(),
            model: self.model.model.clone(),
            mode: self.model.mode.clone(),
            session: self.session.clone(),
            script: self.model.script.clone(),
            ..AgentArgs::default()
        }
    }
}

/// The newest session of `cwd`, for `--continue`; a usage error when there is none.
pub fn latest_session(home: &Path, cwd: &Path) -> anyhow::Result<String> {
    let cwd = std::fs::canonicalize(cwd).map_err(|e| usage(format!("{}: {e}", cwd.display())))?;
    let store = shard_session::SessionStore::new(home.to_path_buf());
    store
        .latest_for_cwd(&cwd)?
        .ok_or_else(|| usage(format!("no earlier session in {}", cwd.display())))
}

/// Why session `id` cannot be opened (its transcript is gone or unreadable), or `None`
/// when it can. `shard sessions`, `--continue` and `--session` say it in one line.
pub fn unopenable(home: &Path, id: &str) -> Option<String> {
    let store = shard_session::SessionStore::new(home.to_path_buf());
    match store.inspect(id) {
        Ok(_) => None,
        Err(shard_session::SessionError::NotFound(_)) => Some("its transcript is gone".into()),
        Err(e) => Some(format!("its transcript cannot be read ({e})")),
    }
}

/// The directory a command works on: `--cwd` or the current one, made canonical (the
/// daemon and the session store compare paths). `Err` is the message for a usage error.
pub fn canonical_cwd(cwd: Option<PathBuf>) -> Result<PathBuf, String> {
    let cwd = cwd
        .map_or_else(std::env::current_dir, Ok)
        .map_err(|e| e.to_string())?;
    std::fs::canonicalize(&cwd).map_err(|e| format!("{}: {e}", cwd.display()))
}

/// The provider and model to ask the daemon for: a `--script` means the scripted provider,
/// whose script path travels as the model (docs/daemon.md).
pub fn provider_and_model(
    script: Option<&Path>,
    provider: Option<String>,
    model: Option<String>,
) -> (Option<String>, Option<String>) {
    match script {
        Some(s) => {
            let s = std::fs::canonicalize(s).unwrap_or_else(|_| s.to_path_buf());
            (Some("scripted".into()), Some(s.display().to_string()))
        }
        None => (provider, model),
    }
}

/// `SHARD_HOME`, default `~/.shard`.
pub fn shard_home() -> anyhow::Result<PathBuf> {
    if let Some(h) = std::env::var_os("SHARD_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(h));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or_else(|| anyhow::anyhow!("neither SHARD_HOME nor HOME is set"))?;
    Ok(PathBuf::from(home).join(".shard"))
}

/// Creates `SHARD_HOME` owner-only when missing.
pub fn ensure_home(home: &std::path::Path) -> anyhow::Result<()> {
    shard_session::records::ensure_private_dir(home)
        .map_err(|e| anyhow::anyhow!("cannot prepare {}: {e}", home.display()))
}

/// Logs to stderr, filtered by `SHARD_LOG` (default: warnings). Never stdout.
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SHARD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

/// A small single-threaded runtime: a Runtime is one actor, and a lean executor keeps
/// start-up fast and idle memory small.
pub fn tokio_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(16)
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the async runtime: {e}"))
}

/// The process environment as a lookup function (providers read keys through it).
pub fn process_env() -> shard_agent::models::EnvLookup {
    std::sync::Arc::new(|k: &str| std::env::var(k).ok().filter(|v| !v.is_empty()))
}

/// Exit status: the work started and failed (a turn ended in an error, a daemon call
/// failed).
pub const EXIT_FAILED: u8 = 1;
/// Exit status: the command could not start: bad usage, an unknown mode, session or
/// model, a bad configuration, no usable provider. Nothing was created.
pub const EXIT_USAGE: u8 = 2;
/// Exit status: interrupted by Ctrl-C (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: u8 = 130;
/// Exit status: stopped by SIGTERM (128 + SIGTERM).
pub const EXIT_TERMINATED: u8 = 143;

/// An error the user can fix by changing the command line or the configuration;
/// reported with [`EXIT_USAGE`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Builds a [`UsageError`] as an `anyhow::Error`.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// The exit status for an error: [`EXIT_USAGE`] for a [`UsageError`], else
/// [`EXIT_FAILED`].
pub fn exit_for(e: &anyhow::Error) -> std::process::ExitCode {
    if e.downcast_ref::<UsageError>().is_some() {
        std::process::ExitCode::from(EXIT_USAGE)
    } else {
        std::process::ExitCode::from(EXIT_FAILED)
    }
}

/// Both standard input and standard error are terminals: a person is there to answer.
pub fn person_at_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}
