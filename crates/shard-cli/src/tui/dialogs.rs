//! Dialogs that own the keyboard while shown: permission prompts with the server's
//! choices and accelerators (Esc denies), the UI requests (select, confirm, input,
//! editor through `$EDITOR`), and the client's own pickers (`/mode`, `/resume`, …).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};
use shard_client::sanitize::strip;
use shard_client::view::Pending;
use shard_protocol::command::{PermissionResponse, UiResponse};
use shard_protocol::event::{PermissionRequest, UiRequest};
use shard_protocol::types::{ChoiceIntent, DetailFormat, PermissionDecision, UiKind, UiValue};
use shard_protocol::{Command, PermissionAnswer};

use super::editor::Editor;
use super::slash::PickAction;
use super::theme::Theme;

/// A dialog.
pub enum Dialog {
    /// A permission request.
    Permission {
        /// The request.
        request: Box<PermissionRequest>,
        /// Highlighted choice.
        selected: usize,
        /// First diff row shown (PageUp/PageDown move it).
        scroll: usize,
        /// Diff rows the last frame had room for: one page.
        page: std::cell::Cell<usize>,
    },
    /// A UI request.
    Ui {
        /// The request.
        request: Box<UiRequest>,
        /// Highlighted option (select).
        selected: usize,
        /// Typed text (input).
        input: Editor,
    },
    /// A local picker.
    Pick {
        /// Title.
        title: String,
        /// (value, label) items.
        items: Vec<(String, String)>,
        /// Highlighted item.
        selected: usize,
        /// What picking does.
        action: PickAction,
    },
}

/// A diff window never shrinks below this many rows, however small the terminal.
const DIFF_MIN_ROWS: usize = 3;

/// `git diff` colours for one diff line.
fn diff_style(theme: &Theme, l: &str) -> ratatui::style::Style {
    if l.starts_with("+++") || l.starts_with("---") {
        theme.bold()
    } else if l.starts_with('+') {
        theme.added()
    } else if l.starts_with('-') {
        theme.removed()
    } else if l.starts_with("@@") {
        theme.dim()
    } else {
        ratatui::style::Style::default()
    }
}

/// An answer to a server request, before the agent id is known.
pub enum Answer {
    /// `permission_response`.
    Permission(PermissionResponse),
    /// `ui_response`.
    Ui(UiResponse),
}

impl Answer {
    /// Names the agent (daemon connections).
    pub fn set_agent(&mut self, agent_id: Option<String>) {
        match self {
            Answer::Permission(p) => p.agent_id = agent_id,
            Answer::Ui(u) => u.agent_id = agent_id,
        }
    }

    /// The request it answers.
    pub fn request_id(&self) -> &str {
        match self {
            Answer::Permission(p) => &p.request_id,
            Answer::Ui(u) => &u.request_id,
        }
    }

    /// The wire command.
    pub fn into_command(self) -> Command {
        match self {
            Answer::Permission(p) => Command::PermissionResponse(p),
            Answer::Ui(u) => Command::UiResponse(u),
        }
    }
}

/// What a key did to a dialog.
pub enum Outcome {
    /// Nothing to do outside.
    None,
    /// Send this answer.
    Answer(Answer),
    /// Open `$EDITOR` for an editor request.
    Editor {
        /// The request.
        request_id: String,
        /// Prefill.
        text: String,
    },
    /// A picker chose a value.
    Picked(PickAction, String),
    /// A picker was closed.
    Closed,
}

/// The dialog for a pending request.
pub fn open(p: &Pending) -> Dialog {
    match p {
        Pending::Permission(r) => Dialog::Permission {
            request: r.clone(),
            selected: 0,
            scroll: 0,
            page: std::cell::Cell::new(DIFF_MIN_ROWS),
        },
        Pending::Ui(u) => {
            let mut input = Editor::default();
            input.set(u.prefill.clone().unwrap_or_default());
            Dialog::Ui {
                request: Box::new(u.clone()),
                selected: 0,
                input,
            }
        }
    }
}

/// (accelerator, label, answer) of each choice of a permission request.
fn choices(r: &PermissionRequest) -> Vec<(Option<char>, String, PermissionAnswer)> {
    match &r.choices {
        Some(c) if !c.is_empty() => c
            .iter()
            .map(|c| {
                (
                    c.accelerator.as_deref().and_then(|a| a.chars().next()),
                    strip(&c.label),
                    PermissionAnswer::Choice {
                        choice_id: c.id.clone(),
                    },
                )
            })
            .collect(),
        _ => r
            .options
            .iter()
            .map(|d| {
                let (key, label) = match d {
                    PermissionDecision::Allow => ('y', "Allow"),
                    PermissionDecision::AllowAlways => ('a', "Allow always"),
                    PermissionDecision::Deny => ('n', "Deny"),
                };
                (
                    Some(key),
                    label.to_string(),
                    PermissionAnswer::Decision { decision: *d },
                )
            })
            .collect(),
    }
}

fn deny(r: &PermissionRequest) -> PermissionAnswer {
    if let Some(c) = r
        .choices
        .as_ref()
        .and_then(|c| c.iter().find(|c| c.intent == ChoiceIntent::Deny))
    {
        return PermissionAnswer::Choice {
            choice_id: c.id.clone(),
        };
    }
    PermissionAnswer::Decision {
        decision: PermissionDecision::Deny,
    }
}

fn permission(r: &PermissionRequest, answer: PermissionAnswer) -> Outcome {
    Outcome::Answer(Answer::Permission(PermissionResponse {
        agent_id: None,
        request_id: r.request_id.clone(),
        answer,
        reason: None,
        source: None,
    }))
}

fn ui(u: &UiRequest, value: Option<UiValue>) -> Outcome {
    Outcome::Answer(Answer::Ui(UiResponse {
        agent_id: None,
        request_id: u.request_id.clone(),
        value,
    }))
}

fn step(selected: &mut usize, len: usize, k: KeyCode) -> bool {
    match k {
        KeyCode::Up | KeyCode::BackTab | KeyCode::Left => {
            *selected = selected.checked_sub(1).unwrap_or(len.saturating_sub(1));
            true
        }
        KeyCode::Down | KeyCode::Tab | KeyCode::Right => {
            *selected = if len == 0 { 0 } else { (*selected + 1) % len };
            true
        }
        _ => false,
    }
}

impl Dialog {
    /// A server request (not a local picker).
    pub fn is_remote(&self) -> bool {
        !matches!(self, Dialog::Pick { .. })
    }

    /// Pasted text (inputs only).
    pub fn paste(&mut self, text: &str) {
        if let Dialog::Ui { input, .. } = self {
            input.insert(text);
        }
    }

    /// A key.
    pub fn key(&mut self, k: KeyEvent, _theme: &Theme) -> Outcome {
        match self {
            Dialog::Permission {
                request,
                selected,
                scroll,
                page,
            } => {
                let ch = choices(request);
                if step(selected, ch.len(), k.code) {
                    return Outcome::None;
                }
                let page = page.get().max(1);
                match k.code {
                    KeyCode::PageDown => {
                        *scroll = scroll.saturating_add(page);
                        return Outcome::None;
                    }
                    KeyCode::PageUp => {
                        *scroll = scroll.saturating_sub(page);
                        return Outcome::None;
                    }
                    KeyCode::Home => {
                        *scroll = 0;
                        return Outcome::None;
                    }
                    KeyCode::End => {
                        *scroll = usize::MAX;
                        return Outcome::None;
                    }
                    _ => {}
                }
                match k.code {
                    KeyCode::Esc => permission(request, deny(request)),
                    KeyCode::Enter => match ch.get(*selected) {
                        Some((_, _, a)) => permission(request, a.clone()),
                        None => Outcome::None,
                    },
                    KeyCode::Char(c) => {
                        let by_key = ch
                            .iter()
                            .find(|(key, _, _)| key.is_some_and(|kk| kk.eq_ignore_ascii_case(&c)));
                        let by_number = c
                            .to_digit(10)
                            .and_then(|n| ch.get((n as usize).wrapping_sub(1)));
                        match by_key.or(by_number) {
                            Some((_, _, a)) => permission(request, a.clone()),
                            None => Outcome::None,
                        }
                    }
                    _ => Outcome::None,
                }
            }
            Dialog::Ui {
                request,
                selected,
                input,
            } => match request.kind {
                UiKind::Select => {
                    let opts = request.options.clone().unwrap_or_default();
                    if step(selected, opts.len(), k.code) {
                        return Outcome::None;
                    }
                    match k.code {
                        KeyCode::Esc => ui(request, None),
                        KeyCode::Enter => match opts.get(*selected) {
                            Some(o) => ui(request, Some(UiValue::Text(o.clone()))),
                            None => ui(request, None),
                        },
                        _ => Outcome::None,
                    }
                }
                UiKind::Confirm => match k.code {
                    KeyCode::Char('y' | 'Y') => ui(request, Some(UiValue::Text("yes".into()))),
                    KeyCode::Char('n' | 'N') => ui(request, Some(UiValue::Text("no".into()))),
                    KeyCode::Esc => ui(request, None),
                    _ => Outcome::None,
                },
                UiKind::Editor => match k.code {
                    KeyCode::Enter => Outcome::Editor {
                        request_id: request.request_id.clone(),
                        text: request.prefill.clone().unwrap_or_default(),
                    },
                    KeyCode::Esc => ui(request, None),
                    _ => Outcome::None,
                },
                UiKind::Input | UiKind::Notify => {
                    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
                    match k.code {
                        KeyCode::Esc => ui(request, None),
                        KeyCode::Enter => ui(request, Some(UiValue::Text(input.text.clone()))),
                        KeyCode::Backspace => {
                            input.backspace();
                            Outcome::None
                        }
                        KeyCode::Left => {
                            input.left();
                            Outcome::None
                        }
                        KeyCode::Right => {
                            input.right();
                            Outcome::None
                        }
                        KeyCode::Char(c) if !ctrl => {
                            let mut b = [0u8; 4];
                            input.insert(c.encode_utf8(&mut b));
                            Outcome::None
                        }
                        _ => Outcome::None,
                    }
                }
            },
            Dialog::Pick {
                items,
                selected,
                action,
                ..
            } => {
                if step(selected, items.len(), k.code) {
                    return Outcome::None;
                }
                match k.code {
                    KeyCode::Esc => Outcome::Closed,
                    KeyCode::Enter => match items.get(*selected) {
                        Some((v, _)) => Outcome::Picked(action.clone(), v.clone()),
                        None => Outcome::Closed,
                    },
                    _ => Outcome::None,
                }
            }
        }
    }

    /// Its lines (the panel above the status line), for a panel `width` columns wide
    /// and at most `rows` rows high (a long diff scrolls inside it).
    pub fn lines(
        &self,
        theme: &Theme,
        observer: bool,
        width: usize,
        rows: usize,
    ) -> Vec<Line<'static>> {
        let mut v = Vec::new();
        match self {
            Dialog::Permission {
                request,
                selected,
                scroll,
                page,
            } => {
                let prompt = strip(&request.prompt);
                for (i, l) in prompt.lines().enumerate() {
                    let head = if i == 0 { "permission " } else { "  " };
                    v.push(Line::from(vec![
                        Span::styled(head, theme.accent()),
                        Span::styled(l.to_string(), theme.bold()),
                    ]));
                }
                let mut diff: Vec<Line<'static>> = Vec::new();
                for d in request.details.iter().flatten() {
                    let value = strip(&d.value);
                    if crate::detail_text::repeats_prompt(d.format, &value, &prompt) {
                        continue;
                    }
                    if d.format == Some(DetailFormat::Diff) {
                        for l in value.lines() {
                            let line = Line::styled(format!("  {l}"), diff_style(theme, l));
                            super::conversation::wrap(line, width.max(10), &mut diff);
                        }
                        continue;
                    }
                    let label = d.label.as_deref().map(strip).unwrap_or_default();
                    for (i, l) in value.lines().take(8).enumerate() {
                        let head = if i == 0 && !label.is_empty() {
                            format!("  {label}: ")
                        } else {
                            "    ".into()
                        };
                        v.push(Line::from(vec![
                            Span::styled(head, theme.dim()),
                            Span::raw(l.to_string()),
                        ]));
                    }
                }
                if !diff.is_empty() {
                    // The choices and hints below take about four rows (more when wrapped).
                    let room = rows.saturating_sub(v.len() + 4).max(DIFF_MIN_ROWS);
                    let total = diff.len();
                    let window = room.min(total);
                    let first = (*scroll).min(total - window);
                    page.set(window);
                    v.extend(diff.into_iter().skip(first).take(window));
                    if window < total {
                        v.push(Line::styled(
                            format!(
                                "  diff rows {}–{} of {total} · PgUp/PgDn scroll · Home/End",
                                first + 1,
                                first + window
                            ),
                            theme.dim(),
                        ));
                    }
                }
                if observer {
                    v.push(Line::styled(
                        "  (waiting for an interactive client to answer)",
                        theme.dim(),
                    ));
                    return v;
                }
                let mut spans = vec![Span::raw("  ")];
                for (i, (key, label, _)) in choices(request).into_iter().enumerate() {
                    let text = match key {
                        Some(k) => format!("[{k}] {label}"),
                        None => format!("[{}] {label}", i + 1),
                    };
                    let style = if i == *selected {
                        theme.selected()
                    } else {
                        theme.bold()
                    };
                    spans.push(Span::styled(text, style));
                    spans.push(Span::raw("  "));
                }
                v.push(Line::from(spans));
                v.push(Line::styled("  Esc denies", theme.dim()));
            }
            Dialog::Ui {
                request,
                selected,
                input,
            } => {
                let title = request.title.as_deref().map(strip).unwrap_or_default();
                let message = request.message.as_deref().map(strip).unwrap_or_default();
                v.push(Line::from(vec![
                    Span::styled("question ", theme.accent()),
                    Span::styled(title, theme.bold()),
                ]));
                v.extend(message.lines().map(|l| Line::from(format!("  {l}"))));
                if observer {
                    v.push(Line::styled(
                        "  (waiting for an interactive client to answer)",
                        theme.dim(),
                    ));
                    return v;
                }
                match request.kind {
                    UiKind::Select => {
                        for (i, o) in request.options.iter().flatten().enumerate() {
                            let style = if i == *selected {
                                theme.selected()
                            } else {
                                ratatui::style::Style::default()
                            };
                            v.push(Line::styled(format!("  {}", strip(o)), style));
                        }
                        v.push(Line::styled(
                            "  ↑↓ choose · Enter picks · Esc cancels",
                            theme.dim(),
                        ));
                    }
                    UiKind::Confirm => v.push(Line::styled(
                        "  [y] yes  [n] no  · Esc cancels",
                        theme.bold(),
                    )),
                    UiKind::Editor => v.push(Line::styled(
                        "  Enter opens $EDITOR · Esc cancels",
                        theme.dim(),
                    )),
                    UiKind::Input | UiKind::Notify => {
                        let shown = if input.text.is_empty() {
                            Span::styled(
                                request
                                    .placeholder
                                    .as_deref()
                                    .map(strip)
                                    .unwrap_or_default(),
                                theme.dim(),
                            )
                        } else {
                            Span::raw(input.text.clone())
                        };
                        v.push(Line::from(vec![Span::styled("  › ", theme.user()), shown]));
                        v.push(Line::styled("  Enter answers · Esc cancels", theme.dim()));
                    }
                }
            }
            Dialog::Pick {
                title,
                items,
                selected,
                ..
            } => {
                v.push(Line::styled(title.clone(), theme.accent()));
                // A window of ten around the highlighted item.
                let start = selected.saturating_sub(9);
                for (i, (_, label)) in items.iter().enumerate().skip(start).take(10) {
                    let style = if i == *selected {
                        theme.selected()
                    } else {
                        ratatui::style::Style::default()
                    };
                    v.push(Line::styled(format!("  {label}"), style));
                }
                v.push(Line::styled(
                    "  ↑↓ choose · Enter picks · Esc closes",
                    theme.dim(),
                ));
            }
        }
        v
    }
}
