//! The session's requests to the editor: permission dialogs for the gate's requests, and
//! file reads and writes for the Runtime's file tools.

use std::path::PathBuf;

use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;
use shard_protocol::command::{FileResponse, PermissionResponse};
use shard_protocol::event::{FileOp, FileRequest, PermissionRequest};
use shard_protocol::types::PermissionDecision;
use shard_protocol::{Command, PermissionAnswer};

use super::{Asked, Msg, Session};
use crate::translate;

impl Session {
    /// Serves a Runtime's file request through the editor (`fs/read_text_file`,
    /// `fs/write_text_file`), so its unsaved buffers are what the agent reads and edits.
    pub(super) fn file_request(&self, r: FileRequest) {
        let path = PathBuf::from(&r.path);
        let answer = match r.op {
            FileOp::Read if self.files.read => self.peer.request(
                "fs/read_text_file",
                &acp::ReadTextFileRequest::new(self.id.clone(), path),
            ),
            FileOp::Write if self.files.write => self.peer.request(
                "fs/write_text_file",
                &acp::WriteTextFileRequest::new(
                    self.id.clone(),
                    path,
                    r.content.unwrap_or_default(),
                ),
            ),
            // Another client's offer (daemon): not this editor's to answer.
            _ => return,
        };
        let tx = self.tx.clone();
        let op = r.op;
        let request_id = r.request_id;
        tokio::spawn(async move {
            let (content, error) = match answer.await {
                Ok(Ok(v)) if op == FileOp::Read => {
                    match serde_json::from_value::<acp::ReadTextFileResponse>(v) {
                        Ok(r) => (Some(r.content), None),
                        Err(e) => (None, Some(format!("bad fs/read_text_file answer: {e}"))),
                    }
                }
                Ok(Ok(_)) => (None, None),
                Ok(Err(e)) => (None, Some(e.message)),
                Err(_) => (None, Some("the editor closed the connection".to_string())),
            };
            let _ = tx.send(Msg::FileAnswered {
                request_id,
                content,
                error,
            });
        });
    }

    /// The announced call a permission request is about: the one its `tool_call_id`
    /// names. Without one (a Runtime older than that field), the oldest unfinished call
    /// of that tool with those arguments that was not asked about yet (the Runtime gates
    /// calls in order), else the oldest of that tool.
    fn call_for(&self, r: &PermissionRequest) -> Option<String> {
        // A subagent's request (delegated through the daemon) names its own agent and a
        // call of that agent: never one announced here.
        let own = self.link.as_ref().and_then(|l| l.agent_id());
        if let (Some(asker), Some(own)) = (r.agent_id.as_deref(), own)
            && asker != own
        {
            return None;
        }
        if let Some(id) = &r.tool_call_id {
            return self.calls.contains_key(id).then(|| id.clone());
        }
        let open = |c: &&String| {
            self.calls
                .get(*c)
                .is_some_and(|c| !c.finished && !c.asked && c.name == r.tool_name)
        };
        let exact = self.order.iter().filter(open).find(|id| {
            self.calls
                .get(*id)
                .is_some_and(|c| Value::Object(c.args.clone()) == r.input)
        });
        exact.or_else(|| self.order.iter().find(open)).cloned()
    }

    pub(super) fn ask_permission(&mut self, r: PermissionRequest) {
        let tool_call_id = match self.call_for(&r) {
            Some(id) => id,
            None => {
                // A request with no announced call (a delegated one): announce it now.
                let id = r.request_id.clone();
                let args = r.input.as_object().cloned().unwrap_or_default();
                self.announce(&id, &r.tool_name, Some(&args));
                id
            }
        };
        if let Some(c) = self.calls.get_mut(&tool_call_id) {
            c.asked = true;
        }
        let (name, args) = self
            .calls
            .get(&tool_call_id)
            .map(|c| (c.name.clone(), c.args.clone()))
            .unwrap_or_default();
        let by_choice = r.choices.as_ref().is_some_and(|c| !c.is_empty());
        let options = translate::permission_options(r.choices.as_deref(), &r.options);
        let fields = acp::ToolCallUpdateFields::new()
            .title(translate::tool_title(&name, &args))
            .kind(translate::tool_kind(&name))
            .status(acp::ToolCallStatus::Pending)
            .locations(translate::tool_locations(&self.cwd, &name, &args))
            .raw_input(Value::Object(args));
        let request = acp::RequestPermissionRequest::new(
            self.id.clone(),
            acp::ToolCallUpdate::new(tool_call_id.clone(), fields),
            options,
        );
        self.asked.insert(
            r.request_id.clone(),
            Asked {
                tool_call_id,
                by_choice,
            },
        );
        let answer = self.peer.request("session/request_permission", &request);
        let tx = self.tx.clone();
        let request_id = r.request_id;
        tokio::spawn(async move {
            let option_id = match answer.await {
                Ok(Ok(v)) => serde_json::from_value::<acp::RequestPermissionResponse>(v)
                    .ok()
                    .and_then(|r| match r.outcome {
                        acp::RequestPermissionOutcome::Selected(s) => {
                            Some(s.option_id.0.to_string())
                        }
                        _ => None,
                    }),
                _ => None,
            };
            let _ = tx.send(Msg::PermissionAnswered {
                request_id,
                option_id,
            });
        });
    }

    pub(super) fn answer_permission(&mut self, request_id: String, option_id: Option<String>) {
        // Already resolved (by another client, an abort, or a dead Runtime): too late.
        let Some(asked) = self.asked.remove(&request_id) else {
            return;
        };
        let answer = match option_id {
            Some(id) if asked.by_choice => PermissionAnswer::Choice { choice_id: id },
            Some(id) => PermissionAnswer::Decision {
                decision: match id.as_str() {
                    "allow" => PermissionDecision::Allow,
                    "allow_always" => PermissionDecision::AllowAlways,
                    _ => PermissionDecision::Deny,
                },
            },
            None => PermissionAnswer::Decision {
                decision: PermissionDecision::Deny,
            },
        };
        tracing::debug!(tool_call = %asked.tool_call_id, "permission answered by the editor");
        if let Some(link) = &self.link {
            let _ = link.send(Command::PermissionResponse(PermissionResponse {
                agent_id: None,
                request_id,
                answer,
                reason: None,
                source: None,
            }));
        }
    }

    /// Forwards the editor's answer to a file request.
    pub(super) fn file_answered(
        &self,
        request_id: String,
        content: Option<String>,
        error: Option<String>,
    ) {
        if let Some(link) = &self.link {
            let _ = link.send(Command::FileResponse(FileResponse {
                agent_id: None,
                request_id,
                content,
                error,
            }));
        }
    }
}
