//! The PermissionGate as one type (docs/architecture.md#the-permissiongate): [`Gate::decide`] takes
//! a call, the mode's policy, the grants and the headless policy and says run, refuse or
//! ask. It reads the filesystem only to resolve paths (symlinks) and never writes; asking,
//! waiting for an answer and persisting grants are the caller's (the Runtime's) job.
//!
//! Order, first match wins: mode policy → secret locations → deny rules → read-only tools
//! inside the workspace → grants → headless policy → ask.

use std::path::Path;

use serde_json::Value;
use shard_protocol::command::HeadlessPolicy;
use shard_protocol::event::PermissionRequest;

use crate::config::PermissionsConfig;
use crate::grants::{self, Grant};
use crate::paths::{ResolvedPath, Workspace};
use crate::prompt;
use crate::rules::{self, Rule, RuleError};
use crate::trusted;

/// One tool call as the gate sees it.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// Tool name.
    pub tool: &'a str,
    /// The tool says this call only reads.
    pub read_only: bool,
    /// Arguments as the model sent them.
    pub args: &'a Value,
}

/// The active mode's say (docs/architecture.md#modes), implemented by the Runtime's mode controller.
pub trait ModePolicy {
    /// Why the mode refuses this call, if it does.
    fn refusal(&self, tool: &str, read_only: bool) -> Option<String>;
}

/// A mode that refuses nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnyMode;

impl ModePolicy for AnyMode {
    fn refusal(&self, _tool: &str, _read_only: bool) -> Option<String> {
        None
    }
}

/// Why a call runs without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowed {
    /// A read-only tool inside the workspace (or a tool without a path).
    ReadOnly,
    /// A persisted grant covers it.
    Grant,
    /// A `[[headless.allow]]` rule covers it and nobody can be asked.
    HeadlessRule,
}

/// Why a call is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The mode does not allow it.
    Mode,
    /// A secret location no rule allows by name.
    Secret,
    /// A `[[permissions.deny]]` rule.
    DenyRule,
    /// Nobody can be asked and the headless policy denies (no person refused it).
    Headless,
}

/// What the gate decided.
#[derive(Debug, Clone)]
pub enum Decision {
    /// Run it.
    Allow(Allowed),
    /// Refuse it; the message is for the model (and clients).
    Refuse {
        /// Which rule refused.
        why: Refused,
        /// What the model is told.
        message: String,
    },
    /// Ask a person.
    Ask(Box<Ask>),
}

/// A permission request to emit, with what its persistent choices would record.
#[derive(Debug, Clone)]
pub struct Ask {
    /// The request (its `request_id` is fresh).
    pub request: PermissionRequest,
    /// What `allow_always` records.
    pub exact: Grant,
    /// What `allow_signature` records, when offered.
    pub signature: Option<Grant>,
    /// The headless policy is `queue`: the caller waits with its timeout.
    pub queued: bool,
}

/// Read-only tools whose path deny rules bind each other: a secret you may not read you may
/// not grep, find or list either.
const READ_FAMILY: &[&str] = &["read", "grep", "find", "ls"];
/// Tools whose `path` defaults to the cwd.
const PATH_DEFAULTS_TO_CWD: &[&str] = &["grep", "find", "ls"];

/// The compiled configuration and workspace of one Runtime.
#[derive(Debug, Clone)]
pub struct Gate {
    deny: Vec<Rule>,
    headless_allow: Vec<Rule>,
    allow_secret: Vec<Rule>,
    /// The deny rules with a `path` that may bind a listing tool (its own, `*`, or the
    /// read family's), for [`Gate::visible`], which runs once per entry of a search.
    listing_rules: Vec<Rule>,
    workspace: Workspace,
}

impl Gate {
    /// Compiles the rules of `permissions` and `headless_allow` for a Runtime at `cwd`.
    pub fn new(
        permissions: &PermissionsConfig,
        headless_allow: &[crate::config::RuleConfig],
        cwd: &Path,
        shard_home: &Path,
        home: Option<&Path>,
    ) -> Result<Gate, RuleError> {
        let deny = rules::compile_all(&permissions.deny)?;
        let listing_rules = deny
            .iter()
            .filter(|r| r.has_path() && r.command_free())
            .cloned()
            .collect();
        Ok(Gate {
            listing_rules,
            deny,
            headless_allow: rules::compile_all(headless_allow)?,
            allow_secret: rules::compile_all(&permissions.allow_secret)?,
            workspace: Workspace::new(cwd, &permissions.additional_directories, shard_home, home),
        })
    }

    /// Names the folder where this Runtime's tool results spill their output (readable
    /// inside SHARD_HOME).
    pub fn set_tool_output(&mut self, dir: &Path) {
        self.workspace.set_tool_output(dir);
    }

    /// The workspace boundary.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The resolved `path` of a call, when the tool has one: what the tool will open.
    pub fn path_of(&self, tool: &str, args: &Value) -> Option<ResolvedPath> {
        self.paths_of(tool, args).into_iter().next()
    }

    /// Every reading of a call's `path` ([`Workspace::resolve_all`]); empty when the tool
    /// has none.
    fn paths_of(&self, tool: &str, args: &Value) -> Vec<ResolvedPath> {
        match args.get("path").and_then(Value::as_str) {
            Some(p) => self.workspace.resolve_all(p),
            None if PATH_DEFAULTS_TO_CWD.contains(&tool) => self.workspace.resolve_all("."),
            None => Vec::new(),
        }
    }

    /// Decides one call. `headless` is `None` when a person can be asked.
    pub fn decide(
        &self,
        call: Call<'_>,
        mode: &dyn ModePolicy,
        grants: &[Grant],
        headless: Option<HeadlessPolicy>,
    ) -> Decision {
        let Call {
            tool,
            read_only,
            args,
        } = call;
        if let Some(message) = mode.refusal(tool, read_only) {
            return Decision::Refuse {
                why: Refused::Mode,
                message,
            };
        }
        let all = self.paths_of(tool, args);
        let path = all.first().cloned();
        if let Some(why) = all.iter().find_map(|p| self.secret(tool, p)) {
            return Decision::Refuse {
                why: Refused::Secret,
                message: format!(
                    "`{tool}` was refused: {why}. Secret locations are closed to every tool \
                     unless the user allows them by name with a [[permissions.allow_secret]] \
                     rule in config.toml; do not try another way to reach it."
                ),
            };
        }
        // A `bash` line is walked once, for deny rules and the trusted-file check.
        let walk = match (tool, args.get("command").and_then(Value::as_str)) {
            ("bash", Some(line)) => Some(crate::resolve::walk(line)),
            _ => None,
        };
        let commands = walk.as_ref().map(|w| w.commands.as_slice());
        let denied = if all.is_empty() {
            self.denied(tool, args, None, commands)
        } else {
            all.iter()
                .any(|p| self.denied(tool, args, Some(p), commands))
        };
        if denied {
            return Decision::Refuse {
                why: Refused::DenyRule,
                message: format!(
                    "`{tool}` was denied by a [permissions] deny rule in config.toml{}; do not \
                     retry it or reach the same thing another way.",
                    path.as_ref()
                        .map(|p| format!(" (path {})", p.shown()))
                        .unwrap_or_default()
                ),
            };
        }
        let outside = all.iter().any(|p| !self.readable(p));
        if read_only && !outside {
            return Decision::Allow(Allowed::ReadOnly);
        }
        // A write to a file Shard or git trusts is never covered by a grant or a rule.
        let trusted =
            trusted::touched_walked(&self.workspace, tool, read_only, args, walk.as_ref());
        let exact_args = self.grant_args(args, path.as_ref());
        if trusted.is_none() && grants::matches(grants, tool, &exact_args) {
            return Decision::Allow(Allowed::Grant);
        }
        match headless {
            Some(HeadlessPolicy::Deny) => Decision::Refuse {
                why: Refused::Headless,
                message: headless_message(tool, false),
            },
            Some(HeadlessPolicy::AllowIfRuleMatches) if trusted.is_some() => Decision::Refuse {
                why: Refused::Headless,
                message: trusted_headless_message(tool, trusted.as_deref().unwrap_or_default()),
            },
            Some(HeadlessPolicy::AllowIfRuleMatches) => {
                if self.headless_allows(tool, args) {
                    Decision::Allow(Allowed::HeadlessRule)
                } else {
                    Decision::Refuse {
                        why: Refused::Headless,
                        message: headless_message(tool, true),
                    }
                }
            }
            queue_or_person => {
                let (request, signature) = prompt::request(
                    tool,
                    args,
                    path.as_ref(),
                    outside,
                    trusted.as_deref(),
                    &self.workspace,
                );
                Decision::Ask(Box::new(Ask {
                    request,
                    exact: Grant::Exact {
                        tool: tool.to_string(),
                        args: grants::canonical(&exact_args),
                    },
                    signature,
                    queued: queue_or_person == Some(HeadlessPolicy::Queue),
                }))
            }
        }
    }

    /// True when the headless allow rules cover a call (the daemon's
    /// `allow_if_rule_matches` for a request the Runtime raised).
    pub fn headless_allows(&self, tool: &str, args: &Value) -> bool {
        if trusted::touched(&self.workspace, tool, false, args).is_some() {
            return false;
        }
        let all = self.paths_of(tool, args);
        if all.is_empty() {
            return rules::allows(&self.headless_allow, tool, args, None);
        }
        all.iter()
            .all(|p| rules::allows(&self.headless_allow, tool, args, Some(p)))
    }

    /// True when a listing tool may show this file or directory: no path deny rule of the
    /// read family binds it and it is not a secret location. `grep`, `find` and `ls` filter
    /// every entry they would print through it. `abs` has real directories; only a
    /// symlink entry (`is_symlink`) is resolved, so most entries cost no system call.
    pub fn visible(&self, tool: &str, abs: &Path, is_symlink: bool) -> bool {
        let target = if is_symlink {
            crate::paths::real(abs)
        } else {
            abs.to_path_buf()
        };
        if self.listing_rules.is_empty() && self.workspace.in_clean_root(&target) {
            return true;
        }
        let p = self.workspace.describe(target);
        if self.secret(tool, &p).is_some() {
            return false;
        }
        let spellings = p.spellings();
        !self.listing_rules.iter().any(|r| {
            (r.tool_matches(tool) || READ_FAMILY.contains(&r.tool()))
                && r.path_matches_spellings(&spellings)
        })
    }

    fn secret(&self, tool: &str, p: &ResolvedPath) -> Option<String> {
        let why = self.workspace.secret(p)?;
        let allowed = self
            .allow_secret
            .iter()
            .any(|r| r.tool_matches(tool) && r.has_path() && r.path_matches(Some(p)));
        if allowed { None } else { Some(why) }
    }

    fn denied(
        &self,
        tool: &str,
        args: &Value,
        path: Option<&ResolvedPath>,
        commands: Option<&[crate::resolve::Effective]>,
    ) -> bool {
        if rules::denies_walked(&self.deny, tool, args, path, commands) {
            return true;
        }
        // Path rules of the read family bind the whole family.
        READ_FAMILY.contains(&tool)
            && path.is_some()
            && self
                .deny
                .iter()
                .any(|r| r.has_path() && READ_FAMILY.contains(&r.tool()) && r.path_matches(path))
    }

    /// Inside a workspace root, or one of the spill files a tool result names.
    fn readable(&self, p: &ResolvedPath) -> bool {
        self.workspace.inside(p) || self.workspace.is_tool_output(p)
    }

    /// The arguments an exact grant records and is matched with: the `path` replaced by
    /// its resolved absolute form, so a grant made through a symlink never follows the
    /// link somewhere else later.
    fn grant_args(&self, args: &Value, path: Option<&ResolvedPath>) -> Value {
        match (args, path) {
            (Value::Object(map), Some(p)) if map.contains_key("path") => {
                let mut m = map.clone();
                m.insert(
                    "path".into(),
                    Value::String(p.abs.to_string_lossy().into_owned()),
                );
                Value::Object(m)
            }
            _ => args.clone(),
        }
    }
}

/// True when `[[headless.allow]]` rules cover a call made at `cwd`, its `path` resolved
/// as [`Gate::decide`] resolves it (both readings must be allowed). For the daemon, which
/// answers a Runtime's request with `allow_if_rule_matches` and has no [`Gate`] of its own.
pub fn headless_allows_at(rules: &[Rule], tool: &str, args: &Value, cwd: &Path) -> bool {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let workspace = Workspace::new(cwd, &[], cwd, home.as_deref());
    if trusted::touched(&workspace, tool, false, args).is_some() {
        return false;
    }
    let paths = match args.get("path").and_then(Value::as_str) {
        Some(p) => workspace.resolve_all(p),
        None if PATH_DEFAULTS_TO_CWD.contains(&tool) => workspace.resolve_all("."),
        None => Vec::new(),
    };
    if paths.is_empty() {
        return rules::allows(rules, tool, args, None);
    }
    paths
        .iter()
        .all(|p| rules::allows(rules, tool, args, Some(p)))
}

/// The refusal text when nobody could be asked and the call writes a trusted file, which
/// no rule may allow.
pub fn trusted_headless_message(tool: &str, what: &str) -> String {
    format!(
        "`{tool}` was not run: it may write `{what}`, a file Shard or git trusts (hooks, \
         git configuration, MCP servers, agent definitions), which only a person may allow, \
         and nobody is attached to answer permission requests. No person saw or declined \
         this request. Continue without it, or finish and report that it needs permission."
    )
}

/// The refusal text when nobody could be asked: it says no person saw the request, so the
/// model does not argue with someone who was not there.
pub fn headless_message(tool: &str, rules_checked: bool) -> String {
    let rule = if rules_checked {
        " and no [[headless.allow]] rule in config.toml covers this call"
    } else {
        ""
    };
    format!(
        "`{tool}` was not run: nobody is attached to answer permission requests{rule}, so \
         the agent's headless policy refused it automatically. No person saw or declined \
         this request. Continue without it, or finish and report that it needs permission."
    )
}

#[cfg(test)]
#[path = "gate_tests.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "models_tests.rs"]
mod models_tests;
