//! The PermissionGate's pure parts (ARCHITECTURE §4.3): configured deny and headless
//! allow rules, the shell parser and resolver behind `bash` rules and signature grants,
//! path resolution for `path` rules and the workspace boundary, the grant store, and
//! [`gate::decide`], which puts them together. The Runtime applies its decisions to its
//! calls; the daemon applies the headless allow rules for its agents. Nothing here runs a
//! tool or talks to a client.

pub mod config;
pub mod gate;
pub mod grants;
pub mod paths;
pub mod prompt;
pub mod resolve;
pub mod rules;
pub mod shell;
pub mod signature;
