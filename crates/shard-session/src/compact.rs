//! The deterministic compaction cut (docs/sessions.md#compaction-recall-and-forks) as pure functions of the context:
//! where the summarized part ends, how many tokens each side holds, and the bookkeeping a
//! Runtime needs around the model call that writes the summary. Same messages and
//! settings give the same cut; the cut never separates a tool call from its result, nor a
//! steer from the turn it joined.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::ops::Range;

use shard_protocol::types::{ContentBlock, Message, Role, ToolResultContent};

/// Tokens counted for one image: providers bill an image by its pixels, not its base64
/// bytes, and ~1,600 tokens is the typical cost of a full-size one.
pub const IMAGE_TOKENS: u64 = 1_600;

/// Fixed per-message overhead (role markers, block framing).
const MESSAGE_OVERHEAD: u64 = 4;

/// An estimate of the tokens `message` costs in a request: about four bytes of text per
/// token, a fixed cost per image. Used until a provider reports real usage; it reads only
/// lengths, so estimating a 200 MB context costs no serialization.
pub fn estimate_tokens(message: &Message) -> u64 {
    let mut bytes: u64 = 0;
    let mut images: u64 = 0;
    for block in &message.content {
        match block {
            ContentBlock::Text { text } => bytes += text.len() as u64,
            ContentBlock::Thinking { text, signature } => {
                bytes += text.len() as u64 + signature.as_ref().map_or(0, |s| s.len() as u64);
            }
            ContentBlock::ToolCall { id, name, args } => {
                bytes += (id.len() + name.len()) as u64;
                for (k, v) in args {
                    bytes += k.len() as u64 + value_len(v);
                }
            }
            ContentBlock::ToolResult {
                tool_call_id,
                content,
                ..
            } => {
                bytes += tool_call_id.len() as u64 + 16;
                match content {
                    ToolResultContent::Text { text } => bytes += text.len() as u64,
                    ToolResultContent::Error { message } => bytes += message.len() as u64,
                    ToolResultContent::Json { value } => bytes += value_len(value),
                    ToolResultContent::Image { .. } => images += 1,
                }
            }
            ContentBlock::Image { .. } => images += 1,
        }
    }
    MESSAGE_OVERHEAD + bytes.div_ceil(4) + images * IMAGE_TOKENS
}

/// Bytes of a JSON value's text, approximated without serializing it.
fn value_len(v: &serde_json::Value) -> u64 {
    use serde_json::Value;
    match v {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 8,
        Value::String(s) => s.len() as u64 + 2,
        Value::Array(a) => 2 + a.iter().map(|x| value_len(x) + 1).sum::<u64>(),
        Value::Object(o) => {
            2 + o
                .iter()
                .map(|(k, x)| k.len() as u64 + 4 + value_len(x))
                .sum::<u64>()
        }
    }
}

/// The shape of a message as far as the cut cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A user message with text (a prompt or a steer).
    UserText,
    /// A user message carrying tool results.
    ToolResults,
    /// A model message.
    Assistant,
}

fn shape(m: &Message) -> Shape {
    match m.role {
        Role::Assistant => Shape::Assistant,
        _ if m
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolResult { .. })) =>
        {
            Shape::ToolResults
        }
        _ => Shape::UserText,
    }
}

/// A chosen cut: `messages[summarized]` go into the summary, `messages[first_kept..]`
/// stay verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// The messages to summarize (never includes an earlier summary message).
    pub summarized: Range<usize>,
    /// Index of the first message kept.
    pub first_kept: usize,
    /// Estimated tokens of the whole context.
    pub tokens_before: u64,
    /// Estimated tokens of the kept messages.
    pub tokens_kept: u64,
}

/// Indices `i` in `start+1..len` where the context may be cut (message `i` is the first
/// kept). A boundary is safe when every tool call before it has its result before it and
/// no steer sits on it: the kept part starts at a prompt that follows no tool result (a
/// new turn), or at a model message that directly follows tool results (an iteration
/// boundary with no steer in between).
pub fn safe_boundaries<M: Borrow<Message>>(messages: &[M], start: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut open: HashSet<&str> = HashSet::new();
    for i in start..messages.len() {
        let m = messages[i].borrow();
        if i > start && open.is_empty() {
            let prev = shape(messages[i - 1].borrow());
            let ok = match shape(m) {
                Shape::UserText => prev != Shape::ToolResults,
                Shape::Assistant => prev == Shape::ToolResults,
                Shape::ToolResults => false,
            };
            if ok {
                out.push(i);
            }
        }
        for block in &m.content {
            match block {
                ContentBlock::ToolCall { id, .. } => {
                    open.insert(id.as_str());
                }
                ContentBlock::ToolResult { tool_call_id, .. } => {
                    open.remove(tool_call_id.as_str());
                }
                _ => {}
            }
        }
    }
    out
}

/// The cut for `messages` (the context, oldest first; `start` leading messages — an
/// earlier summary — are never summarized again as messages, the caller folds their text
/// into the new summary): the safe boundary that summarizes the most while keeping at
/// least `keep_recent_tokens` of the newest messages. `None` when there is no such
/// boundary (`no_safe_cut`).
pub fn plan_cut<M: Borrow<Message>>(
    messages: &[M],
    start: usize,
    keep_recent_tokens: u64,
) -> Option<Cut> {
    let start = start.min(messages.len());
    let tokens: Vec<u64> = messages
        .iter()
        .map(|m| estimate_tokens(m.borrow()))
        .collect();
    let tokens_before: u64 = tokens.iter().sum();
    // suffix[i] = tokens of messages[i..]
    let mut suffix = vec![0u64; tokens.len() + 1];
    for i in (0..tokens.len()).rev() {
        suffix[i] = suffix[i + 1] + tokens[i];
    }
    let first_kept = safe_boundaries(messages, start)
        .into_iter()
        .rev()
        .find(|&i| suffix[i] >= keep_recent_tokens)?;
    Some(Cut {
        summarized: start..first_kept,
        first_kept,
        tokens_before,
        tokens_kept: suffix[first_kept],
    })
}

/// Splits `messages` into consecutive chunks of at most `budget_tokens` each (a single
/// larger message is a chunk alone), oldest first: the passes of a bounded summary
/// request.
pub fn summary_passes<M: Borrow<Message>>(messages: &[M], budget_tokens: u64) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut begin = 0;
    let mut used = 0u64;
    for (i, m) in messages.iter().enumerate() {
        let t = estimate_tokens(m.borrow());
        if i > begin && used + t > budget_tokens {
            out.push(begin..i);
            begin = i;
            used = 0;
        }
        used += t;
    }
    if begin < messages.len() {
        out.push(begin..messages.len());
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use proptest::prelude::*;

    fn user(i: usize, len: usize) -> Message {
        Message {
            id: format!("ent-u{i}"),
            role: Role::User,
            content: vec![ContentBlock::Text {
                text: "u".repeat(len),
            }],
        }
    }

    fn assistant(i: usize, len: usize, calls: &[String]) -> Message {
        let mut content = vec![ContentBlock::Text {
            text: "a".repeat(len),
        }];
        for c in calls {
            content.push(ContentBlock::ToolCall {
                id: c.clone(),
                name: "read".into(),
                args: serde_json::Map::new(),
            });
        }
        Message {
            id: format!("ent-a{i}"),
            role: Role::Assistant,
            content,
        }
    }

    fn result(i: usize, call: &str, len: usize) -> Message {
        Message {
            id: format!("ent-r{i}"),
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_call_id: call.to_owned(),
                content: ToolResultContent::Text {
                    text: "r".repeat(len),
                },
                is_error: None,
                exit_code: None,
                duration_ms: None,
                render: None,
                images: None,
            }],
        }
    }

    /// What a scripted turn looks like: a prompt, iterations of calls and results with
    /// optional steers after the results, then a final answer.
    #[derive(Debug, Clone)]
    struct TurnSpec {
        prompt: usize,
        iterations: Vec<(usize, usize, usize, bool)>,
        answer: usize,
    }

    fn turn_spec() -> impl Strategy<Value = TurnSpec> {
        (
            1usize..400,
            prop::collection::vec((0usize..200, 1usize..4, 1usize..2000, any::<bool>()), 0..4),
            1usize..400,
        )
            .prop_map(|(prompt, iterations, answer)| TurnSpec {
                prompt,
                iterations,
                answer,
            })
    }

    /// Builds the transcript; also returns which message indices are steers.
    fn build(turns: &[TurnSpec]) -> (Vec<Message>, HashSet<usize>) {
        let mut out = Vec::new();
        let mut steers = HashSet::new();
        let mut n = 0;
        for t in turns {
            out.push(user(n, t.prompt));
            n += 1;
            for &(text, calls, size, steer) in &t.iterations {
                let ids: Vec<String> = (0..calls).map(|c| format!("call-{n}-{c}")).collect();
                out.push(assistant(n, text, &ids));
                n += 1;
                for id in &ids {
                    out.push(result(n, id, size));
                    n += 1;
                }
                if steer {
                    steers.insert(out.len());
                    out.push(user(n, 10));
                    n += 1;
                }
            }
            out.push(assistant(n, t.answer, &[]));
            n += 1;
        }
        (out, steers)
    }

    proptest! {
        #[test]
        fn cut_is_deterministic_and_safe(
            turns in prop::collection::vec(turn_spec(), 1..12),
            keep in 0u64..4000,
        ) {
            let (messages, steers) = build(&turns);
            let a = plan_cut(&messages, 0, keep);
            let b = plan_cut(&messages.clone(), 0, keep);
            prop_assert_eq!(&a, &b);
            let Some(cut) = a else { return Ok(()) };
            prop_assert!(cut.first_kept > 0 && cut.first_kept < messages.len());
            prop_assert!(cut.tokens_kept >= keep);
            // No call in the summarized part is answered in the kept part, and the reverse.
            let mut calls = HashSet::new();
            for m in &messages[..cut.first_kept] {
                for b in &m.content {
                    if let ContentBlock::ToolCall { id, .. } = b { calls.insert(id.clone()); }
                }
            }
            for m in &messages[cut.first_kept..] {
                for b in &m.content {
                    if let ContentBlock::ToolResult { tool_call_id, .. } = b {
                        prop_assert!(!calls.contains(tool_call_id));
                    }
                }
            }
            // A steer is neither the first kept message nor the last summarized one.
            prop_assert!(!steers.contains(&cut.first_kept));
            prop_assert!(!steers.contains(&(cut.first_kept - 1)));
            // Maximal: no later safe boundary also keeps enough.
            let tokens: Vec<u64> = messages.iter().map(estimate_tokens).collect();
            for b in safe_boundaries(&messages, 0) {
                if b > cut.first_kept {
                    prop_assert!(tokens[b..].iter().sum::<u64>() < keep);
                }
            }
        }

        #[test]
        fn passes_cover_everything_in_order(
            sizes in prop::collection::vec(1usize..5000, 0..40),
            budget in 1u64..3000,
        ) {
            let messages: Vec<Message> = sizes.iter().enumerate().map(|(i, s)| user(i, *s)).collect();
            let passes = summary_passes(&messages, budget);
            let mut next = 0;
            for p in &passes {
                prop_assert_eq!(p.start, next);
                prop_assert!(p.end > p.start);
                let t: u64 = messages[p.clone()].iter().map(estimate_tokens).sum();
                prop_assert!(t <= budget || p.len() == 1);
                next = p.end;
            }
            prop_assert_eq!(next, messages.len());
        }
    }

    #[test]
    fn nothing_to_cut_in_one_small_turn() {
        let (messages, _) = build(&[TurnSpec {
            prompt: 10,
            iterations: vec![],
            answer: 10,
        }]);
        assert_eq!(plan_cut(&messages, 0, 1), None);
    }

    #[test]
    fn an_earlier_summary_is_never_cut_again() {
        let mut messages = vec![user(99, 5000)];
        let (rest, _) = build(&[
            TurnSpec {
                prompt: 100,
                iterations: vec![],
                answer: 100,
            },
            TurnSpec {
                prompt: 100,
                iterations: vec![],
                answer: 100,
            },
        ]);
        messages.extend(rest);
        let cut = plan_cut(&messages, 1, 10).unwrap();
        assert_eq!(cut.summarized, 1..3);
        assert_eq!(cut.first_kept, 3);
    }

    #[test]
    fn images_cost_a_fixed_amount() {
        let m = Message {
            id: "ent-1".into(),
            role: Role::User,
            content: vec![ContentBlock::Image {
                data: "x".repeat(1_000_000),
                mime_type: "image/png".into(),
            }],
        };
        assert_eq!(estimate_tokens(&m), MESSAGE_OVERHEAD + IMAGE_TOKENS);
    }
}
