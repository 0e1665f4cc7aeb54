//! Asking the person at the terminal: permission requests and the five
//! UI kinds (select, confirm, input, editor with `$VISUAL`/`$EDITOR`, notify), inline on
//! stderr, answers read from stdin.
//!
//! Questions are answered on a thread of their own: reading a terminal blocks, and the
//! async side must keep serving the Runtime (and Ctrl-C) meanwhile. A plain thread, not
//! tokio's blocking pool, so a read still waiting when the run ends never delays exit.
//! stderr is never held locked across a read: the async side must still be able to print
//! (Ctrl-C's "aborting" line) while a question waits.

use std::io::{BufRead, Write};

use shard_client::sanitize::strip;
use shard_protocol::PermissionAnswer;
use shard_protocol::event::{PermissionRequest, UiRequest};
use shard_protocol::types::{PermissionDecision, UiKind, UiValue};
use tokio::sync::mpsc;

/// A request to put to the person.
pub enum Question {
    /// A permission request.
    Permission(Box<PermissionRequest>),
    /// A UI request.
    Ui(UiRequest),
}

/// The person's answer.
pub enum Reply {
    /// To a permission request.
    Permission {
        /// Request.
        request_id: String,
        /// Answer.
        answer: PermissionAnswer,
    },
    /// To a UI request (`None`: cancelled).
    Ui {
        /// Request.
        request_id: String,
        /// Value.
        value: Option<UiValue>,
    },
}

/// The questioning thread's mailbox.
pub struct Prompter {
    tx: std::sync::mpsc::Sender<Question>,
}

impl Prompter {
    /// Starts the thread; answers arrive on `replies`.
    pub fn spawn(replies: mpsc::UnboundedSender<Reply>) -> std::io::Result<Prompter> {
        let (tx, rx) = std::sync::mpsc::channel::<Question>();
        std::thread::Builder::new()
            .name("shard-prompter".into())
            .spawn(move || {
                for q in rx {
                    let reply = match q {
                        Question::Permission(p) => ask_permission(&p),
                        Question::Ui(u) => ask_ui(&u),
                    };
                    if replies.send(reply).is_err() {
                        return;
                    }
                }
            })?;
        Ok(Prompter { tx })
    }

    /// Queues a question; questions are asked one at a time, in order.
    pub fn ask(&self, q: Question) {
        let _ = self.tx.send(q);
    }
}

/// One line from stdin without its newline; `None` at end of input or on an error.
fn read_line() -> Option<String> {
    let mut s = String::new();
    match std::io::stdin().lock().read_line(&mut s) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(s.trim_end_matches(['\n', '\r']).to_string()),
    }
}

fn ask_permission(p: &PermissionRequest) -> Reply {
    let mut err = std::io::stderr();
    let _ = writeln!(err, "\n? permission for `{}`", strip(&p.tool_name));
    for line in strip(&p.prompt).lines() {
        let _ = writeln!(err, "  {line}");
    }
    let color = color_on_stderr();
    let (details, cut) = crate::detail_text::detail_lines(p, color);
    for line in &details {
        let _ = writeln!(err, "{line}");
    }
    // Server-built choices when offered, else the legacy decisions.
    let options: Vec<(String, PermissionAnswer)> = match &p.choices {
        Some(ch) if !ch.is_empty() => ch
            .iter()
            .map(|c| {
                let label = match &c.description {
                    Some(d) => format!("{} — {}", strip(&c.label), strip(d)),
                    None => strip(&c.label),
                };
                let answer = PermissionAnswer::Choice {
                    choice_id: c.id.clone(),
                };
                (label, answer)
            })
            .collect(),
        _ => p
            .options
            .iter()
            .map(|d| {
                let label = match d {
                    PermissionDecision::Allow => "Allow once",
                    PermissionDecision::AllowAlways => "Always allow this exact call",
                    PermissionDecision::Deny => "Deny",
                };
                (
                    label.to_string(),
                    PermissionAnswer::Decision { decision: *d },
                )
            })
            .collect(),
    };
    for (i, (label, _)) in options.iter().enumerate() {
        let _ = writeln!(err, "  {}) {label}", i + 1);
    }
    let deny = PermissionAnswer::Decision {
        decision: PermissionDecision::Deny,
    };
    loop {
        let _ = write!(err, "  choose 1-{} (Enter denies): ", options.len());
        let _ = err.flush();
        let Some(line) = read_line() else {
            return Reply::Permission {
                request_id: p.request_id.clone(),
                answer: deny,
            };
        };
        let line = line.trim();
        if cut && line.eq_ignore_ascii_case("v") {
            crate::detail_text::page(&crate::detail_text::full_diff(p, color), &mut err);
            continue;
        }
        if line.is_empty() || line.eq_ignore_ascii_case("n") || line == "deny" {
            return Reply::Permission {
                request_id: p.request_id.clone(),
                answer: deny,
            };
        }
        if let Ok(n) = line.parse::<usize>()
            && n >= 1
            && n <= options.len()
        {
            return Reply::Permission {
                request_id: p.request_id.clone(),
                answer: options[n - 1].1.clone(),
            };
        }
        let _ = writeln!(err, "  answer with a number from the list");
    }
}

/// Colours only for a person: stderr is a terminal and `NO_COLOR` is unset.
fn color_on_stderr() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn ask_ui(u: &UiRequest) -> Reply {
    let value = ask_ui_value(u);
    Reply::Ui {
        request_id: u.request_id.clone(),
        value,
    }
}

fn header(err: &mut impl Write, u: &UiRequest) {
    let title = u.title.as_deref().map(strip).unwrap_or_default();
    let _ = writeln!(
        err,
        "\n? {}",
        if title.is_empty() { "question" } else { &title }
    );
    if let Some(m) = &u.message {
        for line in strip(m).lines() {
            let _ = writeln!(err, "  {line}");
        }
    }
}

fn ask_ui_value(u: &UiRequest) -> Option<UiValue> {
    let mut err = std::io::stderr();
    header(&mut err, u);
    match u.kind {
        UiKind::Notify => None,
        UiKind::Select => {
            let options = u.options.clone().unwrap_or_default();
            for (i, o) in options.iter().enumerate() {
                let _ = writeln!(err, "  {}) {}", i + 1, strip(o));
            }
            loop {
                let _ = write!(err, "  choose 1-{} (Enter cancels): ", options.len());
                let _ = err.flush();
                let line = read_line()?;
                let line = line.trim();
                if line.is_empty() {
                    return None;
                }
                if let Ok(n) = line.parse::<usize>()
                    && n >= 1
                    && n <= options.len()
                {
                    return Some(UiValue::Text(options[n - 1].clone()));
                }
                if let Some(o) = options.iter().find(|o| o.as_str() == line) {
                    return Some(UiValue::Text(o.clone()));
                }
                let _ = writeln!(err, "  answer with a number from the list");
            }
        }
        UiKind::Confirm => loop {
            let _ = write!(err, "  [y/n] (Enter cancels): ");
            let _ = err.flush();
            let line = read_line()?;
            match line.trim().to_ascii_lowercase().as_str() {
                "" => return None,
                "y" | "yes" => return Some(UiValue::Text("yes".into())),
                "n" | "no" => return Some(UiValue::Text("no".into())),
                _ => {
                    let _ = writeln!(err, "  answer y or n");
                }
            }
        },
        UiKind::Input => {
            let hint = u
                .prefill
                .as_deref()
                .or(u.placeholder.as_deref())
                .map(|p| format!(" [{}]", strip(p)))
                .unwrap_or_default();
            let _ = write!(err, "  answer{hint}: ");
            let _ = err.flush();
            let line = read_line()?;
            if line.is_empty() {
                return u.prefill.clone().map(UiValue::Text);
            }
            Some(UiValue::Text(line))
        }
        UiKind::Editor => match edit(u.prefill.as_deref().unwrap_or("")) {
            Ok(text) => Some(UiValue::Text(text)),
            Err(e) => {
                eprintln!("  cannot run the editor: {e}; answered with nothing");
                None
            }
        },
    }
}

/// Opens `$VISUAL`, else `$EDITOR`, else `vi` on a private temporary file holding
/// `prefill`; returns the saved text.
fn edit(prefill: &str) -> std::io::Result<String> {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "vi".into());
    edit_with(&editor, prefill, &std::env::temp_dir())
}

/// Runs `editor` (a shell word list, as git runs `$EDITOR`) on a private temporary file.
fn edit_with(editor: &str, prefill: &str, dir: &std::path::Path) -> std::io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let path = dir.join(format!("shard-answer-{}-{nonce}.md", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    f.write_all(prefill.as_bytes())?;
    drop(f);
    // Through the shell, so `EDITOR="code --wait"` works as it does for git.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&path)
        .status();
    let text = std::fs::read_to_string(&path);
    let _ = std::fs::remove_file(&path);
    match status {
        Ok(s) if s.success() => text,
        Ok(s) => Err(std::io::Error::other(format!("{editor} exited with {s}"))),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_editor_gets_the_prefill_and_its_saved_text_is_the_answer() {
        let dir = tempfile::tempdir().unwrap();
        let seen = dir.path().join("seen.txt");
        // An "editor" that records what it was given and appends a line.
        let editor = format!("cp \"$1\" {} && echo added >>", seen.display());
        let got = edit_with(&editor, "draft\n", dir.path()).unwrap();
        assert_eq!(got, "draft\nadded\n");
        assert_eq!(std::fs::read_to_string(&seen).unwrap(), "draft\n");
    }

    #[test]
    fn a_failing_editor_is_an_error_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        assert!(edit_with("false", "x", dir.path()).is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
