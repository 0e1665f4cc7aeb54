//! The turn in flight and the work queued behind it: the running turn (its cancel token,
//! usage and last stop reason), the message being streamed, steers, follow-ups, the next
//! prompt and a queued or running compaction. Plain state with no I/O, so the rules of
//! abort and queueing are tested here on their own.

use std::collections::VecDeque;

use shard_protocol::types::{Image, Usage};
use tokio_util::sync::CancellationToken;

use super::partial::PartialMessage;

/// A user message waiting to be delivered.
#[derive(Debug, Clone)]
pub(crate) struct UserInput {
    pub(super) text: String,
    pub(super) images: Vec<Image>,
}

/// A steer waiting for the running turn's next provider boundary.
#[derive(Debug, Clone)]
pub(crate) struct PendingSteer {
    pub(super) input: UserInput,
    /// A strict steer is answered only when it is injected or dropped; this is the id
    /// that answer carries.
    pub(super) strict: Option<Option<String>>,
}

/// A manual compaction accepted and waiting for the actor's main loop.
pub(crate) struct CompactRequest {
    pub(super) id: Option<String>,
    pub(super) keep_recent_tokens: u64,
}

/// The running turn.
pub(crate) struct TurnState {
    pub(crate) cancel: CancellationToken,
    /// The id `turn_start` announced; a strict steer names it.
    pub(crate) turn_id: String,
    /// Mirrors `cancel` (only `request_abort` cancels it): read once per streamed event,
    /// where the token's lock would cost more than the event.
    pub(super) aborted: bool,
    pub(super) usage: Usage,
    /// A `context_window_exceeded` refusal was answered by compacting once already.
    pub(super) overflow_retried: bool,
    /// How the last model call stopped (`turn_end.stop_reason`).
    pub(super) last_stop: Option<String>,
}

impl TurnState {
    /// A turn that has done nothing yet.
    pub(super) fn new(turn_id: String) -> TurnState {
        TurnState {
            cancel: CancellationToken::new(),
            turn_id,
            aborted: false,
            usage: Usage::default(),
            overflow_retried: false,
            last_stop: None,
        }
    }

    /// True once the turn was aborted.
    pub(crate) fn is_aborted(&self) -> bool {
        self.aborted
    }
}

/// The turn in flight and what waits for it.
#[derive(Default)]
pub(crate) struct Flight {
    pub(super) turn: Option<TurnState>,
    /// The assistant message being streamed, kept so `sync` can include it.
    pub(super) streaming: Option<PartialMessage>,
    pub(super) steers: Vec<PendingSteer>,
    pub(super) follow_ups: VecDeque<UserInput>,
    pub(super) start_next: Option<UserInput>,
    /// A manual compaction accepted and not yet run.
    pub(super) compact_next: Option<CompactRequest>,
    /// Set while a compaction's summary is being written; an abort cancels it.
    pub(super) compaction_cancel: Option<CancellationToken>,
}

impl Flight {
    /// No turn runs, or the running one was aborted.
    pub(super) fn cancelled(&self) -> bool {
        self.turn.as_ref().is_none_or(|t| t.aborted)
    }

    /// A turn runs and was aborted (a permission asked outside a turn is not aborted).
    pub(super) fn turn_cancelled(&self) -> bool {
        self.turn.as_ref().is_some_and(|t| t.aborted)
    }

    /// Cancels the provider stream and every running tool of the current turn, and a
    /// compaction being written; drops queued steers (strict ones stay, to be answered
    /// `conflict` when the turn ends) and follow-ups.
    pub(super) fn request_abort(&mut self) {
        if let Some(t) = &mut self.turn {
            t.aborted = true;
            t.cancel.cancel();
        }
        if let Some(c) = &self.compaction_cancel {
            c.cancel();
        }
        self.steers.retain(|s| s.strict.is_some());
        self.follow_ups.clear();
    }

    /// A turn runs or waits, or a compaction does: between-turn operations must wait.
    pub(super) fn work_pending(&self) -> bool {
        self.turn.is_some()
            || self.start_next.is_some()
            || !self.follow_ups.is_empty()
            || self.compact_next.is_some()
            || self.compaction_cancel.is_some()
    }

    /// A turn runs or is about to start: a prompt must steer or follow up.
    pub(super) fn busy(&self) -> bool {
        self.turn.is_some() || self.start_next.is_some()
    }

    /// The input the next turn starts with: the accepted prompt, else (only when the agent
    /// is idle) the oldest follow-up.
    pub(super) fn next_turn_input(&mut self, idle: bool) -> Option<UserInput> {
        self.start_next.take().or_else(|| {
            if idle {
                self.follow_ups.pop_front()
            } else {
                None
            }
        })
    }

    /// A token for one step of the running turn (a model call, a tool, a compaction),
    /// cancelled with the turn; `None` when no turn runs.
    pub(super) fn child_token(&self) -> Option<CancellationToken> {
        self.turn.as_ref().map(|t| t.cancel.child_token())
    }

    /// The running turn's id.
    pub(super) fn turn_id(&self) -> Option<String> {
        self.turn.as_ref().map(|t| t.turn_id.clone())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn input(text: &str) -> UserInput {
        UserInput {
            text: text.into(),
            images: Vec::new(),
        }
    }

    fn steer(text: &str, strict: bool) -> PendingSteer {
        PendingSteer {
            input: input(text),
            strict: strict.then(|| Some(format!("id-{text}"))),
        }
    }

    #[test]
    fn an_abort_cancels_the_turn_and_its_steps_and_keeps_only_strict_steers() {
        let mut f = Flight {
            turn: Some(TurnState::new("trn-1".into())),
            ..Flight::default()
        };
        let step = f.child_token().unwrap();
        f.steers = vec![steer("loose", false), steer("strict", true)];
        f.follow_ups.push_back(input("later"));
        assert!(!f.cancelled() && !f.turn_cancelled());
        f.request_abort();
        assert!(f.cancelled() && f.turn_cancelled());
        assert!(step.is_cancelled());
        assert_eq!(f.steers.len(), 1);
        assert_eq!(f.steers[0].input.text, "strict");
        assert!(f.follow_ups.is_empty());
    }

    #[test]
    fn without_a_turn_nothing_runs_but_nothing_was_aborted_either() {
        let mut f = Flight::default();
        assert!(f.cancelled());
        assert!(!f.turn_cancelled());
        assert!(f.child_token().is_none());
        // An abort with no turn still stops a compaction being written.
        let compaction = CancellationToken::new();
        f.compaction_cancel = Some(compaction.clone());
        f.request_abort();
        assert!(compaction.is_cancelled());
    }

    #[test]
    fn follow_ups_start_only_when_idle_and_after_the_accepted_prompt() {
        let mut f = Flight::default();
        assert!(!f.busy() && !f.work_pending());
        f.follow_ups.push_back(input("second"));
        assert!(f.work_pending() && !f.busy());
        f.start_next = Some(input("first"));
        assert!(f.busy());
        assert_eq!(f.next_turn_input(false).unwrap().text, "first");
        assert!(f.next_turn_input(false).is_none());
        assert_eq!(f.next_turn_input(true).unwrap().text, "second");
        assert!(!f.work_pending());
        f.compact_next = Some(CompactRequest {
            id: None,
            keep_recent_tokens: 1,
        });
        assert!(f.work_pending());
    }
}
