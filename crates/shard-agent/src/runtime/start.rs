//! Starting a Runtime: preparing (configuration, grants, model — everything that needs no
//! session), validating a user's choices, and restoring the choices a session recorded.

use std::path::PathBuf;

use shard_gate::gate::Gate;
use shard_gate::grants::GrantStore;
use shard_protocol::ErrorCode;
use shard_protocol::command::HeadlessPolicy;
use shard_session::Session;

use crate::config::Config;
use crate::models::{EnvLookup, ModelController};
use crate::modes::ModeController;

/// How a Runtime is started (the flags of `shard agent`).
#[derive(Debug, Clone, Default)]
pub struct RuntimeOptions {
    /// `SHARD_HOME`.
    pub shard_home: PathBuf,
    /// Working directory (canonicalized on start).
    pub cwd: PathBuf,
    /// Provider name; on resume it overrides the recorded one (and is recorded).
    pub provider: Option<String>,
    /// Model name or catalog id; on resume it overrides the recorded one.
    pub model: Option<String>,
    /// Mode; on resume it overrides the recorded one (and is recorded).
    pub mode: Option<String>,
    /// Session to resume or create.
    pub session_id: Option<String>,
    /// `None`: the stdio peer is the interactive responder.
    pub headless_policy: Option<HeadlessPolicy>,
    /// Display name.
    pub name: Option<String>,
    /// Script file of the scripted provider.
    pub script: Option<PathBuf>,
    /// Set by the daemon for managed Runtimes.
    pub agent_id: Option<String>,
    /// Tool allow-list (managed children).
    pub tools: Option<Vec<String>>,
    /// Replaces the base system prompt (managed children).
    pub system_prompt: Option<String>,
    /// The client ends input when the turn ends and the process exits (`shard run`): the
    /// turn's end and the exit hand the transcript's sync to a helper process instead of
    /// waiting for the disk (docs/decisions.md, "The exit of a one-shot run").
    pub one_shot: bool,
    /// MCP servers the client supplied (an editor's): started with the configured ones,
    /// untrusted (`shard_mcp::add_client_servers`).
    pub client_mcp_servers: Vec<shard_protocol::mcp::ClientMcpServer>,
    /// A Runtime on another host: the daemon's forwarded configuration tables, combined
    /// with the host's own file (`crate::forwarded`).
    pub forwarded: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A failure before the Runtime could serve anything.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The configuration is invalid.
    #[error("{0}")]
    Config(String),
    /// The session cannot be opened.
    #[error("{message}")]
    Session {
        /// Protocol code for the failure.
        code: ErrorCode,
        /// One line.
        message: String,
    },
    /// The working directory is unusable.
    #[error("working directory {0}: {1}")]
    Cwd(String, String),
}

/// Configuration read and a model selected (from the flags, else the configured
/// default), before any session is opened: `shard run` can report in one line that no
/// provider is usable without creating a session, and then open with the same work.
pub struct Prepared {
    pub(super) opts: RuntimeOptions,
    pub(super) config: Config,
    pub(super) gate: Gate,
    pub(super) grants: GrantStore,
    pub(super) models: ModelController,
    pub(super) mcp: shard_mcp::Resolved,
    /// Byte budget of `sync.live_window` and of a history page (`SHARD_LIVE_WINDOW_BYTES`).
    pub(super) live_window_budget: usize,
}

impl Prepared {
    /// Why no model is usable with these options, if none is.
    pub fn model_problem(&self) -> Option<String> {
        self.models.active().err()
    }

    /// The one-line notice owed for a selected model the catalog lacks (its price and
    /// context window are unknown), if any.
    pub fn model_notice(&self) -> Option<String> {
        self.models.notice()
    }
}

/// Reads the configuration and the project's grants, canonicalizes the cwd and selects
/// the model: every failure that needs no session happens before one is opened.
pub fn prepare(mut opts: RuntimeOptions, env: EnvLookup) -> Result<Prepared, StartError> {
    let cwd = std::fs::canonicalize(&opts.cwd)
        .map_err(|e| StartError::Cwd(opts.cwd.display().to_string(), e.to_string()))?;
    if !cwd.is_dir() {
        return Err(StartError::Cwd(
            cwd.display().to_string(),
            "not a directory".into(),
        ));
    }
    opts.cwd = cwd;
    let live_window_budget = super::conversation::live_window_budget(
        env(super::conversation::LIVE_WINDOW_ENV).as_deref(),
    )
    .map_err(StartError::Config)?;
    let mut config =
        Config::load(&opts.shard_home).map_err(|e| StartError::Config(e.to_string()))?;
    if let Some(tables) = &opts.forwarded {
        let daemon = crate::forwarded::daemon_config(tables)
            .map_err(|e| StartError::Config(e.to_string()))?;
        config = crate::forwarded::combine(config, daemon);
    }
    let ai_config = config.ai_config();
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let gate = Gate::new(
        &config.permissions,
        &config.headless.allow,
        &opts.cwd,
        &opts.shard_home,
        home.as_deref(),
    )
    .map_err(|e| StartError::Config(format!("config.toml [permissions]/[headless]: {e}")))?;
    if let Some(mode) = &opts.mode {
        check_mode(&config, mode).map_err(StartError::Config)?;
    }
    let grants = GrantStore::open(&opts.shard_home, &opts.cwd)
        .map_err(|e| StartError::Config(e.to_string()))?;
    let mut mcp = shard_mcp::resolve(
        &config.mcp,
        &opts.shard_home.join("config.toml"),
        &opts.shard_home,
        &opts.cwd,
        &|k: &str| env(k),
        &shard_ai::secret_env_vars(&config.ai_config()),
    )
    .map_err(|e| StartError::Config(e.to_string()))?;
    shard_mcp::add_client_servers(&mut mcp, &opts.client_mcp_servers);
    let mut models = ModelController::new(ai_config, env, opts.script.clone());
    // A provider or model the user named that does not exist is a start failure; a
    // missing key is not (the first prompt says which variable to set).
    if opts.provider.is_some() || opts.model.is_some() {
        models
            .resolve(opts.provider.as_deref(), opts.model.as_deref())
            .map_err(|e| StartError::Config(e.0))?;
    }
    models.init(opts.provider.as_deref(), opts.model.as_deref());
    Ok(Prepared {
        opts,
        config,
        gate,
        grants,
        models,
        mcp,
        live_window_budget,
    })
}

/// Refuses a mode name the configuration does not define, naming those it does.
fn check_mode(config: &Config, mode: &str) -> Result<(), String> {
    let mut modes = ModeController::new(&config.modes);
    if modes.set(mode).is_ok() {
        return Ok(());
    }
    let names: Vec<String> = modes.descriptors().into_iter().map(|d| d.name).collect();
    Err(format!(
        "unknown mode `{mode}`: use one of {}, or add a [[modes]] entry to \
         SHARD_HOME/config.toml",
        names.join(", ")
    ))
}

/// Checks a mode, provider and model the way `shard agent` would at start, without
/// opening anything: the daemon's `agent.create` and `shard run` call it so an unknown
/// choice is one clear error and nothing is created. `Err` is one line saying what would
/// work; `Ok` holds the notice owed for a model the catalog lacks. A provider without
/// credentials is an error too (it could never answer).
pub fn validate_choice(
    shard_home: &std::path::Path,
    mode: Option<&str>,
    provider: Option<&str>,
    model: Option<&str>,
    script: Option<&std::path::Path>,
    env: EnvLookup,
) -> Result<Option<String>, String> {
    let config = Config::load(shard_home).map_err(|e| e.to_string())?;
    if let Some(mode) = mode {
        check_mode(&config, mode)?;
    }
    if provider.is_none() && model.is_none() {
        return Ok(None);
    }
    let ai_config = config.ai_config();
    let mut models = ModelController::new(ai_config, env, script.map(Into::into));
    models.init(provider, model);
    models.active().map(|_| models.notice())
}

/// Applies the session's recorded mode, model and reasoning level, unless a flag chose
/// otherwise, and records whatever the session does not hold yet (a new session, or a
/// flag that overrides on resume), so every later start reproduces this one exactly.
pub(super) fn restore_choices(
    opts: &RuntimeOptions,
    session: &mut Session,
    modes: &mut ModeController,
    models: &mut ModelController,
) {
    let state = session.state().clone();
    // Mode: a flag (already validated in `prepare`) wins, else the recorded one.
    let mode = opts.mode.clone().or(state.mode.clone());
    if let Some(m) = &mode
        && modes.set(m).is_err()
    {
        tracing::warn!(mode = %m, "the recorded mode no longer exists; staying in build");
    }
    // Model: `prepare` selected from the flags. Without a model flag the recorded model
    // stands; so does `--provider P` alone when P is the recorded provider (the daemon
    // passes its provider on every start).
    if let Some(r) = &state.model {
        let keep = match (opts.provider.as_deref(), opts.model.as_deref()) {
            (None, None) => true,
            (Some(p), None) => p == r.provider,
            _ => false,
        };
        let current = models.descriptor();
        if keep && (current.provider != r.provider || current.model != r.model) {
            models.init(Some(&r.provider), Some(&r.model));
        }
    }
    if let Some(level) = &state.reasoning_level {
        let _ = models.set_reasoning(level);
    }
    let mut entries = Vec::new();
    let active_mode = modes.active().name.clone();
    if state.mode.as_deref() != Some(active_mode.as_str()) {
        entries.push(shard_session::EntryKind::ModeChange { mode: active_mode });
    }
    if models.active().is_ok() {
        let d = models.descriptor();
        let recorded = state
            .model
            .as_ref()
            .is_some_and(|r| r.provider == d.provider && r.model == d.model);
        if !recorded {
            entries.push(shard_session::EntryKind::ModelChange {
                provider: d.provider,
                model: d.model,
            });
        }
        if let Some(level) = models.reasoning()
            && state.reasoning_level.as_deref() != Some(level)
        {
            entries.push(shard_session::EntryKind::ReasoningLevelChange {
                level: level.to_string(),
            });
        }
    }
    for entry in entries {
        if let Err(e) = session.append(entry) {
            tracing::error!(error = %e, "could not record the session's choices");
        }
    }
}

pub(super) fn session_start_error(e: shard_session::SessionError) -> StartError {
    use shard_session::SessionError as E;
    let code = match &e {
        E::Conflict(_) => ErrorCode::Conflict,
        E::Corrupt(_) => ErrorCode::SessionCorrupt,
        E::NotFound(_) => ErrorCode::NotFound,
        E::InvalidId(_) => ErrorCode::InvalidRequest,
        _ => ErrorCode::InternalError,
    };
    StartError::Session {
        code,
        message: e.to_string(),
    }
}
