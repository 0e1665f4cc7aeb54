//! `AgentView`: a sans-IO reducer, events in, one agent's state out.
//!
//! Every client needs the same bookkeeping — which messages are complete, which block is
//! streaming, which tool calls ran with which render, which requests still wait for an
//! answer, what the turn cost — and must get it right across a reconnect, where a `sync`
//! restates part of what was already seen. The view keys everything by id, so a restated
//! message or request is never duplicated, and reports what each event changed as
//! [`Change`]s so a printer can show exactly the new part.

use std::collections::HashMap;

use serde_json::Map;
use shard_protocol::Event;
use shard_protocol::event::{DeltaKind, ErrorEvent, PendingRequest};
use shard_protocol::types::{AgentStatus, ContentBlock, Message, ModelDescriptor, Role, Usage};

mod parts;

pub use parts::{
    Change, Pending, StreamBlock, StreamingMessage, ToolCallView, ToolOutcome, UsageTotals,
};

/// One agent's state, built from its events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentView {
    /// Session, from `sync`.
    pub session_id: Option<String>,
    /// Status.
    pub status: Option<AgentStatus>,
    /// The last status detail (e.g. a retry notice), cleared by the next status.
    pub status_detail: Option<String>,
    /// Active mode.
    pub mode: Option<String>,
    /// Active model, once a `model_changed` or a `usage` told it.
    pub model: Option<ModelDescriptor>,
    /// Active reasoning level.
    pub reasoning_level: Option<String>,
    /// Capabilities from `hello` / `sync` / `model_changed`.
    pub capabilities: Vec<String>,
    /// Complete messages in order (the live window and what followed).
    pub messages: Vec<Message>,
    /// The message being streamed.
    pub streaming: Option<StreamingMessage>,
    /// Tool calls in the order they were first seen.
    pub tool_calls: Vec<ToolCallView>,
    /// Requests waiting for an answer, oldest first.
    pub pending: Vec<Pending>,
    /// The running turn.
    pub turn_id: Option<String>,
    /// Usage of the last finished turn.
    pub last_turn_usage: Option<Usage>,
    /// Usage over every call seen (a `sync` does not restate usage).
    pub usage: UsageTotals,
    /// The last error event.
    pub last_error: Option<ErrorEvent>,
    /// The first message id `messages` holds when older ones exist in the session (from
    /// `sync`, then from each page of `session_op history`); None once the start is here.
    pub truncated_before: Option<String>,
    /// Messages after which an aborted turn stopped: clients say "interrupted" there
    /// (from `sync` and history pages, and live from `turn_end.interrupted`).
    pub interrupted: std::collections::HashSet<String>,
    /// Who answered each permission request of the messages held, by tool call id, as
    /// the session recorded it (from `sync` and history pages): a reloaded conversation
    /// says it where the live one did.
    pub permission_answers: HashMap<String, shard_protocol::PermissionAnswered>,
    /// Requests this view saw resolved live: their note was already said, so the
    /// recorded answer is not said again.
    pub resolved_live: std::collections::HashSet<String>,
    /// Position of each complete message by id: deltas check it per event, so it must
    /// not cost a scan of a long live window.
    index: HashMap<String, usize>,
}

impl AgentView {
    /// An empty view.
    pub fn new() -> Self {
        AgentView::default()
    }

    /// The position in `messages` of the complete message `id`.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// A tool call by id.
    pub fn tool_call(&self, id: &str) -> Option<&ToolCallView> {
        self.tool_calls.iter().find(|t| t.id == id)
    }

    /// A pending request by id.
    pub fn pending_request(&self, request_id: &str) -> Option<&Pending> {
        self.pending.iter().find(|p| p.request_id() == request_id)
    }

    /// Puts a page of older history (`session_op history`, oldest first) before the
    /// messages held, skipping ids already present; returns how many were added. The page
    /// counts only when it was asked `before` the current `truncated_before` (a `sync`
    /// in between makes it stale: then nothing changes).
    pub fn prepend_history(
        &mut self,
        before: &str,
        older: Vec<Message>,
        truncated_before: Option<String>,
    ) -> usize {
        if self.truncated_before.as_deref() != Some(before) {
            return 0;
        }
        let older: Vec<Message> = older
            .into_iter()
            .filter(|m| !self.index.contains_key(&m.id))
            .collect();
        let added = older.len();
        let newer = std::mem::take(&mut self.messages);
        self.index.clear();
        // Through `complete`, so the page's tool calls are known like the window's; the
        // messages already held only move.
        for m in &older {
            self.complete(m);
        }
        let offset = self.messages.len();
        for (i, m) in newer.iter().enumerate() {
            self.index.insert(m.id.clone(), offset + i);
        }
        self.messages.extend(newer);
        self.truncated_before = truncated_before;
        added
    }

    /// Notes messages of a history page an aborted turn stopped after.
    pub fn mark_interrupted(&mut self, ids: Option<&Vec<String>>) {
        self.interrupted.extend(ids.into_iter().flatten().cloned());
    }

    /// Keeps the recorded answers of a `sync` window or a history page.
    pub fn note_answers(&mut self, answers: Option<&Vec<shard_protocol::PermissionAnswered>>) {
        for a in answers.into_iter().flatten() {
            let key = a
                .tool_call_id
                .clone()
                .unwrap_or_else(|| a.request_id.clone());
            self.permission_answers.insert(key, a.clone());
        }
    }

    /// The recorded answer to say after the call `tool_call_id`, unless this view already
    /// said it live.
    pub fn recorded_answer(
        &self,
        tool_call_id: &str,
    ) -> Option<&shard_protocol::PermissionAnswered> {
        self.permission_answers
            .get(tool_call_id)
            .filter(|a| !self.resolved_live.contains(&a.request_id))
    }

    /// Applies one event; returns what it changed.
    pub fn apply(&mut self, ev: &Event) -> Vec<Change> {
        let mut changes = Vec::new();
        match ev {
            Event::Hello(h) => self.capabilities = h.capabilities.clone(),
            Event::Sync(s) => {
                self.session_id = s.session_id.clone().or(self.session_id.take());
                self.status = Some(s.status);
                self.status_detail = None;
                self.mode = Some(s.mode.clone());
                if let Some(c) = &s.capabilities {
                    self.capabilities = c.clone();
                }
                // The live window is authoritative for what is complete; a message that
                // finished while disconnected replaces its streamed form.
                self.messages.clear();
                self.index.clear();
                for m in &s.live_window.messages {
                    self.complete(m);
                }
                self.truncated_before = s.live_window.truncated_before.clone();
                self.permission_answers.clear();
                self.note_answers(s.live_window.permission_answers.as_ref());
                self.interrupted = s
                    .live_window
                    .interrupted_after
                    .iter()
                    .flatten()
                    .cloned()
                    .collect();
                if self
                    .streaming
                    .as_ref()
                    .is_some_and(|st| self.index.contains_key(&st.message_id))
                {
                    self.streaming = None;
                }
                let before: Vec<String> = self
                    .pending
                    .iter()
                    .map(|p| p.request_id().to_string())
                    .collect();
                self.pending = s
                    .pending_requests
                    .iter()
                    .map(|p| match p {
                        PendingRequest::Permission(p) => Pending::Permission(p.clone()),
                        PendingRequest::Ui(u) => Pending::Ui(u.clone()),
                    })
                    .collect();
                changes.push(Change::Synced);
                for p in &self.pending {
                    if !before.iter().any(|b| b == p.request_id()) {
                        changes.push(Change::RequestAdded(p.request_id().to_string()));
                    }
                }
            }
            Event::Status(s) => {
                self.status = Some(s.status);
                self.status_detail = s.detail.clone();
                changes.push(Change::Status);
            }
            Event::TurnStart(t) => {
                self.turn_id = Some(t.turn_id.clone());
                changes.push(Change::TurnStarted(t.turn_id.clone()));
            }
            Event::MessageDelta(d) => self.delta(d, &mut changes),
            Event::MessageComplete(m) => {
                let mut message = m.message.clone();
                if message.id.is_empty() {
                    message.id = m.message_id.clone();
                }
                if self
                    .streaming
                    .as_ref()
                    .is_some_and(|s| s.message_id == message.id)
                {
                    self.streaming = None;
                }
                self.complete(&message);
                changes.push(Change::MessageCompleted(message.id));
            }
            Event::UserMessage(u) => {
                let mut message = u.message.clone();
                if message.id.is_empty() {
                    message.id = u.message_id.clone();
                }
                self.complete(&message);
                changes.push(Change::UserMessage(message.id));
            }
            Event::ToolCall(t) => {
                let call = self.call_entry(&t.tool_call_id, &t.name);
                call.args = t.args.clone();
                call.render = t.render.clone().or(call.render.take());
                call.read_only = t.read_only;
                if !call.started {
                    call.started = true;
                    changes.push(Change::ToolStarted(t.tool_call_id.clone()));
                }
            }
            Event::ToolResult(r) => {
                let call = self.call_entry(&r.tool_call_id, "");
                let new = call.result.is_none();
                call.result = Some(ToolOutcome {
                    content: r.content.clone(),
                    is_error: r.is_error,
                    exit_code: r.exit_code,
                    duration_ms: r.duration_ms,
                    render: r.render.clone(),
                    images: r.images.clone().unwrap_or_default(),
                });
                if new {
                    changes.push(Change::ToolFinished(r.tool_call_id.clone()));
                }
            }
            Event::TurnEnd(t) => {
                if self.turn_id.as_deref() == Some(t.turn_id.as_str()) {
                    self.turn_id = None;
                }
                self.last_turn_usage = t.usage.clone();
                // The Runtime completed the partial answer before ending the turn: the
                // last message is where it stopped.
                if t.interrupted == Some(true)
                    && let Some(last) = self.messages.last()
                {
                    self.interrupted.insert(last.id.clone());
                }
                self.streaming = None;
                changes.push(Change::TurnEnded(t.turn_id.clone()));
            }
            Event::Usage(u) => {
                self.usage.add(&u.usage);
                // The model that answered, until a `model_changed` says more.
                if let Some(id) = &u.usage.model
                    && self.model.as_ref().is_none_or(|m| m.id != *id)
                {
                    let (provider, model) = id.split_once('/').unwrap_or(("", id));
                    self.model = Some(ModelDescriptor {
                        id: id.clone(),
                        provider: provider.to_string(),
                        model: model.to_string(),
                        context_window: None,
                    });
                    changes.push(Change::Settings);
                }
                changes.push(Change::Usage);
            }
            Event::Error(e) => {
                self.last_error = Some(e.clone());
                changes.push(Change::Error(e.clone()));
            }
            // A request already pending (restated) is not added twice.
            Event::PermissionRequest(p) if self.pending_request(&p.request_id).is_none() => {
                self.pending.push(Pending::Permission(p.clone()));
                changes.push(Change::RequestAdded(p.request_id.clone()));
            }
            Event::UiRequest(u) if self.pending_request(&u.request_id).is_none() => {
                self.pending.push(Pending::Ui(u.clone()));
                changes.push(Change::RequestAdded(u.request_id.clone()));
            }
            Event::PermissionResolved(r) => {
                self.resolved_live.insert(r.request_id.clone());
                self.resolve(&r.request_id, r.source.clone(), &mut changes)
            }
            Event::UiResolved(r) => self.resolve(&r.request_id, None, &mut changes),
            Event::ModelChanged(m) => {
                self.model = Some(m.active.clone());
                if let Some(c) = &m.capabilities {
                    self.capabilities = c.clone();
                }
                changes.push(Change::Settings);
            }
            Event::ModeChanged(m) => {
                self.mode = Some(m.mode.clone());
                changes.push(Change::Settings);
            }
            Event::ReasoningLevelChanged(r) => {
                self.reasoning_level = Some(r.active.clone());
                changes.push(Change::Settings);
            }
            _ => {}
        }
        changes
    }

    fn resolve(&mut self, request_id: &str, source: Option<String>, changes: &mut Vec<Change>) {
        let before = self.pending.len();
        self.pending.retain(|p| p.request_id() != request_id);
        if self.pending.len() != before {
            changes.push(Change::RequestResolved {
                request_id: request_id.to_string(),
                source,
            });
        }
    }

    fn call_entry(&mut self, id: &str, name: &str) -> &mut ToolCallView {
        let pos = match self.tool_calls.iter().position(|t| t.id == id) {
            Some(p) => p,
            None => {
                self.tool_calls.push(ToolCallView {
                    id: id.to_string(),
                    name: name.to_string(),
                    args: Map::new(),
                    render: None,
                    read_only: None,
                    started: false,
                    result: None,
                });
                self.tool_calls.len() - 1
            }
        };
        let call = &mut self.tool_calls[pos];
        if call.name.is_empty() {
            call.name = name.to_string();
        }
        call
    }

    /// Records a complete message (replacing one with the same id) and the tool calls
    /// and results it carries.
    fn complete(&mut self, message: &Message) {
        match self.index.get(&message.id) {
            Some(&i) => self.messages[i] = message.clone(),
            None => {
                self.index.insert(message.id.clone(), self.messages.len());
                self.messages.push(message.clone());
            }
        }
        for block in &message.content {
            match block {
                ContentBlock::ToolCall { id, name, args } if message.role == Role::Assistant => {
                    let call = self.call_entry(id, name);
                    if call.args.is_empty() {
                        call.args = args.clone();
                    }
                }
                ContentBlock::ToolResult {
                    tool_call_id,
                    content,
                    is_error,
                    exit_code,
                    duration_ms,
                    render,
                    images,
                    ..
                } => {
                    let call = self.call_entry(tool_call_id, "");
                    if call.result.is_none() {
                        call.result = Some(ToolOutcome {
                            content: content.clone(),
                            is_error: is_error.unwrap_or(false),
                            exit_code: *exit_code,
                            duration_ms: *duration_ms,
                            render: render.clone(),
                            images: images.clone().unwrap_or_default(),
                        });
                    }
                }
                _ => {}
            }
        }
    }

    fn delta(&mut self, d: &shard_protocol::event::MessageDelta, changes: &mut Vec<Change>) {
        // Deltas of a message already complete (restated after a sync) change nothing.
        if self.index.contains_key(&d.message_id) {
            return;
        }
        let st = match &mut self.streaming {
            Some(s) if s.message_id == d.message_id => s,
            slot => slot.insert(StreamingMessage {
                message_id: d.message_id.clone(),
                blocks: Vec::new(),
            }),
        };
        let idx = d.block_index as usize;
        let fresh = |kind: DeltaKind| match kind {
            DeltaKind::Text => StreamBlock::Text(String::new()),
            DeltaKind::Thinking => StreamBlock::Thinking(String::new()),
            DeltaKind::ToolCall => StreamBlock::ToolCall {
                id: String::new(),
                name: String::new(),
                args_json: String::new(),
            },
        };
        while st.blocks.len() <= idx {
            st.blocks.push(StreamBlock::Text(String::new()));
        }
        let started = match (&st.blocks[idx], d.kind) {
            (StreamBlock::Text(t), DeltaKind::Text) => t.is_empty(),
            (StreamBlock::Thinking(t), DeltaKind::Thinking) => t.is_empty(),
            (StreamBlock::ToolCall { id, name, .. }, DeltaKind::ToolCall) => {
                id.is_empty() && name.is_empty()
            }
            _ => {
                st.blocks[idx] = fresh(d.kind);
                true
            }
        };
        if started {
            changes.push(Change::BlockStarted {
                message_id: d.message_id.clone(),
                block_index: d.block_index,
                kind: d.kind,
            });
        }
        match &mut st.blocks[idx] {
            StreamBlock::Text(t) | StreamBlock::Thinking(t) => {
                if let Some(text) = &d.text_delta {
                    t.push_str(text);
                    changes.push(Change::Delta {
                        message_id: d.message_id.clone(),
                        block_index: d.block_index,
                        kind: d.kind,
                        text: text.clone(),
                    });
                }
            }
            StreamBlock::ToolCall {
                id,
                name,
                args_json,
            } => {
                if let Some(i) = &d.tool_call_id {
                    *id = i.clone();
                }
                if let Some(n) = &d.name {
                    *name = n.clone();
                }
                if let Some(a) = &d.args_delta {
                    args_json.push_str(a);
                }
            }
        }
    }
}

pub use crate::lines::LineDecoder;
