//! A tool call in the conversation: a short title (`edit notes.txt`, `bash: cargo test`),
//! then its result as a person reads it — a diff coloured, code numbered and highlighted,
//! a command with its exit code, a path list like `ls`, a tree like `tree`, a `subagent`
//! answer as one card per run, an MCP result as its text and its images. The rules for
//! lists, trees, cards and titles are `shard_client::results`, shared with `shard run`
//! and `shard attach`.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use shard_client::results::{self, RunCard};
use shard_client::sanitize::strip;
use shard_client::view::ToolCallView;
use shard_protocol::types::{Image, RenderDescriptor, ToolResultContent};

use super::conversation::Options;
use super::theme::Theme;

const MAX_TOOL_LINES: usize = 40;

/// A tool call: its header and its result's render (or start render, or text).
pub fn tool(t: &ToolCallView, theme: &Theme, opts: Options) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut head = vec![
        Span::styled("⚙ ", theme.accent()),
        Span::styled(
            strip(&results::tool_title(&t.name, &t.args)),
            theme.accent(),
        ),
    ];
    match &t.result {
        None if t.started => head.push(Span::styled(" running…", theme.dim())),
        None => head.push(Span::styled(" waiting", theme.dim())),
        // No `tool_call` event and no sign of a run: refused before it ran (a call from
        // a restated history has run when it has an exit code, a duration or no error).
        Some(r) if !t.started && r.is_error && r.exit_code.is_none() && r.duration_ms.is_none() => {
            head.push(Span::styled(" refused", theme.error()));
        }
        Some(r) if r.is_error => head.push(Span::styled(" failed", theme.error())),
        Some(_) => {}
    }
    lines.push(Line::from(head));
    // The start-time render is a preview for the running call; a finished one shows its
    // result (an MCP result's text, say), as it will after a reload, where no preview is.
    let render = match &t.result {
        Some(r) => r.render.clone(),
        None => t.render.clone(),
    };
    let mut body = match (&render, &t.result) {
        (Some(r), result) => descriptor(
            r,
            result.as_ref().map(|x| (x.exit_code, x.duration_ms)),
            theme,
        ),
        (None, Some(r)) => result_text(&t.name, &r.content, theme, r.is_error),
        (None, None) => Vec::new(),
    };
    if let Some(r) = &t.result {
        if render.is_some() && r.is_error {
            body.extend(result_text(&t.name, &r.content, theme, true));
        }
        body.extend(images(&r.images, theme));
    }
    let total = body.len();
    if total > MAX_TOOL_LINES && !opts.expand_tools {
        body.truncate(MAX_TOOL_LINES);
        body.push(Line::styled(
            format!(
                "  … {} more lines — Ctrl+O shows all tool output",
                total - MAX_TOOL_LINES
            ),
            theme.dim(),
        ));
    }
    lines.extend(body.into_iter().map(|l| indent(l, "  ")));
    lines
}

fn indent(mut l: Line<'static>, by: &'static str) -> Line<'static> {
    l.spans.insert(0, Span::raw(by));
    l
}

/// An image the terminal cannot paint: its type and size, so the person knows it is there.
fn images(list: &[Image], theme: &Theme) -> Vec<Line<'static>> {
    list.iter()
        .map(|i| {
            Line::styled(
                strip(&results::image_line(&i.mime_type, &i.data)),
                theme.accent(),
            )
        })
        .collect()
}

fn result_text(
    tool: &str,
    c: &ToolResultContent,
    theme: &Theme,
    error: bool,
) -> Vec<Line<'static>> {
    let text = match c {
        ToolResultContent::Text { text } => {
            if !error && let Some(cards) = results::subagent_cards(tool, text) {
                return cards.iter().flat_map(|c| run_card(c, theme)).collect();
            }
            text.clone()
        }
        ToolResultContent::Error { message } => message.clone(),
        ToolResultContent::Json { value } => {
            serde_json::to_string_pretty(value).unwrap_or_default()
        }
        ToolResultContent::Image { data, mime_type } => {
            return images(
                &[Image {
                    kind: Default::default(),
                    data: data.clone(),
                    mime_type: mime_type.clone(),
                }],
                theme,
            );
        }
    };
    let style = if error { theme.error() } else { theme.dim() };
    strip(&text)
        .lines()
        .map(|l| Line::styled(l.to_string(), style))
        .collect()
}

/// One subagent run: `◆ alias · state · usage`, then its final text or its error.
pub fn run_card(c: &RunCard, theme: &Theme) -> Vec<Line<'static>> {
    let style = if c.failed() {
        theme.error()
    } else {
        theme.accent()
    };
    let mut v = vec![Line::styled(strip(&c.head()), style)];
    if let Some(e) = &c.error {
        v.extend(
            strip(e)
                .lines()
                .map(|l| Line::styled(format!("  {l}"), theme.error())),
        );
    }
    if let Some(t) = &c.final_text {
        v.extend(strip(t).lines().map(|l| Line::from(format!("  {l}"))));
    }
    v
}

/// A `RenderDescriptor`: diffs coloured, code with line numbers, a command with its
/// exit code and duration, lists and trees as `ls` and `tree` print them.
pub fn descriptor(
    r: &RenderDescriptor,
    run: Option<(Option<i64>, Option<u64>)>,
    theme: &Theme,
) -> Vec<Line<'static>> {
    match r {
        RenderDescriptor::Text { text } => strip(text)
            .lines()
            .map(|l| Line::from(l.to_string()))
            .collect(),
        RenderDescriptor::Kv { pairs } => pairs
            .iter()
            .map(|p| {
                Line::from(vec![
                    Span::styled(format!("{}: ", strip(&p.k)), theme.bold()),
                    Span::raw(strip(&p.v)),
                ])
            })
            .collect(),
        RenderDescriptor::Diff { path, hunks } => {
            let mut v = vec![Line::styled(strip(path), theme.bold())];
            for h in hunks {
                v.push(Line::styled(
                    format!(
                        "@@ -{},{} +{},{} @@",
                        h.old_start, h.old_lines, h.new_start, h.new_lines
                    ),
                    theme.dim(),
                ));
                for l in &h.lines {
                    let style = match l.chars().next() {
                        Some('+') => theme.added(),
                        Some('-') => theme.removed(),
                        _ => Style::default(),
                    };
                    v.push(Line::styled(strip(l), style));
                }
            }
            v
        }
        RenderDescriptor::Code { path, lang, text } => {
            let lang = lang.clone().unwrap_or_else(|| {
                path.as_deref()
                    .and_then(|p| p.rsplit_once('.').map(|(_, ext)| ext))
                    .unwrap_or("")
                    .to_string()
            });
            let clean = strip(text);
            let n = clean.lines().count();
            let w = n.to_string().len();
            let mut v = Vec::new();
            if let Some(p) = path {
                v.push(Line::styled(strip(p), theme.bold()));
            }
            let mut code = super::highlight::Code::new(&lang, theme);
            for (i, l) in clean.lines().enumerate() {
                let mut spans = vec![Span::styled(format!("{:>w$} │ ", i + 1), theme.dim())];
                spans.extend(code.line(l, theme));
                v.push(Line::from(spans));
            }
            v
        }
        RenderDescriptor::Command {
            command,
            exit_code,
            duration_ms,
        } => {
            let exit = exit_code.or(run.and_then(|r| r.0));
            let dur = duration_ms.or(run.and_then(|r| r.1));
            let mut spans = vec![
                Span::styled("$ ", theme.dim()),
                Span::styled(strip(command), theme.bold()),
            ];
            if let Some(code) = exit {
                let style = if code == 0 {
                    theme.added()
                } else {
                    theme.error()
                };
                spans.push(Span::styled(format!("  exit {code}"), style));
            }
            if let Some(ms) = dur {
                spans.push(Span::styled(format!("  {}", duration(ms)), theme.dim()));
            }
            vec![Line::from(spans)]
        }
        RenderDescriptor::Status { label, .. } => vec![Line::from(strip(label))],
        RenderDescriptor::Progress {
            label,
            current,
            total,
        } => vec![Line::from(match total {
            Some(t) => format!("{} {current}/{t}", strip(label)),
            None => format!("{} {current}", strip(label)),
        })],
        RenderDescriptor::PathList { paths } => results::path_list_lines(paths)
            .into_iter()
            .zip(paths)
            .map(|(l, p)| {
                let style = if p.kind == shard_protocol::types::PathKind::Dir {
                    theme.accent()
                } else {
                    Style::default()
                };
                Line::styled(strip(&l), style)
            })
            .collect(),
        RenderDescriptor::Tree { root } => results::tree_lines(root)
            .into_iter()
            .map(|l| Line::from(strip(&l)))
            .collect(),
    }
}

/// `1.2s`, `350ms`.
pub fn duration(ms: u64) -> String {
    if ms >= 1000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{ms}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_shows_exit_and_duration() {
        let r = RenderDescriptor::Command {
            command: "ls".into(),
            exit_code: Some(2),
            duration_ms: Some(1500),
        };
        let l = descriptor(&r, None, &Theme::plain());
        assert_eq!(l[0].to_string(), "$ ls  exit 2  1.5s");
    }
}
