//! Conversation helpers shared by the request builders.

use std::sync::Arc;

use serde_json::Value;
use shard_protocol::types::{ContentBlock, Image, Message, Role, ToolResultContent};

/// The text the model sees for a tool result (images excluded), with `[exit code: N]`
/// appended when the block carries an exit code: the model must see the code even
/// though clients get it as a structured field.
pub(crate) fn tool_result_text(content: &ToolResultContent, exit_code: Option<i64>) -> String {
    let mut text = match content {
        ToolResultContent::Text { text } => text.clone(),
        ToolResultContent::Json { value } => value.to_string(),
        ToolResultContent::Error { message } => message.clone(),
        ToolResultContent::Image { .. } => String::new(),
    };
    if let Some(code) = exit_code {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[exit code: {code}]"));
    }
    text
}

/// Every image of a tool result as `(mime_type, data)`: an image `content`, then the
/// images that came beside a text one.
pub(crate) fn tool_result_images<'a>(
    content: &'a ToolResultContent,
    images: &'a Option<Vec<Image>>,
) -> Vec<(&'a str, &'a str)> {
    let mut out = Vec::new();
    if let ToolResultContent::Image { data, mime_type } = content {
        out.push((mime_type.as_str(), data.as_str()));
    }
    for i in images.iter().flatten() {
        out.push((i.mime_type.as_str(), i.data.as_str()));
    }
    out
}

/// Whether a tool result must be flagged as an error to the model.
pub(crate) fn tool_result_is_error(content: &ToolResultContent, is_error: Option<bool>) -> bool {
    is_error == Some(true) || matches!(content, ToolResultContent::Error { .. })
}

/// A `data:` URL for an image, as both OpenAI APIs take them.
pub(crate) fn data_url(mime_type: &str, data: &str) -> String {
    format!("data:{mime_type};base64,{data}")
}

/// Arguments as the JSON text OpenAI expects in `arguments`.
pub(crate) fn args_json(args: &serde_json::Map<String, Value>) -> String {
    serde_json::to_string(args).unwrap_or_else(|_| "{}".to_string())
}

/// Runs of consecutive messages with the same role, oldest first: the APIs that need
/// strict alternation get one entry per run.
pub(crate) fn role_runs(messages: &[Arc<Message>]) -> Vec<(Role, Vec<&ContentBlock>)> {
    let mut runs: Vec<(Role, Vec<&ContentBlock>)> = Vec::new();
    for m in messages {
        match runs.last_mut() {
            Some((role, blocks)) if *role == m.role => blocks.extend(m.content.iter()),
            _ => runs.push((m.role, m.content.iter().collect())),
        }
    }
    runs
}

/// Tool result text for APIs without an error flag (both OpenAI APIs): a failure is
/// marked in the text itself so the model cannot mistake it for output.
pub(crate) fn flagged_tool_text(
    content: &ToolResultContent,
    is_error: Option<bool>,
    exit_code: Option<i64>,
) -> String {
    let text = tool_result_text(content, exit_code);
    if tool_result_is_error(content, is_error) {
        format!("Error: {text}")
    } else {
        text
    }
}
