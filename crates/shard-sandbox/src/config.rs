//! `[sandbox]` in `config.toml`.

use std::path::PathBuf;

use serde::Deserialize;

/// How strictly tool processes are sandboxed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Sandbox with every feature the kernel offers; say once what is missing and run
    /// with the rest.
    #[default]
    Auto,
    /// Refuse to run `bash` unless every feature is available.
    Required,
    /// No sandbox: tool processes run as before.
    Off,
}

/// The `[sandbox]` section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// `auto` (default), `required` or `off`.
    pub mode: SandboxMode,
    /// Network access for tool processes (default on).
    pub network: bool,
    /// Directories writable besides the workspace roots and the private temp dir.
    pub allow_write: Vec<PathBuf>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            mode: SandboxMode::Auto,
            network: true,
            allow_write: Vec::new(),
        }
    }
}
