//! Slash commands and completion: `/mode`, `/model`, `/reasoning`, `/sessions`,
//! `/resume`, `/fork`, `/compact`, `/agents`, `/new`, `/help`, `/quit`, and `@path`
//! completion of project files. A command with an argument acts at once; without one it
//! asks the agent for the choices and opens a picker. Errors from the agent (e.g. "not
//! implemented yet") are shown as they come.

use serde_json::Value;
use shard_client::sanitize::strip;
use shard_protocol::Command;
use shard_protocol::command::{
    AgentTarget, SessionOp, SessionOpArgs, SessionOpKind, SetMode, SetModel, SetReasoningLevel,
};
use shard_protocol::responses::{
    AgentsData, CompactData, ForkData, ListModelsData, ListModesData, ReasoningLevelsData,
    SessionHistoryData, SessionListData,
};

use super::app::{Action, App, Target};
use super::dialogs::Dialog;

/// What a sent command was for, so its reply lands in the right place.
#[derive(Debug, Clone, PartialEq)]
pub enum Purpose {
    /// Only an error is shown.
    Quiet,
    /// An abort.
    Abort,
    /// Modes: cache them, and open a picker when `pick`.
    Modes(bool),
    /// Models: cache them, and open a picker when `pick`.
    Models(bool),
    /// Reasoning levels (picker).
    Reasoning,
    /// Sessions: print them, or pick one to resume.
    Sessions(bool),
    /// A fork.
    Fork,
    /// A compaction.
    Compact,
    /// Daemon agents (picker).
    Agents,
    /// A setting changed: say so.
    Set(String),
    /// A page of older history, asked before this message id.
    History(String),
}

/// What a picker does with its value.
#[derive(Debug, Clone, PartialEq)]
pub enum PickAction {
    /// Set the mode.
    Mode,
    /// Set the model.
    Model,
    /// Set the reasoning level of this model.
    Reasoning(String),
    /// Resume the session.
    Resume,
    /// Switch to the agent.
    Agent,
    /// Fork the session at this message.
    Fork,
}

/// The commands, with their one-line help.
pub const COMMANDS: &[(&str, &str)] = &[
    ("/mode", "switch mode (build, plan, …)"),
    ("/model", "switch model"),
    ("/reasoning", "set the reasoning level"),
    ("/sessions", "list this directory's sessions"),
    ("/resume", "resume a session"),
    ("/fork", "fork the session"),
    ("/compact", "compact the session"),
    ("/agents", "switch to another agent of the daemon"),
    ("/new", "start a new session"),
    ("/help", "keys and commands"),
    ("/quit", "quit (a daemon agent keeps running)"),
];

/// The help text (also `shard --help`'s key list).
pub const HELP: &str = "\
Keys: Enter sends · Shift+Enter or Ctrl+J new line · Enter while working queues a follow-up
      Ctrl+Enter steers (Alt+Enter where the terminal cannot tell Ctrl+Enter from Enter)
      Esc aborts the turn · Ctrl+C twice quits · Ctrl+D on an empty line quits
      ↑/↓ history · PageUp/PageDown, Shift+↑/↓, mouse wheel scroll · Ctrl+End follows
      Tab completes /commands and @paths · Ctrl+G edits the input in $EDITOR
      Ctrl+T shows or hides thinking
Permission prompts own the keyboard: their letter answers, Esc denies.";

fn target(app: &App) -> AgentTarget {
    AgentTarget {
        agent_id: app.agent_id(),
    }
}

fn session_op(app: &App, op: SessionOpKind) -> Command {
    Command::SessionOp(SessionOp {
        agent_id: app.agent_id(),
        op,
        args: None,
    })
}

/// Runs a typed slash command.
pub fn run(app: &mut App, line: &str) -> Vec<Action> {
    let (name, arg) = match line.split_once(char::is_whitespace) {
        Some((n, a)) => (n, a.trim()),
        None => (line, ""),
    };
    let arg = (!arg.is_empty()).then(|| arg.to_string());
    match (name, arg) {
        ("/mode", Some(mode)) => {
            let agent_id = app.agent_id();
            app.send(
                Command::SetMode(SetMode {
                    agent_id,
                    mode: mode.clone(),
                }),
                Purpose::Set(format!("mode: {mode}")),
            );
        }
        ("/mode", None) => app.send(Command::ListModes(target(app)), Purpose::Modes(true)),
        ("/model", Some(model)) => {
            let agent_id = app.agent_id();
            app.send(
                Command::SetModel(SetModel {
                    agent_id,
                    model: model.clone(),
                }),
                Purpose::Set(format!("model: {model}")),
            );
        }
        ("/model", None) => app.send(Command::ListModels(target(app)), Purpose::Models(true)),
        ("/reasoning", Some(level)) => match app.view.model.as_ref().map(|m| m.id.clone()) {
            Some(model) => {
                let agent_id = app.agent_id();
                app.send(
                    Command::SetReasoningLevel(SetReasoningLevel {
                        agent_id,
                        model,
                        effort: level.clone(),
                    }),
                    Purpose::Set(format!("reasoning: {level}")),
                );
            }
            None => app.send(
                Command::ListReasoningLevels(target(app)),
                Purpose::Reasoning,
            ),
        },
        ("/reasoning", None) => app.send(
            Command::ListReasoningLevels(target(app)),
            Purpose::Reasoning,
        ),
        ("/sessions", _) => app.send(
            session_op(app, SessionOpKind::List),
            Purpose::Sessions(false),
        ),
        ("/resume", Some(id)) => return vec![Action::Relink(Target::Session(id))],
        ("/resume", None) => app.send(
            session_op(app, SessionOpKind::List),
            Purpose::Sessions(true),
        ),
        ("/fork", Some(from)) => app.send(
            Command::SessionOp(SessionOp {
                agent_id: app.agent_id(),
                op: SessionOpKind::Fork,
                args: Some(SessionOpArgs {
                    from_entry_id: Some(from),
                    ..SessionOpArgs::default()
                }),
            }),
            Purpose::Fork,
        ),
        ("/fork", None) => fork_picker(app),
        ("/compact", _) => app.send(session_op(app, SessionOpKind::Compact), Purpose::Compact),
        ("/agents", _) if app.has_daemon => {
            app.send(Command::AgentList(Default::default()), Purpose::Agents)
        }
        ("/agents", _) => app.note_text(
            "/agents needs the daemon (`shard daemon`); this client runs its own Runtime",
            app.theme.error(),
        ),
        ("/new", _) => return vec![Action::Relink(Target::NewSession)],
        ("/help", _) => {
            let mut text = String::from(HELP);
            text.push_str("\nCommands:");
            for (c, h) in COMMANDS {
                text.push_str(&format!("\n  {c:<11} {h}"));
            }
            app.note_text(text, app.theme.dim());
        }
        ("/quit" | "/exit", _) => return vec![Action::Quit],
        (other, _) => app.note_text(
            format!("unknown command {other}: /help lists them"),
            app.theme.error(),
        ),
    }
    Vec::new()
}

/// A picker's choice.
pub fn picked(app: &mut App, action: PickAction, value: String) -> Vec<Action> {
    match action {
        PickAction::Mode => run(app, &format!("/mode {value}")),
        PickAction::Model => run(app, &format!("/model {value}")),
        PickAction::Reasoning(model) => {
            let agent_id = app.agent_id();
            app.send(
                Command::SetReasoningLevel(SetReasoningLevel {
                    agent_id,
                    model,
                    effort: value.clone(),
                }),
                Purpose::Set(format!("reasoning: {value}")),
            );
            Vec::new()
        }
        PickAction::Resume => vec![Action::Relink(Target::Session(value))],
        PickAction::Agent => vec![Action::Relink(Target::Agent(value))],
        PickAction::Fork => run(app, &format!("/fork {value}")),
    }
}

/// `/fork` with no argument: a picker over the conversation's messages, newest first;
/// the fork keeps everything up to and including the one picked.
fn fork_picker(app: &mut App) {
    let items: Vec<(String, String)> = app
        .view
        .messages
        .iter()
        .rev()
        .filter_map(|m| {
            let text: String = m
                .content
                .iter()
                .filter_map(|b| match b {
                    shard_protocol::types::ContentBlock::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join(" ");
            let text = strip(&text)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            if text.is_empty() {
                return None;
            }
            let who = match m.role {
                shard_protocol::types::Role::User => "you",
                _ => "assistant",
            };
            let short: String = text.chars().take(60).collect();
            Some((m.id.clone(), format!("{who}: {short}")))
        })
        .collect();
    pick(
        app,
        "fork after which message?",
        items,
        PickAction::Fork,
        None,
    );
}

fn parse<T: serde::de::DeserializeOwned>(data: Option<Value>) -> Result<T, String> {
    serde_json::from_value(data.unwrap_or(Value::Null))
        .map_err(|e| format!("unexpected reply: {e}"))
}

fn pick(
    app: &mut App,
    title: &str,
    items: Vec<(String, String)>,
    action: PickAction,
    active: Option<&str>,
) {
    if items.is_empty() {
        app.note_text(format!("{title}: none"), app.theme.dim());
        return;
    }
    let selected = active
        .and_then(|a| items.iter().position(|(v, _)| v == a))
        .unwrap_or(0);
    app.dialog = Some(Dialog::Pick {
        title: title.to_string(),
        items,
        selected,
        action,
    });
}

/// A reply to a slash command (or any command sent by the client).
pub fn reply(app: &mut App, purpose: Purpose, result: Result<Option<Value>, String>) {
    let data = match result {
        Ok(d) => d,
        Err(e) => {
            if purpose != Purpose::Quiet || !e.is_empty() {
                app.note_text(format!("error: {}", strip(&e)), app.theme.error());
            }
            return;
        }
    };
    let outcome: Result<(), String> = (|| {
        match purpose {
            Purpose::Quiet | Purpose::Abort => {}
            Purpose::Set(what) => {
                app.note_text(what, app.theme.dim());
                // A model the catalog lacks comes with a notice (cost unknown, context
                // window assumed).
                let notice = data
                    .as_ref()
                    .and_then(|d| d.get("notice"))
                    .and_then(Value::as_str);
                if let Some(n) = notice {
                    app.note_text(strip(n), app.theme.dim());
                }
            }
            Purpose::Modes(open) => {
                let d: ListModesData = parse(data)?;
                app.modes = d.modes.iter().map(|m| m.name.clone()).collect();
                if open {
                    let items = d
                        .modes
                        .iter()
                        .map(|m| {
                            (
                                m.name.clone(),
                                format!("{:<8} {}", m.name, strip(&m.description)),
                            )
                        })
                        .collect();
                    pick(app, "mode", items, PickAction::Mode, Some(&d.active));
                }
            }
            Purpose::Models(open) => {
                let d: ListModelsData = parse(data)?;
                app.models = d.models.iter().map(|m| m.id.clone()).collect();
                // The status line names the model from the start (also after `--continue`),
                // not only once a call reported usage.
                if app.view.model.as_ref().is_none_or(|m| m.id != d.active.id) {
                    app.view.model = Some(d.active.clone());
                    app.dirty = true;
                }
                if open {
                    let items = d
                        .models
                        .iter()
                        .map(|m| (m.id.clone(), strip(&m.id)))
                        .collect();
                    pick(app, "model", items, PickAction::Model, Some(&d.active.id));
                }
            }
            Purpose::Reasoning => {
                let d: ReasoningLevelsData = parse(data)?;
                let items = d
                    .levels
                    .iter()
                    .filter_map(|l| serde_json::to_value(l).ok())
                    .filter_map(|v| {
                        let id = v
                            .get("id")
                            .or(v.get("name"))
                            .and_then(|x| x.as_str())?
                            .to_string();
                        Some((id.clone(), strip(&id)))
                    })
                    .collect();
                pick(
                    app,
                    "reasoning",
                    items,
                    PickAction::Reasoning(d.model.id.clone()),
                    Some(&d.active),
                );
            }
            Purpose::Sessions(resume) => {
                let d: SessionListData = parse(data)?;
                let items: Vec<(String, String)> = d
                    .sessions
                    .iter()
                    .map(|s| {
                        let mark = if s.current { "*" } else { " " };
                        (
                            s.session_id.clone(),
                            format!(
                                "{mark} {}  {} ({} entries)",
                                s.session_id,
                                strip(&s.title),
                                s.entry_count
                            ),
                        )
                    })
                    .collect();
                if resume {
                    pick(app, "resume", items, PickAction::Resume, None);
                } else {
                    let text: Vec<String> = items.into_iter().map(|(_, l)| l).collect();
                    app.note_text(format!("sessions:\n{}", text.join("\n")), app.theme.dim());
                }
            }
            Purpose::Fork => {
                let d: ForkData = parse(data)?;
                app.note_text(
                    format!("forked: session {} (/resume {0} opens it)", d.session_id),
                    app.theme.dim(),
                );
            }
            Purpose::History(before) => {
                let d: SessionHistoryData = parse(data)?;
                app.prepend_history(&before, d);
            }
            Purpose::Compact => {
                let d: CompactData = parse(data)?;
                app.note_text(compact_line(&d), app.theme.dim());
            }
            Purpose::Agents => {
                let d: AgentsData = parse(data)?;
                let items = d
                    .agents
                    .iter()
                    .map(|a| {
                        let name = a.name.as_deref().map(strip).unwrap_or_default();
                        (
                            a.agent_id.clone(),
                            format!(
                                "{} {name} {}{}",
                                a.agent_id,
                                a.host
                                    .as_deref()
                                    .map(|h| format!("{}:", strip(h)))
                                    .unwrap_or_default(),
                                strip(&a.cwd)
                            ),
                        )
                    })
                    .collect();
                let current = app.agent_id();
                pick(app, "agents", items, PickAction::Agent, current.as_deref());
            }
        }
        Ok(())
    })();
    if let Err(e) = outcome {
        app.note_text(format!("error: {e}"), app.theme.error());
    }
}

/// The completions of what is being typed: (replacement start, candidates).
pub fn candidates(app: &mut App) -> Option<(usize, Vec<String>)> {
    let text = app.editor.text[..app.editor.cursor].to_string();
    if text.starts_with('/') && !text.contains(char::is_whitespace) {
        let c = COMMANDS
            .iter()
            .map(|(c, _)| c.to_string())
            .filter(|c| c.starts_with(&text))
            .collect();
        return Some((0, c));
    }
    for (cmd, list) in [("/mode ", &app.modes), ("/model ", &app.models)] {
        if let Some(rest) = text.strip_prefix(cmd)
            && !rest.contains(char::is_whitespace)
        {
            let c = list
                .iter()
                .filter(|m| m.starts_with(rest))
                .cloned()
                .collect();
            return Some((cmd.len(), c));
        }
    }
    let (start, word) = app.editor.current_word();
    let word = word.to_string();
    if let Some(prefix) = word.strip_prefix('@') {
        let files = app.files.get_or_insert_with(|| project_files(&app.cwd));
        let mut c: Vec<String> = files
            .iter()
            .filter(|f| f.starts_with(prefix))
            .take(50)
            .map(|f| format!("@{f}"))
            .collect();
        if c.is_empty() {
            c = files
                .iter()
                .filter(|f| f.contains(prefix))
                .take(50)
                .map(|f| format!("@{f}"))
                .collect();
        }
        return Some((start, c));
    }
    None
}

/// Tab: completes to the longest common prefix of the candidates.
pub fn complete(app: &mut App) {
    let Some((start, c)) = candidates(app) else {
        return;
    };
    let Some(first) = c.first() else { return };
    let mut common = first.clone();
    for other in &c[1..] {
        let n = common
            .chars()
            .zip(other.chars())
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a.len_utf8())
            .sum();
        common.truncate(n);
    }
    if c.len() == 1 {
        common.push(' ');
    }
    app.editor.replace_word_from(start, &common);
}

/// The files of the project (`.gitignore` respected), at most 20,000.
pub fn project_files(cwd: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in ignore::WalkBuilder::new(cwd).hidden(true).build().flatten() {
        if entry.file_type().is_some_and(|t| t.is_file())
            && let Ok(rel) = entry.path().strip_prefix(cwd)
        {
            out.push(rel.to_string_lossy().into_owned());
            if out.len() >= 20_000 {
                break;
            }
        }
    }
    out.sort();
    out
}

/// One readable line for a `session_op compact` answer; the raw JSON carries entry ids
/// a user has no use for.
pub(crate) fn compact_line(d: &CompactData) -> String {
    match d {
        CompactData::Compacted {
            tokens_before,
            tokens_after,
            ..
        } => format!(
            "compacted: {} \u{2192} {} tokens",
            grouped(*tokens_before),
            grouped(*tokens_after)
        ),
        CompactData::NoOp { reason, .. } => {
            format!("nothing to compact ({})", strip(reason).replace('_', " "))
        }
    }
}

/// `12345` as `12,345`: token counts are read at a glance.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_help() {
        assert!(
            COMMANDS
                .iter()
                .all(|(c, h)| c.starts_with('/') && !h.is_empty())
        );
    }
}
