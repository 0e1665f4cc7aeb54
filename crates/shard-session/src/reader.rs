//! A read-only, `Send` view of a transcript up to a fixed length: reads use positional
//! I/O on a duplicated descriptor, so they never disturb the writer and can run on any
//! thread.

use std::fs::File;
use std::path::PathBuf;

use shard_protocol::event::LiveWindow;
use shard_protocol::responses::SessionHistoryData;
use shard_protocol::types::Message;

use crate::error::SessionError;
use crate::window::{Budget, collect, summary_message};

/// One backward page of the live span (see [`SessionReader::page`]).
struct Page {
    messages: Vec<Message>,
    truncated_before: Option<String>,
    /// Messages an aborted turn stopped after.
    interrupted: Option<Vec<String>>,
    /// Answers to the permission requests of this page's tool calls, oldest first.
    answers: Option<Vec<shard_protocol::PermissionAnswered>>,
    /// Whether the walk met the anchor (always true without one).
    anchored: bool,
    /// The last compaction's entry id, when the walk reached it.
    summary_id: Option<String>,
}

/// What [`crate::Session::reader`] returns.
#[derive(Debug)]
pub struct SessionReader {
    pub(crate) id: String,
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    pub(crate) header_end: u64,
    pub(crate) transcript_len: u64,
    pub(crate) compaction_index: Option<u64>,
}

impl SessionReader {
    /// Index of the last compaction within the bytes this view covers.
    pub fn compaction_index(&self) -> Option<u64> {
        self.compaction_index
    }

    fn transcript_path(&self) -> PathBuf {
        self.path.clone()
    }

    fn note_skipped(&self, skipped: u64) {
        if skipped > 0 {
            tracing::warn!(session = %self.id, skipped, "unreadable transcript lines skipped");
        }
    }

    /// The live window for `sync` (§16 item 9): messages after the last compaction, the
    /// summary first, oldest first, read backwards from the end and limited to
    /// `budget_bytes` of serialized messages. Blocks over a quarter of the budget are cut;
    /// then the oldest messages (the summary counts as the oldest) are dropped and
    /// `truncated_before` names the first entry kept.
    pub fn live_window(&self, budget_bytes: usize) -> Result<LiveWindow, SessionError> {
        let page = self.page(None, budget_bytes)?;
        Ok(LiveWindow {
            messages: page.messages,
            compaction_index: self.compaction_index,
            truncated_before: page.truncated_before,
            interrupted_after: page.interrupted,
            permission_answers: page.answers,
        })
    }

    /// `session_op history`: the messages of the live window's span just
    /// before message `before`, oldest first, within `budget_bytes` (cut like the live
    /// window). `truncated_before` names the page's first message while older ones remain;
    /// it is absent once the page reaches the window's start (the compaction summary, when
    /// there is one, is then its first message). `before` must be a message of that span
    /// or the summary's id; anything else is [`SessionError::NotFound`].
    pub fn history(
        &self,
        before: &str,
        budget_bytes: usize,
    ) -> Result<SessionHistoryData, SessionError> {
        let page = self.page(Some(before), budget_bytes)?;
        if !page.anchored {
            // The summary opens the window: nothing lies before it.
            if page.summary_id.as_deref() == Some(before) {
                return Ok(SessionHistoryData {
                    messages: Vec::new(),
                    truncated_before: None,
                    interrupted_after: None,
                    permission_answers: None,
                });
            }
            return Err(SessionError::NotFound(format!(
                "no message `{before}` in this session's live span"
            )));
        }
        Ok(SessionHistoryData {
            messages: page.messages,
            truncated_before: page.truncated_before,
            interrupted_after: page.interrupted,
            permission_answers: page.answers,
        })
    }

    /// The backward walk behind [`Self::live_window`] and [`Self::history`]: messages
    /// (before `anchor`, when given) within the budget, oldest first, the summary first
    /// when the walk reached the window's start and it fits; else `truncated_before`.
    fn page(&self, anchor: Option<&str>, budget_bytes: usize) -> Result<Page, SessionError> {
        let mut budget = Budget::new(budget_bytes);
        let found = collect(
            &self.file,
            self.header_end,
            self.transcript_len,
            anchor,
            |m| budget.admit(m),
        )
        .map_err(|e| SessionError::io("reading", &self.transcript_path(), e))?;
        self.note_skipped(found.skipped);
        let mut truncated = !found.complete;
        let mut messages = found.messages;
        messages.reverse();
        if let (false, Some((entry_id, compaction))) = (truncated, &found.compaction) {
            let summary = summary_message(entry_id, compaction);
            if budget.admit_whole(&summary) {
                messages.insert(0, summary);
            } else {
                truncated = true;
            }
        }
        let truncated_before = if truncated {
            messages.first().map(|m| m.id.clone())
        } else {
            None
        };
        let interrupted: Vec<String> = found
            .interrupted
            .into_iter()
            .filter(|id| messages.iter().any(|m| &m.id == id))
            .collect();
        // An answer belongs to the page that holds its call (or its result).
        let mut answers: Vec<_> = found
            .answers
            .into_iter()
            .filter(|a| {
                a.tool_call_id
                    .as_deref()
                    .is_none_or(|id| messages.iter().any(|m| mentions_call(m, id)))
            })
            .collect();
        answers.reverse();
        Ok(Page {
            messages,
            truncated_before,
            interrupted: (!interrupted.is_empty()).then_some(interrupted),
            answers: (!answers.is_empty()).then_some(answers),
            anchored: found.anchored,
            summary_id: found.compaction.map(|(id, _)| id),
        })
    }

    /// Every message after the last compaction, the summary first, oldest first: the
    /// model's context, with every tool call answered right after its message (see
    /// [`crate::repair`]). Unbounded; read backwards like the live window.
    pub fn context_messages(&self) -> Result<Vec<Message>, SessionError> {
        let found = collect(
            &self.file,
            self.header_end,
            self.transcript_len,
            None,
            |_| true,
        )
        .map_err(|e| SessionError::io("reading", &self.transcript_path(), e))?;
        self.note_skipped(found.skipped);
        let mut messages = found.messages;
        if let Some((entry_id, compaction)) = &found.compaction {
            messages.push(summary_message(entry_id, compaction));
        }
        messages.reverse();
        Ok(crate::repair::pair_tool_results(messages))
    }
}

/// Whether `m` holds the call `id` or its result.
fn mentions_call(m: &Message, id: &str) -> bool {
    use shard_protocol::types::ContentBlock;
    m.content.iter().any(|b| match b {
        ContentBlock::ToolCall { id: call, .. } => call == id,
        ContentBlock::ToolResult { tool_call_id, .. } => tool_call_id == id,
        _ => false,
    })
}
