//! The Runtime's tools: a [`ToolRegistry`] it owns, changed while it runs through a
//! [`ToolsHandle`] (an MCP client adds a server's tools when it connects and removes them
//! when it goes), and the tool list offered to the model, built once per change.

use std::sync::Arc;

use shard_tools::{Tool, ToolRegistry};
use tokio::sync::mpsc;

use super::inbox::{Internal, ToolChange};

/// The Runtime is gone; the change was not applied.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the Runtime has stopped")]
pub struct RuntimeGone;

/// Adds and removes tools of a running Runtime. Cheap to clone. A change applies as soon
/// as the actor receives it, even mid-turn: the next model call offers the new list, and
/// a call to a removed tool gets the usual "no tool named" error result. A change sent
/// before a command (on the same task) is applied before that command.
#[derive(Clone)]
pub struct ToolsHandle {
    tx: mpsc::Sender<Internal>,
}

impl ToolsHandle {
    /// Adds (or replaces) a tool.
    pub async fn add(&self, tool: Arc<dyn Tool>) -> Result<(), RuntimeGone> {
        self.tx
            .send(Internal::Tools(ToolChange::Add(tool)))
            .await
            .map_err(|_| RuntimeGone)
    }

    /// Removes a tool by name; removing an unknown name does nothing.
    pub async fn remove(&self, name: impl Into<String>) -> Result<(), RuntimeGone> {
        self.tx
            .send(Internal::Tools(ToolChange::Remove(name.into())))
            .await
            .map_err(|_| RuntimeGone)
    }
}

/// The tool side of the actor's state.
pub(crate) struct Tools {
    pub(crate) registry: ToolRegistry,
    /// A managed child's allow-list (`--tools`): it applies to tools added later too.
    allow: Option<Vec<String>>,
    /// The list offered to the model, rebuilt only after a change so consecutive calls
    /// send the same bytes (and schemas are not cloned per call).
    specs: Option<Arc<[shard_ai::ToolSpec]>>,
    /// The actor's internal queue, which changes arrive on.
    sender: mpsc::Sender<Internal>,
}

impl Tools {
    pub(crate) fn new(
        tools: Vec<Arc<dyn Tool>>,
        allow: Option<Vec<String>>,
        sender: mpsc::Sender<Internal>,
    ) -> Tools {
        let mut registry = ToolRegistry::new(tools);
        if let Some(allow) = &allow {
            registry.retain(allow);
        }
        Tools {
            registry,
            allow,
            specs: None,
            sender,
        }
    }

    pub(crate) fn handle(&self) -> ToolsHandle {
        ToolsHandle {
            tx: self.sender.clone(),
        }
    }

    pub(crate) fn sender(&self) -> mpsc::Sender<Internal> {
        self.sender.clone()
    }

    /// Replaces every tool whose name starts with `prefix` (one MCP server's) by `tools`,
    /// keeping the place of those that stay; returns the names now present (the allow-list
    /// applies).
    pub(crate) fn replace_prefix(
        &mut self,
        prefix: &str,
        tools: Vec<Arc<dyn Tool>>,
    ) -> Vec<String> {
        let incoming: Vec<String> = tools.iter().map(|t| t.name().to_string()).collect();
        let gone: Vec<String> = self
            .registry
            .names()
            .into_iter()
            .filter(|n| n.starts_with(prefix) && !incoming.iter().any(|i| i == n))
            .map(str::to_string)
            .collect();
        for name in gone {
            self.apply(ToolChange::Remove(name));
        }
        for tool in tools {
            self.apply(ToolChange::Add(tool));
        }
        self.specs = None;
        self.registry
            .names()
            .into_iter()
            .filter(|n| n.starts_with(prefix))
            .map(str::to_string)
            .collect()
    }

    pub(crate) fn apply(&mut self, change: ToolChange) {
        match change {
            ToolChange::Add(tool) => {
                let allowed = self
                    .allow
                    .as_ref()
                    .is_none_or(|a| a.iter().any(|n| n == tool.name()));
                if !allowed {
                    tracing::debug!(tool = tool.name(), "tool not in this agent's allow-list");
                    return;
                }
                tracing::info!(tool = tool.name(), "tool added");
                self.registry.insert(tool);
            }
            ToolChange::Remove(name) => {
                if self.registry.remove(&name).is_none() {
                    return;
                }
                tracing::info!(tool = %name, "tool removed");
            }
        }
        self.specs = None;
    }

    /// The tool list for the next model call.
    pub(crate) fn specs(&mut self) -> Arc<[shard_ai::ToolSpec]> {
        if let Some(specs) = &self.specs {
            return specs.clone();
        }
        let specs: Arc<[shard_ai::ToolSpec]> = self
            .registry
            .iter()
            .map(|t| shard_ai::ToolSpec {
                name: t.name().to_string(),
                description: t.description().to_string(),
                input_schema: t.input_schema(),
            })
            .collect();
        self.specs = Some(specs.clone());
        specs
    }
}
