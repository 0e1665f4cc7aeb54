//! `shard hosts …`: the `[hosts.NAME]` of config.toml (docs/hosts.md) — list them, check
//! one answers, install this `shard` on one — and the settings the daemon forwards to
//! the Runtimes it starts there.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use shard_protocol::remote::RuntimeSettings;

use crate::common;

/// Arguments of `shard hosts`.
#[derive(Args, Debug)]
pub struct HostsArgs {
    #[command(subcommand)]
    command: HostsCommand,
}

#[derive(Subcommand, Debug)]
enum HostsCommand {
    /// List the configured hosts.
    List,
    /// Copy this shard to a host (after checking its OS and architecture with
    /// `uname -sm`) at its `shard` path, and check that it answers.
    Install {
        /// The host, a [hosts.NAME] of config.toml.
        name: String,
    },
}

/// Runs `shard hosts`.
pub fn run(args: HostsArgs) -> ExitCode {
    common::init_logging();
    let home = match common::shard_home() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("shard hosts: {e:#}");
            return ExitCode::from(common::EXIT_USAGE);
        }
    };
    let config = match shard_agent::config::Config::load(&home) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("shard hosts: {e}");
            return ExitCode::from(common::EXIT_USAGE);
        }
    };
    match args.command {
        HostsCommand::List => {
            if config.hosts.is_empty() {
                println!(
                    "no hosts: add a [hosts.NAME] table to {}",
                    home.join("config.toml").display()
                );
            }
            for (name, h) in &config.hosts {
                let how = match (&h.ssh, &h.command) {
                    (Some(dest), _) => format!("ssh {dest}"),
                    (_, Some(cmd)) => cmd.join(" "),
                    _ => String::new(),
                };
                println!("{name:<16} {how}");
            }
            ExitCode::SUCCESS
        }
        HostsCommand::Install { name } => {
            let Some(host) = config.hosts.get(&name) else {
                eprintln!("shard hosts: unknown host {name:?}: add [hosts.{name}] to config.toml");
                return ExitCode::from(common::EXIT_USAGE);
            };
            let exe = match std::env::current_exe() {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("shard hosts: cannot find this shard binary: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let rt = match common::tokio_runtime() {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("shard hosts: {e:#}");
                    return ExitCode::FAILURE;
                }
            };
            match rt.block_on(shard_daemon::hosts::install(&name, host, &exe)) {
                Ok(r) => {
                    println!(
                        "installed shard on {name} ({}) at {}, {} bytes",
                        r.platform, r.path, r.bytes
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("shard hosts: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// Variables a provider reads besides its key.
const PROVIDER_URL_VARS: &[&str] = &["ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"];

/// The `runtime.settings` of a Runtime the daemon starts on a host: the provider keys
/// and base URLs of the daemon's environment and its `providers`, `models`,
/// `permissions`, `headless` and `sandbox` tables.
pub fn forwarded_settings(spec: &shard_daemon::LaunchSpec) -> Result<RuntimeSettings, String> {
    let config = shard_agent::config::Config::load(&spec.home).map_err(|e| e.to_string())?;
    let mut s = RuntimeSettings::new(spec.agent_id.clone());
    let mut vars = shard_ai::secret_env_vars(&config.ai_config());
    vars.extend(PROVIDER_URL_VARS.iter().map(|v| v.to_string()));
    let env = common::process_env();
    for v in vars {
        if let Some(value) = env(&v) {
            s.env.insert(v, value);
        }
    }
    for section in shard_agent::forwarded::FORWARDED_SECTIONS {
        if let Some(t) = config.raw.get(*section) {
            let v = serde_json::to_value(t).map_err(|e| e.to_string())?;
            s.config.insert((*section).to_string(), v);
        }
    }
    Ok(s)
}
