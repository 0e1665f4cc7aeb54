//! The ModeController (docs/architecture.md#modes): built-in `build` and `plan`, then extension
//! modes from configuration in registration order.

use shard_protocol::types::ModeDescriptor;

use crate::config::ModeConfig;

/// One registered mode.
#[derive(Debug, Clone)]
pub struct Mode {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Mutating tools are denied.
    pub read_only: bool,
    /// Tool allow-list; `None` allows all.
    pub tools: Option<Vec<String>>,
    /// Addition to the system prompt.
    pub prompt: Option<String>,
}

/// The default mode.
pub const BUILD: &str = "build";
/// The read-only planning mode.
pub const PLAN: &str = "plan";

/// Owns the mode catalog and the active mode.
#[derive(Debug, Clone)]
pub struct ModeController {
    modes: Vec<Mode>,
    active: usize,
}

/// An unknown mode name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mode `{0}`")]
pub struct UnknownMode(pub String);

impl ModeController {
    /// Built-ins plus the configured extension modes (a configured mode that reuses a
    /// built-in name is ignored).
    pub fn new(extensions: &[ModeConfig]) -> Self {
        let mut modes = vec![
            Mode {
                name: BUILD.into(),
                description: "Build: reads run freely; writes and commands ask first".into(),
                read_only: false,
                tools: None,
                prompt: None,
            },
            Mode {
                name: PLAN.into(),
                description: "Plan: read-only; investigate and propose, change nothing".into(),
                read_only: true,
                tools: None,
                prompt: Some(
                    "You are in plan mode: you may only read and search. Do not try to write, \
                     edit or run commands; those tools are denied. Investigate, then present a \
                     plan for the user to approve."
                        .into(),
                ),
            },
        ];
        for ext in extensions {
            if ext.name.is_empty() || modes.iter().any(|m| m.name == ext.name) {
                tracing::warn!(mode = %ext.name, "ignoring a configured mode with a duplicate or empty name");
                continue;
            }
            modes.push(Mode {
                name: ext.name.clone(),
                description: ext.description.clone(),
                read_only: false,
                tools: ext.tools.clone(),
                prompt: ext.prompt.clone(),
            });
        }
        ModeController { modes, active: 0 }
    }

    /// The active mode.
    pub fn active(&self) -> &Mode {
        &self.modes[self.active.min(self.modes.len() - 1)]
    }

    /// The catalog, secret-free.
    pub fn descriptors(&self) -> Vec<ModeDescriptor> {
        self.modes
            .iter()
            .map(|m| ModeDescriptor {
                name: m.name.clone(),
                description: m.description.clone(),
            })
            .collect()
    }

    /// Switches mode; returns the previous name. Unknown names keep the old mode.
    pub fn set(&mut self, name: &str) -> Result<String, UnknownMode> {
        let idx = self
            .modes
            .iter()
            .position(|m| m.name == name)
            .ok_or_else(|| UnknownMode(name.to_string()))?;
        let previous = self.active().name.clone();
        self.active = idx;
        Ok(previous)
    }

    /// Why the active mode refuses `tool`, if it does.
    pub fn refusal(&self, tool: &str, read_only_tool: bool) -> Option<String> {
        let mode = self.active();
        if mode.read_only && !read_only_tool {
            return Some(format!(
                "`{tool}` is not allowed in {} mode: it is read-only. Ask the user to switch to build mode to make changes.",
                mode.name
            ));
        }
        if let Some(allowed) = &mode.tools
            && !allowed.iter().any(|t| t == tool)
        {
            return Some(format!(
                "`{tool}` is not allowed in {} mode (allowed: {}).",
                mode.name,
                allowed.join(", ")
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_refuses_mutation_and_unknown_keeps_old() {
        let mut m = ModeController::new(&[ModeConfig {
            name: "review".into(),
            description: "r".into(),
            tools: Some(vec!["read".into()]),
            prompt: None,
        }]);
        assert_eq!(m.active().name, BUILD);
        assert!(m.refusal("write", false).is_none());
        assert_eq!(m.set(PLAN).unwrap(), BUILD);
        assert!(m.refusal("write", false).is_some());
        assert!(m.refusal("read", true).is_none());
        assert!(m.set("nope").is_err());
        assert_eq!(m.active().name, PLAN);
        m.set("review").unwrap();
        assert!(m.refusal("grep", true).is_some());
        let names: Vec<_> = m.descriptors().into_iter().map(|d| d.name).collect();
        assert_eq!(names, ["build", "plan", "review"]);
    }
}
