//! The summary request of a compaction (docs/sessions.md#compaction-recall-and-forks): the messages to fold away are
//! rendered as plain text (so no tool call can be left unanswered in the request) and
//! sent to the active model with a structured prompt, oldest first, in as many passes as
//! the model's window needs; each pass updates the summary of the passes before it, and
//! an earlier compaction's summary is the starting point.

use std::sync::Arc;

use futures::StreamExt;
use shard_ai::{ModelInfo, ModelRequest, Provider, ProviderError, StreamEvent};
use shard_protocol::types::{ContentBlock, Message, Role, ToolResultContent};
use tokio_util::sync::CancellationToken;

/// System prompt of a summary request.
pub const SUMMARY_SYSTEM: &str = "You maintain the working summary of a long coding-agent \
session. The summary replaces the conversation it covers, so it must hold everything the \
agent needs to continue: be specific (paths, names, commands, numbers), drop chatter.";

/// The last lines of every summary request: they say that this is a request for a
/// summary, and its structure.
pub const SUMMARY_INSTRUCTIONS: &str = "This is a request for a summary, not a task: do not \
continue the conversation. Write the updated summary now, in Markdown, with exactly these \
sections: ## Goal, ## Constraints, ## Progress, ## Decisions, ## Files read and changed, \
## Open questions, ## Next steps. Keep what the earlier summary says unless the \
conversation supersedes it.";

/// Longest text kept of one tool result or tool call in a summary request: outputs are
/// mostly re-readable, and `recall` gives the originals back.
const BLOCK_CHARS: usize = 4_000;

/// Tokens a summary may take.
const SUMMARY_TOKENS: u64 = 4_096;

/// One message as the summarizer reads it.
pub fn render(message: &Message) -> String {
    let mut out = String::new();
    let who = match message.role {
        Role::Assistant => "assistant",
        _ => "user",
    };
    for block in &message.content {
        match block {
            ContentBlock::Text { text } => {
                out.push_str(&format!("[{who}] {text}\n"));
            }
            ContentBlock::Thinking { .. } => {}
            ContentBlock::ToolCall { name, args, .. } => {
                let args = serde_json::Value::Object(args.clone()).to_string();
                out.push_str(&format!("[tool call {name}] {}\n", clip(&args)));
            }
            ContentBlock::ToolResult {
                content, is_error, ..
            } => {
                let text = match content {
                    ToolResultContent::Text { text } => clip(text),
                    ToolResultContent::Error { message } => clip(message),
                    ToolResultContent::Json { value } => clip(&value.to_string()),
                    ToolResultContent::Image { mime_type, .. } => format!("[{mime_type} image]"),
                };
                let tag = if is_error.unwrap_or(false) {
                    "tool error"
                } else {
                    "tool result"
                };
                out.push_str(&format!("[{tag}] {text}\n"));
            }
            ContentBlock::Image { mime_type, .. } => {
                out.push_str(&format!("[{who} attached a {mime_type} image]\n"));
            }
        }
    }
    out
}

fn clip(text: &str) -> String {
    if text.len() <= BLOCK_CHARS {
        return text.to_string();
    }
    let mut end = BLOCK_CHARS;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes omitted]", &text[..end], text.len() - end)
}

/// Groups rendered messages into passes of at most `budget_chars` each, oldest first (a
/// single longer message is cut to the budget, never dropped).
pub fn passes(rendered: Vec<String>, budget_chars: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for mut text in rendered {
        if text.len() > budget_chars {
            text = clip_to(&text, budget_chars);
        }
        if !current.is_empty() && current.len() + text.len() > budget_chars {
            out.push(std::mem::take(&mut current));
        }
        current.push_str(&text);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn clip_to(text: &str, max: usize) -> String {
    let mut end = max.saturating_sub(64).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes omitted]\n", &text[..end], text.len() - end)
}

/// The user message of one pass.
pub fn pass_prompt(
    previous: Option<&str>,
    part: usize,
    parts: usize,
    conversation: &str,
) -> String {
    let earlier = match previous {
        Some(s) => format!("The summary so far:\n<summary>\n{s}\n</summary>\n\n"),
        None => "There is no summary yet.\n\n".to_string(),
    };
    format!(
        "{earlier}The next part of the conversation (part {part} of {parts}):\n\
         <conversation>\n{conversation}</conversation>\n\n{SUMMARY_INSTRUCTIONS}"
    )
}

/// Why a summary could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// The provider failed.
    #[error("the summary request failed: {0}")]
    Provider(String),
    /// The model answered with no text.
    #[error("the model returned an empty summary")]
    Empty,
    /// Cancelled.
    #[error("the summary request was cancelled")]
    Cancelled,
}

/// Writes the summary of `messages`, starting from `previous`, with the active model.
pub async fn summarize(
    provider: Arc<dyn Provider>,
    model: ModelInfo,
    previous: Option<String>,
    messages: Vec<Arc<Message>>,
    cancel: CancellationToken,
) -> Result<String, SummaryError> {
    // Half the window for the conversation, a quarter for the summary and the prompt.
    let budget_tokens = (model.context_window / 2).max(2_000);
    let budget_chars = usize::try_from(budget_tokens * 4).unwrap_or(usize::MAX);
    let rendered: Vec<String> = messages.iter().map(|m| render(m)).collect();
    let parts = passes(rendered, budget_chars);
    let mut summary = previous;
    let count = parts.len();
    for (i, part) in parts.into_iter().enumerate() {
        let prompt = pass_prompt(summary.as_deref(), i + 1, count, &part);
        let text = one_pass(&provider, &model, prompt, cancel.clone()).await?;
        summary = Some(text);
    }
    summary.ok_or(SummaryError::Empty)
}

async fn one_pass(
    provider: &Arc<dyn Provider>,
    model: &ModelInfo,
    prompt: String,
    cancel: CancellationToken,
) -> Result<String, SummaryError> {
    let request = ModelRequest {
        model: model.model.clone(),
        system: SUMMARY_SYSTEM.to_string(),
        messages: vec![Arc::new(Message {
            id: "summary-request".to_string(),
            role: Role::User,
            content: vec![ContentBlock::Text { text: prompt }],
        })],
        tools: Arc::from(Vec::new()),
        max_output_tokens: Some(
            model
                .max_output
                .filter(|m| *m > 0)
                .map_or(SUMMARY_TOKENS, |m| m.min(SUMMARY_TOKENS)),
        ),
        reasoning_effort: None,
    };
    let mut stream = provider.stream(request, cancel);
    let mut text = String::new();
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(StreamEvent::TextDelta { text: t, .. }) => text.push_str(&t),
            Ok(StreamEvent::Done { .. }) => break,
            Ok(_) => {}
            Err(ProviderError::Cancelled) => return Err(SummaryError::Cancelled),
            Err(e) => return Err(SummaryError::Provider(e.to_string())),
        }
    }
    let text = text.trim().to_string();
    if text.is_empty() {
        return Err(SummaryError::Empty);
    }
    Ok(text)
}

/// The summary text inside a summary message (`shard_session::summary_message`).
pub fn summary_text(message: &Message) -> Option<String> {
    let ContentBlock::Text { text } = message.content.first()? else {
        return None;
    };
    let rest = text.strip_prefix(shard_session::SUMMARY_PREAMBLE)?;
    let rest = rest.strip_prefix("\n<summary>\n")?;
    let rest = rest.strip_suffix("\n</summary>")?;
    Some(rest.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn passes_are_bounded_and_keep_order() {
        let rendered: Vec<String> = (0..10)
            .map(|i| format!("{i}{}\n", "x".repeat(99)))
            .collect();
        let p = passes(rendered, 350);
        assert_eq!(p.len(), 4);
        assert!(p.iter().all(|s| s.len() <= 350));
        assert!(p[0].starts_with('0') && p[3].starts_with('9'));
        let p = passes(vec!["y".repeat(10_000)], 1_000);
        assert_eq!(p.len(), 1);
        assert!(p[0].len() <= 1_000);
    }

    #[test]
    fn the_request_says_it_asks_for_a_summary_and_carries_the_earlier_one() {
        let p = pass_prompt(Some("## Goal\nship"), 2, 3, "[user] hi\n");
        assert!(p.contains("## Goal\nship"));
        assert!(p.contains("part 2 of 3"));
        assert!(p.ends_with(SUMMARY_INSTRUCTIONS));
        assert!(SUMMARY_INSTRUCTIONS.contains("request for a summary"));
    }

    #[test]
    fn summary_text_round_trips() {
        let c = shard_session::CompactionEntry {
            index: 0,
            summary: "## Goal\nx".into(),
            tokens_before: 1,
            tokens_after: 1,
            first_kept_entry_id: "ent-a".into(),
            message_range: ["ent-b".into(), "ent-c".into()],
        };
        let m = shard_session::summary_message("ent-d", &c);
        assert_eq!(summary_text(&m).as_deref(), Some("## Goal\nx"));
    }
}
