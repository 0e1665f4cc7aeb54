//! The PermissionGate (ARCHITECTURE §4.3) as the Runtime applies it: mode policy, deny
//! rules, read-only tools, grants, then ask — or the headless policy when nobody can be
//! asked (§6.2, §16 item 7).

use std::time::Duration;

use serde_json::Value;
use shard_protocol::PermissionAnswer;
use shard_protocol::command::{HeadlessPolicy, PermissionResponse};
use shard_protocol::event::{Event, PermissionRequest, PermissionResolved};
use shard_protocol::ids;
use shard_protocol::types::{
    AgentStatus, ChoiceIntent, DetailFormat, PermissionChoice, PermissionDecision, PermissionDetail,
};

use super::Runtime;
use super::serve::sleep_until;
use shard_gate::grants::{self, Grant};
use shard_gate::rules;

const CHOICE_ALLOW: &str = "allow";
const CHOICE_ALWAYS: &str = "allow_always";
const CHOICE_SIGNATURE: &str = "allow_signature";
const CHOICE_DENY: &str = "deny";

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
    /// Passes one tool call through the gate, asking when needed.
    pub(crate) async fn gate(&mut self, tool: &str, read_only: bool, args: &Value) -> Gate {
        if let Some(reason) = self.modes.refusal(tool, read_only) {
            return Gate::Refuse(reason);
        }
        if rules::denies(&self.deny_rules, tool, args) {
            return Gate::Refuse(format!(
                "`{tool}` was denied by a [permissions] deny rule in config.toml; do not retry it."
            ));
        }
        if read_only {
            return Gate::Run;
        }
        if let Err(e) = self.grants.reload() {
            tracing::warn!(error = %e, "could not re-read grants");
        }
        if self.grants.matches(tool, args) {
            return Gate::Run;
        }
        let policy = match self.opts.headless_policy {
            None if !self.eof => None,
            None => Some(HeadlessPolicy::Deny),
            Some(p) if self.eof && p == HeadlessPolicy::Queue => Some(HeadlessPolicy::Deny),
            Some(p) => Some(p),
        };
        match policy {
            Some(HeadlessPolicy::Deny) => Gate::Refuse(format!(
                "`{tool}` needs permission and nobody is attached to answer (headless policy: deny)."
            )),
            Some(HeadlessPolicy::AllowIfRuleMatches) => {
                if rules::allows(&self.headless_allow, tool, args) {
                    Gate::Run
                } else {
                    Gate::Refuse(format!(
                        "`{tool}` needs permission: no [headless] allow rule in config.toml matches \
                         this call and nobody is attached to answer."
                    ))
                }
            }
            Some(HeadlessPolicy::Queue) => {
                let timeout = Duration::from_secs(self.config.headless.timeout_secs);
                self.ask(tool, args, Some(timeout)).await
            }
            None => self.ask(tool, args, None).await,
        }
    }

    async fn ask(&mut self, tool: &str, args: &Value, timeout: Option<Duration>) -> Gate {
        let pending = build_request(tool, args);
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
            AnswerKind::AllowExact => Some(Grant::Exact {
                tool: tool.to_string(),
                args: grants::canonical(args),
            }),
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
            AnswerKind::NoResponder => Gate::Refuse(format!(
                "`{tool}` needs permission and nobody is left to answer; it was denied."
            )),
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
                PermissionDecision::AllowAlways => AnswerKind::AllowExact,
                // The daemon's queue timed out: the tool gets a TIMEOUT error (§16 item 7).
                PermissionDecision::Deny if r.source.as_deref() == Some("headless_timeout") => {
                    AnswerKind::Timeout
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

fn build_request(tool: &str, args: &Value) -> PendingPermission {
    let command = args.get("command").and_then(Value::as_str);
    let path = args.get("path").and_then(Value::as_str);
    let (prompt, details) = match (tool, command, path) {
        ("bash", Some(cmd), _) => (
            format!("Allow bash to run `{}`?", one_line(cmd)),
            vec![PermissionDetail {
                label: Some("command".into()),
                value: cmd.to_string(),
                format: Some(DetailFormat::Command),
            }],
        ),
        (_, _, Some(p)) => (
            format!("Allow {tool} on {p}?"),
            vec![PermissionDetail {
                label: Some("path".into()),
                value: p.to_string(),
                format: Some(DetailFormat::Path),
            }],
        ),
        _ => (format!("Allow {tool}?"), Vec::new()),
    };
    let signature = if tool == "bash" {
        command.and_then(grants::signature_grant)
    } else {
        None
    };
    let mut choices = vec![
        PermissionChoice {
            id: CHOICE_ALLOW.into(),
            label: "Allow once".into(),
            description: None,
            accelerator: Some("y".into()),
            intent: ChoiceIntent::Allow,
        },
        PermissionChoice {
            id: CHOICE_ALWAYS.into(),
            label: "Always allow exactly this".into(),
            description: Some("Remembered for this project".into()),
            accelerator: Some("a".into()),
            intent: ChoiceIntent::Persist,
        },
    ];
    if let Some(Grant::BashSignature { commands, .. }) = &signature {
        let names: Vec<String> = commands
            .iter()
            .map(|c| {
                let mut s = c.exe.clone();
                for f in &c.flags {
                    s.push(' ');
                    s.push_str(f);
                }
                s
            })
            .collect();
        choices.push(PermissionChoice {
            id: CHOICE_SIGNATURE.into(),
            label: "Always allow this command signature".into(),
            description: Some(format!(
                "Any arguments, these exact flags: {}",
                names.join(", ")
            )),
            accelerator: Some("s".into()),
            intent: ChoiceIntent::Persist,
        });
    }
    choices.push(PermissionChoice {
        id: CHOICE_DENY.into(),
        label: "Deny".into(),
        description: None,
        accelerator: Some("n".into()),
        intent: ChoiceIntent::Deny,
    });
    PendingPermission {
        request: PermissionRequest {
            agent_id: None,
            request_id: ids::new_id(ids::REQUEST),
            tool_name: tool.to_string(),
            input: args.clone(),
            prompt,
            options: vec![
                PermissionDecision::Allow,
                PermissionDecision::AllowAlways,
                PermissionDecision::Deny,
            ],
            details: if details.is_empty() {
                None
            } else {
                Some(details)
            },
            choices: Some(choices),
        },
        signature,
    }
}

fn one_line(s: &str) -> String {
    let first = s.lines().next().unwrap_or_default();
    let mut out: String = first.chars().take(120).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}
