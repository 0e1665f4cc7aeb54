//! Compaction in the Runtime (docs/sessions.md#compaction-recall-and-forks, docs/protocol.md §9.2 `session_op compact`): the
//! manual command with its lifecycle, the automatic triggers (between turns above the
//! reserve threshold, mid-turn before a call that would overflow, once after a
//! `context_window_exceeded` refusal), the pipeline they share, and the `recall` tool.

use std::sync::Arc;

use shard_protocol::command::{SessionOpArgs, kind};
use shard_protocol::event::CompactionEvent;
use shard_protocol::responses::{CompactData, SessionOpData};
use shard_protocol::types::{AgentStatus, Message};
use shard_protocol::{ErrorCode, Event};
use shard_session::compact::{estimate_tokens, plan_cut};
use shard_session::{NewCompaction, summary_message};
use tokio_util::sync::CancellationToken;

use super::Runtime;
use super::flight::CompactRequest;
use super::inbox::ToolChange;
use crate::compactor::{self, summary_text};

/// Why a compaction did not happen.
pub(crate) enum CompactFailure {
    /// No model to write the summary (`NOT_FOUND`).
    NotConfigured(String),
    /// The summary or the append failed; nothing was appended (`INTERNAL_ERROR`).
    Internal(String),
}

impl Runtime {
    /// `session_op compact`: validates, refuses while turn work is queued or running,
    /// and queues the run for the main loop (the pipeline serves commands while the
    /// model writes the summary, so it cannot run inside a command handler).
    pub(crate) async fn request_compact(
        &mut self,
        id: Option<String>,
        name: &str,
        args: Option<SessionOpArgs>,
    ) {
        let keep = args.and_then(|a| a.keep_recent_tokens);
        if keep == Some(0) {
            let msg = "keep_recent_tokens must be a positive integer";
            self.emit(Event::err(id, Some(name), ErrorCode::InvalidRequest, msg))
                .await;
            return;
        }
        if self.flight.work_pending() {
            let msg = "compaction runs between turns: a turn is queued or running";
            self.emit(Event::err(id, Some(name), ErrorCode::Conflict, msg))
                .await;
            return;
        }
        self.flight.compact_next = Some(CompactRequest {
            id,
            keep_recent_tokens: keep.unwrap_or(self.config.compaction.keep_recent_tokens),
        });
    }

    /// Runs a queued manual compaction: `status compacting`, the pipeline, the
    /// `compaction` event on success, the response, then `status idle` whatever happened.
    pub(crate) async fn run_manual_compaction(&mut self, request: CompactRequest) {
        let name = "session_op";
        let previous = self.status;
        self.set_status(AgentStatus::Compacting).await;
        let cancel = CancellationToken::new();
        let outcome = self.compact(request.keep_recent_tokens, cancel).await;
        let response = match outcome {
            Ok(Some(event)) => {
                let data = CompactData::Compacted {
                    compacted: true,
                    index: event.index,
                    tokens_before: event.tokens_before,
                    tokens_after: event.tokens_after,
                    first_kept_entry_id: event.first_kept_entry_id.clone(),
                    message_range: event.message_range.clone(),
                };
                self.emit(Event::Compaction(event)).await;
                Event::answer::<kind::SessionOp>(request.id, &SessionOpData::Compact(data))
            }
            Ok(None) => {
                let data = CompactData::NoOp {
                    compacted: false,
                    reason: "no_safe_cut".to_string(),
                };
                Event::answer::<kind::SessionOp>(request.id, &SessionOpData::Compact(data))
            }
            Err(CompactFailure::NotConfigured(msg)) => {
                Event::err(request.id, Some(name), ErrorCode::NotFound, msg)
            }
            Err(CompactFailure::Internal(msg)) => {
                Event::err(request.id, Some(name), ErrorCode::InternalError, msg)
            }
        };
        self.emit(response).await;
        let back = if previous == AgentStatus::Compacting {
            AgentStatus::Idle
        } else {
            previous
        };
        self.set_status(back).await;
    }

    /// The between-turn trigger: after a turn, when automatic compaction is on and the
    /// context passed `reserve_ratio` of the window.
    pub(crate) async fn compact_between_turns(&mut self) {
        let Some(window) = self.choice.context_window() else {
            return;
        };
        let threshold = (window as f64 * self.config.compaction.reserve_ratio) as u64;
        if !self.config.compaction.enabled
            || self.conv.context.is_none()
            || self.conv.context_tokens() <= threshold
        {
            return;
        }
        self.set_status(AgentStatus::Compacting).await;
        let keep = self.config.compaction.keep_recent_tokens;
        match self.compact(keep, CancellationToken::new()).await {
            Ok(Some(event)) => self.emit(Event::Compaction(event)).await,
            Ok(None) => tracing::info!("context above the threshold but no safe cut"),
            Err(CompactFailure::NotConfigured(e) | CompactFailure::Internal(e)) => {
                self.emit_error(ErrorCode::InternalError, format!("compaction failed: {e}"))
                    .await;
            }
        }
        self.set_status(AgentStatus::Idle).await;
    }

    /// The emergency trigger, at an iteration boundary: when the next call would not fit
    /// the window (the context plus the output reserve), compact first. `false` after an
    /// error event (the turn stops).
    pub(crate) async fn compact_if_full(&mut self) -> bool {
        let Some(window) = self.choice.context_window() else {
            return true;
        };
        let reserve = self.choice.output_reserve(window);
        if !self.config.compaction.enabled || self.conv.context_tokens() + reserve < window {
            return true;
        }
        self.compact_in_turn("the context window is full").await;
        true
    }

    /// A compaction inside a turn (the emergency tier and the overflow retry): status
    /// `compacting` while it runs, then back to streaming. True when one happened.
    pub(crate) async fn compact_in_turn(&mut self, why: &str) -> bool {
        let Some(cancel) = self.flight.turn.as_ref().map(|t| t.cancel.child_token()) else {
            return false;
        };
        tracing::info!(why, "compacting mid-turn");
        self.set_status(AgentStatus::Compacting).await;
        let keep = self.config.compaction.keep_recent_tokens;
        let done = match self.compact(keep, cancel).await {
            Ok(Some(event)) => {
                self.emit(Event::Compaction(event)).await;
                true
            }
            Ok(None) => false,
            Err(CompactFailure::NotConfigured(e) | CompactFailure::Internal(e)) => {
                tracing::warn!(error = %e, "mid-turn compaction failed");
                false
            }
        };
        self.set_status(AgentStatus::Streaming).await;
        done
    }

    /// The pipeline: cut, summary by the active model, durable `compaction` entry, new
    /// context (summary + kept messages), `recall` registered. `Ok(None)` when there is
    /// no safe cut. Nothing is appended unless the summary was written.
    pub(crate) async fn compact(
        &mut self,
        keep_recent_tokens: u64,
        cancel: CancellationToken,
    ) -> Result<Option<CompactionEvent>, CompactFailure> {
        let active = match self.choice.models.active() {
            Ok(a) => a.clone(),
            Err(msg) => return Err(CompactFailure::NotConfigured(msg)),
        };
        if !self.ensure_context().await {
            return Err(CompactFailure::Internal(
                "the session cannot be read".into(),
            ));
        }
        let context = self.conv.context.clone().unwrap_or_default();
        let previous = match (self.conv.session.state().compaction_index, context.first()) {
            (Some(_), Some(first)) => summary_text(first),
            _ => None,
        };
        let start = usize::from(previous.is_some());
        let Some(cut) = plan_cut(&context, start, keep_recent_tokens) else {
            return Ok(None);
        };
        let summarized: Vec<Arc<Message>> = context[cut.summarized.clone()].to_vec();
        let (Some(first), Some(last)) = (summarized.first(), summarized.last()) else {
            return Ok(None);
        };
        let message_range = [first.id.clone(), last.id.clone()];
        let tokens_before = self.conv.context_tokens().max(cut.tokens_before);
        let work = compactor::summarize(
            active.provider.clone(),
            active.info.clone(),
            previous,
            summarized,
            cancel.clone(),
        );
        self.flight.compaction_cancel = Some(cancel);
        let summary = self
            .serve_while(work, |rt| {
                rt.flight
                    .compaction_cancel
                    .as_ref()
                    .is_some_and(CancellationToken::is_cancelled)
            })
            .await;
        self.flight.compaction_cancel = None;
        let summary = match summary {
            None => {
                return Err(CompactFailure::Internal(
                    "the compaction was aborted".into(),
                ));
            }
            Some(Err(e)) => return Err(CompactFailure::Internal(e.to_string())),
            Some(Ok(s)) => s,
        };
        let first_kept_entry_id = context[cut.first_kept].id.clone();
        let probe = shard_session::CompactionEntry {
            index: 0,
            summary: summary.clone(),
            tokens_before,
            tokens_after: 0,
            first_kept_entry_id: first_kept_entry_id.clone(),
            message_range: message_range.clone(),
        };
        let tokens_after = estimate_tokens(&summary_message("", &probe)) + cut.tokens_kept;
        let (entry, compaction) = self
            .conv
            .session
            .append_compaction(NewCompaction {
                summary,
                tokens_before,
                tokens_after,
                first_kept_entry_id,
                message_range,
            })
            .map_err(|e| CompactFailure::Internal(format!("cannot record the compaction: {e}")))?;
        let mut next = Vec::with_capacity(context.len() - cut.first_kept + 1);
        next.push(Arc::new(summary_message(&entry.id, &compaction)));
        next.extend(context[cut.first_kept..].iter().cloned());
        self.conv.replace_context(next);
        if let Err(e) = self.conv.session.write_meta() {
            tracing::warn!(error = %e, "could not write session meta");
        }
        self.register_recall();
        Ok(Some(CompactionEvent {
            agent_id: None,
            index: compaction.index,
            tokens_before: compaction.tokens_before,
            tokens_after: compaction.tokens_after,
            first_kept_entry_id: compaction.first_kept_entry_id,
            message_range: compaction.message_range,
        }))
    }

    /// Offers `recall` once the session has a compaction, reading the transcript as it
    /// stands now (so the newest compaction is covered).
    pub(crate) fn register_recall(&mut self) {
        if self.conv.session.state().compaction_index.is_none() {
            return;
        }
        match self.conv.session.reader() {
            Ok(reader) => {
                let tool = shard_tools::Typed::new(crate::recall::Recall::new(reader));
                self.toolbox.tools.apply(ToolChange::Add(Arc::new(tool)));
            }
            Err(e) => tracing::warn!(error = %e, "cannot offer recall"),
        }
    }
}
