//! The daemon's core: the one owner of registry state. Everything that
//! reads or changes the maps of agents, Runtimes, attachments, pending requests and
//! connections lives in this module tree; the rest of the crate (the connection layer,
//! the command handlers, the transports) calls the methods of [`api`], which take the
//! lock, do bounded non-blocking work and return — none of them awaits.
//!
//! `broker` handles Runtime output (fan-out, attach handshake, responses), `requests`
//! permission and UI requests, `supervisor` Runtime generations, `orphans` leftover tool
//! processes, `subscribe` in-process subscribers.

pub(crate) mod api;
mod broker;
mod deliver;
pub(crate) mod internal;
mod orphans;
mod requests;
mod route;
mod state;
pub(crate) mod subscribe;
mod supervisor;

pub(crate) use state::{ConnId, Shared};
pub(crate) use supervisor::begin_shutdown;

/// Background tasks of the core (idle reaping, orphan collection).
pub(crate) fn spawn_background(shared: &std::sync::Arc<Shared>) {
    tokio::spawn(supervisor::reap_idle(std::sync::Arc::clone(shared)));
    tokio::spawn(orphans::collect_orphans(std::sync::Arc::clone(shared)));
}

/// The spec a first start of `manifest` would use, for `RuntimeLauncher::check` (no
/// token: nothing is started).
pub(crate) fn launch_spec_for_check(
    cfg: &crate::config::DaemonConfig,
    manifest: &crate::manifest::AgentManifest,
) -> crate::launcher::LaunchSpec {
    supervisor::launch_spec(cfg, manifest, 0, String::new())
}
