//! `shard`: one binary for the agent Runtime, the daemon and the clients. Argument
//! parsing and presentation only; the work lives in the library crates.

mod cmd_acp;
mod cmd_agent;
mod cmd_attach;
mod cmd_daemon;
mod cmd_hosts;
mod cmd_info;
mod cmd_mcp;
mod cmd_new;
mod cmd_protocol;
mod cmd_run;
mod cmd_web;
mod cmd_ws;
mod common;
mod detail_text;
mod prompter;
mod remote_agent;
mod run_print;
mod tui;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit status of a command that is not built yet.
pub const EXIT_NOT_IMPLEMENTED: u8 = 2;

#[derive(Parser)]
#[command(
    name = "shard",
    version,
    about = "Shard runs coding agents: durable, shareable, fast.",
    long_about = "Shard runs coding agents: durable, shareable, fast.\n\n\
        With no subcommand, `shard` opens the interactive terminal client on an agent for \
        this directory: through the daemon when one runs, else in this process.",
    after_long_help = "Interactive client keys: Enter sends; Shift+Enter or Ctrl+J adds a line; \
        Enter while the agent works queues a follow-up; Ctrl+Enter steers (Alt+Enter where the \
        terminal cannot tell Ctrl+Enter from Enter); Esc aborts; Ctrl+C twice quits. \
        /help inside the client lists the commands.",
    propagate_version = true,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Commands>,
    #[command(flatten)]
    tui: tui::TuiArgs,
}

#[derive(Subcommand)]
enum Commands {
    /// Run one agent Runtime speaking the JSONL protocol on stdin/stdout.
    Agent(cmd_agent::AgentArgs),
    /// Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains,
    /// Neovim); sessions are daemon agents when a daemon runs.
    Acp(cmd_acp::AcpArgs),
    /// Send one prompt to an agent and print the answer.
    Run(cmd_run::RunArgs),
    /// Run the per-user daemon that keeps many agents.
    Daemon(cmd_daemon::DaemonArgs),
    /// List this directory's sessions, newest first.
    Sessions(cmd_info::SessionsArgs),
    /// List the models, usable now or why not.
    Models(cmd_info::ModelsArgs),
    /// Create a daemon agent and print its id.
    New(cmd_new::NewArgs),
    /// List the daemon's agents with their status.
    Ls(cmd_daemon::LsArgs),
    /// Kill an agent's Runtime.
    Kill(cmd_daemon::KillArgs),
    /// Archive an agent: its Runtime stops, it leaves `shard ls`, its session is kept.
    Rm(cmd_daemon::RmArgs),
    /// Attach to an agent: print its stream and answer its prompts.
    Attach(cmd_attach::AttachArgs),
    /// Print a one-time browser enrollment link; list or revoke enrolled browsers.
    Web(cmd_web::WebArgs),
    /// MCP servers: list them with their state and tools; approve the project's .mcp.json.
    Mcp(cmd_mcp::McpArgs),
    /// Workspaces: one agent, one git worktree (create, attach, list, status, retire).
    Ws(cmd_ws::WsArgs),
    /// Protocol tools.
    Protocol(cmd_protocol::ProtocolArgs),
    /// Hosts agents run on (config.toml [hosts.NAME]): list them, install shard on one.
    Hosts(cmd_hosts::HostsArgs),
}

impl Commands {
    /// Commands that print and exit, with no child process, socket server or protocol
    /// stream of their own: `shard ls | head` may simply end when `head` does.
    fn prints_and_exits(&self) -> bool {
        matches!(
            self,
            Commands::Sessions(_)
                | Commands::Models(_)
                | Commands::Ls(_)
                | Commands::Kill(_)
                | Commands::Rm(_)
                | Commands::Web(_)
                | Commands::Ws(_)
                | Commands::Protocol(_)
        )
    }
}

#[allow(unsafe_code)]
fn main() -> ExitCode {
    // Started by a Runtime as its tool sandbox's zygote (docs/sandbox.md): serve, and
    // nothing else of the CLI runs in that process.
    #[cfg(target_os = "linux")]
    // SAFETY: first thing in `main`, before anything starts a thread.
    if let Some(code) = unsafe { shard_sandbox::zygote::main_if_asked() } {
        return ExitCode::from(code.clamp(0, 255) as u8);
    }
    // This binary can serve as the zygote of the Runtimes it runs.
    #[cfg(target_os = "linux")]
    shard_sandbox::zygote::set_program(std::path::PathBuf::from("/proc/self/exe"));
    // First, while the process has one thread: provider keys move out of the initial
    // environment block, which is then overwritten, and the process becomes
    // non-dumpable, so no other process — root included — reads a key from
    // /proc/PID/environ or /proc/PID/mem.
    // SAFETY: still single-threaded: nothing before this line starts a thread (the
    // zygote check above returns before any is started, or never comes back).
    unsafe { shard_sandbox::hardening::detach_environment() };
    // An editor's MCP servers (their tokens) reach a Runtime in this variable.
    shard_sandbox::hardening::harden(&[shard_protocol::mcp::CLIENT_MCP_ENV.to_string()]);
    let cli = Cli::parse();
    if cli.command.as_ref().is_some_and(Commands::prints_and_exits) {
        shard_sandbox::hardening::quiet_on_closed_pipe();
    }
    match cli.command {
        None => tui::run(cli.tui),
        Some(Commands::Agent(args)) => cmd_agent::run(args),
        Some(Commands::Acp(args)) => cmd_acp::run(args),
        Some(Commands::Run(args)) => cmd_run::run(args),
        Some(Commands::Daemon(args)) => cmd_daemon::daemon(args),
        Some(Commands::Ls(args)) => cmd_daemon::ls(args),
        Some(Commands::Kill(args)) => cmd_daemon::kill(args),
        Some(Commands::Rm(args)) => cmd_daemon::rm(args),
        Some(Commands::Attach(args)) => cmd_attach::attach(args),
        Some(Commands::Sessions(args)) => cmd_info::sessions(args),
        Some(Commands::Models(args)) => cmd_info::models(args),
        Some(Commands::New(args)) => cmd_new::new(args),
        Some(Commands::Web(args)) => cmd_web::web(args),
        Some(Commands::Mcp(args)) => cmd_mcp::run(args),
        Some(Commands::Ws(args)) => cmd_ws::ws(args),
        Some(Commands::Protocol(args)) => cmd_protocol::run(args),
        Some(Commands::Hosts(args)) => cmd_hosts::run(args),
    }
}
