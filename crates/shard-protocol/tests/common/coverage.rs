//! Names of the variants a message exercises, so the vector tests can prove that every
//! `ContentBlock`, `ToolResultContent`, `RenderDescriptor`, pending-request kind and
//! permission-answer form appears in at least one vector. The matches are exhaustive on
//! purpose: a new variant fails to compile here until a vector is added for it.

use std::collections::BTreeSet;

use shard_protocol::command::Command;
use shard_protocol::event::{Event, PendingRequest};
use shard_protocol::permission::PermissionAnswer;
use shard_protocol::types::{ContentBlock, Message, RenderDescriptor, ToolResultContent, UiValue};

/// Every `ContentBlock` type.
pub const CONTENT_BLOCKS: &[&str] = &["text", "tool_call", "tool_result", "thinking", "image"];
/// Every `ToolResultContent` kind.
pub const TOOL_RESULT_CONTENT: &[&str] = &["text", "json", "error", "image"];
/// Every `RenderDescriptor` kind.
pub const RENDERS: &[&str] = &[
    "text",
    "kv",
    "diff",
    "tree",
    "progress",
    "status",
    "command",
    "path_list",
    "code",
];
/// Every pending-request kind of `sync`.
pub const PENDING: &[&str] = &["permission_request", "ui_request"];
/// Both answer forms.
pub const ANSWERS: &[&str] = &["choice_id", "decision"];
/// The three `ui_response` value forms.
pub const UI_VALUES: &[&str] = &["string", "list", "null"];

/// The wire `type` of a content block.
pub fn block_name(b: &ContentBlock) -> &'static str {
    match b {
        ContentBlock::Text { .. } => "text",
        ContentBlock::ToolCall { .. } => "tool_call",
        ContentBlock::ToolResult { .. } => "tool_result",
        ContentBlock::Thinking { .. } => "thinking",
        ContentBlock::Image { .. } => "image",
    }
}

/// The wire `kind` of a tool result.
pub fn result_name(c: &ToolResultContent) -> &'static str {
    match c {
        ToolResultContent::Text { .. } => "text",
        ToolResultContent::Json { .. } => "json",
        ToolResultContent::Error { .. } => "error",
        ToolResultContent::Image { .. } => "image",
    }
}

/// The wire `kind` of a render descriptor.
pub fn render_name(r: &RenderDescriptor) -> &'static str {
    match r {
        RenderDescriptor::Text { .. } => "text",
        RenderDescriptor::Kv { .. } => "kv",
        RenderDescriptor::Diff { .. } => "diff",
        RenderDescriptor::Tree { .. } => "tree",
        RenderDescriptor::Progress { .. } => "progress",
        RenderDescriptor::Status { .. } => "status",
        RenderDescriptor::Command { .. } => "command",
        RenderDescriptor::PathList { .. } => "path_list",
        RenderDescriptor::Code { .. } => "code",
    }
}

/// The form of a permission answer.
pub fn answer_name(a: &PermissionAnswer) -> &'static str {
    match a {
        PermissionAnswer::Choice { .. } => "choice_id",
        PermissionAnswer::Decision { .. } => "decision",
    }
}

/// What one message exercised, by category.
#[derive(Debug, Default)]
pub struct Seen {
    /// Content block types.
    pub blocks: BTreeSet<&'static str>,
    /// Tool result kinds.
    pub results: BTreeSet<&'static str>,
    /// Render kinds.
    pub renders: BTreeSet<&'static str>,
    /// Pending request kinds in `sync`.
    pub pending: BTreeSet<&'static str>,
    /// Answer forms of `permission_resolved`.
    pub resolved_forms: BTreeSet<&'static str>,
    /// Answer forms of `permission_response`.
    pub response_forms: BTreeSet<&'static str>,
    /// `ui_response` value forms.
    pub ui_values: BTreeSet<&'static str>,
}

impl Seen {
    fn message(&mut self, m: &Message) {
        for b in &m.content {
            self.blocks.insert(block_name(b));
            if let ContentBlock::ToolResult {
                content, render, ..
            } = b
            {
                self.results.insert(result_name(content));
                if let Some(r) = render {
                    self.renders.insert(render_name(r));
                }
            }
        }
    }

    /// Records what an event exercises.
    pub fn event(&mut self, e: &Event) {
        match e {
            Event::Sync(s) => {
                for m in &s.live_window.messages {
                    self.message(m);
                }
                for p in &s.pending_requests {
                    self.pending.insert(match p {
                        PendingRequest::Permission(_) => "permission_request",
                        PendingRequest::Ui(_) => "ui_request",
                    });
                }
            }
            Event::MessageComplete(m) => self.message(&m.message),
            Event::ToolCall(t) => {
                if let Some(r) = &t.render {
                    self.renders.insert(render_name(r));
                }
            }
            Event::ToolResult(t) => {
                self.results.insert(result_name(&t.content));
                if let Some(r) = &t.render {
                    self.renders.insert(render_name(r));
                }
            }
            Event::PermissionResolved(p) => {
                self.resolved_forms.insert(answer_name(&p.answer));
            }
            _ => {}
        }
    }

    /// Records what a command exercises.
    pub fn command(&mut self, c: &Command) {
        match c {
            Command::PermissionResponse(p) => {
                self.response_forms.insert(answer_name(&p.answer));
            }
            Command::UiResponse(u) => {
                self.ui_values.insert(match &u.value {
                    Some(UiValue::Text(_)) => "string",
                    Some(UiValue::List(_)) => "list",
                    None => "null",
                });
            }
            _ => {}
        }
    }
}

/// Asserts that `seen` holds exactly `all`.
pub fn assert_all(what: &str, seen: &BTreeSet<&'static str>, all: &[&'static str]) {
    let all: BTreeSet<&'static str> = all.iter().copied().collect();
    let missing: Vec<_> = all.difference(seen).collect();
    assert!(missing.is_empty(), "no vector exercises {what} {missing:?}");
}
