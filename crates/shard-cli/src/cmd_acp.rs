//! `shard acp`: Shard as an Agent Client Protocol agent on stdio, for editors (Zed,
//! JetBrains, Neovim, Emacs). The protocol work is `shard-acp`; this is its start-up.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use crate::cmd_agent::{self, AgentArgs};
use crate::common;

/// Arguments of `shard acp`.
#[derive(Args, Debug, Clone, Default)]
pub struct AcpArgs {
    /// Provider, model, mode and script of new sessions.
    #[command(flatten)]
    pub choice: common::ModelChoice,
    /// Never use the daemon: run each session's Runtime as a child of this process.
    #[arg(long)]
    pub no_daemon: bool,
}

/// Runs `shard acp` until the editor closes standard input.
pub fn run(args: AcpArgs) -> ExitCode {
    common::init_logging();
    match start(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shard acp: {e:#}");
            common::exit_for(&e)
        }
    }
}

fn start(args: AcpArgs) -> anyhow::Result<()> {
    let home = common::shard_home()?;
    common::ensure_home(&home)?;
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot find the shard executable: {e}"))?;
    let choice = args.choice;
    let script = match &choice.script {
        Some(s) => Some(
            std::fs::canonicalize(s).map_err(|e| common::usage(format!("{}: {e}", s.display())))?,
        ),
        None => None,
    };
    let check_args = AgentArgs {
        provider: choice.provider.clone(),
        model: choice.model.clone(),
        script: script.clone(),
        ..AgentArgs::default()
    };
    let auth_check: shard_acp::AuthCheck = Arc::new(move || {
        let opts = match cmd_agent::options(&check_args) {
            Ok(o) => o,
            Err(e) => return Some(format!("{e:#}")),
        };
        match shard_agent::prepare(opts, common::process_env()) {
            Ok(p) => p.model_problem(),
            Err(e) => Some(e.to_string()),
        }
    });
    let config = shard_acp::AcpConfig {
        home,
        use_daemon: !args.no_daemon,
        agent: shard_acp::AgentSpec {
            exe,
            provider: choice.provider,
            model: choice.model,
            mode: choice.mode,
            script,
            mcp_servers: Vec::new(),
        },
        version: env!("CARGO_PKG_VERSION").to_string(),
        auth_check,
    };
    let rt = common::tokio_runtime()?;
    rt.block_on(shard_acp::serve(
        tokio::io::stdin(),
        tokio::io::stdout(),
        config,
    ));
    rt.shutdown_background();
    Ok(())
}
