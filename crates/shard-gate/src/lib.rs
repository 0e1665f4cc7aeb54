//! The PermissionGate's pure parts (docs/architecture.md#the-permissiongate): configured deny and headless
//! allow rules, the shell parser and resolver behind `bash` rules and signature grants,
//! path resolution for `path` rules and the workspace boundary, the grant store, and
//! [`gate::decide`], which puts them together. The Runtime applies its decisions to its
//! calls; the daemon applies the headless allow rules for its agents. Nothing here runs a
//! tool or talks to a client.

// Standard output is the protocol (`shard agent`) and standard error belongs to the
// binary: a library reports through return values and `tracing`, never by printing.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod config;
pub mod gate;
pub mod grants;
pub mod hosts;
pub mod paths;
pub mod prompt;
pub mod resolve;
pub mod rules;
pub mod shell;
pub mod signature;
pub mod trusted;
