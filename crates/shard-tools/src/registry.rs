//! The built-in tool set and the registry a Runtime owns: tools by name, in the order the
//! model is shown them, added and removed while the Runtime runs (MCP servers come and go).

use std::sync::Arc;

use serde_json::Value;

use crate::bash::BashTool;
use crate::edit::EditTool;
use crate::find::FindTool;
use crate::grep::GrepTool;
use crate::ls::LsTool;
use crate::read::ReadTool;
use crate::tool::Tool;
use crate::typed::Typed;
use crate::write::WriteTool;

/// The seven built-in tools, in the order the model is shown them.
pub fn builtin_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(Typed::new(ReadTool)),
        Arc::new(Typed::new(WriteTool)),
        Arc::new(Typed::new(EditTool)),
        Arc::new(Typed::new(BashTool)),
        Arc::new(Typed::new(GrepTool)),
        Arc::new(Typed::new(FindTool)),
        Arc::new(Typed::new(LsTool)),
    ]
}

/// What a provider needs to offer a tool to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// Description for the model.
    pub description: String,
    /// JSON Schema of the arguments.
    pub schema: Value,
}

/// Tools by name, in registration order. Owned by one Runtime (never global), so two
/// agents in one process can offer different tools.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| t.name()))
            .finish()
    }
}

impl ToolRegistry {
    /// A registry of the given tools; a later tool with an existing name replaces it.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        let mut reg = ToolRegistry::default();
        for t in tools {
            reg.insert(t);
        }
        reg
    }

    /// The built-in tools.
    pub fn builtin() -> Self {
        ToolRegistry::new(builtin_tools())
    }

    /// Adds a tool, replacing one of the same name in place (so the model's tool list
    /// keeps its order, and its prompt-cache prefix, when a server re-announces a tool).
    pub fn insert(&mut self, tool: Arc<dyn Tool>) {
        match self.tools.iter_mut().find(|t| t.name() == tool.name()) {
            Some(slot) => *slot = tool,
            None => self.tools.push(tool),
        }
    }

    /// Removes the tool named `name`, returning it; calls already running keep their
    /// own handle and finish.
    pub fn remove(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        let pos = self.tools.iter().position(|t| t.name() == name)?;
        Some(self.tools.remove(pos))
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name).cloned()
    }

    /// Keeps only the named tools (a mode's or `--tools` allow-list); order is kept.
    pub fn retain<S: AsRef<str>>(&mut self, names: &[S]) {
        self.tools
            .retain(|t| names.iter().any(|n| n.as_ref() == t.name()));
    }

    /// Name, description and schema of every tool, in order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .map(|t| ToolSpec {
                name: t.name().to_string(),
                description: t.description().to_string(),
                schema: t.input_schema(),
            })
            .collect()
    }

    /// Tool names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// All tools, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.iter()
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when there are no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}
