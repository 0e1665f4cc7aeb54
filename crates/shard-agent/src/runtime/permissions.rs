//! The PermissionGate (docs/architecture.md#the-permissiongate) as the Runtime applies it: mode policy, deny
//! rules, read-only tools, grants, then ask — or the headless policy when nobody can be
//! asked (§6.2, §16 item 7).

use std::time::Duration;

use serde_json::Value;
use shard_gate::gate::{Ask, Call, Decision};
use shard_protocol::event::PermissionRequest;
use shard_protocol::event::{Event, PermissionResolved};
use shard_protocol::types::AgentStatus;
use shard_protocol::{PermissionAnswer, PermissionAnswered};
use shard_session::EntryKind;

use super::Runtime;
use super::serve::sleep_until;
use super::toolbox::{Answer, Gate, PendingPermission, headless_policy};

impl Runtime {
    /// Passes one tool call (`call_id`) through the gate
    /// ([`shard_gate::gate::Gate::decide`]), asking when it says so.
    pub(crate) async fn gate(
        &mut self,
        call_id: &str,
        tool: &str,
        read_only: bool,
        args: &Value,
    ) -> Gate {
        let policy = headless_policy(self.opts.headless_policy, self.eof);
        let call = Call {
            tool,
            read_only,
            args,
        };
        let decision = self.toolbox.decide(call, &self.choice.modes, policy);
        match decision {
            Decision::Allow(_) => Gate::Run,
            Decision::Refuse { message, .. } => Gate::Refuse(message),
            Decision::Ask(mut ask) => {
                // Clients match the request to the call they were shown, exactly.
                ask.request.tool_call_id = Some(call_id.to_string());
                // What the call would change (a diff), read off the executor.
                if let Some(t) = self.tool(tool) {
                    let ctx = self.tool_context(tokio_util::sync::CancellationToken::new());
                    let call_args = args.clone();
                    let shown =
                        tokio::task::spawn_blocking(move || t.permission_details(&call_args, &ctx))
                            .await
                            .unwrap_or_default();
                    if !shown.is_empty() {
                        ask.request
                            .details
                            .get_or_insert_with(Vec::new)
                            .extend(shown);
                    }
                }
                // What the tool says about itself is shown, never trusted.
                if let Some(note) = self.tool(tool).and_then(|t| t.permission_note(args)) {
                    ask.request.details.get_or_insert_with(Vec::new).push(
                        shard_protocol::types::PermissionDetail {
                            label: Some("note".into()),
                            value: note,
                            format: None,
                        },
                    );
                }
                let timeout = ask
                    .queued
                    .then(|| Duration::from_secs(self.config.headless.timeout_secs));
                self.ask(tool, *ask, timeout).await
            }
        }
    }

    async fn ask(&mut self, tool: &str, ask: Ask, timeout: Option<Duration>) -> Gate {
        let Ask {
            request,
            exact,
            signature,
            ..
        } = ask;
        let pending = PendingPermission { request, signature };
        // Everything a client may act on is durable before the request is shown.
        if let Err(e) = self.conv.session.sync_data() {
            tracing::error!(error = %e, "could not sync the transcript before asking");
        }
        let request = pending.request.clone();
        self.toolbox.pending = Some(pending);
        self.toolbox.pending_answer = if self.eof {
            Some(Answer::no_responder())
        } else {
            None
        };
        let previous_status = self.status;
        self.set_status(AgentStatus::WaitingForPermission).await;
        self.emit(Event::PermissionRequest(Box::new(request.clone())))
            .await;
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let answered_or_aborted =
            |rt: &Runtime| rt.toolbox.pending_answer.is_some() || rt.turn_cancelled();
        let timed_out = self
            .serve_while(sleep_until(deadline), answered_or_aborted)
            .await
            .is_some();
        if self.toolbox.pending_answer.is_none() {
            self.toolbox.pending_answer = Some(Answer::unanswered(timed_out));
        }
        let answer = self
            .toolbox
            .pending_answer
            .take()
            .unwrap_or_else(Answer::no_responder);
        let pending = self.toolbox.pending.take();
        // Durable before it is shown, like the request: a reloaded conversation says who
        // answered, as clients said it live.
        if let Err(e) = self
            .conv
            .session
            .append(EntryKind::PermissionAnswer(answered(&request, &answer)))
        {
            tracing::error!(error = %e, "could not record the permission answer");
        }
        self.emit(Event::PermissionResolved(PermissionResolved {
            agent_id: None,
            request_id: request.request_id.clone(),
            answer: answer.form.clone(),
            source: answer.source.clone(),
        }))
        .await;
        if self.status == AgentStatus::WaitingForPermission {
            self.set_status(previous_status).await;
        }
        if let Some(grant) = answer.grant(exact, pending)
            && let Err(e) = self.toolbox.grants.add(grant)
        {
            tracing::error!(error = %e, "could not persist the grant");
        }
        answer.gate(tool)
    }
}

/// The session's record of `answer` to `request`: the answer as given, the chosen
/// choice's label and who gave it; never the free-text reason.
fn answered(request: &PermissionRequest, answer: &Answer) -> PermissionAnswered {
    let label = match &answer.form {
        PermissionAnswer::Choice { choice_id } => request
            .choices
            .iter()
            .flatten()
            .find(|c| &c.id == choice_id)
            .map(|c| c.label.clone()),
        PermissionAnswer::Decision { .. } => None,
    };
    PermissionAnswered {
        request_id: request.request_id.clone(),
        tool_call_id: request.tool_call_id.clone(),
        tool_name: request.tool_name.clone(),
        answer: answer.form.clone(),
        label,
        source: answer.source.clone(),
    }
}
