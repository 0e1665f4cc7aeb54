//! The tools with the gate: the tool registry, the permission gate and the grants it
//! reads, the processes tools start and the sandbox they run in, the editor bridge, the
//! MCP servers, and the permission request waiting for its answer. What a tool call needs
//! to be decided and run, apart from the actor that emits the events.

use std::path::PathBuf;
use std::sync::Arc;

use shard_gate::gate::{Call, Decision, ModePolicy};
use shard_gate::grants::{Grant, GrantStore};
use shard_gate::prompt::{CHOICE_ALLOW, CHOICE_ALWAYS, CHOICE_SIGNATURE};
use shard_protocol::PermissionAnswer;
use shard_protocol::command::{HeadlessPolicy, PermissionResponse};
use shard_protocol::event::PermissionRequest;
use shard_protocol::types::PermissionDecision;
use shard_tools::{ProcessTracker, Tool, ToolContext, ToolLimits};
use tokio_util::sync::CancellationToken;

use super::editor::EditorBridge;
use super::tools::Tools;
use crate::modes::ModeController;

impl ModePolicy for ModeController {
    fn refusal(&self, tool: &str, read_only: bool) -> Option<String> {
        ModeController::refusal(self, tool, read_only)
    }
}

/// A permission request waiting for its first valid answer.
#[derive(Debug, Clone)]
pub struct PendingPermission {
    /// The request as emitted.
    pub request: PermissionRequest,
    pub(super) signature: Option<Grant>,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum AnswerKind {
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
    pub(super) kind: AnswerKind,
    pub(super) form: PermissionAnswer,
    pub(super) source: Option<String>,
}

impl Answer {
    pub(crate) fn no_responder() -> Answer {
        Answer::denied(AnswerKind::NoResponder, "headless")
    }

    /// Nobody answered: the deadline passed (`timed_out`) or the turn was aborted.
    pub(super) fn unanswered(timed_out: bool) -> Answer {
        if timed_out {
            Answer::denied(AnswerKind::Timeout, "headless_timeout")
        } else {
            Answer::denied(AnswerKind::Aborted, "abort")
        }
    }

    fn denied(kind: AnswerKind, source: &str) -> Answer {
        Answer {
            kind,
            form: PermissionAnswer::Decision {
                decision: PermissionDecision::Deny,
            },
            source: Some(source.into()),
        }
    }

    /// The grant this answer asks to keep: the exact call, or the pending request's
    /// signature.
    pub(super) fn grant(&self, exact: Grant, pending: Option<PendingPermission>) -> Option<Grant> {
        match self.kind {
            AnswerKind::AllowExact => Some(exact),
            AnswerKind::AllowSignature => pending.and_then(|p| p.signature),
            _ => None,
        }
    }

    /// What the answer means for the call of `tool`.
    pub(super) fn gate(self, tool: &str) -> Gate {
        match self.kind {
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
}

/// What the gate decided for one call.
pub(crate) enum Gate {
    /// Run it.
    Run,
    /// Refuse it with this message for the model and clients.
    Refuse(String),
}

/// The policy that answers when nobody can be asked: the configured one (a daemon's
/// child), else none while the stdio peer is there to answer; after end of input a
/// request that would wait is denied.
pub(super) fn headless_policy(
    configured: Option<HeadlessPolicy>,
    eof: bool,
) -> Option<HeadlessPolicy> {
    match configured {
        None if !eof => None,
        None => Some(HeadlessPolicy::Deny),
        Some(p) if eof && p == HeadlessPolicy::Queue => Some(HeadlessPolicy::Deny),
        Some(p) => Some(p),
    }
}

/// Where a tool call runs, as the Runtime sees it now.
pub(super) struct ToolSite {
    pub(super) cwd: PathBuf,
    pub(super) limits: ToolLimits,
    /// Inside the session's folder: removed with it, bounded per session.
    pub(super) output_dir: PathBuf,
    pub(super) accepts_images: bool,
    pub(super) image_max_bytes: usize,
}

/// The servers a Runtime's first model request waits for (`[mcp] startup_timeout`), so
/// that even a one-shot `shard run` sees their tools on its first call.
#[derive(Debug)]
pub(crate) struct McpWait {
    pub(super) servers: std::collections::BTreeSet<String>,
    pub(super) deadline: tokio::time::Instant,
}

/// The tools with the gate.
pub(crate) struct Toolbox {
    pub(super) tools: Tools,
    pub(super) gate: Arc<shard_gate::gate::Gate>,
    pub(super) grants: GrantStore,
    pub(super) processes: ProcessTracker,
    pub(super) env_remove: Arc<Vec<String>>,
    pub(super) sandbox: Arc<shard_sandbox::Sandbox>,
    /// The editor client's files (`client_files`).
    pub(super) editor: Arc<EditorBridge>,
    /// MCP servers resolved at start, started when the Runtime runs.
    pub(super) mcp_plan: Option<shard_mcp::Resolved>,
    /// The running MCP servers; stopped with the Runtime.
    pub(super) mcp: Option<shard_mcp::McpManager>,
    /// Servers the first model request still waits for, and until when.
    pub(super) mcp_waiting: Option<McpWait>,
    pub(super) pending: Option<PendingPermission>,
    pub(super) pending_answer: Option<Answer>,
}

impl Toolbox {
    pub(crate) fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.registry.get(name)
    }

    /// The gate's decision for one call, with the grants as they are on disk now (another
    /// Runtime of the project may have added one).
    pub(super) fn decide(
        &mut self,
        call: Call<'_>,
        modes: &ModeController,
        policy: Option<HeadlessPolicy>,
    ) -> Decision {
        if let Err(e) = self.grants.reload() {
            tracing::warn!(error = %e, "could not re-read grants");
        }
        self.gate.decide(call, modes, self.grants.grants(), policy)
    }

    /// What a tool gets to run with.
    pub(super) fn context(&self, cancel: CancellationToken, site: ToolSite) -> ToolContext {
        ToolContext {
            cwd: site.cwd,
            cancel,
            limits: site.limits,
            env_remove: self.env_remove.clone(),
            processes: self.processes.clone(),
            output_dir: site.output_dir,
            accepts_images: site.accepts_images,
            image_max_bytes: site.image_max_bytes,
            sandbox: self.sandbox.clone(),
            path_filter: {
                let gate = self.gate.clone();
                shard_tools::PathFilter::new(Arc::new(move |tool, path, link| {
                    gate.visible(tool, path, link)
                }))
            },
            editor: self
                .editor
                .offered()
                .then(|| Arc::clone(&self.editor) as Arc<dyn shard_tools::EditorFiles>),
        }
    }

    /// Records the first valid answer to the pending request; anything else is dropped
    /// silently (late answers, unknown request ids, unknown choice ids).
    pub(crate) fn answer_permission(&mut self, r: &PermissionResponse) {
        let Some(pending) = &self.pending else { return };
        if self.pending_answer.is_some() || pending.request.request_id != r.request_id {
            return;
        }
        let Some(kind) = answer_kind(&pending.request, r) else {
            return;
        };
        self.pending_answer = Some(Answer {
            kind,
            form: r.answer.clone(),
            source: r.source.clone(),
        });
    }
}

/// What an answer to `request` means; `None` for a choice that was not offered.
fn answer_kind(request: &PermissionRequest, r: &PermissionResponse) -> Option<AnswerKind> {
    Some(match &r.answer {
        PermissionAnswer::Choice { choice_id } => {
            let offered = request
                .choices
                .as_ref()
                .is_some_and(|c| c.iter().any(|c| &c.id == choice_id));
            if !offered {
                return None;
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
                if !request.options.contains(&PermissionDecision::AllowAlways) =>
            {
                AnswerKind::AllowOnce
            }
            PermissionDecision::AllowAlways => AnswerKind::AllowExact,
            // The daemon's queue timed out: the tool gets a TIMEOUT error.
            PermissionDecision::Deny if r.source.as_deref() == Some("headless_timeout") => {
                AnswerKind::Timeout
            }
            // The daemon answered for nobody (policy `deny`, or no rule matched).
            PermissionDecision::Deny if r.source.as_deref() == Some("headless") => {
                AnswerKind::Headless
            }
            PermissionDecision::Deny => AnswerKind::Deny(r.reason.clone()),
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use shard_protocol::types::PermissionChoice;

    fn request(options: Vec<PermissionDecision>) -> PermissionRequest {
        PermissionRequest {
            agent_id: None,
            request_id: "req-1".into(),
            tool_name: "bash".into(),
            input: serde_json::json!({"command": "ls"}),
            prompt: "Run ls?".into(),
            options,
            details: None,
            tool_call_id: None,
            choices: Some(vec![PermissionChoice {
                id: CHOICE_ALLOW.into(),
                label: "Allow".into(),
                description: None,
                accelerator: None,
                intent: shard_protocol::types::ChoiceIntent::Allow,
            }]),
        }
    }

    fn response(answer: PermissionAnswer, source: Option<&str>) -> PermissionResponse {
        PermissionResponse {
            agent_id: None,
            request_id: "req-1".into(),
            answer,
            reason: Some("not now".into()),
            source: source.map(str::to_string),
        }
    }

    fn decision(d: PermissionDecision) -> PermissionAnswer {
        PermissionAnswer::Decision { decision: d }
    }

    #[test]
    fn each_answer_form_means_what_the_protocol_says() {
        let asked = request(vec![PermissionDecision::Allow, PermissionDecision::Deny]);
        let kind = |a, s| answer_kind(&asked, &response(a, s));
        assert_eq!(
            kind(decision(PermissionDecision::Allow), None),
            Some(AnswerKind::AllowOnce)
        );
        // `allow_always` where it was not offered allows this call only.
        assert_eq!(
            kind(decision(PermissionDecision::AllowAlways), None),
            Some(AnswerKind::AllowOnce)
        );
        assert_eq!(
            kind(decision(PermissionDecision::Deny), Some("headless_timeout")),
            Some(AnswerKind::Timeout)
        );
        assert_eq!(
            kind(decision(PermissionDecision::Deny), Some("headless")),
            Some(AnswerKind::Headless)
        );
        assert_eq!(
            kind(decision(PermissionDecision::Deny), None),
            Some(AnswerKind::Deny(Some("not now".into())))
        );
        let choice = |id: &str| PermissionAnswer::Choice {
            choice_id: id.into(),
        };
        assert_eq!(
            kind(choice(CHOICE_ALLOW), None),
            Some(AnswerKind::AllowOnce)
        );
        assert_eq!(kind(choice(CHOICE_ALWAYS), None), None, "not offered");
        let offered = request(vec![PermissionDecision::AllowAlways]);
        assert_eq!(
            answer_kind(
                &offered,
                &response(decision(PermissionDecision::AllowAlways), None)
            ),
            Some(AnswerKind::AllowExact)
        );
    }

    #[test]
    fn refusals_tell_the_model_why() {
        let deny = Answer {
            kind: AnswerKind::Deny(Some("use rg".into())),
            form: decision(PermissionDecision::Deny),
            source: None,
        };
        let Gate::Refuse(why) = deny.gate("bash") else {
            panic!("a denial refuses")
        };
        assert_eq!(why, "The user denied `bash`: use rg");
        let Gate::Refuse(why) = Answer::unanswered(true).gate("bash") else {
            panic!("a timeout refuses")
        };
        assert!(why.starts_with("TIMEOUT:"), "{why}");
        assert!(
            matches!(Answer::unanswered(false).gate("bash"), Gate::Refuse(m) if m.contains("Aborted"))
        );
        assert!(Answer::no_responder().grant(exact(), None).is_none());
    }

    fn exact() -> Grant {
        Grant::Exact {
            tool: "bash".into(),
            args: serde_json::json!({"command": "ls"}),
        }
    }

    #[test]
    fn nobody_answers_after_end_of_input() {
        assert_eq!(headless_policy(None, false), None);
        assert_eq!(headless_policy(None, true), Some(HeadlessPolicy::Deny));
        assert_eq!(
            headless_policy(Some(HeadlessPolicy::Queue), false),
            Some(HeadlessPolicy::Queue)
        );
        assert_eq!(
            headless_policy(Some(HeadlessPolicy::Queue), true),
            Some(HeadlessPolicy::Deny)
        );
    }
}
