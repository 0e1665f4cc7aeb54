//! The PermissionGate's pure parts (ARCHITECTURE §4.3): configured deny and headless
//! allow rules, the shell analyzer behind `bash` rules and signature grants, and the grant
//! store. The Runtime applies them to its calls; the daemon applies the headless allow rules
//! for its agents. Nothing here runs a tool or talks to a client.

pub mod config;
pub mod grants;
pub mod rules;
pub mod shell;
