//! `SHARD_HOME/config.toml`: the user's configuration of modes, permission rules,
//! headless allow rules, providers and models (ARCHITECTURE §5, §11).

use std::path::{Path, PathBuf};

use serde::Deserialize;
pub use shard_gate::config::{HeadlessConfig, PermissionsConfig, RuleConfig};

/// The whole configuration file. Every section is optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Extension modes, listed after the built-ins in this order.
    pub modes: Vec<ModeConfig>,
    /// Permission rules.
    pub permissions: PermissionsConfig,
    /// Rules for unattended runs.
    pub headless: HeadlessConfig,
    /// Tool limits.
    pub tools: ToolsConfig,
    /// The sandbox for tool processes (docs/sandbox.md).
    pub sandbox: shard_sandbox::SandboxConfig,
    /// The whole file as parsed, from which shard-ai reads its `[providers.*]` and
    /// `[[models]]` sections.
    #[serde(skip)]
    pub raw: toml::Table,
}

/// An extension mode.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ModeConfig {
    /// Mode name.
    pub name: String,
    /// One line for pickers.
    #[serde(default)]
    pub description: String,
    /// Tools allowed in this mode; absent means all.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Added to the system prompt.
    #[serde(default)]
    pub prompt: Option<String>,
}

/// `[tools]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ToolsConfig {
    /// Largest `bash` timeout a call may ask for, in seconds.
    pub bash_max_timeout_secs: Option<u64>,
    /// Default `bash` timeout, in seconds.
    pub bash_default_timeout_secs: Option<u64>,
}

/// A configuration file that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// I/O error.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Invalid TOML or shape.
    #[error("invalid configuration in {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl Config {
    /// Loads `SHARD_HOME/config.toml`; a missing file is the default configuration.
    pub fn load(shard_home: &Path) -> Result<Config, ConfigError> {
        let path = shard_home.join("config.toml");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        Config::parse(&text).map_err(|message| ConfigError::Parse { path, message })
    }

    /// Parses configuration text.
    pub fn parse(text: &str) -> Result<Config, String> {
        let raw: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut config: Config = raw
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| e.to_string())?;
        config.raw = raw;
        Ok(config)
    }
}
