//! `SHARD_HOME/config.toml`: the user's configuration of modes, permission rules,
//! headless allow rules, providers and models (docs/architecture.md#extensions, docs/architecture.md#storage). The whole file is
//! read strictly: an unknown key anywhere is an error naming the file, the line and the
//! key, and the program refuses to start with it.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use shard_ai::config::{AiConfig, ModelConfig, ProviderConfig};
pub use shard_gate::config::{ConfigError, HeadlessConfig, PermissionsConfig, RuleConfig};

/// The whole configuration file. Every section is optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Extension modes, listed after the built-ins in this order.
    pub modes: Vec<ModeConfig>,
    /// Permission rules.
    pub permissions: PermissionsConfig,
    /// Rules for unattended runs.
    pub headless: HeadlessConfig,
    /// Tool limits.
    pub tools: ToolsConfig,
    /// `[providers.NAME]` tables (shard-ai's types, checked here with the rest).
    pub providers: BTreeMap<String, ProviderConfig>,
    /// `[[models]]` entries.
    pub models: Vec<ModelConfig>,
    /// `[sandbox]`: the sandbox for tool processes (docs/sandbox.md).
    pub sandbox: shard_sandbox::SandboxConfig,
    /// `[compaction]`: when the context is compacted automatically (docs/sessions.md).
    pub compaction: CompactionConfig,
    /// `[mcp.servers.NAME]`: the user's MCP servers (docs/mcp.md).
    pub mcp: shard_mcp::McpConfig,
    /// `[workspaces]`: where the daemon puts workspace worktrees (docs/workspaces.md).
    pub workspaces: WorkspacesConfig,
    /// `[subagents]`: the daemon's launch limits for subagent jobs (docs/subagents.md).
    pub subagents: SubagentsConfig,
    /// `[hosts.NAME]`: machines and containers the daemon runs Runtimes on (docs/hosts.md).
    pub hosts: std::collections::BTreeMap<String, shard_gate::hosts::HostConfig>,
    /// The whole file as parsed, for readers of sections this crate does not own.
    #[serde(skip)]
    pub raw: toml::Table,
}

/// An extension mode.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
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

/// `[workspaces]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkspacesConfig {
    /// Root of workspace worktrees (absolute, or `~/…`); default `SHARD_HOME/workspaces`.
    pub root: Option<String>,
}

impl WorkspacesConfig {
    /// The configured root as an absolute path (`~/` expanded from `HOME`), if any.
    pub fn root_path(&self) -> Result<Option<std::path::PathBuf>, String> {
        let Some(r) = &self.root else {
            return Ok(None);
        };
        let p = match r.strip_prefix("~/") {
            Some(rest) => std::env::var_os("HOME")
                .map(|h| std::path::PathBuf::from(h).join(rest))
                .ok_or("config.toml [workspaces] root uses ~ but HOME is not set")?,
            None => std::path::PathBuf::from(r),
        };
        if !p.is_absolute() {
            return Err("config.toml [workspaces] root must be an absolute path".into());
        }
        Ok(Some(p))
    }
}

/// `[subagents]`: docs/subagents.md `launch_policy`, read by the daemon at start.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SubagentsConfig {
    /// Most tasks one `subagent.create` may carry (at least 1).
    #[serde(deserialize_with = "at_least_one_task")]
    pub max_tasks_per_job: u32,
    /// Deepest a child may be below a top-level agent (at least 1; 2 lets a child
    /// delegate once more).
    #[serde(deserialize_with = "at_least_one_level")]
    pub max_depth: u32,
}

/// Default [`SubagentsConfig::max_tasks_per_job`].
pub const DEFAULT_MAX_TASKS_PER_JOB: u32 = 8;

/// Default [`SubagentsConfig::max_depth`].
pub const DEFAULT_MAX_DEPTH: u32 = 2;

impl Default for SubagentsConfig {
    fn default() -> Self {
        SubagentsConfig {
            max_tasks_per_job: DEFAULT_MAX_TASKS_PER_JOB,
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}

fn at_least_one<'de, D: serde::Deserializer<'de>>(d: D, what: &str) -> Result<u32, D::Error> {
    let v = u32::deserialize(d)?;
    if v >= 1 {
        Ok(v)
    } else {
        Err(serde::de::Error::custom(format!(
            "{what} must be at least 1"
        )))
    }
}

fn at_least_one_task<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    at_least_one(d, "max_tasks_per_job")
}

fn at_least_one_level<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    at_least_one(d, "max_depth")
}

/// `[tools]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// Largest `bash` timeout a call may ask for, in seconds.
    pub bash_max_timeout_secs: Option<u64>,
    /// Default `bash` timeout, in seconds.
    pub bash_default_timeout_secs: Option<u64>,
}

/// `[compaction]` (docs/sessions.md#compaction-recall-and-forks). `enabled = false` turns off only the automatic
/// triggers; `session_op compact` still runs.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompactionConfig {
    /// Automatic compaction between turns, mid-turn, and on a context-overflow refusal.
    pub enabled: bool,
    /// Share of the model's context window above which a finished turn is followed by a
    /// compaction; between 0 (exclusive) and 1.
    #[serde(deserialize_with = "ratio")]
    pub reserve_ratio: f64,
    /// Tokens of the newest messages every compaction keeps verbatim (at least 1).
    #[serde(deserialize_with = "positive")]
    pub keep_recent_tokens: u64,
}

/// Default [`CompactionConfig::keep_recent_tokens`].
pub const DEFAULT_KEEP_RECENT_TOKENS: u64 = 20_000;

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig {
            enabled: true,
            reserve_ratio: 0.8,
            keep_recent_tokens: DEFAULT_KEEP_RECENT_TOKENS,
        }
    }
}

fn ratio<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let v = f64::deserialize(d)?;
    if v > 0.0 && v <= 1.0 {
        Ok(v)
    } else {
        Err(serde::de::Error::custom(format!(
            "reserve_ratio must be above 0 and at most 1, not {v}"
        )))
    }
}

fn positive<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let v = u64::deserialize(d)?;
    if v > 0 {
        Ok(v)
    } else {
        Err(serde::de::Error::custom(
            "keep_recent_tokens must be a positive number of tokens",
        ))
    }
}

impl Config {
    /// Loads `SHARD_HOME/config.toml`; a missing file is the default configuration.
    pub fn load(shard_home: &Path) -> Result<Config, ConfigError> {
        let path = shard_home.join("config.toml");
        match shard_gate::config::strict::read(&path)? {
            None => Ok(Config::default()),
            Some(text) => Config::parse(&path, &text),
        }
    }

    /// Parses configuration text read from `path` (named in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let mut config: Config = shard_gate::config::strict::parse(path, text)?;
        shard_gate::hosts::check_all(&config.hosts).map_err(|message| ConfigError::Invalid {
            path: path.to_path_buf(),
            line: None,
            message,
        })?;
        config.raw = shard_gate::config::strict::parse(path, text)?;
        Ok(config)
    }

    /// The providers and models sections, for shard-ai.
    pub fn ai_config(&self) -> AiConfig {
        AiConfig {
            providers: self.providers.clone(),
            models: self.models.clone(),
        }
    }

    /// The environment variables no tool process and no MCP server may inherit: provider
    /// keys, the Runtime's daemon credentials, and the variables MCP servers' own secrets
    /// come from (`mcp_secret_vars`; each server gets its own back). One list, so that
    /// `shard mcp list` starts servers exactly as a Runtime would.
    pub fn child_env_remove(
        &self,
        mcp_secret_vars: impl IntoIterator<Item = String>,
    ) -> Vec<String> {
        let mut remove = shard_ai::secret_env_vars(&self.ai_config());
        remove.extend(
            [
                "SHARD_AGENT_TOKEN",
                "SHARD_DAEMON_SOCK",
                shard_protocol::mcp::CLIENT_MCP_ENV,
            ]
            .map(String::from),
        );
        remove.extend(mcp_secret_vars);
        remove
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn err(text: &str) -> String {
        Config::parse(Path::new("/home/u/.shard/config.toml"), text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn every_section_rejects_unknown_keys_with_line_and_key() {
        let cases = [
            (
                "colour = \"red\"\n",
                "config.toml:1: unknown key `colour` at the top level (expected one of: modes, permissions, headless, tools, providers, models, sandbox, compaction, mcp, workspaces, subagents, hosts)",
            ),
            (
                "[[modes]]\nname = \"review\"\npromt = \"be terse\"\n",
                "config.toml:3: unknown key `promt` in [[modes]] (expected one of: name, description, tools, prompt)",
            ),
            (
                "[tools]\nbash_timeout = 5\n",
                "config.toml:2: unknown key `bash_timeout` in [tools] (expected one of: bash_max_timeout_secs, bash_default_timeout_secs)",
            ),
            (
                "[permissions]\n[[permissions.deny]]\ntool = \"bash\"\ncomand = \"git push*\"\n",
                "config.toml:4: unknown key `comand` in [[permissions.deny]] (expected one of: tool, command, path)",
            ),
            (
                "\n\n\n\n\n[[headless.allow]]\ncomand = \"cargo test*\"\n",
                "config.toml:7: unknown key `comand` in [[headless.allow]] (expected one of: tool, command, path)",
            ),
            (
                "[providers.ollama]\nbase_url = \"http://localhost:11434/v1\"\napi_key = \"x\"\n",
                "config.toml:3: unknown key `api_key` in [providers.ollama]",
            ),
            (
                "[mcp.servers.gh]\ncommand = \"gh-mcp\"\nenvs = { A = \"b\" }\n",
                "config.toml:3: unknown key `envs` in [mcp.servers.gh]",
            ),
            (
                "[workspaces]\nroots = \"/w\"\n",
                "config.toml:2: unknown key `roots` in [workspaces] (expected: root)",
            ),
            (
                "[[models]]\nid = \"ollama/qwen3\"\ncontext = 8000\n",
                "config.toml:3: unknown key `context` in [[models]]",
            ),
            (
                "[[models]]\nid = \"ollama/qwen3\"\nprices = { input = 1.0, ouput = 2.0 }\n",
                "config.toml:3: unknown key `ouput` in `prices` of [[models]]",
            ),
        ];
        for (text, want) in cases {
            let got = err(text);
            assert!(got.contains(want), "{text:?}\n got: {got}\nwant: {want}");
            assert!(got.starts_with("/home/u/.shard/"), "{got}");
            assert!(!got.contains('\n'), "{got}");
        }
        let level =
            err("[[models]]\nid = \"a/b\"\nreasoning_levels = [{ id = \"x\", lable = \"X\" }]\n");
        assert!(
            level.starts_with("/home/u/.shard/config.toml:3: "),
            "{level}"
        );
    }

    #[test]
    fn subagents_section_is_strict_and_checked() {
        let d = Config::parse(Path::new("/c.toml"), "").unwrap().subagents;
        assert_eq!((d.max_tasks_per_job, d.max_depth), (8, 2));
        let c = Config::parse(Path::new("/c.toml"), "[subagents]\nmax_tasks_per_job = 3\n")
            .unwrap()
            .subagents;
        assert_eq!((c.max_tasks_per_job, c.max_depth), (3, 2));
        let e = err("[subagents]\nmax_tasks = 3\n");
        assert!(
            e.contains("config.toml:2: unknown key `max_tasks` in [subagents] (expected one of: max_tasks_per_job, max_depth)"),
            "{e}"
        );
        let e = err("[subagents]\nmax_depth = 0\n");
        assert!(e.contains("max_depth must be at least 1"), "{e}");
        let e = err("[subagents]\nmax_tasks_per_job = -1\n");
        assert!(e.contains("config.toml:2"), "{e}");
    }

    #[test]
    fn compaction_section_is_strict_and_checked() {
        let e = err("[compaction]
keep_recent = 5
");
        assert!(
            e.contains("config.toml:2: unknown key `keep_recent` in [compaction]"),
            "{e}"
        );
        let e = err("[compaction]
enabled = true
reserve_ratio = 1.5
");
        assert!(e.contains("config.toml:3: "), "{e}");
        assert!(e.contains("reserve_ratio must be above 0"), "{e}");
        let e = err("[compaction]
keep_recent_tokens = 0
");
        assert!(e.contains("config.toml:2: "), "{e}");
        let c = Config::parse(
            Path::new("config.toml"),
            "[compaction]
enabled = false
keep_recent_tokens = 500
",
        )
        .unwrap();
        assert!(!c.compaction.enabled);
        assert_eq!(c.compaction.keep_recent_tokens, 500);
        assert_eq!(c.compaction.reserve_ratio, 0.8);
        assert!(Config::default().compaction.enabled);
    }

    #[test]
    fn broad_allow_rule_is_refused_at_its_line() {
        let e = err("[headless]\ntimeout_secs = 30\n\n[[headless.allow]]\ntool = \"bash\"\n");
        assert!(e.contains("config.toml:4: "), "{e}");
        assert!(e.contains("command = \"*\""), "{e}");
    }

    #[test]
    fn full_file_parses_and_feeds_shard_ai() {
        let text = r#"
            [[modes]]
            name = "review"
            tools = ["read", "grep"]

            [permissions]
            [[permissions.deny]]
            tool = "bash"
            command = "git push*"

            [headless]
            timeout_secs = 30
            [[headless.allow]]
            tool = "bash"
            command = "cargo test*"

            [tools]
            bash_max_timeout_secs = 60

            [providers.ollama]
            base_url = "http://localhost:11434/v1"
            default_model = "qwen3"

            [[models]]
            id = "ollama/qwen3"
            context_window = 32768
            reasoning_levels = ["low", { id = "high", label = "High" }]

            [sandbox]
            mode = "off"
        "#;
        let c = Config::parse(Path::new("config.toml"), text).unwrap();
        assert_eq!(c.modes[0].name, "review");
        assert_eq!(c.headless.allow.len(), 1);
        assert_eq!(c.headless.timeout_secs, 30);
        assert_eq!(c.tools.bash_max_timeout_secs, Some(60));
        let ai = c.ai_config();
        assert_eq!(
            shard_ai::config::default_model_for("ollama", &ai).as_deref(),
            Some("qwen3")
        );
        assert_eq!(ai.models.len(), 1);
        assert!(c.raw.contains_key("sandbox"));
        assert_eq!(c.sandbox.mode, shard_sandbox::SandboxMode::Off);
    }
}
