//! The gate's sections of `SHARD_HOME/config.toml`: `[permissions]` deny rules and
//! `[headless]` allow rules (ARCHITECTURE §4.3, §6.2). Both the Runtime and the daemon read
//! them, so they live beside the matcher rather than in either.

use serde::Deserialize;

/// `[permissions]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PermissionsConfig {
    /// Calls matching any of these are always denied, even over grants.
    pub deny: Vec<RuleConfig>,
    /// More workspace roots besides the cwd (absolute, `~/…`, or relative to the cwd):
    /// read-only tools are free inside them.
    pub additional_directories: Vec<String>,
    /// Secret locations (SHARD_HOME, `~/.ssh`, …) a tool may nevertheless reach: each
    /// rule names a tool (or `*`) and a `path` glob.
    pub allow_secret: Vec<RuleConfig>,
}

/// `[headless]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct HeadlessConfig {
    /// Calls `allow_if_rule_matches` may allow when nobody can be asked.
    pub allow: Vec<RuleConfig>,
    /// Seconds a queued request waits before it is denied.
    pub timeout_secs: u64,
}

impl Default for HeadlessConfig {
    fn default() -> Self {
        HeadlessConfig {
            allow: Vec::new(),
            timeout_secs: 600,
        }
    }
}

/// A permission rule: a tool name (or `*`), and optionally a glob on the bash command or
/// on the `path` argument.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct RuleConfig {
    /// Tool name or `*`.
    pub tool: String,
    /// Glob over one simple command of a `bash` call (e.g. `cargo test*`).
    #[serde(default)]
    pub command: Option<String>,
    /// Glob over the `path` argument.
    #[serde(default)]
    pub path: Option<String>,
}

/// The gate's sections of a configuration file, for a process (the daemon) that needs
/// only them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct GateSections {
    /// `[permissions]`.
    pub permissions: PermissionsConfig,
    /// `[headless]`.
    pub headless: HeadlessConfig,
}

impl GateSections {
    /// Reads the gate's sections of `SHARD_HOME/config.toml`; a missing file is the default.
    pub fn load(shard_home: &std::path::Path) -> Result<GateSections, String> {
        let path = shard_home.join("config.toml");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let table: toml::Table = toml::from_str(&text)
            .map_err(|e| format!("invalid configuration in {}: {e}", path.display()))?;
        let mut sections = toml::Table::new();
        for key in ["permissions", "headless"] {
            if let Some(v) = table.get(key) {
                sections.insert(key.to_string(), v.clone());
            }
        }
        sections.try_into().map_err(|e: toml::de::Error| {
            format!("invalid configuration in {}: {e}", path.display())
        })
    }
}
