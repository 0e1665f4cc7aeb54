//! Configured permission rules (deny rules and headless allow rules) compiled for
//! matching. A `bash` rule with a `command` glob is matched per simple command: a deny
//! rule denies when any command (or the raw line) matches; an allow rule allows only when
//! every command of a line the shell analyzer understands matches some allow rule.

use globset::{Glob, GlobBuilder, GlobMatcher};
use serde_json::Value;

use crate::config::RuleConfig;
use crate::shell;

/// A compiled rule.
#[derive(Debug, Clone)]
pub struct Rule {
    tool: String,
    command: Option<GlobMatcher>,
    path: Option<GlobMatcher>,
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
            Some(g) => Some(Glob::new(g).map_err(err)?.compile_matcher()),
            None => None,
        };
        let path = match &cfg.path {
            Some(g) => Some(
                GlobBuilder::new(g)
                    .literal_separator(true)
                    .build()
                    .map_err(err)?
                    .compile_matcher(),
            ),
            None => None,
        };
        Ok(Rule {
            tool: cfg.tool.clone(),
            command,
            path,
        })
    }

    fn tool_matches(&self, tool: &str) -> bool {
        self.tool == "*" || self.tool == tool
    }

    fn path_matches(&self, args: &Value) -> bool {
        match &self.path {
            None => true,
            Some(m) => args
                .get("path")
                .and_then(Value::as_str)
                .is_some_and(|p| m.is_match(p)),
        }
    }
}

/// Compiles a list of rules, reporting the first invalid one.
pub fn compile_all(cfgs: &[RuleConfig]) -> Result<Vec<Rule>, RuleError> {
    cfgs.iter().map(Rule::compile).collect()
}

/// True when a deny rule matches this call.
pub fn denies(rules: &[Rule], tool: &str, args: &Value) -> bool {
    rules.iter().any(|r| {
        if !r.tool_matches(tool) || !r.path_matches(args) {
            return false;
        }
        let Some(glob) = &r.command else {
            return true;
        };
        let Some(line) = args.get("command").and_then(Value::as_str) else {
            return false;
        };
        if glob.is_match(line.trim()) {
            return true;
        }
        match shell::split_commands(line) {
            Some(cmds) => cmds.iter().any(|c| glob.is_match(c.text())),
            // Unparseable: the raw line was already tried; a deny rule for this tool
            // that cannot be checked precisely denies (fail closed).
            None => true,
        }
    })
}

/// True when the allow rules cover this call completely.
pub fn allows(rules: &[Rule], tool: &str, args: &Value) -> bool {
    let applicable: Vec<&Rule> = rules
        .iter()
        .filter(|r| r.tool_matches(tool) && r.path_matches(args))
        .collect();
    if applicable.is_empty() {
        return false;
    }
    if applicable.iter().any(|r| r.command.is_none()) {
        return true;
    }
    let Some(line) = args.get("command").and_then(Value::as_str) else {
        return false;
    };
    let Some(cmds) = shell::split_commands(line) else {
        return false;
    };
    cmds.iter().all(|c| {
        let text = c.text();
        applicable
            .iter()
            .any(|r| r.command.as_ref().is_some_and(|g| g.is_match(&text)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(tool: &str, command: Option<&str>, path: Option<&str>) -> Rule {
        Rule::compile(&RuleConfig {
            tool: tool.into(),
            command: command.map(Into::into),
            path: path.map(Into::into),
        })
        .unwrap()
    }

    #[test]
    fn allow_needs_every_command() {
        let rules = [rule("bash", Some("cargo test*"), None)];
        assert!(allows(&rules, "bash", &json!({"command": "cargo test -q"})));
        assert!(!allows(
            &rules,
            "bash",
            &json!({"command": "cargo test; rm -rf /"})
        ));
        assert!(!allows(
            &rules,
            "bash",
            &json!({"command": "cargo test $(rm x)"})
        ));
        assert!(!allows(&rules, "write", &json!({"path": "a"})));
    }

    #[test]
    fn deny_catches_any_command_and_paths() {
        let rules = [
            rule("bash", Some("git push*"), None),
            rule("write", None, Some("secrets/**")),
        ];
        assert!(denies(
            &rules,
            "bash",
            &json!({"command": "ls && git push origin"})
        ));
        assert!(!denies(&rules, "bash", &json!({"command": "git status"})));
        assert!(denies(
            &rules,
            "bash",
            &json!({"command": "echo $(git push)"})
        ));
        assert!(denies(&rules, "write", &json!({"path": "secrets/a/key"})));
        assert!(!denies(&rules, "write", &json!({"path": "src/a.rs"})));
    }
}
