//! The client's state and its key handling, free of I/O: events go in through
//! [`App::apply`], keys through [`App::key`], and what the loop must do comes out as
//! [`Action`]s or as commands sent on the link. Tests drive it without a terminal.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};
use shard_client::view::{AgentView, Change};
use shard_protocol::Command;
use shard_protocol::Event;
use shard_protocol::command::{AgentTarget, Prompt, Steer, StreamingBehavior};
use shard_protocol::types::AgentStatus;

use ratatui::text::Line;

use super::conversation::{Cache, Note, Options};
use super::dialogs::Dialog;
use super::editor::Editor;
use super::link::Link;
use super::slash::{self, Purpose};
use super::theme::Theme;

/// A paste of this many lines or more is collapsed in the input.
const PASTE_COLLAPSE_LINES: usize = 10;

/// What the event loop must do after a key or an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Quit (detach).
    Quit,
    /// Run `$EDITOR` on `text`; the result answers UI request `request_id`, or fills the
    /// input when `None`.
    Editor {
        /// The request, if any.
        request_id: Option<String>,
        /// Initial text.
        text: String,
    },
    /// Link to another agent or session.
    Relink(Target),
}

/// Where to link next.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A new session in this directory.
    NewSession,
    /// An existing session.
    Session(String),
    /// Another daemon agent.
    Agent(String),
}

/// The connection, as the status line shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum Connection {
    /// Connecting.
    Connecting,
    /// To a daemon agent.
    Daemon(String),
    /// To an in-process Runtime.
    Direct,
    /// Gone, with why.
    Closed(String),
}

/// The whole client state.
pub struct App {
    /// The agent's state.
    pub view: AgentView,
    /// The input.
    pub editor: Editor,
    /// The client's own lines.
    pub notes: Vec<Note>,
    /// Rendered messages.
    pub cache: Cache,
    /// Lines scrolled up from the bottom (0 follows the stream).
    pub scroll: usize,
    /// Rows of conversation one PageUp/PageDown moves: a screen, from the last frame.
    pub page_rows: usize,
    /// Collapsed pastes in the input: their label and their text.
    pub pastes: Vec<(String, String)>,
    /// A `session_op history` page is on its way (one at a time).
    pub loading_older: bool,
    /// The dialog owning the keyboard.
    pub dialog: Option<Dialog>,
    /// Styles.
    pub theme: Theme,
    /// Display options.
    pub opts: Options,
    /// Connection state.
    pub connection: Connection,
    /// The link (absent in tests: commands go to `outbox`).
    pub link: Option<Link>,
    /// Commands sent without a link (tests).
    pub outbox: Vec<Command>,
    /// Watching only.
    pub observer: bool,
    /// A daemon is there (for `/agents`).
    pub has_daemon: bool,
    /// The project directory (for `@path` completion).
    pub cwd: PathBuf,
    /// Project files, listed once on the first `@`.
    pub files: Option<Vec<String>>,
    /// Modes from `list_modes`, for completion.
    pub modes: Vec<String>,
    /// Models from `list_models`, for completion.
    pub models: Vec<String>,
    /// When the running turn started.
    pub turn_started: Option<Instant>,
    /// The first Ctrl+C, waiting for a second.
    pub quit_armed: Option<Instant>,
    /// What each sent command was for.
    pub purposes: HashMap<u64, Purpose>,
    /// The screen needs drawing.
    pub dirty: bool,
    /// Requests answered here: their resolution needs no note, any other names who answered.
    pub answered_here: HashSet<String>,
}

impl App {
    /// A fresh client state.
    pub fn new(editor: Editor, theme: Theme, cwd: PathBuf) -> App {
        App {
            view: AgentView::new(),
            editor,
            notes: Vec::new(),
            cache: Cache::default(),
            scroll: 0,
            page_rows: 10,
            pastes: Vec::new(),
            dialog: None,
            theme,
            opts: Options {
                expand_thinking: false,
                expand_tools: false,
            },
            connection: Connection::Connecting,
            link: None,
            outbox: Vec::new(),
            observer: false,
            has_daemon: false,
            cwd,
            files: None,
            modes: Vec::new(),
            models: Vec::new(),
            turn_started: None,
            quit_armed: None,
            purposes: HashMap::new(),
            dirty: true,
            loading_older: false,
            answered_here: HashSet::new(),
        }
    }

    /// The view is scrolled to the top of what the client holds: asks for the page of
    /// history before it when the session has older messages (`truncated_before`).
    pub fn want_older(&mut self) {
        if self.loading_older {
            return;
        }
        let Some(before) = self.view.truncated_before.clone() else {
            return;
        };
        self.loading_older = true;
        let command = Command::SessionOp(shard_protocol::command::SessionOp {
            agent_id: self.agent_id(),
            op: shard_protocol::command::SessionOpKind::History,
            args: Some(shard_protocol::command::SessionOpArgs {
                before: Some(before.clone()),
                ..Default::default()
            }),
        });
        self.send(command, Purpose::History(before));
    }

    /// Puts a page of older history above the conversation; the view stays where it was
    /// (scrolling counts from the bottom), and notes keep their place.
    pub fn prepend_history(
        &mut self,
        before: &str,
        page: shard_protocol::responses::SessionHistoryData,
    ) {
        self.view.mark_interrupted(page.interrupted_after.as_ref());
        let added = self
            .view
            .prepend_history(before, page.messages, page.truncated_before);
        for n in &mut self.notes {
            n.after += added;
        }
        self.dirty = true;
    }

    /// The agent is working (a turn runs or a request waits).
    pub fn working(&self) -> bool {
        self.view.turn_id.is_some()
            || self
                .view
                .status
                .is_some_and(|s| !matches!(s, AgentStatus::Idle | AgentStatus::Error))
    }

    /// The agent id commands name (daemon agents).
    pub fn agent_id(&self) -> Option<String> {
        self.link.as_ref().and_then(Link::agent_id)
    }

    /// Sends a command for `purpose`.
    pub fn send(&mut self, command: Command, purpose: Purpose) {
        match &mut self.link {
            Some(link) => {
                let token = link.send(command);
                self.purposes.insert(token, purpose);
            }
            None => self.outbox.push(command),
        }
    }

    /// Sends a command whose reply nobody waits for (answers to requests).
    pub(super) fn send_plain(&mut self, command: Command) {
        self.send(command, Purpose::Quiet);
    }

    /// Adds a note after the current messages.
    pub fn note(&mut self, lines: Vec<Line<'static>>) {
        self.notes.push(Note {
            after: self.view.messages.len(),
            lines,
            awaiting: None,
        });
        self.dirty = true;
    }

    /// Shows what this client just sent until the server echoes it as a `user_message`.
    fn note_sent(&mut self, lines: Vec<Line<'static>>, text: &str) {
        self.note(lines);
        if let Some(n) = self.notes.last_mut() {
            n.awaiting = Some(text.to_string());
        }
    }

    /// After a `sync`, the notes standing in for messages the live window now holds go
    /// (the `user_message` may have been missed while disconnected).
    fn drop_delivered_notes(&mut self) {
        use shard_protocol::types::{ContentBlock, Role};
        if !self.notes.iter().any(|n| n.awaiting.is_some()) {
            return;
        }
        let recent: Vec<&str> = self
            .view
            .messages
            .iter()
            .rev()
            .take(50)
            .filter(|m| m.role == Role::User)
            .filter_map(|m| {
                m.content.iter().find_map(|b| match b {
                    ContentBlock::Text { text } => Some(text.as_str()),
                    _ => None,
                })
            })
            .collect();
        self.notes
            .retain(|n| n.awaiting.as_deref().is_none_or(|t| !recent.contains(&t)));
    }

    /// A user message reached the conversation: drop the note that stood in for it
    /// (the oldest one with the same text; there is none when another client sent it).
    fn user_message_arrived(&mut self, id: &str) {
        use shard_protocol::types::ContentBlock;
        let Some(i) = self.view.index_of(id) else {
            return;
        };
        let text = self.view.messages[i].content.iter().find_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        });
        if let Some(text) = text
            && let Some(pos) = self
                .notes
                .iter()
                .position(|n| n.awaiting.as_deref() == Some(text))
        {
            self.notes.remove(pos);
        }
    }

    /// Adds a one-line note in `style`.
    pub fn note_text(&mut self, text: impl Into<String>, style: ratatui::style::Style) {
        let lines = text
            .into()
            .lines()
            .map(|l| Line::styled(l.to_string(), style))
            .collect();
        self.note(lines);
    }

    /// Applies an agent event.
    pub fn apply(&mut self, ev: &Event) {
        // The request as shown, read before the view drops it, to say who answered it.
        let resolving = match ev {
            Event::PermissionResolved(r) => self.view.pending_request(&r.request_id).cloned(),
            Event::UiResolved(r) => self.view.pending_request(&r.request_id).cloned(),
            _ => None,
        };
        let changes = self.view.apply(ev);
        for change in changes {
            match change {
                Change::Synced => {
                    self.cache.clear();
                    self.drop_delivered_notes();
                    self.turn_started = self.view.turn_id.as_ref().map(|_| Instant::now());
                }
                Change::TurnStarted(_) => self.turn_started = Some(Instant::now()),
                Change::TurnEnded(_) => self.turn_started = None,
                Change::ToolStarted(id) | Change::ToolFinished(id) => self.invalidate_call(&id),
                Change::UserMessage(id) => self.user_message_arrived(&id),
                Change::Error(e) => {
                    let text = format!(
                        "error {}: {}",
                        e.code,
                        shard_client::sanitize::strip(&e.message)
                    );
                    let style = self.theme.error();
                    self.note_text(text, style);
                }
                Change::RequestResolved { request_id, .. } => {
                    self.resolved(&request_id, resolving.as_ref(), ev)
                }
                Change::RequestAdded(_) => {}
                _ => {}
            }
        }
        self.sync_dialog();
        self.dirty = true;
    }

    fn invalidate_call(&mut self, call_id: &str) {
        use shard_protocol::types::ContentBlock;
        let found = self.view.messages.iter().rev().take(50).find(|m| {
            m.content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolCall { id, .. } if id == call_id))
        });
        if let Some(m) = found {
            let id = m.id.clone();
            self.cache.invalidate(&id);
        }
    }

    /// A bracketed paste. A large one stands in the input as `[Pasted N lines]` (so the
    /// input stays readable) and is sent whole.
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        match &mut self.dialog {
            Some(d) => d.paste(&text),
            None => {
                let lines = text.lines().count();
                if lines >= PASTE_COLLAPSE_LINES {
                    let mut label = format!("[Pasted {lines} lines]");
                    let mut n = 1;
                    while self.pastes.iter().any(|(l, _)| *l == label) {
                        n += 1;
                        label = format!("[Pasted {lines} lines #{n}]");
                    }
                    self.editor.insert(&label);
                    self.pastes.push((label, text));
                } else {
                    self.editor.insert(&text);
                }
            }
        }
        self.dirty = true;
    }

    /// The input's text with each collapsed paste put back in full.
    fn expand_pastes(&mut self, text: String) -> String {
        let mut text = text;
        for (label, pasted) in std::mem::take(&mut self.pastes) {
            text = text.replacen(&label, &pasted, 1);
        }
        text
    }

    /// A mouse event: the wheel scrolls.
    pub fn mouse(&mut self, m: MouseEvent) {
        match m.kind {
            MouseEventKind::ScrollUp => self.scroll_by(3),
            MouseEventKind::ScrollDown => self.scroll_by(-3),
            _ => {}
        }
    }

    /// Scrolls by `n` lines (positive: back in time).
    pub fn scroll_by(&mut self, n: isize) {
        self.scroll = self.scroll.saturating_add_signed(n);
        self.dirty = true;
    }

    /// A key.
    pub fn key(&mut self, k: KeyEvent) -> Vec<Action> {
        self.dirty = true;
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && k.code == KeyCode::Char('c') {
            if self.quit_armed.is_some_and(|t| t.elapsed().as_secs() < 3) {
                return vec![Action::Quit];
            }
            self.quit_armed = Some(Instant::now());
            self.editor.set(String::new());
            return Vec::new();
        }
        self.quit_armed = None;
        if ctrl && k.code == KeyCode::Char('d') && self.editor.text.is_empty() {
            return vec![Action::Quit];
        }
        if let Some(d) = &mut self.dialog {
            if self.observer && d.is_remote() {
                return self.global_key(k);
            }
            let outcome = d.key(k, &self.theme);
            return self.dialog_outcome(outcome);
        }
        self.global_key(k)
    }

    fn global_key(&mut self, k: KeyEvent) -> Vec<Action> {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        let alt = k.modifiers.contains(KeyModifiers::ALT);
        let shift = k.modifiers.contains(KeyModifiers::SHIFT);
        match k.code {
            KeyCode::PageUp => self.scroll_by(self.page_rows.max(1) as isize),
            KeyCode::PageDown => self.scroll_by(-(self.page_rows.max(1) as isize)),
            KeyCode::Up if shift => self.scroll_by(1),
            KeyCode::Down if shift => self.scroll_by(-1),
            KeyCode::Home if ctrl => self.scroll = usize::MAX / 2,
            KeyCode::End if ctrl => self.scroll = 0,
            KeyCode::Char('t') if ctrl => {
                self.opts.expand_thinking = !self.opts.expand_thinking;
                self.cache.clear();
            }
            KeyCode::Char('o') if ctrl => {
                self.opts.expand_tools = !self.opts.expand_tools;
                self.cache.clear();
            }
            KeyCode::Char('l') if ctrl => {}
            _ if self.observer => {}
            KeyCode::Esc if self.working() => {
                let agent_id = self.agent_id();
                self.send(Command::Abort(AgentTarget { agent_id }), Purpose::Abort);
            }
            KeyCode::Enter if shift => self.editor.insert("\n"),
            KeyCode::Char('j') if ctrl => self.editor.insert("\n"),
            KeyCode::Enter if ctrl || alt => return self.submit(true),
            KeyCode::Enter => return self.submit(false),
            KeyCode::Char('g') if ctrl => {
                let text = self.editor.text.clone();
                return vec![Action::Editor {
                    request_id: None,
                    text,
                }];
            }
            KeyCode::Tab => slash::complete(self),
            KeyCode::Backspace if alt || ctrl => self.editor.delete_word(),
            KeyCode::Backspace => self.editor.backspace(),
            KeyCode::Delete => self.editor.delete(),
            KeyCode::Left => self.editor.left(),
            KeyCode::Right => self.editor.right(),
            KeyCode::Home => self.editor.home(),
            KeyCode::End => self.editor.end(),
            KeyCode::Char('a') if ctrl => self.editor.home(),
            KeyCode::Char('e') if ctrl => self.editor.end(),
            KeyCode::Char('w') if ctrl => self.editor.delete_word(),
            KeyCode::Char('u') if ctrl => self.editor.set(String::new()),
            KeyCode::Up if self.editor.on_first_line() => self.editor.history_prev(),
            KeyCode::Down if self.editor.on_last_line() => self.editor.history_next(),
            KeyCode::Up => self.editor.up(),
            KeyCode::Down => self.editor.down(),
            KeyCode::Char(c) if !ctrl => {
                let mut b = [0u8; 4];
                self.editor.insert(c.encode_utf8(&mut b));
            }
            _ => {}
        }
        Vec::new()
    }

    /// Enter (or Ctrl/Alt+Enter when `steer`): a slash command, a prompt, a queued
    /// follow-up while the agent works, or a steer.
    fn submit(&mut self, steer: bool) -> Vec<Action> {
        if self.editor.text.trim().is_empty() {
            return Vec::new();
        }
        let text = self.editor.take();
        let text = self.expand_pastes(text);
        self.scroll = 0;
        if text.starts_with('/') {
            return slash::run(self, text.trim());
        }
        let agent_id = self.agent_id();
        let working = self.working();
        if steer && working {
            let line = Line::styled(format!("steering: {}", text.trim()), self.theme.dim());
            self.note_sent(vec![line], &text);
            self.send(
                Command::Steer(Steer {
                    agent_id,
                    message: text,
                    images: None,
                    strict: None,
                    turn_id: None,
                }),
                Purpose::Quiet,
            );
            return Vec::new();
        }
        // Shown at once, and replaced by the Runtime's `user_message` when the prompt
        // enters the conversation (a queued follow-up only when its turn starts).
        let lines = text
            .split('\n')
            .enumerate()
            .map(|(i, l)| {
                let mark = match (i, working) {
                    (0, true) => "› (queued) ",
                    (0, false) => "› ",
                    _ => "  ",
                };
                Line::styled(format!("{mark}{l}"), self.theme.user())
            })
            .chain(std::iter::once(Line::default()))
            .collect();
        self.note_sent(lines, &text);
        self.send(
            Command::Prompt(Prompt {
                agent_id,
                message: text,
                images: None,
                streaming_behavior: working.then_some(StreamingBehavior::FollowUp),
            }),
            Purpose::Quiet,
        );
        Vec::new()
    }

    /// A reply to a command this client sent.
    pub fn reply(&mut self, token: u64, result: Result<Option<serde_json::Value>, String>) {
        let purpose = self.purposes.remove(&token).unwrap_or(Purpose::Quiet);
        self.dirty = true;
        if let Purpose::History(_) = &purpose {
            self.loading_older = false;
            if result.is_err() {
                // Stop asking: an error would otherwise repeat at every frame at the top.
                self.view.truncated_before = None;
            }
        }
        slash::reply(self, purpose, result);
    }

    /// A fresh view for another agent or session.
    pub fn reset_view(&mut self) {
        self.view = AgentView::new();
        self.cache.clear();
        self.notes.clear();
        self.dialog = None;
        self.scroll = 0;
        self.loading_older = false;
        self.turn_started = None;
        self.purposes.clear();
        self.dirty = true;
    }
}
