//! How `shard run` shows a turn: the answer's text on stdout, blocks
//! separated; tool activity, refusals, retries and the closing usage line on stderr.
//! Everything the model or a tool produced passes through the terminal sanitizer first
//!.

use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value};
use shard_client::results;
use shard_client::sanitize::{Sanitizer, strip};
use shard_client::view::{AgentView, Change, ToolCallView};
use shard_protocol::event::{DeltaKind, Event};
use shard_protocol::types::ToolResultContent;

/// Text or JSONL presentation of the stream.
pub struct Printer {
    json: bool,
    out: std::io::BufWriter<std::io::Stdout>,
    at_line_start: bool,
    printed_text: bool,
    sanitizer: Sanitizer,
    config_path: String,
}

impl Printer {
    /// A printer; `shard_home` is named in the hint of a refusal.
    pub fn new(json: bool, shard_home: &Path) -> Self {
        Printer {
            json,
            out: std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout()),
            at_line_start: true,
            printed_text: false,
            sanitizer: Sanitizer::new(),
            config_path: shard_home.join("config.toml").display().to_string(),
        }
    }

    /// Shows one event, given what it changed in `view`.
    pub fn show(&mut self, ev: &Event, changes: &[Change], view: &AgentView) {
        if self.json {
            let _ = self.out.write_all(&shard_protocol::to_line(ev));
            return;
        }
        for change in changes {
            self.change(change, view);
        }
        // An MCP server that failed, or was not ready for the first request, is said once.
        if let Event::ToolsChanged(t) = ev
            && let Some(server) = &t.server
            && let Some(message) = &server.message
            && (server.state == "failed" || server.state == "starting")
        {
            self.stderr_line(&format!(
                "mcp: server `{}` {}: {}",
                strip(&server.name),
                if server.state == "failed" {
                    "failed"
                } else {
                    "is late"
                },
                strip(message)
            ));
        }
        if let Event::TurnEnd(t) = ev
            && t.interrupted == Some(true)
        {
            self.end_line();
            self.stderr_line("■ interrupted");
        }
        if let Event::Response(r) = ev
            && !r.success
            && let Some(err) = &r.error
        {
            self.stderr_line(&format!("error: {} ({})", strip(&err.message), err.code));
        }
    }

    fn change(&mut self, change: &Change, view: &AgentView) {
        match change {
            Change::BlockStarted {
                kind: DeltaKind::Text,
                ..
            } => {
                // A new text block: a blank line after what was printed before.
                self.sanitizer.reset();
                if self.printed_text {
                    self.end_line();
                    let _ = self.out.write_all(b"\n");
                }
            }
            Change::Delta {
                kind: DeltaKind::Text,
                text,
                ..
            } => {
                let clean = self.sanitizer.push(text);
                if !clean.is_empty() {
                    let _ = self.out.write_all(clean.as_bytes());
                    self.at_line_start = clean.ends_with('\n');
                    self.printed_text = true;
                }
            }
            Change::ToolStarted(id) => {
                if let Some(call) = view.tool_call(id) {
                    let line = format!("▸ {}", strip(&results::tool_title(&call.name, &call.args)));
                    self.stderr_line(&line);
                }
            }
            Change::ToolFinished(id) => {
                if let Some(call) = view.tool_call(id) {
                    self.finished(call);
                }
            }
            Change::Status => {
                if let Some(detail) = &view.status_detail {
                    self.stderr_line(&retry_line(&strip(detail)));
                }
            }
            Change::Error(e) => {
                self.stderr_line(&format!("error: {} ({})", strip(&e.message), e.code));
            }
            _ => {}
        }
    }

    fn finished(&mut self, call: &ToolCallView) {
        let Some(r) = &call.result else { return };
        let text = match &r.content {
            ToolResultContent::Text { text } => text.clone(),
            ToolResultContent::Error { message } => message.clone(),
            ToolResultContent::Json { value } => value.to_string(),
            ToolResultContent::Image { mime_type, .. } => format!("[{mime_type}]"),
        };
        let text = strip(&text);
        if !call.started && r.is_error {
            // Refused before it ran: say everything, and how to allow it.
            let mut msg = format!(
                "✗ refused: {} {}\n",
                strip(&call.name),
                strip(&Value::Object(cut_args(&call.args)).to_string())
            );
            for line in text.lines() {
                msg.push_str(&format!("  {line}\n"));
            }
            if is_headless_refusal(&text) {
                msg.push_str(&format!(
                    "  to allow it: run again with --yes, or add to {}:\n",
                    self.config_path
                ));
                for line in allow_rule(&call.name, &call.args).lines() {
                    msg.push_str(&format!("    {line}\n"));
                }
            }
            self.stderr_line(msg.trim_end());
            return;
        }
        if r.is_error {
            self.stderr_line(&format!("  ✗ {}", first_line(&text)));
        } else {
            let code = r
                .exit_code
                .map(|c| format!(" [exit {c}]"))
                .unwrap_or_default();
            let shaped = results::structured_lines(call);
            if shaped.is_empty() || !text.trim().is_empty() && shaped.len() == r.images.len() {
                self.stderr_line(&format!("  ✓{code} {}", first_line(&text)));
            } else {
                self.stderr_line(&format!("  ✓{code}"));
            }
            for line in shaped.iter().take(MAX_SHAPED_LINES) {
                self.stderr_line(&format!("    {}", strip(line)));
            }
            if shaped.len() > MAX_SHAPED_LINES {
                let more = shaped.len() - MAX_SHAPED_LINES;
                self.stderr_line(&format!("    … {more} more lines"));
            }
        }
    }

    fn stderr_line(&mut self, line: &str) {
        self.end_line();
        self.flush();
        eprintln!("{line}");
    }

    /// Ends the current stdout line (before stderr output or a question).
    pub fn end_line(&mut self) {
        if !self.at_line_start {
            let _ = self.out.write_all(b"\n");
            self.at_line_start = true;
        }
    }

    /// Flushed whenever the event queue runs dry, so output is prompt yet batched.
    pub fn flush(&mut self) {
        let _ = self.out.flush();
    }

    /// Ends the output.
    pub fn finish(&mut self) {
        if !self.json {
            self.end_line();
        }
        self.flush();
    }
}

/// The refusal came from the headless policy (no person to ask), so `--yes` or a
/// `[[headless.allow]]` rule would let it run.
/// A listing or a card printed under a result is cut here: `shard run` summarizes.
const MAX_SHAPED_LINES: usize = 20;

fn is_headless_refusal(text: &str) -> bool {
    text.contains("headless") || text.contains("nobody is attached")
}

/// The `[[headless.allow]]` rule that allows exactly this call, as TOML.
pub fn allow_rule(tool: &str, args: &Map<String, Value>) -> String {
    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    let mut rule = format!("[[headless.allow]]\ntool = {}\n", quote(tool));
    if let Some(c) = args.get("command").and_then(Value::as_str) {
        rule.push_str(&format!("command = {}\n", quote(&strip(c))));
    } else if let Some(p) = args.get("path").and_then(Value::as_str) {
        rule.push_str(&format!("path = {}\n", quote(&strip(p))));
    }
    rule
}

/// The arguments with long strings shortened (a `write` of a large file is refused
/// with its path, not its whole content).
fn cut_args(args: &Map<String, Value>) -> Map<String, Value> {
    const MAX: usize = 300;
    args.iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) if s.chars().count() > MAX => {
                    let head: String = s.chars().take(MAX).collect();
                    let more = s.chars().count() - MAX;
                    Value::String(format!("{head}… ({more} more characters)"))
                }
                other => other.clone(),
            };
            (k.clone(), v)
        })
        .collect()
}

/// A status detail as one line: `retrying (attempt 2, in 2000 ms): 429 …` becomes
/// `retrying in 2 s: 429 …`; other details are shown as they are.
pub fn retry_line(detail: &str) -> String {
    let Some(rest) = detail.strip_prefix("retrying") else {
        return detail.to_string();
    };
    let (head, reason) = rest.split_once("):").unwrap_or((rest, ""));
    let ms = head
        .split_once("in ")
        .and_then(|(_, t)| t.trim().trim_end_matches("ms").trim().parse::<u64>().ok());
    match ms {
        Some(ms) => {
            let secs = ms.div_ceil(1000).max(1);
            format!("retrying in {secs} s: {}", reason.trim())
        }
        None => detail.to_string(),
    }
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(100).collect();
    if out.len() < s.trim_end().len() {
        out.push('…');
    }
    out
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
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
    fn retry_details_become_one_short_line() {
        assert_eq!(
            retry_line("retrying (attempt 2, in 2000 ms): 429 rate limited"),
            "retrying in 2 s: 429 rate limited"
        );
        assert_eq!(
            retry_line("retrying (attempt 3, in 1500 ms): server error"),
            "retrying in 2 s: server error"
        );
        assert_eq!(retry_line("compacting"), "compacting");
    }

    #[test]
    fn allow_rules_are_valid_toml_naming_the_call() {
        let mut args = Map::new();
        args.insert("command".into(), Value::String("cargo test \"x\"".into()));
        let rule = allow_rule("bash", &args);
        let parsed: toml::Table = toml::from_str(&rule).unwrap_or_default();
        let allow = &parsed["headless"]["allow"][0];
        assert_eq!(allow["tool"].as_str(), Some("bash"));
        assert_eq!(allow["command"].as_str(), Some("cargo test \"x\""));
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
