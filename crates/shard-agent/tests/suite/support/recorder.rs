//! The recording provider: serves scripted replies, records every request, and checks
//! each request against the invariants every session must keep:
//!
//! - every tool call has exactly one result, after it, and every result answers a call;
//! - no message appears twice (ids are unique and non-empty);
//! - the system prompt and the tool list are byte-identical to the previous request's,
//!   unless the test announced a [`Break`] that allows a change (a mode switch changes
//!   the system prompt; a registry change changes the tool list);
//! - the previous request's messages are a strict prefix of this one's (so providers'
//!   prompt caches hit), unless a compaction happened in between;
//! - within one Runtime the shared prefix is the same allocations (`Arc::ptr_eq`): a
//!   model call copies pointers, never messages.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::StreamExt;
use serde_json::Value;
use shard_ai::{EventStream, ModelRequest, Provider, ProviderError, StopReason, StreamEvent};
use shard_protocol::types::{ContentBlock, Message, Usage};
use tokio_util::sync::CancellationToken;

/// Something the test did between two requests that allows one invariant to break.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Break {
    /// The mode changed: the system prompt may differ.
    Mode,
    /// Tools were added or removed: the tool list may differ.
    Tools,
    /// The context was compacted: the messages need not extend the previous ones.
    Compaction,
    /// A new Runtime took over the session: same values, new allocations.
    Restart,
}

/// One scripted reply.
#[derive(Clone)]
pub struct Reply {
    events: Vec<StreamEvent>,
    /// Streams `events`, then waits for the call to be cancelled (abort mid-stream).
    hang: bool,
    /// Streams `events`, then fails with this error.
    fail: Option<ProviderError>,
}

impl Reply {
    /// A text answer that ends the turn.
    pub fn text(text: &str) -> Reply {
        Reply {
            events: vec![
                StreamEvent::TextDelta {
                    index: 0,
                    text: text.to_string(),
                },
                usage(),
                StreamEvent::Done {
                    stop_reason: StopReason::EndTurn,
                },
            ],
            hang: false,
            fail: None,
        }
    }

    /// Tool calls `(id, name, args)` in one assistant message.
    pub fn tools(calls: &[(&str, &str, Value)]) -> Reply {
        let mut events = Vec::new();
        for (i, (id, name, args)) in calls.iter().enumerate() {
            events.push(StreamEvent::ToolCallStart {
                index: i as u32,
                id: id.to_string(),
                name: name.to_string(),
            });
            events.push(StreamEvent::ToolCallArgsDelta {
                index: i as u32,
                json: args.to_string(),
            });
        }
        events.push(usage());
        events.push(StreamEvent::Done {
            stop_reason: StopReason::ToolUse,
        });
        Reply {
            events,
            hang: false,
            fail: None,
        }
    }

    /// Starts a text answer and never finishes it: only an abort ends the call.
    pub fn hang(text: &str) -> Reply {
        Reply {
            events: vec![StreamEvent::TextDelta {
                index: 0,
                text: text.to_string(),
            }],
            hang: true,
            fail: None,
        }
    }
}

impl Reply {
    /// This reply, reporting `input` input tokens in its usage.
    pub fn with_input(mut self, input: u64) -> Reply {
        for ev in &mut self.events {
            if let StreamEvent::Usage(u) = ev {
                u.input = input;
            }
        }
        self
    }

    /// A call the provider refuses with an error of `kind`.
    pub fn fail(kind: shard_ai::ErrorKind, message: &str) -> Reply {
        Reply {
            events: Vec::new(),
            hang: false,
            fail: Some(ProviderError::api(kind, Some(400), message)),
        }
    }
}

fn usage() -> StreamEvent {
    StreamEvent::Usage(Usage {
        input: 100,
        output: 10,
        ..Usage::default()
    })
}

#[derive(Default)]
struct State {
    replies: VecDeque<Reply>,
    requests: Vec<ModelRequest>,
    /// Summary requests of compactions, kept apart from the session's chain.
    summaries: Vec<ModelRequest>,
    /// Breaks announced for the next request.
    pending: HashSet<Break>,
    violations: Vec<String>,
}

/// The provider injected into every Runtime of a test. Cheap to share.
#[derive(Default)]
pub struct Recorder {
    state: Mutex<State>,
}

impl Recorder {
    /// A recorder serving `replies` in order.
    pub fn new(replies: Vec<Reply>) -> Arc<Recorder> {
        let r = Recorder::default();
        r.lock().replies = replies.into();
        Arc::new(r)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Allows `b` between the last request and the next one.
    pub fn allow(&self, b: Break) {
        self.lock().pending.insert(b);
    }

    /// Every request so far (summary requests excepted).
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.lock().requests.clone()
    }

    /// Every summary request so far.
    pub fn summaries(&self) -> Vec<ModelRequest> {
        self.lock().summaries.clone()
    }

    /// Panics with every invariant violation seen, if any.
    #[track_caller]
    pub fn assert_clean(&self) {
        if let Some(report) = self.report() {
            panic!("{report}");
        }
    }

    /// Every violation seen so far, as one readable message; `None` when there is none.
    pub fn report(&self) -> Option<String> {
        let s = self.lock();
        if s.violations.is_empty() {
            return None;
        }
        Some(format!(
            "model request invariants violated ({} requests recorded):\n  {}",
            s.requests.len(),
            s.violations.join("\n  ")
        ))
    }

    /// Records the violations of `request` against the previous one.
    fn check(&self, request: &ModelRequest) {
        let mut s = self.lock();
        // A compaction's summary request is a side call, not part of the chain; it
        // announces the compaction (new messages, and `recall` in the tool list).
        if request.system == shard_agent::compactor::SUMMARY_SYSTEM {
            s.summaries.push(request.clone());
            s.pending.insert(Break::Compaction);
            s.pending.insert(Break::Tools);
            return;
        }
        let n = s.requests.len();
        let allowed = std::mem::take(&mut s.pending);
        let mut v = check_alone(request);
        if let Some(prev) = s.requests.last() {
            v.extend(check_pair(prev, request, &allowed));
        }
        s.violations
            .extend(v.into_iter().map(|m| format!("request {n}: {m}")));
        s.requests.push(request.clone());
    }
}

/// Checks a recorder's requests when dropped: every [`super::Agent`] holds one, so each
/// test that drives a Runtime fails on a broken invariant without asking for the check.
/// It stays quiet while the test already panics (one failure, the first, is reported).
pub struct InvariantCheck {
    recorder: Arc<Recorder>,
}

impl InvariantCheck {
    /// A check of `recorder`'s requests.
    pub fn new(recorder: &Arc<Recorder>) -> InvariantCheck {
        InvariantCheck {
            recorder: recorder.clone(),
        }
    }
}

impl Drop for InvariantCheck {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        if let Some(report) = self.recorder.report() {
            panic!("{report}");
        }
    }
}

/// Invariants of one request on its own.
pub fn check_alone(r: &ModelRequest) -> Vec<String> {
    let mut v = Vec::new();
    let mut ids = HashSet::new();
    let mut calls: HashMap<&str, usize> = HashMap::new();
    let mut results: HashMap<&str, usize> = HashMap::new();
    for m in &r.messages {
        if m.id.is_empty() || !ids.insert(m.id.as_str()) {
            v.push(format!("message id {:?} is empty or duplicated", m.id));
        }
        for b in &m.content {
            match b {
                ContentBlock::ToolCall { id, .. } => *calls.entry(id).or_default() += 1,
                ContentBlock::ToolResult { tool_call_id, .. } => {
                    if !calls.contains_key(tool_call_id.as_str()) {
                        v.push(format!(
                            "result for {tool_call_id} before or without its call"
                        ));
                    }
                    *results.entry(tool_call_id).or_default() += 1;
                }
                _ => {}
            }
        }
    }
    for (id, n) in &calls {
        if *n != 1 {
            v.push(format!("tool call {id} appears {n} times"));
        }
        // Every call is answered before the next request (providers refuse otherwise).
        let got = results.get(id).copied().unwrap_or(0);
        if got != 1 {
            v.push(format!("tool call {id} has {got} results"));
        }
    }
    v
}

fn bytes<T: serde::Serialize>(t: &T) -> String {
    serde_json::to_string(t).unwrap_or_default()
}

fn tool_bytes(r: &ModelRequest) -> String {
    r.tools
        .iter()
        .map(|t| format!("{}\n{}\n{}\n", t.name, t.description, t.input_schema))
        .collect()
}

/// Invariants between consecutive requests of one session.
pub fn check_pair(
    prev: &ModelRequest,
    next: &ModelRequest,
    allowed: &HashSet<Break>,
) -> Vec<String> {
    let mut v = Vec::new();
    if prev.system != next.system && !allowed.contains(&Break::Mode) {
        v.push("the system prompt changed".to_string());
    }
    if tool_bytes(prev) != tool_bytes(next) && !allowed.contains(&Break::Tools) {
        v.push("the tool list changed".to_string());
    }
    if allowed.contains(&Break::Compaction) {
        return v;
    }
    let extends = next.messages.len() > prev.messages.len()
        && prev
            .messages
            .iter()
            .zip(&next.messages)
            .all(|(a, b)| bytes::<Message>(a) == bytes::<Message>(b));
    if !extends {
        v.push(format!(
            "the messages ({}) do not strictly extend the previous request's ({})",
            next.messages.len(),
            prev.messages.len()
        ));
    } else if !allowed.contains(&Break::Restart) {
        let copied = prev
            .messages
            .iter()
            .zip(&next.messages)
            .filter(|(a, b)| !Arc::ptr_eq(a, b))
            .count();
        if copied > 0 {
            v.push(format!(
                "{copied} unchanged messages were copied, not shared"
            ));
        }
    }
    v
}

impl Provider for Recorder {
    fn name(&self) -> &str {
        "recording"
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> EventStream {
        self.check(&request);
        let reply = self.lock().replies.pop_front();
        let Some(reply) = reply else {
            self.lock()
                .violations
                .push("a request arrived after the script ended".into());
            return futures::stream::iter(Reply::text("(script ended)").events.into_iter().map(Ok))
                .boxed();
        };
        let head = futures::stream::iter(reply.events.into_iter().map(Ok));
        if let Some(err) = reply.fail {
            return head.chain(futures::stream::iter([Err(err)])).boxed();
        }
        if !reply.hang {
            return head.boxed();
        }
        let tail = futures::stream::once(async move {
            cancel.cancelled().await;
            Err(ProviderError::Cancelled)
        });
        head.chain(tail).boxed()
    }
}

/// A one-line outline of each message of a request, for assertions:
/// `user: hi`, `assistant: hello`, `assistant: call c1 read`, `user: result c1 ok`.
pub fn outline(r: &ModelRequest) -> Vec<String> {
    r.messages
        .iter()
        .map(|m| {
            let role = match m.role {
                shard_protocol::types::Role::User => "user",
                _ => "assistant",
            };
            let parts: Vec<String> = m
                .content
                .iter()
                .map(|b| match b {
                    ContentBlock::Text { text } => text.clone(),
                    ContentBlock::ToolCall { id, name, .. } => format!("call {id} {name}"),
                    ContentBlock::ToolResult {
                        tool_call_id,
                        is_error,
                        ..
                    } => {
                        let how = if *is_error == Some(true) { "err" } else { "ok" };
                        format!("result {tool_call_id} {how}")
                    }
                    ContentBlock::Image { .. } => "[image]".into(),
                    _ => "[other]".into(),
                })
                .collect();
            format!("{role}: {}", parts.join(" | "))
        })
        .collect()
}

/// The text of the tool result for `id` in a request.
pub fn result_text(r: &ModelRequest, id: &str) -> String {
    for m in &r.messages {
        for b in &m.content {
            if let ContentBlock::ToolResult {
                tool_call_id,
                content,
                ..
            } = b
                && tool_call_id == id
            {
                return serde_json::to_string(content).unwrap_or_default();
            }
        }
    }
    String::new()
}
