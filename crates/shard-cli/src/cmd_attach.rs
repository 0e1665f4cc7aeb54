//! `shard attach AGENT`: follows one daemon agent through an [`AgentView`], prints what
//! changes (model and tool text stripped of terminal control sequences), and — unless
//! `--observer` — answers its requests: a line typed while a request is pending answers
//! the oldest one, any other line is sent as a prompt; end of input detaches.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use shard_client::Client;
use shard_client::results;
use shard_client::sanitize::{Sanitizer, strip};
use shard_client::view::{AgentView, Change, Pending};
use shard_protocol::command::{
    AttachRole, Command, PermissionResponse, Prompt, StreamingBehavior, UiResponse,
};
use shard_protocol::event::{DeltaKind, PermissionRequest, UiRequest};
use shard_protocol::types::{AgentStatus, ContentBlock, ToolResultContent, UiKind, UiValue};
use shard_protocol::{Event, IncomingEvent, PermissionAnswer};
use tokio::io::AsyncBufReadExt;

use crate::cmd_daemon::{status_str, with_client};

/// Arguments of `shard attach`.
#[derive(Args)]
pub struct AttachArgs {
    /// The agent id (`shard ls` lists them).
    agent: String,
    /// Watch only: never answer or prompt, and show no answer menu.
    #[arg(long)]
    observer: bool,
}

/// Runs `shard attach`: the interactive client on a terminal, line mode otherwise.
pub fn attach(args: AttachArgs) -> ExitCode {
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
        return crate::tui::attach(args.agent, args.observer);
    }
    with_client(|c| async move {
        let role = if args.observer {
            AttachRole::Observer
        } else {
            AttachRole::Interactive
        };
        let (data, mut events) = match c.attach(&args.agent, role).await {
            Ok(x) => x,
            Err(e) => {
                eprintln!("shard: cannot attach to {}: {e}", args.agent);
                return ExitCode::FAILURE;
            }
        };
        println!(
            "attached to {} ({}){}",
            args.agent,
            status_str(data.status),
            if args.observer { " as an observer" } else { "" }
        );
        let mut screen = Screen {
            agent: args.agent.clone(),
            observer: args.observer,
            view: AgentView::new(),
            sanitizer: Sanitizer::new(),
            mid_line: false,
            answered_here: Default::default(),
        };
        let mut stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        loop {
            tokio::select! {
                ev = events.recv() => match ev {
                    Some(ev) => screen.show(&c, &ev),
                    None => { eprintln!("shard: the daemon closed the connection"); return ExitCode::FAILURE; }
                },
                line = stdin.next_line() => match line {
                    Ok(Some(l)) => screen.input(&c, l.trim()),
                    _ => { let _ = c.detach(&args.agent).await; return ExitCode::SUCCESS; }
                },
                o = c.next_event() => if o.is_none() {
                    eprintln!("shard: the daemon closed the connection");
                    return ExitCode::FAILURE;
                } else if let Some(IncomingEvent::Known(Event::AgentExited(e))) = o && e.agent_id == args.agent {
                    println!("[runtime exited: {}]", strip(&e.reason));
                },
            }
        }
    })
}

struct Screen {
    agent: String,
    observer: bool,
    view: AgentView,
    sanitizer: Sanitizer,
    mid_line: bool,
    /// Requests answered from this terminal: their resolution is not someone else's.
    answered_here: std::collections::HashSet<String>,
}

impl Screen {
    fn show(&mut self, c: &Client, ev: &Event) {
        // The request as shown, read before the view drops it, to say who answered it.
        let resolving = match ev {
            Event::PermissionResolved(r) => self.view.pending_request(&r.request_id).cloned(),
            Event::UiResolved(r) => self.view.pending_request(&r.request_id).cloned(),
            _ => None,
        };
        let changes = self.view.apply(ev);
        let mut out = std::io::stdout().lock();
        for change in changes {
            if let Change::RequestResolved { request_id, .. } = &change {
                let here = self.answered_here.remove(request_id);
                let text = match &resolving {
                    // A notice was shown and dismissed: its resolution says nothing new.
                    Some(Pending::Ui(u)) if u.kind == UiKind::Notify => continue,
                    Some(p) if !here => strip(&results::answered_elsewhere(p, ev)),
                    _ => format!("request {request_id} answered here"),
                };
                self.line(&mut out, &format!("[{text}]"));
                continue;
            }
            // A notice needs no answer: an interactive client shows it and dismisses it,
            // so it does not take the next typed line.
            if let Change::RequestAdded(id) = &change
                && !self.observer
                && let Some(Pending::Ui(u)) = self.view.pending_request(id)
                && u.kind == UiKind::Notify
            {
                let text = format!(
                    "[notice] {} {}",
                    u.title.as_deref().map(strip).unwrap_or_default(),
                    u.message.as_deref().map(strip).unwrap_or_default()
                );
                let command = Command::UiResponse(UiResponse {
                    agent_id: Some(self.agent.clone()),
                    request_id: u.request_id.clone(),
                    value: None,
                });
                self.line(&mut out, text.trim_end());
                let _ = c.send(&shard_protocol::ClientMessage { id: None, command });
                // Shown and dismissed: a typed line must answer the next real request.
                self.view.pending.retain(|p| p.request_id() != id);
                continue;
            }
            self.change(&mut out, change);
        }
        let _ = out.flush();
    }

    fn line(&mut self, out: &mut impl Write, text: &str) {
        if self.mid_line {
            let _ = writeln!(out);
            self.mid_line = false;
        }
        let _ = writeln!(out, "{text}");
    }

    fn change(&mut self, out: &mut impl Write, change: Change) {
        match change {
            Change::Synced => {
                let v = &self.view;
                let text = format!(
                    "[sync] status {} mode {} ({} messages)",
                    v.status.map(status_str).unwrap_or_default(),
                    v.mode.as_deref().unwrap_or("?"),
                    v.messages.len()
                );
                let stopped = v
                    .messages
                    .last()
                    .is_some_and(|m| v.interrupted.contains(&m.id));
                self.line(out, &text);
                if stopped {
                    self.line(out, "[the last turn was interrupted]");
                }
            }
            Change::TurnEnded(_)
                if self
                    .view
                    .messages
                    .last()
                    .is_some_and(|m| self.view.interrupted.contains(&m.id)) =>
            {
                self.line(out, "[interrupted]");
            }
            Change::Status => {
                let status = self.view.status.map(status_str).unwrap_or_default();
                let detail = self
                    .view
                    .status_detail
                    .as_deref()
                    .map(|d| format!(": {}", strip(d)))
                    .unwrap_or_default();
                self.line(out, &format!("[{status}{detail}]"));
            }
            Change::BlockStarted { .. } => self.sanitizer.reset(),
            Change::Delta {
                kind: DeltaKind::Text,
                text,
                ..
            } => {
                let clean = self.sanitizer.push(&text);
                if !clean.is_empty() {
                    let _ = write!(out, "{clean}");
                    self.mid_line = !clean.ends_with('\n');
                }
            }
            Change::MessageCompleted(_) if self.mid_line => {
                let _ = writeln!(out);
                self.mid_line = false;
            }
            Change::ToolStarted(id) => {
                if let Some(t) = self.view.tool_call(&id) {
                    let text = format!("-> {}", strip(&results::tool_title(&t.name, &t.args)));
                    self.line(out, &text);
                }
            }
            Change::ToolFinished(id) => {
                let Some(t) = self.view.tool_call(&id) else {
                    return;
                };
                let Some(r) = &t.result else { return };
                let text = match &r.content {
                    ToolResultContent::Text { text } => text.clone(),
                    ToolResultContent::Error { message } => message.clone(),
                    other => serde_json::to_string(other).unwrap_or_default(),
                };
                let text = strip(&text);
                let first = text.lines().next().unwrap_or("");
                let refused = if t.started { "" } else { "refused: " };
                let text = format!(
                    "<- {}{refused}{first}",
                    if r.is_error { "error: " } else { "" }
                );
                let shaped = results::structured_lines(t);
                // Text with images beside it (an MCP screenshot) keeps its text line, as
                // `shard run` prints it; a listing, tree or card stands under a bare `<-`.
                let text_beside_images = !first.trim().is_empty() && shaped.len() == r.images.len();
                let head = if shaped.is_empty() || text_beside_images {
                    &text
                } else {
                    "<-"
                };
                self.line(out, head);
                for l in shaped {
                    self.line(out, &format!("   {}", strip(&l)));
                }
            }
            Change::UserMessage(id) => {
                // The daemon's completion report to the parent: a notice, not a prompt.
                let card = self
                    .view
                    .index_of(&id)
                    .and_then(|i| self.view.messages.get(i))
                    .and_then(|m| {
                        m.content.iter().find_map(|b| match b {
                            ContentBlock::Text { text } => results::subagent_report(text),
                            _ => None,
                        })
                    });
                if let Some(card) = card {
                    self.line(out, "[subagent report]");
                    for l in results::card_lines(&card) {
                        self.line(out, &format!("   {}", strip(&l)));
                    }
                }
            }
            Change::RequestAdded(id) => match self.view.pending_request(&id).cloned() {
                Some(Pending::Permission(p)) => self.show_permission(out, &p),
                Some(Pending::Ui(u)) => self.show_ui(out, &u),
                None => {}
            },
            Change::Error(e) => {
                self.line(out, &format!("[error {}] {}", e.code, strip(&e.message)));
            }
            _ => {}
        }
    }

    fn show_permission(&mut self, out: &mut impl Write, p: &PermissionRequest) {
        self.line(out, "");
        self.line(out, &format!("[permission] {}", strip(&p.prompt)));
        let color = {
            use std::io::IsTerminal;
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        };
        // Line mode runs on a pipe: the whole diff, never a pager.
        for d in p.details.iter().flatten() {
            if d.format == Some(shard_protocol::types::DetailFormat::Diff) {
                for l in strip(&d.value).lines() {
                    let text = format!("  {}", crate::detail_text::diff_line(l, color));
                    self.line(out, &text);
                }
            } else if !crate::detail_text::repeats_prompt(d.format, &d.value, &p.prompt) {
                let label = d.label.as_deref().map(strip).unwrap_or_default();
                self.line(out, &format!("  {label}: {}", strip(&d.value)));
            }
        }
        if self.observer {
            // An observer cannot answer: no menu, just what is being waited for.
            self.line(out, "  (waiting for an interactive client to answer)");
            return;
        }
        match &p.choices {
            Some(choices) if !choices.is_empty() => {
                for (i, c) in choices.iter().enumerate() {
                    self.line(out, &format!("  {}) {}", i + 1, strip(&c.label)));
                }
            }
            _ => {
                let opts: Vec<String> = p
                    .options
                    .iter()
                    .map(|o| serde_json::to_string(o).unwrap_or_default())
                    .collect();
                self.line(out, &format!("  options: {}", opts.join(" ")));
            }
        }
        self.line(out, "answer with a number (or allow / deny):");
    }

    fn show_ui(&mut self, out: &mut impl Write, u: &UiRequest) {
        let title = u.title.as_deref().map(strip).unwrap_or_default();
        let message = u.message.as_deref().map(strip).unwrap_or_default();
        self.line(out, "");
        self.line(out, &format!("[question] {title} {message}"));
        if self.observer {
            self.line(out, "  (waiting for an interactive client to answer)");
            return;
        }
        if let Some(opts) = &u.options {
            for (i, o) in opts.iter().enumerate() {
                self.line(out, &format!("  {}) {}", i + 1, strip(o)));
            }
        }
        if u.kind == UiKind::Confirm {
            self.line(out, "answer y or n:");
        }
    }

    fn input(&mut self, c: &Client, line: &str) {
        if line.is_empty() {
            return;
        }
        if self.observer {
            println!("(observer: read-only; attach without --observer to answer or prompt)");
            return;
        }
        if line.trim() == "/abort" {
            let target = shard_protocol::command::AgentTarget {
                agent_id: Some(self.agent.clone()),
            };
            let command = Command::Abort(target);
            let _ = c.send(&shard_protocol::ClientMessage { id: None, command });
            return;
        }
        let command = match self.view.pending.first().cloned() {
            Some(Pending::Permission(p)) => {
                let answer = match (&p.choices, line.parse::<usize>()) {
                    (Some(ch), Ok(n)) if n >= 1 && n <= ch.len() => PermissionAnswer::Choice {
                        choice_id: ch[n - 1].id.clone(),
                    },
                    _ => match serde_json::from_value(serde_json::Value::String(line.into())) {
                        Ok(decision) => PermissionAnswer::Decision { decision },
                        Err(_) => {
                            println!("answer with a choice number, allow, allow_always or deny");
                            return;
                        }
                    },
                };
                Command::PermissionResponse(PermissionResponse {
                    agent_id: Some(self.agent.clone()),
                    request_id: p.request_id.clone(),
                    answer,
                    reason: None,
                    source: None,
                })
            }
            Some(Pending::Ui(u)) => {
                let value = match (&u.options, line.parse::<usize>()) {
                    (Some(o), Ok(n)) if n >= 1 && n <= o.len() => o[n - 1].clone(),
                    // A confirm is answered "yes" or "no", as `shard run` answers it.
                    _ if u.kind == UiKind::Confirm => match line.to_ascii_lowercase().as_str() {
                        "y" | "yes" => "yes".to_string(),
                        "n" | "no" => "no".to_string(),
                        _ => {
                            println!("answer y or n");
                            return;
                        }
                    },
                    _ => line.to_string(),
                };
                Command::UiResponse(UiResponse {
                    agent_id: Some(self.agent.clone()),
                    request_id: u.request_id.clone(),
                    value: Some(UiValue::Text(value)),
                })
            }
            None => Command::Prompt(Prompt {
                agent_id: Some(self.agent.clone()),
                message: line.to_string(),
                images: None,
                streaming_behavior: (self.view.status.is_some_and(|s| s != AgentStatus::Idle))
                    .then_some(StreamingBehavior::FollowUp),
            }),
        };
        match &command {
            Command::PermissionResponse(r) => self.answered_here.insert(r.request_id.clone()),
            Command::UiResponse(r) => self.answered_here.insert(r.request_id.clone()),
            _ => false,
        };
        let _ = c.send(&shard_protocol::ClientMessage { id: None, command });
    }
}
