//! The Shard daemon (docs/architecture.md#the-processes, docs/architecture.md#the-broker-and-multi-client, docs/architecture.md#the-daemons-duties): a registry of durable agents, a
//! supervisor of their Runtime generations (`shard agent` child processes), and a broker
//! that lets any number of clients watch and drive each agent over the unix socket.
//!
//! Layout: [`transport`] turns connections into framed lines ([`lines`] bounds their
//! memory); `conn` serves one connection (peer check, `hello`, `runtime.auth`, one
//! response per command); `commands` and `create` are the handlers; `core` is the one
//! owner of registry state (broker, requests, supervisor behind its API); [`manifest`]
//! is the durable registry; [`outbox`] bounds each client's queue.

// Standard output is the protocol (`shard agent`) and standard error belongs to the
// binary: a library reports through return values and `tracing`, never by printing.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod children;
mod commands;
pub mod config;
mod conn;
mod core;
mod create;
pub mod error;
pub mod fdlimit;
mod fsutil;
pub mod hosts;
mod jobs;
pub mod launcher;
pub mod lines;
pub mod manifest;
pub mod outbox;
mod peer;
pub mod principal;
mod reply;
mod server;
pub mod transport;
mod wire;
mod workspaces;

pub use config::{DaemonConfig, LaunchLimits};
pub use core::subscribe::{Subscription, Topic};
pub use error::DaemonError;
pub use launcher::{
    ExitInfo, LaunchSpec, LaunchedRuntime, ProcessLauncher, RuntimeLauncher, SettingsCheck,
};
pub use outbox::QueueCaps;
pub use principal::{Principal, TransportKind};
pub use server::{Daemon, ShutdownHandle};
