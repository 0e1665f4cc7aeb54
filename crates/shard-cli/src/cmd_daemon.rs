//! `shard daemon`, `shard ls`, `shard kill`, `shard attach`.

use std::process::ExitCode;

use clap::Args;

/// Arguments of `shard daemon`.
#[derive(Args)]
pub struct DaemonArgs {}

/// Arguments of `shard ls`.
#[derive(Args)]
pub struct LsArgs {}

/// Arguments of `shard kill`.
#[derive(Args)]
pub struct KillArgs {
    /// The agent id.
    agent: String,
}

/// Arguments of `shard attach`.
#[derive(Args)]
pub struct AttachArgs {
    /// The agent id.
    agent: String,
}

/// Runs `shard daemon`.
pub fn daemon(_args: DaemonArgs) -> ExitCode {
    crate::not_implemented("`shard daemon`")
}

/// Runs `shard ls`.
pub fn ls(_args: LsArgs) -> ExitCode {
    crate::not_implemented("`shard ls`")
}

/// Runs `shard kill`.
pub fn kill(args: KillArgs) -> ExitCode {
    let _ = args.agent;
    crate::not_implemented("`shard kill`")
}

/// Runs `shard attach`.
pub fn attach(args: AttachArgs) -> ExitCode {
    let _ = args.agent;
    crate::not_implemented("`shard attach`")
}
