//! The agent's events as `session/update` notifications: text and thoughts, tool calls
//! announced when the model starts them and updated as they run, mode changes, messages of
//! other clients, and the `sync` of each Runtime generation.

use agent_client_protocol_schema::v1 as acp;
use serde_json::{Map, Value};
use shard_protocol::Event;
use shard_protocol::command::{Command, UiResponse};
use shard_protocol::event::{DeltaKind, PendingRequest};
use shard_protocol::types::ContentBlock;

use super::{Session, text_chunk};
use crate::rpc::RpcError;
use crate::translate;

impl Session {
    pub(super) async fn on_event(&mut self, ev: Event) {
        match ev {
            Event::MessageDelta(d) => match d.kind {
                DeltaKind::Text => {
                    if let Some(t) = d.text_delta.filter(|t| !t.is_empty()) {
                        self.update(acp::SessionUpdate::AgentMessageChunk(text_chunk(&t)));
                    }
                }
                DeltaKind::Thinking => {
                    if let Some(t) = d.text_delta.filter(|t| !t.is_empty()) {
                        self.update(acp::SessionUpdate::AgentThoughtChunk(text_chunk(&t)));
                    }
                }
                DeltaKind::ToolCall => {
                    if let (Some(id), Some(name)) = (d.tool_call_id, d.name) {
                        self.blocks
                            .insert((d.message_id, d.block_index), id.clone());
                        self.announce(&id, &name, None);
                    }
                }
            },
            Event::MessageComplete(m) => {
                for b in &m.message.content {
                    if let ContentBlock::ToolCall { id, name, args } = b {
                        self.announce(id, name, Some(args));
                    }
                }
                self.blocks.retain(|(mid, _), _| mid != &m.message_id);
            }
            Event::PermissionRequest(r) => self.ask_permission(*r),
            Event::PermissionResolved(r) => {
                self.asked.remove(&r.request_id);
            }
            Event::ToolCall(c) => {
                if !self.calls.contains_key(&c.tool_call_id) {
                    self.announce(&c.tool_call_id, &c.name, Some(&c.args));
                }
                self.update(acp::SessionUpdate::ToolCallUpdate(
                    acp::ToolCallUpdate::new(
                        c.tool_call_id,
                        acp::ToolCallUpdateFields::new().status(acp::ToolCallStatus::InProgress),
                    ),
                ));
            }
            Event::ToolResult(r) => {
                let id = r.tool_call_id.clone();
                if !self.calls.contains_key(&id) {
                    self.announce(&id, "tool", None);
                }
                let Some(call) = self.calls.get_mut(&id) else {
                    return;
                };
                call.finished = true;
                let status = if r.is_error {
                    acp::ToolCallStatus::Failed
                } else {
                    acp::ToolCallStatus::Completed
                };
                let content = translate::tool_result_content(
                    &self.cwd, &call.name, &call.args, &r.content, r.is_error,
                );
                self.update(acp::SessionUpdate::ToolCallUpdate(
                    acp::ToolCallUpdate::new(
                        id,
                        acp::ToolCallUpdateFields::new()
                            .status(status)
                            .content(content)
                            .raw_output(translate::raw_output(&r.content)),
                    ),
                ));
            }
            Event::ModeChanged(m) => {
                self.mode = m.mode.clone();
                self.update(acp::SessionUpdate::CurrentModeUpdate(
                    acp::CurrentModeUpdate::new(m.mode),
                ));
            }
            Event::UserMessage(u) => {
                if let Some(t) = &mut self.turn
                    && !t.own_message_seen
                {
                    // The editor already shows its own prompt.
                    t.own_message_seen = true;
                    return;
                }
                for b in &u.message.content {
                    if let ContentBlock::Text { text } = b {
                        self.update(acp::SessionUpdate::UserMessageChunk(text_chunk(text)));
                    }
                }
            }
            Event::TurnStart(s) => {
                if let Some(t) = &mut self.turn
                    && t.turn_id.is_none()
                {
                    t.turn_id = Some(s.turn_id);
                }
            }
            Event::TurnEnd(e) => {
                let ours = self
                    .turn
                    .as_ref()
                    .is_some_and(|t| t.turn_id.as_deref() == Some(e.turn_id.as_str()));
                if !ours {
                    return;
                }
                let Some(t) = &self.turn else { return };
                let result = if t.cancel_at.is_some() {
                    Ok(acp::StopReason::Cancelled)
                } else {
                    match translate::stop_reason(e.stop_reason.as_deref()) {
                        Some(r) => Ok(r),
                        None => Err(RpcError::internal(
                            t.error.clone().unwrap_or_else(|| "the turn failed".into()),
                        )),
                    }
                };
                self.finish(result);
            }
            Event::Error(e) => {
                if let Some(t) = &mut self.turn {
                    t.error = Some(format!("{}: {}", e.code, e.message));
                }
            }
            Event::Sync(s) => self.on_sync(&s).await,
            Event::FileRequest(r) => self.file_request(*r),
            Event::UiRequest(u) => {
                // ACP v1 has no question dialog: the request is dismissed, which the
                // model reads as "no answer".
                if let Some(link) = &self.link {
                    let _ = link.send(Command::UiResponse(UiResponse {
                        agent_id: None,
                        request_id: u.request_id,
                        value: None,
                    }));
                }
            }
            _ => {}
        }
    }

    pub(super) async fn on_sync(&mut self, s: &shard_protocol::event::Sync) {
        if self.files.read || self.files.write {
            // A new Runtime generation starts without the offer.
            if let Some(link) = &self.link {
                let _ = link.send(Command::ClientFiles(self.files.clone()));
            }
        }
        if s.mode != self.mode {
            self.mode = s.mode.clone();
            self.update(acp::SessionUpdate::CurrentModeUpdate(
                acp::CurrentModeUpdate::new(s.mode.clone()),
            ));
        }
        for p in &s.pending_requests {
            if let PendingRequest::Permission(r) = p
                && !self.asked.contains_key(&r.request_id)
            {
                self.ask_permission((**r).clone());
            }
        }
    }

    /// Announces a tool call when the model starts it (name only), and again once its
    /// arguments are complete (title, locations, raw input, the diff of an edit).
    pub(super) fn announce(&mut self, id: &str, name: &str, args: Option<&Map<String, Value>>) {
        let known = self.calls.contains_key(id);
        let call = self.calls.entry(id.to_string()).or_default();
        if !known {
            self.order.push(id.to_string());
            call.name = name.to_string();
        }
        let Some(args) = args else {
            if !known {
                let tc =
                    acp::ToolCall::new(id.to_string(), translate::tool_title(name, &Map::new()))
                        .kind(translate::tool_kind(name))
                        .status(acp::ToolCallStatus::Pending);
                self.update(acp::SessionUpdate::ToolCall(tc));
            }
            return;
        };
        if call.args_known {
            return;
        }
        call.args = args.clone();
        call.args_known = true;
        let name = call.name.clone();
        let title = translate::tool_title(&name, args);
        let kind = translate::tool_kind(&name);
        let locations = translate::tool_locations(&self.cwd, &name, args);
        let diffs = translate::tool_diffs(&self.cwd, &name, args);
        let raw = Value::Object(args.clone());
        if known {
            let mut fields = acp::ToolCallUpdateFields::new()
                .title(title)
                .kind(kind)
                .locations(locations)
                .raw_input(raw);
            if !diffs.is_empty() {
                fields = fields.content(diffs);
            }
            self.update(acp::SessionUpdate::ToolCallUpdate(
                acp::ToolCallUpdate::new(id.to_string(), fields),
            ));
        } else {
            let tc = acp::ToolCall::new(id.to_string(), title)
                .kind(kind)
                .status(acp::ToolCallStatus::Pending)
                .locations(locations)
                .raw_input(raw)
                .content(diffs);
            self.update(acp::SessionUpdate::ToolCall(tc));
        }
    }
}
