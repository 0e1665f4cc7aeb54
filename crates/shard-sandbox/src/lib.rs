//! The sandbox for tool processes (docs/sandbox.md), built from unprivileged Linux
//! features and without helper programs:
//!
//! - a user, mount and PID namespace (and a network namespace when the network is off):
//!   `SHARD_HOME` and the user's runtime directory are covered by empty tmpfs mounts,
//!   `/tmp` by a private directory, a fresh `/proc` shows only the sandbox's processes,
//!   and when the command's first process ends, the kernel kills every process it left
//!   behind (`&`, `nohup`, `setsid -f`);
//! - Landlock: writes only beneath the workspace roots, the private temp dir and a few
//!   device files; no abstract unix socket or signal out of the sandbox;
//! - git dirs by allow-list: each call sees the workspace's git dirs through an overlay of
//!   its own, and only objects, refs, logs and the state files git rewrites reach the
//!   real git dir.
//!
//! A [`Sandbox`] is built once per Runtime: it probes what the kernel allows (one fork),
//! keeps what works, and reports what is missing. Each `bash` call then costs one extra
//! fork and a handful of system calls.

// Standard output is the protocol (`shard agent`) and standard error belongs to the
// binary: a library reports through return values and `tracing`, never by printing.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod config;
#[cfg(target_os = "linux")]
mod gitdirs;
pub mod hardening;
#[cfg(target_os = "linux")]
mod plan;
#[cfg(target_os = "linux")]
mod sys;
#[cfg(target_os = "linux")]
pub mod zygote;

use std::path::{Path, PathBuf};

pub use config::{SandboxConfig, SandboxMode};

/// Errors of the sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// `mode = "required"` and a feature is missing: tool processes are refused.
    #[error("the sandbox is required ([sandbox] mode = \"required\") but unavailable: {0}")]
    Required(String),
    /// The configuration cannot be applied.
    #[error("invalid [sandbox] configuration: {0}")]
    Config(String),
    /// Preparing the sandbox failed.
    #[error("cannot prepare the sandbox: {what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// One protection of the sandbox, named in `hello`'s capabilities when missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// User, mount and PID namespaces: hidden `SHARD_HOME`, private `/tmp`, orphans die
    /// with the call.
    Namespaces,
    /// A private `/proc`: no view of Shard's own processes.
    Proc,
    /// A network namespace (only when `network = false`).
    Network,
    /// Landlock: writes confined to the workspace roots.
    Landlock,
    /// Landlock scopes (ABI 6): no abstract unix socket or signal out of the sandbox.
    Scopes,
}

impl Feature {
    /// The name used in capabilities and messages.
    pub fn name(self) -> &'static str {
        match self {
            Feature::Namespaces => "namespaces",
            Feature::Proc => "proc",
            Feature::Network => "network",
            Feature::Landlock => "landlock",
            Feature::Scopes => "landlock-scopes",
        }
    }
}

/// What the sandbox is given to protect.
#[derive(Debug, Clone)]
pub struct SandboxSpec {
    /// Writable roots (the agent's working directory and added directories).
    pub workspace_roots: Vec<PathBuf>,
    /// Paths made invisible (`SHARD_HOME`), except workspace roots inside them.
    pub hidden: Vec<PathBuf>,
    /// Folders inside hidden paths that stay visible, read-only (the session's saved
    /// tool outputs, which the model is told to search). Skipped while absent.
    pub visible: Vec<PathBuf>,
    /// Where the private temp dir is created (default: the system temp dir).
    pub temp_parent: Option<PathBuf>,
    /// Where a successful probe is remembered until the next boot (`SHARD_HOME`), so
    /// later Runtimes start without probing; None probes every time.
    pub probe_cache: Option<PathBuf>,
}

/// What a sandboxed spawn guarantees, for the caller's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    /// Every process the command starts dies when its first process ends.
    pub contained: bool,
}

#[derive(Debug)]
enum State {
    Off,
    Refused(String),
    #[cfg(target_os = "linux")]
    Active(plan::Prepared),
}

/// The sandbox of one Runtime.
#[derive(Debug)]
pub struct Sandbox {
    state: State,
    missing: Vec<(Feature, String)>,
}

impl Sandbox {
    /// No sandbox (`mode = "off"`, or platforms without one).
    pub fn off() -> Sandbox {
        Sandbox {
            state: State::Off,
            missing: Vec::new(),
        }
    }

    /// Prepares the sandbox for `spec`, probing what the kernel allows. With
    /// `mode = "required"` a missing feature makes every spawn fail; with `auto` the
    /// sandbox runs with what is available.
    pub fn new(config: &SandboxConfig, spec: SandboxSpec) -> Result<Sandbox, SandboxError> {
        if config.mode == SandboxMode::Off {
            return Ok(Sandbox::off());
        }
        for p in &config.allow_write {
            if !p.is_absolute() {
                return Err(SandboxError::Config(format!(
                    "allow_write: {} is not an absolute path",
                    p.display()
                )));
            }
        }
        #[cfg(target_os = "linux")]
        {
            let (prepared, missing) = plan::prepare(config, &spec)?;
            let state = if config.mode == SandboxMode::Required && !missing.is_empty() {
                State::Refused(describe_missing(&missing))
            } else {
                State::Active(prepared)
            };
            Ok(Sandbox { state, missing })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = spec;
            let missing = vec![(Feature::Namespaces, "not Linux".to_string())];
            if config.mode == SandboxMode::Required {
                return Ok(Sandbox {
                    state: State::Refused(describe_missing(&missing)),
                    missing,
                });
            }
            Ok(Sandbox {
                state: State::Off,
                missing,
            })
        }
    }

    /// Features the kernel lacks, with the reason.
    pub fn missing(&self) -> &[(Feature, String)] {
        &self.missing
    }

    /// True when tool processes run sandboxed (possibly without some features).
    pub fn is_active(&self) -> bool {
        #[cfg(target_os = "linux")]
        if let State::Active(p) = &self.state {
            return p.does_anything();
        }
        false
    }

    /// Capability strings for `hello`: `sandbox` when active, `sandbox-off` when
    /// disabled, and `sandbox-missing:<feature>` for each missing feature.
    pub fn capabilities(&self) -> Vec<String> {
        let mut caps = Vec::new();
        match &self.state {
            State::Off if self.missing.is_empty() => caps.push("sandbox-off".to_string()),
            State::Refused(_) => caps.push("sandbox-refused".to_string()),
            _ if self.is_active() => caps.push("sandbox".to_string()),
            _ => {}
        }
        caps.extend(
            self.missing
                .iter()
                .map(|(f, _)| format!("sandbox-missing:{}", f.name())),
        );
        caps
    }

    /// The one message to print on stderr when something is missing or refused.
    pub fn warning(&self) -> Option<String> {
        match &self.state {
            State::Refused(why) => Some(format!("sandbox: bash is refused: {why}")),
            _ if !self.missing.is_empty() => Some(format!(
                "sandbox: running without {}; tool processes are less isolated",
                describe_missing(&self.missing)
            )),
            _ => None,
        }
    }

    /// Starts the zygote in the background (when the Runtime's first turn starts: never on
    /// the start path), so that the first call finds it ready. Does nothing when the sandbox
    /// is off, lacks namespaces, or no program can serve as the zygote.
    pub fn prewarm(&self) {
        #[cfg(target_os = "linux")]
        if let State::Active(p) = &self.state {
            p.prewarm();
        }
    }

    /// The zygote to run calls in, starting it if needed and waiting at most `wait` for
    /// one being started. None means: use [`Sandbox::apply`] (the per-call path), with
    /// the same guarantees at a higher cost per call.
    #[cfg(target_os = "linux")]
    pub fn zygote(&self, wait: std::time::Duration) -> Option<zygote::Zygote> {
        match &self.state {
            State::Active(p) => p.zygote(wait),
            _ => None,
        }
    }

    /// Sandboxes `cmd` (to be run in `cwd`): installs the setup that runs between fork
    /// and exec, and points `TMPDIR` at the private temp dir. Returns None when the
    /// sandbox is off (the caller spawns as before).
    pub fn apply(
        &self,
        cmd: &mut std::process::Command,
        cwd: &Path,
    ) -> Result<Option<Applied>, SandboxError> {
        match &self.state {
            State::Off => Ok(None),
            State::Refused(why) => Err(SandboxError::Required(why.clone())),
            #[cfg(target_os = "linux")]
            State::Active(p) => p.apply(cmd, cwd),
        }
    }
}

/// Arms SIGKILL on the child for when the spawning thread dies, so that a tool process
/// never outlives a Runtime killed with `kill -9` (docs/protocol.md §16 item 15). Spawn from
/// a long-lived thread: the signal is tied to the spawning thread, not the process.
/// [`Sandbox::apply`] arms it too.
pub fn set_parent_death_signal(cmd: &mut std::process::Command) {
    #[cfg(target_os = "linux")]
    sys::install(cmd, None);
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

fn describe_missing(missing: &[(Feature, String)]) -> String {
    missing
        .iter()
        .map(|(f, why)| format!("{} ({why})", f.name()))
        .collect::<Vec<_>>()
        .join(", ")
}
