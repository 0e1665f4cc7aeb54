//! `shard mcp list` and `shard mcp approve` (docs/mcp.md): which MCP servers
//! this project would start, started to show their state and tools; and the user's
//! approval of the project's `.mcp.json`, which no server of it starts without.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use shard_mcp::{McpManager, ServerState, StartContext};

use crate::common::{self, usage};

/// Arguments of `shard mcp`.
#[derive(Args, Debug)]
pub struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(Subcommand, Debug)]
enum McpCommand {
    /// Start the servers this project would start and show their state and tools.
    List(ListArgs),
    /// Approve this project's .mcp.json (its exact content) so its servers may start.
    Approve(ApproveArgs),
}

#[derive(Args, Debug)]
struct ListArgs {
    /// Project directory (default: the current directory).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Print JSON (an array of `{name, origin, state, message, tools}`).
    #[arg(long)]
    json: bool,
    /// Seconds to wait for the servers to be ready.
    #[arg(long, default_value_t = 30)]
    wait: u64,
}

#[derive(Args, Debug)]
struct ApproveArgs {
    /// Project directory (default: the current directory).
    #[arg(long)]
    cwd: Option<PathBuf>,
}

/// Runs `shard mcp`.
pub fn run(args: McpArgs) -> ExitCode {
    common::init_logging();
    let r = match args.command {
        McpCommand::List(a) => list(a),
        McpCommand::Approve(a) => approve(a),
    };
    match r {
        Ok(c) => c,
        Err(e) => {
            eprintln!("shard mcp: {e:#}");
            common::exit_for(&e)
        }
    }
}

fn cwd_of(cwd: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    common::canonical_cwd(cwd).map_err(usage)
}

fn approve(args: ApproveArgs) -> anyhow::Result<ExitCode> {
    let home = common::shard_home()?;
    let cwd = cwd_of(args.cwd)?;
    let config = shard_agent::config::Config::load(&home).map_err(|e| usage(e.to_string()))?;
    let withheld = shard_ai::secret_env_vars(&config.ai_config());
    let project = shard_mcp::config::read_project(&cwd)
        .map_err(|e| usage(e.to_string()))?
        .ok_or_else(|| {
            usage(format!(
                "no .mcp.json in {}",
                shard_mcp::config::project_root(&cwd).display()
            ))
        })?;
    let approvals = shard_mcp::approval::Approvals::for_file(&home, &project.path);
    approvals.approve(&project.path, &project.sha256)?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "approved {} (sha256 {}); its servers start from the next agent on:",
        shard_client::sanitize::strip(&project.path.display().to_string()),
        &project.sha256[..16]
    )?;
    let env = common::process_env();
    let shared: Vec<&str> = shard_mcp::config::SHARED_VARS
        .iter()
        .copied()
        .filter(|k| env(k).is_some())
        .collect();
    for (name, cfg) in &project.servers {
        for line in describe_project_server(name, cfg, &withheld, &shared) {
            writeln!(out, "{}", shard_client::sanitize::strip(&line))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `shard mcp approve` shows of one project server: what runs, and every variable
/// and header it will receive, as the file writes them (a `${VAR}` is named, its value
/// never printed).
fn describe_project_server(
    name: &str,
    cfg: &shard_mcp::ServerConfig,
    withheld: &[String],
    shared: &[&str],
) -> Vec<String> {
    let what = match (&cfg.command, &cfg.url) {
        (Some(c), _) => format!("{c} {}", cfg.args.join(" ")),
        (None, Some(u)) => u.clone(),
        (None, None) => "(invalid: no command or url)".into(),
    };
    let mut lines = vec![format!("  {name}: {}", what.trim_end())];
    if cfg.disabled {
        lines.push("    disabled: not started".into());
        return lines;
    }
    if let Some(var) = shard_mcp::config::withheld_reference(cfg, withheld) {
        lines.push(format!(
            "    not started: it references `{var}`; a project's server never receives a \
             provider key or a Shard variable"
        ));
        return lines;
    }
    if cfg.command.is_some() {
        lines.push(format!(
            "    environment: only {}{}",
            if shared.is_empty() {
                "nothing of yours".to_string()
            } else {
                shared.join(", ")
            },
            if cfg.env.is_empty() {
                String::new()
            } else {
                ", and from the file:".to_string()
            }
        ));
        for (k, v) in &cfg.env {
            lines.push(format!("      {k}={v}"));
        }
    }
    if !cfg.headers.is_empty() {
        lines.push("    headers:".into());
        for (k, v) in &cfg.headers {
            lines.push(format!("      {k}: {v}"));
        }
    }
    lines
}

/// One row of `shard mcp list`.
#[derive(serde::Serialize)]
struct Row {
    name: String,
    origin: &'static str,
    state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    tools: Vec<String>,
}

fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    let home = common::shard_home()?;
    let cwd = cwd_of(args.cwd)?;
    let config = shard_agent::config::Config::load(&home).map_err(|e| usage(e.to_string()))?;
    let env = common::process_env();
    let resolved = shard_mcp::resolve(
        &config.mcp,
        &home.join("config.toml"),
        &home,
        &cwd,
        &|k: &str| env(k),
        &shard_ai::secret_env_vars(&config.ai_config()),
    )
    .map_err(|e| usage(e.to_string()))?;
    let mut rows: Vec<Row> = Vec::new();
    let env_remove = config.child_env_remove(resolved.secret_vars());
    let specs = resolved.start.clone();
    // The servers run in the same tool sandbox a Runtime at `cwd` would give them.
    let sandbox = shard_sandbox::Sandbox::new(
        &config.sandbox,
        shard_sandbox::SandboxSpec {
            workspace_roots: vec![cwd.clone()],
            hidden: vec![home.clone()],
            visible: Vec::new(),
            temp_parent: None,
            probe_cache: Some(home.clone()),
        },
    )
    .map_err(|e| usage(e.to_string()))?;
    let rt = common::tokio_runtime()?;
    let states = rt.block_on(async move {
        let (tx, mut rx) = tokio::sync::mpsc::channel(32);
        let ctx = StartContext {
            cwd: cwd.clone(),
            env_remove: Arc::new(env_remove),
            processes: Default::default(),
            sandbox: Some(Arc::new(sandbox)),
        };
        let mgr = McpManager::start(specs, ctx, tx);
        let settled = async {
            loop {
                let done = mgr
                    .states()
                    .iter()
                    .all(|(_, _, s)| !matches!(s, ServerState::Starting));
                if done {
                    break;
                }
                if rx.recv().await.is_none() {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(args.wait), settled).await;
        let states = mgr.states();
        mgr.stop().await;
        states
    });
    for (name, origin, state) in states {
        let (message, tools) = match &state {
            ServerState::Ready { tools } => (None, tools.clone()),
            ServerState::Failed { reason, .. } => (Some(reason.clone()), Vec::new()),
            ServerState::Starting => (Some(format!("not ready after {} s", args.wait)), Vec::new()),
            ServerState::Stopped => (None, Vec::new()),
        };
        rows.push(Row {
            name,
            origin: origin.name(),
            state: state.name().to_string(),
            message,
            tools,
        });
    }
    for s in &resolved.skipped {
        rows.push(Row {
            name: s.name.clone(),
            origin: "project",
            state: "not_approved".into(),
            message: Some(s.reason.clone()),
            tools: Vec::new(),
        });
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        writeln!(
            out,
            "no MCP servers configured (add .mcp.json to the project or [mcp.servers.NAME] to \
             SHARD_HOME/config.toml)"
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    for r in &rows {
        writeln!(out, "{} ({}): {}", r.name, r.origin, r.state)?;
        if let Some(m) = &r.message {
            writeln!(out, "  {m}")?;
        }
        for t in &r.tools {
            writeln!(out, "  {t}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
