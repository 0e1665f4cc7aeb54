//! Configured permission rules (deny rules, headless allow rules, secret allowances)
//! compiled for matching.
//!
//! A `command` glob is matched against every command the line may run, as
//! [`crate::resolve`] finds them — through wrappers (`sudo`, `env`, `timeout`, `xargs`,
//! `find -exec`, `bash -c` …) and with git's global options removed. A command that cannot
//! be fully known (a substitution, `eval`, a variable, a git alias …) is matched by a deny
//! rule whenever some completion of its known words could match (fail closed), and is
//! never allowed by an allow rule.
//!
//! A `path` glob is matched against the resolved path ([`crate::paths`]), relative to the
//! cwd when inside it and absolute, never against the raw argument.

use globset::{Glob, GlobBuilder, GlobMatcher};
use serde_json::Value;

use crate::config::RuleConfig;
use crate::paths::ResolvedPath;
use crate::resolve::{self, Effective};

/// A compiled rule.
#[derive(Debug, Clone)]
pub struct Rule {
    tool: String,
    /// The tool name as a glob, when it has one (`mcp__github__*`).
    tool_glob: Option<GlobMatcher>,
    command: Option<CommandGlob>,
    path: Option<GlobMatcher>,
}

#[derive(Debug, Clone)]
struct CommandGlob {
    matcher: GlobMatcher,
    /// The glob's text before its first special character: what any match starts with.
    literal_prefix: String,
}

impl CommandGlob {
    /// True when the glob matches this command, or — for an open command — could match
    /// some command starting with its known words.
    fn matches(&self, e: &Effective) -> bool {
        let mut spellings = vec![e.words.clone()];
        if let Some(first) = e.words.first() {
            let base = resolve::base_name(first);
            if base != first {
                let mut w = e.words.clone();
                w[0] = base.to_string();
                spellings.push(w);
            }
        }
        spellings.iter().any(|words| {
            let text = words.join(" ");
            if !e.open {
                return self.matcher.is_match(&text);
            }
            let known = if words.is_empty() {
                String::new()
            } else {
                format!("{text} ")
            };
            // Any string the glob matches starts with its literal prefix; a completion
            // of `known` starts with `known`. Both are possible only if one is a prefix
            // of the other.
            self.matcher.is_match(&text)
                || known.starts_with(&self.literal_prefix)
                || self.literal_prefix.starts_with(&known)
        })
    }
}

/// A rule whose glob does not compile.
#[derive(Debug, thiserror::Error)]
#[error("invalid rule for tool `{tool}`: {message}")]
pub struct RuleError {
    tool: String,
    message: String,
}

impl Rule {
    /// Compiles one configured rule.
    pub fn compile(cfg: &RuleConfig) -> Result<Rule, RuleError> {
        let err = |e: globset::Error| RuleError {
            tool: cfg.tool.clone(),
            message: e.to_string(),
        };
        let command = match &cfg.command {
            Some(g) => Some(CommandGlob {
                matcher: Glob::new(g).map_err(err)?.compile_matcher(),
                literal_prefix: g
                    .chars()
                    .take_while(|c| !matches!(c, '*' | '?' | '[' | '{' | '\\'))
                    .collect(),
            }),
            None => None,
        };
        let path = match &cfg.path {
            Some(g) => Some(
                GlobBuilder::new(&expand_home(g))
                    .literal_separator(true)
                    .build()
                    .map_err(err)?
                    .compile_matcher(),
            ),
            None => None,
        };
        let tool_glob = if cfg.tool != "*" && cfg.tool.contains(['*', '?', '[', '{']) {
            Some(Glob::new(&cfg.tool).map_err(err)?.compile_matcher())
        } else {
            None
        };
        Ok(Rule {
            tool_glob,
            tool: cfg.tool.clone(),
            command,
            path,
        })
    }

    /// The tool it names (`*` for all).
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// True when it has a `path` glob.
    pub fn has_path(&self) -> bool {
        self.path.is_some()
    }

    /// True when it has no `command` glob (it may match a call that has no command).
    pub fn command_free(&self) -> bool {
        self.command.is_none()
    }

    /// True when it applies to `tool`: `*`, the exact name, or a glob over names
    /// (`mcp__github__*` for every tool of one MCP server).
    pub fn tool_matches(&self, tool: &str) -> bool {
        self.tool == "*"
            || self.tool == tool
            || self.tool_glob.as_ref().is_some_and(|g| g.is_match(tool))
    }

    /// True when its `path` glob (if any) matches the resolved path. A rule with a path
    /// glob never matches a call without a path.
    pub fn path_matches(&self, path: Option<&ResolvedPath>) -> bool {
        match (&self.path, path) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(_), Some(p)) => self.path_matches_spellings(&p.spellings()),
        }
    }

    /// True when its `path` glob (if any) matches one of these spellings of a resolved
    /// path ([`ResolvedPath::spellings`]).
    pub fn path_matches_spellings(&self, spellings: &[String]) -> bool {
        let Some(m) = &self.path else {
            return true;
        };
        spellings.iter().any(|s| m.is_match(s))
    }
}

/// `~/…` at the start of a `path` glob is the user's home directory, as in tool arguments.
fn expand_home(glob: &str) -> String {
    match (glob.strip_prefix("~/"), std::env::var("HOME")) {
        (Some(rest), Ok(home)) if !home.is_empty() => {
            format!("{}/{rest}", home.trim_end_matches('/'))
        }
        _ => glob.to_string(),
    }
}

/// Compiles a list of rules, reporting the first invalid one.
pub fn compile_all(cfgs: &[RuleConfig]) -> Result<Vec<Rule>, RuleError> {
    cfgs.iter().map(Rule::compile).collect()
}

fn bash_line(args: &Value) -> Option<&str> {
    args.get("command").and_then(Value::as_str)
}

/// True when a deny rule matches this call (`path` already resolved, if the tool has one).
pub fn denies(rules: &[Rule], tool: &str, args: &Value, path: Option<&ResolvedPath>) -> bool {
    denies_walked(rules, tool, args, path, None)
}

/// [`denies`] with the line's commands already found ([`resolve::walk`]), when the caller
/// needs them for more than this.
pub fn denies_walked(
    rules: &[Rule],
    tool: &str,
    args: &Value,
    path: Option<&ResolvedPath>,
    commands: Option<&[Effective]>,
) -> bool {
    let mut effective: Option<Vec<Effective>> = None;
    rules.iter().any(|r| {
        if !r.tool_matches(tool) || !r.path_matches(path) {
            return false;
        }
        let Some(glob) = &r.command else {
            return true;
        };
        let Some(line) = bash_line(args) else {
            return false;
        };
        let cmds = match commands {
            Some(c) => c,
            None => effective.get_or_insert_with(|| resolve::effective(line)),
        };
        glob.matcher.is_match(line.trim()) || cmds.iter().any(|c| glob.matches(c))
    })
}

/// True when the allow rules cover this call completely: for `bash`, every command the
/// line may run, each fully known, matches an allow rule.
pub fn allows(rules: &[Rule], tool: &str, args: &Value, path: Option<&ResolvedPath>) -> bool {
    let applicable: Vec<&Rule> = rules
        .iter()
        .filter(|r| r.tool_matches(tool) && r.path_matches(path))
        .collect();
    if applicable.is_empty() {
        return false;
    }
    if applicable.iter().any(|r| r.command.is_none()) {
        return true;
    }
    let Some(line) = bash_line(args) else {
        return false;
    };
    let cmds = resolve::effective(line);
    cmds.iter().all(|c| {
        !c.open
            && !c.words.is_empty()
            && applicable.iter().any(|r| {
                r.command
                    .as_ref()
                    .is_some_and(|g| g.matcher.is_match(c.text()))
            })
    })
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
