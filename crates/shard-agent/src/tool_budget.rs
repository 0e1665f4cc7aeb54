//! What the tool definitions cost on every model request: the list a fresh Runtime offers
//! (the built-in tools, `ask_user`, and `subagent` under a daemon) as each provider format
//! sends it, per tool and in all. Every request repeats these bytes, so they are held to
//! [`BUDGET`] by a test here; `cargo run -p shard-agent --example tool_bytes` prints them.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use shard_ai::openai_chat::MaxTokensField;
use shard_ai::{ModelRequest, ToolSpec};
use shard_protocol::definitions::{BUILT_IN, BUILT_IN_DESCRIPTION, DefinitionSummary};
use shard_tools::Tool;
use tokio::sync::mpsc;

use crate::ask::{AskUser, UiAsk, UiHandle};
use crate::subagent::{Subagent, SubagentTool};

/// Most bytes the offered tools may take in any provider format's `tools` array.
pub const BUDGET: usize = 5_500;

/// One provider format's tool list: bytes per tool (compact JSON, as sent) and of the
/// whole `tools` array.
#[derive(Debug, Clone)]
pub struct FormatBytes {
    /// The provider format: `anthropic`, `openai-chat` or `openai-responses`.
    pub format: &'static str,
    /// Each tool's entry, in the order offered.
    pub per_tool: Vec<(String, usize)>,
    /// The whole `tools` array.
    pub total: usize,
}

/// The tools a Runtime started now would offer, in order (`subagent` describing only the
/// built-in `general` definition, as in a project without definition files).
pub fn offered_tools(with_subagent: bool) -> Vec<Arc<dyn Tool>> {
    let (tx, _rx) = mpsc::channel::<UiAsk>(1);
    let subagent = with_subagent.then(|| {
        let general = DefinitionSummary {
            name: BUILT_IN.to_string(),
            description: Some(BUILT_IN_DESCRIPTION.to_string()),
        };
        let tool = SubagentTool::new(PathBuf::new(), String::new(), String::new());
        Subagent::new(tool, &[general])
    });
    first_tools(UiHandle::new(tx), subagent)
}

/// The tools a Runtime starts with, in the order the model sees them: the built-ins,
/// `ask_user`, then `subagent` when the Runtime runs under a daemon.
pub(crate) fn first_tools(ui: UiHandle, subagent: Option<Subagent>) -> Vec<Arc<dyn Tool>> {
    let mut tools = shard_tools::builtin_tools();
    tools.push(Arc::new(shard_tools::Typed::new(AskUser::new(ui))));
    if let Some(subagent) = subagent {
        tools.push(Arc::new(subagent));
    }
    tools
}

/// The bytes of `tools` in each provider format.
pub fn measure(tools: &[Arc<dyn Tool>]) -> Vec<FormatBytes> {
    let specs: Vec<ToolSpec> = tools
        .iter()
        .map(|t| ToolSpec {
            name: t.name().to_string(),
            description: t.description().to_string(),
            input_schema: t.input_schema(),
        })
        .collect();
    let request = ModelRequest {
        model: "m".into(),
        system: String::new(),
        messages: Vec::new(),
        tools: specs.into(),
        max_output_tokens: None,
        reasoning_effort: None,
    };
    [
        ("anthropic", shard_ai::anthropic::request_body(&request)),
        (
            "openai-chat",
            shard_ai::openai_chat::request_body(&request, MaxTokensField::MaxCompletionTokens),
        ),
        (
            "openai-responses",
            shard_ai::openai_responses::request_body(&request),
        ),
    ]
    .into_iter()
    .map(|(format, body)| {
        let tools = body.get("tools").cloned().unwrap_or(Value::Null);
        let per_tool = tools
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|t| {
                        let name = t
                            .get("name")
                            .or_else(|| t.pointer("/function/name"))
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        (name.to_string(), t.to_string().len())
                    })
                    .collect()
            })
            .unwrap_or_default();
        FormatBytes {
            format,
            per_tool,
            total: tools.to_string().len(),
        }
    })
    .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn the_offered_tools_fit_the_budget_in_every_format() {
        for with_subagent in [false, true] {
            let tools = offered_tools(with_subagent);
            assert_eq!(tools.len(), 8 + usize::from(with_subagent));
            for f in measure(&tools) {
                assert_eq!(f.per_tool.len(), tools.len(), "{}", f.format);
                assert!(
                    f.total <= BUDGET,
                    "{} (subagent offered: {with_subagent}): {} bytes > {BUDGET}: {:?}",
                    f.format,
                    f.total,
                    f.per_tool
                );
            }
        }
    }
}
