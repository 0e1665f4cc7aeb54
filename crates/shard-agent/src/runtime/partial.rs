//! The assistant message being streamed: blocks keyed by the provider's indexes, kept so
//! `sync` can include it and finished into the persisted message and the calls to run.

use std::collections::HashMap;

use serde_json::{Map, Value};
use shard_protocol::types::ContentBlock;

use super::tool_calls::CallRequest;

/// The assistant message being streamed, kept so `sync` can include it.
pub(crate) struct PartialMessage {
    pub(crate) message_id: String,
    pub(super) blocks: Vec<PartialBlock>,
    by_provider_index: HashMap<u32, usize>,
}

pub(super) enum PartialBlock {
    Text(String),
    Thinking {
        text: String,
        signature: Option<String>,
    },
    ToolCall {
        id: String,
        name: String,
        args_json: String,
    },
}

impl PartialMessage {
    pub(super) fn new(message_id: String) -> Self {
        PartialMessage {
            message_id,
            blocks: Vec::new(),
            by_provider_index: HashMap::new(),
        }
    }

    /// The local block index for a provider index, opening a block when new.
    pub(super) fn slot(&mut self, index: u32, make: impl FnOnce() -> PartialBlock) -> usize {
        if let Some(&i) = self.by_provider_index.get(&index) {
            return i;
        }
        self.blocks.push(make());
        let i = self.blocks.len() - 1;
        self.by_provider_index.insert(index, i);
        i
    }

    /// Blocks as they stand, for `sync`. Tool calls whose arguments are incomplete show
    /// the arguments parsed so far as an empty object.
    pub(crate) fn snapshot_blocks(&self) -> Vec<ContentBlock> {
        self.blocks
            .iter()
            .map(|b| match b {
                PartialBlock::Text(t) => ContentBlock::Text { text: t.clone() },
                PartialBlock::Thinking { text, signature } => ContentBlock::Thinking {
                    text: text.clone(),
                    signature: signature.clone(),
                },
                PartialBlock::ToolCall {
                    id,
                    name,
                    args_json,
                } => ContentBlock::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    args: parse_args(args_json).unwrap_or_default(),
                },
            })
            .collect()
    }

    /// The final blocks and the calls to run. With `keep_calls` false (abort, failure)
    /// unfinished tool calls are dropped: they never ran and must not reach the model
    /// without a result.
    pub(super) fn finish(self, keep_calls: bool) -> (Vec<ContentBlock>, Vec<CallRequest>) {
        let mut blocks = Vec::new();
        let mut calls = Vec::new();
        for b in self.blocks {
            match b {
                PartialBlock::Text(text) => {
                    if !text.is_empty() {
                        blocks.push(ContentBlock::Text { text });
                    }
                }
                PartialBlock::Thinking { text, signature } => {
                    blocks.push(ContentBlock::Thinking { text, signature });
                }
                PartialBlock::ToolCall {
                    id,
                    name,
                    args_json,
                } if keep_calls => {
                    let (args, parse_error) = match parse_args(&args_json) {
                        Ok(a) => (a, None),
                        Err(e) => (Map::new(), Some(e)),
                    };
                    blocks.push(ContentBlock::ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        args: args.clone(),
                    });
                    calls.push(CallRequest {
                        id,
                        name,
                        args,
                        parse_error,
                    });
                }
                PartialBlock::ToolCall { .. } => {}
            }
        }
        (blocks, calls)
    }
}

fn parse_args(json: &str) -> Result<Map<String, Value>, String> {
    if json.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(format!("the arguments must be a JSON object, got {other}")),
        Err(e) => Err(format!("the arguments are not valid JSON ({e})")),
    }
}
