//! The PermissionGate (ARCHITECTURE §4.3) as the Runtime applies it: mode policy, deny
//! rules, read-only tools, grants, then ask — or the headless policy when nobody can be
//! asked (§6.2, §16 item 7).

use std::time::Duration;

use serde_json::Value;
use shard_protocol::PermissionAnswer;
use shard_protocol::command::{HeadlessPolicy, PermissionResponse};
use shard_protocol::event::{Event, PermissionRequest, PermissionResolved};
use shard_protocol::types::{AgentStatus, PermissionDecision};

use super::Runtime;
use super::serve::sleep_until;
use shard_gate::gate::{Ask, Call, Decision, ModePolicy};
use shard_gate::grants::Grant;
use shard_gate::prompt::{CHOICE_ALLOW, CHOICE_ALWAYS, CHOICE_SIGNATURE};

impl ModePolicy for crate::modes::ModeController {
    fn refusal(&self, tool: &str, read_only: bool) -> Option<String> {
        crate::modes::ModeController::refusal(self, tool, read_only)
    }
}

/// A permission request waiting for its first valid answer.
#[derive(Debug, Clone)]
pub struct PendingPermission {
    /// The request as emitted.
    pub request: PermissionRequest,
    signature: Option<Grant>,
}

#[derive(Debug, Clone, PartialEq)]
enum AnswerKind {
    AllowOnce,
    AllowExact,
    AllowSignature,
    Deny(Option<String>),
    Timeout,
    NoResponder,
    /// The daemon's headless policy answered: no person saw the request.
    Headless,
    Aborted,
}

/// The winning answer and how to announce it.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    kind: AnswerKind,
    form: PermissionAnswer,
    source: Option<String>,
}

impl Answer {
    pub(crate) fn no_responder() -> Answer {
        Answer {
            kind: AnswerKind::NoResponder,
            form: PermissionAnswer::Decision {
                decision: PermissionDecision::Deny,
            },
            source: Some("headless".into()),
        }
    }
}

/// What the gate decided for one call.
pub(crate) enum Gate {
    /// Run it.
    Run,
    /// Refuse it with this message for the model and clients.
    Refuse(String),
}

impl Runtime {
    /// Passes one tool call through the gate ([`shard_gate::gate::Gate::decide`]), asking
    /// when it says so.
    pub(crate) async fn gate(&mut self, tool: &str, read_only: bool, args: &Value) -> Gate {
        if let Err(e) = self.grants.reload() {
            tracing::warn!(error = %e, "could not re-read grants");
        }
        let policy = match self.opts.headless_policy {
            None if !self.eof => None,
            None => Some(HeadlessPolicy::Deny),
            Some(p) if self.eof && p == HeadlessPolicy::Queue => Some(HeadlessPolicy::Deny),
            Some(p) => Some(p),
        };
        let decision = self.gate.decide(
            Call {
                tool,
                read_only,
                args,
            },
            &self.modes,
            self.grants.grants(),
            policy,
        );
        match decision {
            Decision::Allow(_) => Gate::Run,
            Decision::Refuse { message, .. } => Gate::Refuse(message),
            Decision::Ask(mut ask) => {
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
                // What the tool says about itself is shown, never trusted (issue 18).
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
        if let Err(e) = self.session.sync_data() {
            tracing::error!(error = %e, "could not sync the transcript before asking");
        }
        let request = pending.request.clone();
        self.pending = Some(pending);
        self.pending_answer = if self.eof {
            Some(Answer::no_responder())
        } else {
            None
        };
        let previous_status = self.status;
        self.set_status(AgentStatus::WaitingForPermission).await;
        self.emit(Event::PermissionRequest(Box::new(request.clone())))
            .await;
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let answered_or_aborted = |rt: &Runtime| rt.pending_answer.is_some() || rt.turn_cancelled();
        let timed_out = self
            .serve_while(sleep_until(deadline), answered_or_aborted)
            .await
            .is_some();
        if self.pending_answer.is_none() {
            let (kind, source) = if timed_out {
                (AnswerKind::Timeout, "headless_timeout")
            } else {
                (AnswerKind::Aborted, "abort")
            };
            self.pending_answer = Some(Answer {
                kind,
                form: PermissionAnswer::Decision {
                    decision: PermissionDecision::Deny,
                },
                source: Some(source.into()),
            });
        }
        let answer = self
            .pending_answer
            .take()
            .unwrap_or_else(Answer::no_responder);
        let pending = self.pending.take();
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
        let persist = match answer.kind {
            AnswerKind::AllowExact => Some(exact),
            AnswerKind::AllowSignature => pending.and_then(|p| p.signature),
            _ => None,
        };
        if let Some(grant) = persist
            && let Err(e) = self.grants.add(grant)
        {
            tracing::error!(error = %e, "could not persist the grant");
        }
        match answer.kind {
            AnswerKind::AllowOnce | AnswerKind::AllowExact | AnswerKind::AllowSignature => {
                Gate::Run
            }
            AnswerKind::Deny(reason) => Gate::Refuse(match reason {
                Some(r) if !r.trim().is_empty() => {
                    format!("The user denied `{tool}`: {r}")
                }
                _ => format!("The user denied `{tool}`. Do not retry it; ask what to do instead."),
            }),
            AnswerKind::Timeout => Gate::Refuse(format!(
                "TIMEOUT: nobody answered the permission request for `{tool}` in time; it was denied."
            )),
            AnswerKind::NoResponder | AnswerKind::Headless => {
                Gate::Refuse(shard_gate::gate::headless_message(tool, false))
            }
            AnswerKind::Aborted => Gate::Refuse("Aborted by the user before it ran.".into()),
        }
    }

    /// Records the first valid answer to the pending request; anything else is dropped
    /// silently (late answers, unknown request ids, unknown choice ids).
    pub(crate) fn answer_permission(&mut self, r: &PermissionResponse) {
        let Some(pending) = &self.pending else { return };
        if self.pending_answer.is_some() || pending.request.request_id != r.request_id {
            return;
        }
        let kind = match &r.answer {
            PermissionAnswer::Choice { choice_id } => {
                let offered = pending
                    .request
                    .choices
                    .as_ref()
                    .is_some_and(|c| c.iter().any(|c| &c.id == choice_id));
                if !offered {
                    return;
                }
                match choice_id.as_str() {
                    CHOICE_ALLOW => AnswerKind::AllowOnce,
                    CHOICE_ALWAYS => AnswerKind::AllowExact,
                    CHOICE_SIGNATURE => AnswerKind::AllowSignature,
                    _ => AnswerKind::Deny(r.reason.clone()),
                }
            }
            PermissionAnswer::Decision { decision } => match decision {
                PermissionDecision::Allow => AnswerKind::AllowOnce,
                // Not offered (a write to a trusted file): allowed this once only.
                PermissionDecision::AllowAlways
                    if !pending
                        .request
                        .options
                        .contains(&PermissionDecision::AllowAlways) =>
                {
                    AnswerKind::AllowOnce
                }
                PermissionDecision::AllowAlways => AnswerKind::AllowExact,
                // The daemon's queue timed out: the tool gets a TIMEOUT error (§16 item 7).
                PermissionDecision::Deny if r.source.as_deref() == Some("headless_timeout") => {
                    AnswerKind::Timeout
                }
                // The daemon answered for nobody (policy `deny`, or no rule matched).
                PermissionDecision::Deny if r.source.as_deref() == Some("headless") => {
                    AnswerKind::Headless
                }
                PermissionDecision::Deny => AnswerKind::Deny(r.reason.clone()),
            },
        };
        self.pending_answer = Some(Answer {
            kind,
            form: r.answer.clone(),
            source: r.source.clone(),
        });
    }
}
