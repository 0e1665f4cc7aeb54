//! `shard protocol …`: protocol tooling.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Subcommand};

/// Arguments of `shard protocol`.
#[derive(Args)]
pub struct ProtocolArgs {
    #[command(subcommand)]
    command: ProtocolCommand,
}

#[derive(Subcommand)]
enum ProtocolCommand {
    /// Print the JSON Schema of every protocol message.
    Schema,
    /// Print the protocol version.
    Version,
}

/// Runs `shard protocol`.
pub fn run(args: ProtocolArgs) -> ExitCode {
    let text = match args.command {
        ProtocolCommand::Schema => shard_protocol::schema::protocol_schema_pretty(),
        ProtocolCommand::Version => format!("{}\n", shard_protocol::PROTOCOL_VERSION),
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shard: cannot write the schema: {e}");
            ExitCode::FAILURE
        }
    }
}
