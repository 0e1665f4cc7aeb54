//! The Shard daemon (ARCHITECTURE §2, §6, §8): a registry of durable agents, a
//! supervisor of their Runtime generations (`shard agent` child processes), and a broker
//! that lets any number of clients watch and drive each agent over the unix socket.
//!
//! Layout: [`transport`] turns connections into framed lines; `commands` handles client
//! commands; `broker` handles Runtime output (fan-out, attach handshake, permissions);
//! `supervisor` starts, reaps, kills and restores Runtimes; [`manifest`] is the durable
//! registry; [`outbox`] bounds each client's queue.

// Standard output is the protocol (`shard agent`) and standard error belongs to the
// binary: a library reports through return values and `tracing`, never by printing.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod broker;
mod commands;
mod create;
pub mod error;
mod fsutil;
pub mod launcher;
pub mod manifest;
mod orphans;
pub mod outbox;
mod requests;
mod server;
mod state;
mod supervisor;
pub mod transport;

pub use error::DaemonError;
pub use launcher::{ExitInfo, LaunchSpec, LaunchedRuntime, ProcessLauncher, RuntimeLauncher};
pub use outbox::QueueCaps;
pub use server::{DAEMON_CAPABILITIES, Daemon, ShutdownHandle};
pub use state::DaemonConfig;
