//! Tool-call pairing for the model's context. Every provider API requires each tool call
//! of an assistant message to be answered by exactly one tool result, right after that
//! message and before any other user content. A Runtime that was aborted, killed with
//! `kill -9` or stopped mid-call can leave a call unanswered; [`unanswered_calls`] finds
//! those (the Runtime persists an "interrupted" result for each) and
//! [`pair_tool_results`] puts a context into the order the APIs accept, so every request
//! a session can produce is valid for Anthropic, OpenAI Chat and OpenAI Responses.

use std::collections::{HashMap, HashSet};

use shard_protocol::types::{ContentBlock, Message, Role, ToolResultContent};

/// The text of the result that stands for a call that never finished.
pub const INTERRUPTED: &str = "interrupted: this tool call did not finish (the turn was aborted or the agent stopped); \
     its effects, if any, are unknown";

/// Prefix of the id of a result [`pair_tool_results`] made up (not read from the
/// transcript); the Runtime persists those and gives them their entry id.
pub const SYNTHESIZED_ID_PREFIX: &str = "interrupted-";

/// Whether `message` is a result [`pair_tool_results`] made up for an unanswered call.
pub fn is_synthesized(message: &Message) -> bool {
    message.id.starts_with(SYNTHESIZED_ID_PREFIX)
}

/// The tool result block recorded for an unanswered call.
pub fn interrupted_result(tool_call_id: &str) -> ContentBlock {
    ContentBlock::ToolResult {
        tool_call_id: tool_call_id.to_string(),
        content: ToolResultContent::Error {
            message: INTERRUPTED.to_string(),
        },
        is_error: Some(true),
        exit_code: None,
        duration_ms: None,
        render: None,
        images: None,
    }
}

/// Ids of tool calls (oldest first) that no later message answers.
pub fn unanswered_calls(messages: &[Message]) -> Vec<String> {
    let answered: HashSet<&str> = messages
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolResult { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    calls_of(messages)
        .filter(|id| !answered.contains(id.as_str()))
        .collect()
}

fn calls_of(messages: &[Message]) -> impl Iterator<Item = String> + '_ {
    messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolCall { id, .. } => Some(id.clone()),
            _ => None,
        })
}

/// Reorders `messages` so each assistant message's tool calls are answered right after it,
/// in call order, one result each (the first one recorded; a missing one becomes an
/// "interrupted" error), followed by the other user content that came before the next
/// assistant message. Results that answer no call of their assistant message are dropped.
/// A context that is already well formed comes back unchanged.
pub fn pair_tool_results(messages: Vec<Message>) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    let mut iter = messages.into_iter().peekable();
    // Leading user messages (a context that starts after a compaction summary, say).
    while let Some(m) = iter.next_if(|m| m.role != Role::Assistant) {
        push_without_results(&mut out, m);
    }
    while let Some(assistant) = iter.next() {
        let calls: Vec<String> = assistant
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolCall { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect();
        let mut followers = Vec::new();
        while let Some(m) = iter.next_if(|m| m.role != Role::Assistant) {
            followers.push(m);
        }
        out.push(assistant);
        let mut results: HashMap<String, (String, ContentBlock)> = HashMap::new();
        let mut rest = Vec::new();
        for m in followers {
            let mut others = Vec::new();
            for b in m.content {
                match b {
                    ContentBlock::ToolResult {
                        ref tool_call_id, ..
                    } => {
                        if calls.contains(tool_call_id) && !results.contains_key(tool_call_id) {
                            results.insert(tool_call_id.clone(), (m.id.clone(), b));
                        }
                    }
                    other => others.push(other),
                }
            }
            if !others.is_empty() {
                rest.push(Message {
                    id: m.id,
                    role: m.role,
                    content: others,
                });
            }
        }
        for id in &calls {
            let (message_id, block) = results.remove(id).unwrap_or_else(|| {
                (
                    format!("{SYNTHESIZED_ID_PREFIX}{id}"),
                    interrupted_result(id),
                )
            });
            out.push(Message {
                id: message_id,
                role: Role::User,
                content: vec![block],
            });
        }
        out.extend(rest);
    }
    out
}

fn push_without_results(out: &mut Vec<Message>, mut m: Message) {
    m.content
        .retain(|b| !matches!(b, ContentBlock::ToolResult { .. }));
    if !m.content.is_empty() {
        out.push(m);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::Map;

    fn user(id: &str, text: &str) -> Message {
        Message {
            id: id.into(),
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }
    fn calls(id: &str, ids: &[&str]) -> Message {
        let mut content = vec![ContentBlock::Text {
            text: "working".into(),
        }];
        for c in ids {
            content.push(ContentBlock::ToolCall {
                id: (*c).into(),
                name: "bash".into(),
                args: Map::new(),
            });
        }
        Message {
            id: id.into(),
            role: Role::Assistant,
            content,
        }
    }
    fn result(id: &str, call: &str) -> Message {
        Message {
            id: id.into(),
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_call_id: call.into(),
                content: ToolResultContent::Text { text: "ok".into() },
                is_error: Some(false),
                exit_code: None,
                duration_ms: None,
                render: None,
                images: None,
            }],
        }
    }
    fn result_ids(m: &Message) -> Vec<String> {
        m.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult { tool_call_id, .. } => Some(tool_call_id.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn well_formed_context_is_unchanged() {
        let ctx = vec![
            user("u1", "hi"),
            calls("a1", &["c1", "c2"]),
            result("r1", "c1"),
            result("r2", "c2"),
            user("u2", "more"),
        ];
        assert_eq!(pair_tool_results(ctx.clone()), ctx);
        assert!(unanswered_calls(&ctx).is_empty());
    }

    #[test]
    fn a_killed_call_gets_an_interrupted_result_before_the_next_prompt() {
        // kill -9 during c2: c1 answered, c2 never; then the user prompted again.
        let ctx = vec![
            user("u1", "hi"),
            calls("a1", &["c1", "c2"]),
            result("r1", "c1"),
            user("u2", "what happened?"),
        ];
        assert_eq!(unanswered_calls(&ctx), vec!["c2".to_string()]);
        let fixed = pair_tool_results(ctx);
        assert_eq!(fixed.len(), 5);
        assert_eq!(result_ids(&fixed[2]), vec!["c1"]);
        assert_eq!(result_ids(&fixed[3]), vec!["c2"]);
        assert!(matches!(
            &fixed[3].content[0],
            ContentBlock::ToolResult { content: ToolResultContent::Error { message }, is_error: Some(true), .. }
                if message.starts_with("interrupted")
        ));
        assert_eq!(fixed[4].id, "u2");
    }

    #[test]
    fn results_persisted_after_a_prompt_move_before_it_and_strays_drop() {
        let ctx = vec![
            calls("a1", &["c1"]),
            user("u2", "next"),
            result("r1", "c1"),
            result("rx", "c-stray"),
            result("r1b", "c1"),
        ];
        let fixed = pair_tool_results(ctx);
        let ids: Vec<&str> = fixed.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, vec!["a1", "r1", "u2"]);
    }
}
