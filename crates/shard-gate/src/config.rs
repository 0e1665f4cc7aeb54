//! The gate's sections of `SHARD_HOME/config.toml`: `[permissions]` deny rules and
//! `[headless]` allow rules (docs/architecture.md#the-permissiongate, docs/architecture.md#headless-policy-and-timeouts). Both the Runtime and the daemon read
//! them, so they live beside the matcher rather than in either. Every section is strict:
//! an unknown key is an error naming its file and line (see [`strict`]).

use std::path::Path;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Error as _, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

pub mod strict;

pub use strict::ConfigError;

/// `[permissions]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
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
#[serde(default, deny_unknown_fields)]
pub struct HeadlessConfig {
    /// Calls `allow_if_rule_matches` may allow when nobody can be asked. Each names what
    /// it allows explicitly (see [`check_allow_rule`]).
    #[serde(deserialize_with = "allow_rules")]
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
#[serde(deny_unknown_fields)]
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

/// Built-in tools whose calls carry a `path` argument an allow rule can narrow on.
const PATH_TOOLS: &[&str] = &["read", "write", "edit", "grep", "find", "ls"];

/// Refuses an allow rule that would match every call of its tool only because a key was
/// left out: unattended allowing must be what the user wrote, never what a forgotten or
/// misspelt key implies. `command = "*"` / `path = "**"` say "everything" explicitly.
/// Deny rules are never checked: a broad deny only refuses more.
/// A tool name with glob characters (e.g. `mcp__github__*`) is judged by the built-in
/// tools it would match, so `ba?h` needs a `command` as `bash` does.
pub fn check_allow_rule(rule: &RuleConfig) -> Result<(), String> {
    let tool = rule.tool.as_str();
    let names = |name: &str| -> bool {
        if tool == name {
            return true;
        }
        tool != "*"
            && tool.contains(['*', '?', '[', '{'])
            && globset::Glob::new(tool).is_ok_and(|g| g.compile_matcher().is_match(name))
    };
    let missing = if tool == "*" {
        (rule.command.is_none() && rule.path.is_none()).then_some("`command` or `path`")
    } else if names("bash") && rule.command.is_none() {
        Some("`command`")
    } else if PATH_TOOLS.iter().any(|t| names(t)) && rule.path.is_none() {
        Some("`path`")
    } else {
        None
    };
    match missing {
        None => Ok(()),
        Some(keys) => {
            let example = if keys != "`path`" {
                "`command = \"*\"`"
            } else {
                "`path = \"**\"`"
            };
            Err(format!(
                "the allow rule for tool `{tool}` has no {keys}, so it would allow every \
                 such call unattended; narrow it, or write {example} if that is meant"
            ))
        }
    }
}

/// An allow rule that passed [`check_allow_rule`]. The check runs inside the rule's own
/// table, so the TOML deserializer puts the refusal at the rule's line.
struct AllowRule(RuleConfig);

impl<'de> Deserialize<'de> for AllowRule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(AllowRuleVisitor)
    }
}

struct AllowRuleVisitor;

impl<'de> Visitor<'de> for AllowRuleVisitor {
    type Value = AllowRule;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a rule table (tool, command, path)")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<AllowRule, A::Error> {
        let rule = RuleConfig::deserialize(MapAccessDeserializer::new(map))?;
        check_allow_rule(&rule).map_err(A::Error::custom)?;
        Ok(AllowRule(rule))
    }
}

fn allow_rules<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<RuleConfig>, D::Error> {
    let rules = Vec::<AllowRule>::deserialize(d)?;
    Ok(rules.into_iter().map(|r| r.0).collect())
}

/// The gate's sections of a configuration file, for a process (the daemon) that needs
/// only them. Other top-level sections are skipped here: the program that owns them
/// checks them (`shard daemon` checks the whole file before it starts).
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
    pub fn load(shard_home: &Path) -> Result<GateSections, String> {
        let path = shard_home.join("config.toml");
        match strict::read(&path).map_err(|e| e.to_string())? {
            None => Ok(Self::default()),
            Some(text) => strict::parse(&path, &text).map_err(|e| e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn parse(text: &str) -> Result<GateSections, String> {
        strict::parse(Path::new("config.toml"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn misspelt_rule_key_is_refused_with_its_line() {
        let text = "[headless]\ntimeout_secs = 5\n\n[[headless.allow]]\ntool = \"read\"\npath = \"src/**\"\n\n[[headless.allow]]\ntool = \"bash\"\ncomand = \"cargo test*\"\n";
        assert_eq!(
            parse(text).unwrap_err(),
            "config.toml:10: unknown key `comand` in [[headless.allow]] (expected one of: tool, command, path)"
        );
        let deny =
            "[permissions]\n[[permissions.deny]]\ntool = \"bash\"\ncommnad = \"git push*\"\n";
        assert_eq!(
            parse(deny).unwrap_err(),
            "config.toml:4: unknown key `commnad` in [[permissions.deny]] (expected one of: tool, command, path)"
        );
        assert_eq!(
            parse("[headless]\ntimeout = 5\n").unwrap_err(),
            "config.toml:2: unknown key `timeout` in [headless] (expected one of: allow, timeout_secs)"
        );
        assert_eq!(
            parse("[permissions]\nallow = []\n").unwrap_err(),
            "config.toml:2: unknown key `allow` in [permissions] (expected one of: deny, additional_directories, allow_secret)"
        );
    }

    #[test]
    fn allow_rules_that_match_everything_by_omission_are_refused() {
        for (text, line) in [
            ("[[headless.allow]]\ntool = \"bash\"\n", 1),
            (
                "[[headless.allow]]\ntool = \"read\"\npath = \"a\"\n[[headless.allow]]\ntool = \"write\"\n",
                4,
            ),
            ("[[headless.allow]]\ntool = \"edit\"\ncommand = \"x\"\n", 1),
            ("[[headless.allow]]\ntool = \"*\"\n", 1),
            // A glob is judged by the built-in tools it matches.
            ("[[headless.allow]]\ntool = \"ba?h\"\n", 1),
            ("[[headless.allow]]\ntool = \"?*\"\ncommand = \"ls\"\n", 1),
            (
                "[[headless.allow]]\ntool = \"{bash,write}\"\ncommand = \"*\"\n",
                1,
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert!(
                e.starts_with(&format!("config.toml:{line}: ")),
                "{text:?}: {e}"
            );
            assert!(e.contains("would allow every"), "{e}");
            assert!(e.contains("[[headless.allow]]"), "{e}");
        }
        // Written explicitly, the same breadth is accepted; deny rules may be as broad as
        // their author likes.
        let ok = parse(
            "[[headless.allow]]\ntool = \"bash\"\ncommand = \"*\"\n\
             [[headless.allow]]\ntool = \"write\"\npath = \"**\"\n\
             [[headless.allow]]\ntool = \"*\"\npath = \"docs/**\"\n\
             [[headless.allow]]\ntool = \"ask_user\"\n\
             [[headless.allow]]\ntool = \"mcp__time__*\"\n\
             [[permissions.deny]]\ntool = \"bash\"\n\
             [[permissions.deny]]\ntool = \"*\"\n",
        )
        .unwrap();
        assert_eq!(ok.headless.allow.len(), 5);
        assert_eq!(ok.permissions.deny.len(), 2);
        assert_eq!(ok.headless.timeout_secs, 600);
    }

    #[test]
    fn gate_sections_skip_other_top_level_sections() {
        let s = parse("[providers.x]\nanything = 1\n[tools]\nwhatever = 2\n").unwrap();
        assert!(s.headless.allow.is_empty());
    }

    #[test]
    fn load_reads_the_file_and_names_it() {
        let dir = std::env::temp_dir().join(format!("shard-gate-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(GateSections::load(&dir).unwrap().headless.allow.is_empty());
        std::fs::write(dir.join("config.toml"), "[headless]\nallow_all = true\n").unwrap();
        let e = GateSections::load(&dir).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            e.starts_with(&format!(
                "{}:2: unknown key `allow_all`",
                dir.join("config.toml").display()
            )),
            "{e}"
        );
    }
}
