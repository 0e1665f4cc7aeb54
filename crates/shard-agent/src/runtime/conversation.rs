//! The conversation and its session: the transcript (the one owner of its file), the
//! model's context as it stands in memory, the usage that context last cost, and the
//! system prompt built for it. No events and no model: what the Runtime persists and what
//! the next request is built from.

use std::path::Path;
use std::sync::Arc;

use shard_protocol::event::LiveWindow;
use shard_protocol::types::Usage;
use shard_session::compact::estimate_tokens;
use shard_session::{EntryKind, Session, SessionError, SessionReader, SessionStore};

use crate::hooks::SharedContext;
use crate::modes::Mode;

/// Byte budget of `sync.live_window` (§16 item 9), and the most one history page holds.
pub const LIVE_WINDOW_BUDGET: usize = 8 * 1024 * 1024;
/// Smallest live-window budget accepted, so a page always holds a typical message.
pub const LIVE_WINDOW_MIN: usize = 4 * 1024;
/// Environment variable that lowers the live-window budget: tests use it to page through
/// a short session as the browser does through a long one (docs/daemon.md). Runtimes
/// started by the daemon inherit its environment.
pub const LIVE_WINDOW_ENV: &str = "SHARD_LIVE_WINDOW_BYTES";

/// The live-window budget from [`LIVE_WINDOW_ENV`]'s value: unset or empty is the default;
/// anything but a byte count from [`LIVE_WINDOW_MIN`] to [`LIVE_WINDOW_BUDGET`] is refused.
pub fn live_window_budget(value: Option<&str>) -> Result<usize, String> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(LIVE_WINDOW_BUDGET);
    };
    match v.parse::<usize>() {
        Ok(n) if (LIVE_WINDOW_MIN..=LIVE_WINDOW_BUDGET).contains(&n) => Ok(n),
        _ => Err(format!(
            "{LIVE_WINDOW_ENV}=`{v}`: expected a byte count from {LIVE_WINDOW_MIN} to \
             {LIVE_WINDOW_BUDGET} (unset it for the default)"
        )),
    }
}

/// The conversation and its session.
pub(crate) struct Conversation {
    pub(super) store: SessionStore,
    pub(super) session: Session,
    /// The system prompt and the mode it was built for: built once per mode so
    /// consecutive calls send the same bytes (its date is the day the mode was entered).
    system: Option<(String, String)>,
    /// The project's instruction files, read once at start.
    instructions: String,
    /// Usage of the last model call, shown to the hook.
    pub(super) last_usage: Option<Usage>,
    /// The model's context (every message after the last compaction), read from the
    /// transcript once and then extended as messages are persisted, so a model call never
    /// re-reads the session. Shared: a call copies pointers, not messages. A compaction
    /// replaces it (through the model-call hook).
    pub(super) context: Option<SharedContext>,
    /// Context tokens the provider reported for the last call and the context length
    /// they cover: later use is that plus an estimate of what was added.
    usage_mark: Option<(u64, usize)>,
    /// Byte budget of `sync.live_window`, the most a history page holds.
    pub(super) live_window_budget: usize,
    /// The process exits after this turn (`RuntimeOptions::one_shot`): [`Self::persist`]
    /// leaves the wait for the disk to a helper process.
    one_shot: bool,
}

impl Conversation {
    /// A conversation over an open session; the context is read on first use.
    pub(super) fn new(
        store: SessionStore,
        session: Session,
        instructions: String,
        live_window_budget: usize,
        one_shot: bool,
    ) -> Conversation {
        // A session still being created is brand new: no message to read back.
        let context = session.being_created().then(Vec::new);
        Conversation {
            store,
            session,
            system: None,
            instructions,
            last_usage: None,
            context,
            usage_mark: None,
            live_window_budget,
            one_shot,
        }
    }

    /// Persists a message entry and mirrors it into the cached context.
    pub(crate) fn append_message(
        &mut self,
        id: Option<String>,
        kind: EntryKind,
    ) -> Result<(), SessionError> {
        let entry = match id {
            Some(id) => self.session.append_with_id(id, kind)?,
            None => self.session.append(kind)?,
        };
        if let (Some(context), EntryKind::Message(m)) = (self.context.as_mut(), entry.kind)
            && !m.message.content.is_empty()
        {
            context.push(Arc::new(m.message));
        }
        Ok(())
    }

    /// Replaces the context (a compaction did): the last usage no longer describes it.
    pub(super) fn replace_context(&mut self, context: SharedContext) {
        self.context = Some(context);
        self.usage_mark = None;
    }

    /// Remembers what the last call cost: the hook sees it, and later context use is
    /// estimated from it.
    pub(super) fn record_usage(&mut self, usage: &Usage) {
        self.last_usage = Some(usage.clone());
        let len = self.context.as_ref().map_or(0, Vec::len);
        self.usage_mark = usage.context_tokens.map(|t| (t, len));
    }

    /// Context use in tokens: what the provider reported for the last call, plus an
    /// estimate of the messages added since; an estimate of everything before any usage.
    pub(crate) fn context_tokens(&self) -> u64 {
        let context = self.context.as_deref().unwrap_or(&[]);
        match self.usage_mark {
            Some((tokens, len)) if len <= context.len() => {
                tokens
                    + context[len..]
                        .iter()
                        .map(|m| estimate_tokens(m))
                        .sum::<u64>()
            }
            _ => context.iter().map(|m| estimate_tokens(m)).sum(),
        }
    }

    /// The system prompt of `mode`, built once per mode.
    pub(super) fn system_prompt(&mut self, base: Option<&str>, cwd: &Path, mode: &Mode) -> String {
        match &self.system {
            Some((name, prompt)) if *name == mode.name => prompt.clone(),
            _ => {
                let prompt = crate::prompt::system_prompt(base, cwd, mode, &self.instructions);
                self.system = Some((mode.name.clone(), prompt.clone()));
                prompt
            }
        }
    }

    /// Once the model answers: a session created off the start path takes its files over,
    /// and a one-shot Runtime starts its exit's sync helper ahead, so that its turn's end
    /// only closes a pipe (each a no-op after the first time and for other Runtimes).
    pub(super) fn arm_exit(&mut self) {
        // A session created off the start path takes its files over now that the first
        // request is out (its appends waited in memory until here); a failure is
        // reported at the turn's end.
        if let Err(e) = self.session.take_over_if_created() {
            tracing::debug!(error = %e, "the session's creation failed");
        }
        if self.one_shot {
            self.session.arm_detached_finish();
        }
    }

    /// Makes the transcript durable and the meta current (a turn's end, the Runtime's
    /// end); failures are logged, since nobody could act on them. A one-shot Runtime hands
    /// the sync to a helper process: its process exits next, and the exit would otherwise
    /// wait for the disk.
    pub(super) fn persist(&mut self) {
        if self.one_shot {
            if let Err(e) = self.session.finish_detached() {
                tracing::error!(error = %e, "could not persist the transcript");
            }
            return;
        }
        if let Err(e) = self.session.sync_data() {
            tracing::error!(error = %e, "could not sync the transcript");
        }
        if let Err(e) = self.session.write_meta() {
            tracing::error!(error = %e, "could not write session meta");
        }
    }

    /// Runs a read of the transcript on a blocking thread (the actor waits, so ordering
    /// holds, while the executor keeps serving the transport).
    pub(crate) async fn read_session<T: Send + 'static>(
        &self,
        read: impl FnOnce(SessionReader) -> Result<T, SessionError> + Send + 'static,
    ) -> Result<T, String> {
        let reader = self.session.reader().map_err(|e| e.to_string())?;
        match tokio::task::spawn_blocking(move || read(reader)).await {
            Ok(result) => result.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// The persisted part of the live window, read on a blocking thread.
    pub(crate) async fn read_live_window(&self) -> LiveWindow {
        // A brand-new session still being created holds no message yet (its first sync
        // must not wait for the disk).
        if self.session.being_created() && self.session.state().message_count == 0 {
            return LiveWindow::default();
        }
        let budget = self.live_window_budget;
        let window = self
            .read_session(move |reader| reader.live_window(budget))
            .await;
        window.unwrap_or_else(|e| {
            tracing::error!(error = %e, "could not read the live window");
            LiveWindow::default()
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use shard_protocol::ids;
    use shard_protocol::types::{ContentBlock, Message, Role};

    fn conversation(dir: &Path) -> Conversation {
        let store = SessionStore::new(dir.join("home"));
        std::fs::create_dir_all(dir.join("work")).unwrap();
        let session = store
            .open_or_create(&ids::new_id(ids::SESSION), &dir.join("work"))
            .unwrap();
        Conversation::new(store, session, String::new(), 64 * 1024, false)
    }

    fn said(text: &str) -> EntryKind {
        EntryKind::message(Message {
            id: String::new(),
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
        })
    }

    #[tokio::test]
    async fn appends_reach_the_context_only_once_it_is_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = conversation(dir.path());
        c.append_message(None, said("before")).unwrap();
        assert!(c.context.is_none(), "an unread context is not made up");
        let read = c.read_session(|r| r.context_messages()).await.unwrap();
        assert_eq!(read.len(), 1);
        c.context = Some(read.into_iter().map(Arc::new).collect());
        c.append_message(None, said("after")).unwrap();
        let context = c.context.as_ref().unwrap();
        assert_eq!(context.len(), 2);
        assert!(!context[1].id.is_empty(), "the entry id names the message");
    }

    #[test]
    fn context_use_is_the_last_report_plus_an_estimate_of_what_came_after() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = conversation(dir.path());
        c.context = Some(Vec::new());
        c.append_message(None, said(&"x".repeat(400))).unwrap();
        let estimated = c.context_tokens();
        assert!(estimated > 0);
        c.record_usage(&Usage {
            context_tokens: Some(5_000),
            ..Usage::default()
        });
        assert_eq!(c.context_tokens(), 5_000);
        c.append_message(None, said(&"y".repeat(400))).unwrap();
        assert_eq!(c.context_tokens(), 5_000 + estimated);
        // A new context (a compaction) is estimated afresh.
        c.replace_context(Vec::new());
        assert_eq!(c.context_tokens(), 0);
    }

    #[test]
    fn the_system_prompt_is_built_once_per_mode() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = conversation(dir.path());
        let mut modes = crate::modes::ModeController::new(&[]);
        let build = c.system_prompt(Some("base"), dir.path(), modes.active());
        assert_eq!(c.system_prompt(None, dir.path(), modes.active()), build);
        modes.set(crate::modes::PLAN).unwrap();
        let plan = c.system_prompt(Some("base"), dir.path(), modes.active());
        assert_ne!(plan, build);
    }

    #[test]
    fn the_live_window_knob_accepts_byte_counts_in_range_only() {
        assert_eq!(live_window_budget(None), Ok(LIVE_WINDOW_BUDGET));
        assert_eq!(live_window_budget(Some(" ")), Ok(LIVE_WINDOW_BUDGET));
        assert_eq!(live_window_budget(Some("8192")), Ok(8192));
        assert_eq!(live_window_budget(Some("4096")), Ok(LIVE_WINDOW_MIN));
        for bad in ["4095", "9999999999", "8k", "-1"] {
            let e = live_window_budget(Some(bad)).unwrap_err();
            assert!(e.contains(LIVE_WINDOW_ENV) && e.contains(bad), "{e}");
        }
    }
}
