//! The conversation: complete messages, the streaming one, tool calls from their
//! `RenderDescriptor`, and the client's own notes, as wrapped lines. Model and tool text
//! goes through `sanitize::strip` first, so no escape sequence of theirs reaches the
//! terminal. Complete messages are rendered once per width and cached; only the
//! streaming message is rendered per frame, and a frame only walks back from the bottom
//! as far as the screen shows, so a 10,000-message session costs what a short one does.

use std::collections::HashMap;

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use shard_client::sanitize::strip;
use shard_client::view::{AgentView, StreamBlock};
use shard_protocol::types::{ContentBlock, Message, Role};
use unicode_width::UnicodeWidthChar;

use super::markdown;
use super::theme::Theme;

/// A line the client adds itself (slash command output, errors, notices).
#[derive(Debug, Clone)]
pub struct Note {
    /// Shown after this many complete messages.
    pub after: usize,
    /// Its lines.
    pub lines: Vec<Line<'static>>,
    /// The text of a prompt, steer or follow-up this client sent, shown here until the
    /// server's `user_message` for it arrives (then the note goes: the message itself is
    /// in the conversation). A server without that event leaves the note in place.
    pub awaiting: Option<String>,
}

/// Rendered complete messages, per width, and the finished lines of the streaming
/// message's text blocks.
#[derive(Default)]
pub struct Cache {
    width: u16,
    by_id: HashMap<String, Vec<Line<'static>>>,
    stream: Option<(String, Vec<StreamText>)>,
}

/// The part of a streaming text block rendered so far: up to its last newline.
#[derive(Default, Clone)]
struct StreamText {
    stable: usize,
    renderer: markdown::Renderer,
    lines: Vec<Line<'static>>,
}

impl Cache {
    /// Forgets everything (a `sync`, a new agent).
    pub fn clear(&mut self) {
        self.by_id.clear();
        self.stream = None;
    }

    /// The lines of streaming text block `idx` of `message_id`, rendering only what
    /// arrived since the last frame.
    fn stream_text(
        &mut self,
        message_id: &str,
        idx: usize,
        text: &str,
        theme: &Theme,
        w: usize,
    ) -> Vec<Line<'static>> {
        if self.stream.as_ref().is_none_or(|(id, _)| id != message_id) {
            self.stream = Some((message_id.to_string(), Vec::new()));
        }
        let Some((_, blocks)) = &mut self.stream else {
            return Vec::new();
        };
        while blocks.len() <= idx {
            blocks.push(StreamText::default());
        }
        let b = &mut blocks[idx];
        if b.stable > text.len() || !text.is_char_boundary(b.stable) {
            *b = StreamText::default();
        }
        let stable = text.rfind('\n').map_or(0, |i| i + 1);
        if stable > b.stable {
            let mut fresh = Vec::new();
            for raw in strip(&text[b.stable..stable - 1]).split('\n') {
                b.renderer.line(raw, theme, &mut fresh);
            }
            b.lines.extend(wrap_all(fresh, w));
            b.stable = stable;
        }
        let mut out = b.lines.clone();
        // The line still arriving (empty after a newline, as a whole render has it).
        let mut tail = Vec::new();
        b.renderer
            .clone()
            .line(&strip(&text[stable..]), theme, &mut tail);
        out.extend(wrap_all(tail, w));
        out
    }

    /// Forgets one message (its tool calls changed).
    pub fn invalidate(&mut self, id: &str) {
        self.by_id.remove(id);
    }
}

/// Display options.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Show thinking in full instead of collapsed.
    pub expand_thinking: bool,
    /// Show tool output in full instead of its first lines (Ctrl+O).
    pub expand_tools: bool,
}

/// The last `height + scroll` lines of the conversation at `width`, oldest first,
/// and whether the top of the conversation was reached.
pub fn tail_lines(
    view: &AgentView,
    notes: &[Note],
    cache: &mut Cache,
    theme: &Theme,
    opts: Options,
    width: u16,
    want: usize,
) -> (Vec<Line<'static>>, bool) {
    if cache.width != width {
        cache.width = width;
        cache.clear();
    }
    let w = width.max(10) as usize;
    let mut chunks: Vec<Vec<Line<'static>>> = Vec::new();
    let mut count = 0;
    let push =
        |chunk: Vec<Line<'static>>, chunks: &mut Vec<Vec<Line<'static>>>, count: &mut usize| {
            *count += chunk.len();
            chunks.push(chunk);
            *count
        };
    if let Some(st) = &view.streaming {
        let mut lines = Vec::new();
        for (idx, b) in st.blocks.iter().enumerate() {
            match b {
                StreamBlock::Text(t) => {
                    lines.extend(cache.stream_text(&st.message_id, idx, t, theme, w))
                }
                StreamBlock::Thinking(t) => lines.extend(wrap_all(thinking(t, theme, opts), w)),
                StreamBlock::ToolCall { name, .. } => lines.push(Line::from(vec![
                    Span::styled("⚙ ", theme.accent()),
                    Span::styled(strip(name), theme.accent()),
                    Span::styled(" …", theme.dim()),
                ])),
            }
        }
        push(lines, &mut chunks, &mut count);
    }
    let mut note_idx = notes.len();
    let mut reached_top = true;
    for i in (0..=view.messages.len()).rev() {
        while note_idx > 0 && notes[note_idx - 1].after >= i {
            note_idx -= 1;
            if push(
                wrap_all(notes[note_idx].lines.clone(), w),
                &mut chunks,
                &mut count,
            ) >= want
            {
                break;
            }
        }
        if count >= want {
            reached_top = i == 0 && note_idx == 0;
            break;
        }
        if i == 0 {
            break;
        }
        let m = &view.messages[i - 1];
        let mut lines = match cache.by_id.get(&m.id) {
            Some(l) => l.clone(),
            None => {
                let l = wrap_all(message(m, view, theme, opts), w);
                cache.by_id.insert(m.id.clone(), l.clone());
                l
            }
        };
        // Outside the cache: who answered a call's permission request, as the session
        // recorded it (a reloaded conversation says it where the live one did).
        let recorded: Vec<String> = m
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolCall { id, .. } => view.recorded_answer(id),
                _ => None,
            })
            .map(|a| strip(&shard_client::results::recorded_answer(a)))
            .collect();
        if !recorded.is_empty() {
            let blank = lines.last().is_some_and(|l| l.width() == 0);
            if blank {
                lines.pop();
            }
            let said = recorded
                .into_iter()
                .map(|r| Line::styled(r, theme.dim()))
                .collect();
            lines.extend(wrap_all(said, w));
            lines.push(Line::default());
        }
        // Outside the cache: a turn may be marked interrupted after its message was drawn.
        if view.interrupted.contains(&m.id) {
            let blank = lines.last().is_some_and(|l| l.width() == 0);
            if blank {
                lines.pop();
            }
            lines.push(Line::styled("■ interrupted", theme.error()));
            lines.push(Line::default());
        }
        push(lines, &mut chunks, &mut count);
    }
    let mut out = Vec::with_capacity(count);
    for c in chunks.into_iter().rev() {
        out.extend(c);
    }
    (out, reached_top)
}

/// One complete message's lines (unwrapped), with a blank line after it.
pub fn message(m: &Message, view: &AgentView, theme: &Theme, opts: Options) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for block in &m.content {
        match (m.role, block) {
            (Role::User, ContentBlock::Text { text }) => {
                // The daemon's completion report is a message to the model, not something
                // the person typed: a notice with the run's card.
                if let Some(card) = shard_client::results::subagent_report(text) {
                    lines.push(Line::styled("ℹ subagent report", theme.dim()));
                    lines.extend(super::tool_view::run_card(&card, theme));
                    continue;
                }
                for (i, l) in strip(text).split('\n').enumerate() {
                    let mark = if i == 0 { "› " } else { "  " };
                    lines.push(Line::from(vec![
                        Span::styled(mark, theme.user()),
                        Span::styled(l.to_string(), theme.user()),
                    ]));
                }
            }
            (Role::Assistant, ContentBlock::Text { text }) => {
                lines.extend(markdown::render(&strip(text), theme))
            }
            (_, ContentBlock::Thinking { text, .. }) => lines.extend(thinking(text, theme, opts)),
            (_, ContentBlock::ToolCall { id, name, args }) => match view.tool_call(id) {
                Some(t) => lines.extend(super::tool_view::tool(t, theme, opts)),
                None => lines.push(Line::from(format!(
                    "⚙ {} {}",
                    strip(name),
                    strip(&serde_json::Value::Object(args.clone()).to_string())
                ))),
            },
            (_, ContentBlock::Image { mime_type, .. }) => lines.push(Line::styled(
                format!("[image {}]", strip(mime_type)),
                theme.dim(),
            )),
            _ => {}
        }
    }
    if !lines.is_empty() {
        lines.push(Line::default());
    }
    lines
}

fn thinking(text: &str, theme: &Theme, opts: Options) -> Vec<Line<'static>> {
    let clean = strip(text);
    let n = clean.lines().count();
    if opts.expand_thinking {
        let mut v = vec![Line::styled("▾ thinking", theme.dim())];
        v.extend(
            clean
                .lines()
                .map(|l| Line::styled(format!("  {l}"), theme.dim())),
        );
        v
    } else {
        vec![Line::styled(
            format!(
                "▸ thinking ({n} line{}) — Ctrl+T shows it",
                if n == 1 { "" } else { "s" }
            ),
            theme.dim(),
        )]
    }
}

fn wrap_all(lines: Vec<Line<'static>>, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::with_capacity(lines.len());
    for l in lines {
        wrap(l, width, &mut out);
    }
    out
}

/// Wraps one line at `width` columns, at a space when there is one in the row.
pub fn wrap(line: Line<'static>, width: usize, out: &mut Vec<Line<'static>>) {
    let total: usize = line.spans.iter().map(|s| s.width()).sum();
    if total <= width {
        out.push(line);
        return;
    }
    let cells: Vec<(char, Style)> = line
        .spans
        .iter()
        .flat_map(|s| s.content.chars().map(move |c| (c, s.style)))
        .collect();
    let mut start = 0;
    while start < cells.len() {
        let mut w = 0;
        let mut end = start;
        let mut last_space = None;
        while end < cells.len() {
            let cw = cells[end].0.width().unwrap_or(0);
            if w + cw > width {
                break;
            }
            if cells[end].0 == ' ' {
                last_space = Some(end);
            }
            w += cw;
            end += 1;
        }
        if end == start {
            end = start + 1;
        } else if end < cells.len()
            && let Some(sp) = last_space
            && sp > start
        {
            end = sp + 1;
        }
        out.push(group(&cells[start..end]));
        start = end;
    }
}

fn group(cells: &[(char, Style)]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut cur = String::new();
    let mut style = cells.first().map(|c| c.1).unwrap_or_default();
    for &(c, s) in cells {
        if s != style {
            spans.push(Span::styled(std::mem::take(&mut cur), style));
            style = s;
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        spans.push(Span::styled(cur, style));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_spaces() {
        let mut out = Vec::new();
        wrap(Line::from("alpha beta gamma"), 11, &mut out);
        let s: Vec<String> = out.iter().map(|l| l.to_string()).collect();
        assert_eq!(s, vec!["alpha beta ", "gamma"]);
    }

    #[test]
    fn wrap_cuts_long_words() {
        let mut out = Vec::new();
        wrap(Line::from("abcdefgh"), 3, &mut out);
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn incremental_streaming_renders_like_the_whole_text() {
        let theme = Theme::plain();
        let text =
            "# T\nsome *words* here\n```rust\nlet a = 1;\n```\n- item one two three four five six";
        let mut cache = Cache::default();
        let mut so_far = String::new();
        for c in text.chars() {
            so_far.push(c);
            let got = cache.stream_text("m", 0, &so_far, &theme, 12);
            let want = wrap_all(markdown::render(&so_far, &theme), 12);
            let s = |v: &[Line<'_>]| v.iter().map(|l| l.to_string()).collect::<Vec<_>>();
            assert_eq!(s(&got), s(&want), "after {so_far:?}");
        }
    }
}
